package main

// The help of each command: `hload CMD -h`, `hload CMD --help` and
// `hload help CMD` print it, with the command's flags, to stdout.

var applyHelp = commandHelp{name: "apply", usage: "hload apply [flags] FILE...", about: `
Run the test the files describe: send its load, print a progress line a second
and the summary, write its sinks, and judge its thresholds. Flags may come
before or after the files.

Exit 0: every threshold held; 1: a runtime failure (a plugin, a sink);
2: a mistake in the files or the flags, nothing was run; 99: a threshold
failed, or every call failed; 130: interrupted (Ctrl-C), stopped gracefully.`}

var validateHelp = commandHelp{name: "validate", usage: "hload validate [flags] FILE...", about: `
Check the test the files describe without sending any load: the files, their
expressions, targets, requests, thresholds and sinks, with the code apply
uses, and whether this machine can hold its VUs (memory, open files; with
--segment, one share). Exit 0 and one line when it is valid; exit 2 and every
mistake, with its file, line and column, when it is not.`}

var planHelp = commandHelp{name: "plan", usage: "hload plan [flags] FILE...", about: `
Print each scenario's schedule before anything runs: its executor and model,
its duration, its VUs or rate over time, its planned iterations and its mix of
requests and flows; for an open model, the VUs its peak rate needs; then what
the test needs of this machine at its peak, beside this machine's limits.`}

var compareHelp = commandHelp{name: "compare", usage: "hload compare [flags] BASE.json NEW.json", about: `
Set two runs' summary exports (apply --summary-export) side by side, per
scenario and request: count, requests/s, latency and error rate, each with
the change in % and whether it is better or worse. With --fail-if, exit 99
when a rule breaks; exit 2 when a file is not a summary export.`}

var reportHelp = commandHelp{name: "report", usage: "hload report [flags] RESULT.json", about: `
Render the HTML report of a summary export (apply --summary-export): one
self-contained page with the run's tables and charts.`}

var mergeHelp = commandHelp{name: "merge", usage: "hload merge [flags] RESULT.json... | -", about: `
Fold the summary exports of a run's segments (apply --segment i/n) into the
summary one process would have made, print it, and judge the test's
thresholds on it: exit 0 or 99. - reads the exports from standard input, as
kubectl logs prints them.`}

var demoHelp = commandHelp{name: "demo", usage: "hload demo [flags]", about: `
Serve the embedded demo shop, with its notification service (SSE), journeys,
a slowed page and a page of known capacity, until Ctrl-C.`}

var importHARHelp = commandHelp{name: "import har", usage: "hload import har [flags] FILE.har", about: `
Write a test from a browser's recording (DevTools, Network: Save all as HAR),
Chromium's or Firefox's: its requests as one flow in order, with the recorded
pauses as think time and a check on each recorded status; the login as the
setup; a capture for each value a response gave and a later request sent; a
variable for each origin (base_url), vus, duration, and each password or
token typed in (sensitive, no default). Static assets are left out. The file
passes hload validate, or nothing is written. Exit 2 for a file that is not a
HAR, with its line and column. See docs/import.md.`}

var importAccessLogHelp = commandHelp{name: "import access-log", usage: "hload import access-log [flags] FILE...", about: `
Write a test from web servers' access logs: nginx's or Apache's combined
format, or JSON lines (docs/import.md names the fields read). Requests are
grouped into templates, ids in paths and queries becoming random draws;
each template is a request weighted by its count, checked on the statuses
seen, and the log's requests per second become ramping-arrival-rate
stages. Prints the mix; exit 2, writing nothing, on a line it cannot read.`}

var versionHelp = commandHelp{name: "version", usage: "hload version", about: `
Print hload's version.`}

var pluginListHelp = commandHelp{name: "plugin list", usage: "hload plugin list [flags] [FILE.hcl]", about: `
List the built-in protocols and the plugin binaries found (hload-plugin-NAME
in the folders of HLOAD_PLUGIN_PATH, then ./plugins/). With a test file, list
its plugin blocks as apply resolves them: the binary and its checksum status.`}

var pluginDescribeHelp = commandHelp{name: "plugin describe", usage: "hload plugin describe [flags] NAME [FILE.hcl]", about: `
Print a protocol's versions and the schemas of its target and request blocks
as JSON. With a test file, describe the binary its plugin block resolves to.`}
