// The live dashboard: reads the run's intervals from /events as they come,
// keeps them as one series in the shape of the summary export's, and
// redraws the report's charts (hloadReport.draw) and the tables at each.
// At the run's end it shows the summary and offers the HTML report. It
// fetches only from the server that served it, passing on its token.
(function () {
  "use strict";
  var token = new URLSearchParams(location.search).get("token");
  var query = token ? "?token=" + encodeURIComponent(token) : "";
  var series = { time_s: [], scenarios: [], events: [] };
  // The series kept so far, for a reader of the page and its tests.
  window.hloadLiveSeries = series;
  var lastID = -1;
  var ended = false;
  var fallback; // the timer that asks /summary.json if no summary event comes

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function fixed(v, digits) { return typeof v === "number" ? v.toFixed(digits) : "–"; }

  function nulls(n) { var a = []; for (var i = 0; i < n; i++) a.push(null); return a; }

  // append adds one point (from, a part of an event's interval) to what
  // the page keeps (into), which holds n points so far. Columns are arrays
  // of numbers; lists of scenarios, requests and metrics are matched by
  // name, and one first seen now gets nulls before. stages_s is no column.
  function append(into, from, n) {
    Object.keys(from).forEach(function (k) {
      var v = from[k];
      if (k === "events") {
        into.events = (into.events || []).concat(v);
      } else if (k === "stages_s" || v === null || typeof v !== "object") {
        into[k] = v;
      } else if (Array.isArray(v) && v.length && typeof v[0] === "object" && v[0] !== null) {
        var list = into[k] = into[k] || [];
        v.forEach(function (item) {
          var mine = list.filter(function (x) { return x.name === item.name; })[0];
          if (!mine) list.push(mine = { name: item.name });
          append(mine, item, n);
        });
      } else if (Array.isArray(v)) {
        if (v.length) (into[k] = into[k] || nulls(n)).push(v[0]);
      } else {
        append(into[k] = into[k] || {}, v, n); // gauges, by name
      }
    });
  }

  // pad gives a null to every column the last point did not have.
  function pad(o, n) {
    Object.keys(o).forEach(function (k) {
      var v = o[k];
      if (k === "stages_s" || k === "events" || v === null || typeof v !== "object") return;
      if (Array.isArray(v) && v.length && typeof v[0] === "object" && v[0] !== null) {
        v.forEach(function (x) { pad(x, n); });
      } else if (Array.isArray(v)) {
        while (v.length < n) v.push(null);
      } else {
        pad(v, n);
      }
    });
  }

  function drawCharts() {
    var charts = $("live-charts"), proto = $("protocol-charts"), cpu = $("cpu-chart");
    charts.textContent = "";
    proto.textContent = "";
    cpu.textContent = "";
    hloadReport.draw(series, {
      scenario: function (name) {
        var sec = el("section", { "class": "scenario" });
        sec.appendChild(el("h2", {}, "scenario " + name));
        var div = el("div", { "class": "charts", "data-scenario": name });
        sec.appendChild(div);
        charts.appendChild(sec);
        return div;
      },
      protocol: proto,
      cpu: cpu
    });
    $("protocol").hidden = !proto.firstChild;
    $("cpu").hidden = !cpu.firstChild;
    document.body.setAttribute("data-charts", String(document.querySelectorAll("div.chart").length));
  }

  // showThresholds fills the threshold panel, as the report's table.
  function showThresholds(list) {
    var panel = $("threshold-panel");
    panel.textContent = "";
    if (!list || !list.length) {
      panel.appendChild(el("p", {}, "No threshold."));
      return;
    }
    var t = el("table", { "data-table": "thresholds" });
    var head = el("tr");
    ["metric", "filter", "condition", "value", "verdict"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    t.appendChild(head);
    list.forEach(function (th, i) {
      var filter = (th.scenario ? "scenario=" + th.scenario + " " : "") + (th.request ? "request=" + th.request + " " : "") +
        (th.flow ? "flow=" + th.flow : "");
      var tr = el("tr", { "data-key": String(i) });
      tr.appendChild(el("td", { "data-field": "metric" }, th.metric));
      tr.appendChild(el("td", { "data-field": "filter" }, filter.trim()));
      tr.appendChild(el("td", { "data-field": "condition" }, th.condition));
      tr.appendChild(el("td", { "data-field": "value" }, typeof th.value === "number" ? String(th.value) : "–"));
      tr.appendChild(el("td", { "data-field": "state", "class": th.passed ? "pass" : "fail" },
        (th.passed ? "passed" : "FAILED") + (th.abort ? " (abort)" : "")));
      t.appendChild(tr);
    });
    panel.appendChild(t);
  }

  // showRequests fills the run-so-far table of each scenario, as the
  // report's table (its first columns).
  function showRequests(scenarios) {
    var box = $("request-tables");
    box.textContent = "";
    Object.keys(scenarios || {}).sort().forEach(function (name) {
      var reqs = scenarios[name].requests || {};
      box.appendChild(el("h3", {}, "scenario " + name));
      var t = el("table", { "class": "requests", "data-scenario": name });
      var head = el("tr");
      ["request", "count", "rps", "err%", "p50", "p95", "p99"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
      t.appendChild(head);
      Object.keys(reqs).sort().forEach(function (r) {
        var f = reqs[r], lat = f.latency_ms || {};
        var tr = el("tr", { "data-request": r });
        tr.appendChild(el("td", {}, r));
        tr.appendChild(el("td", { "data-field": "count" }, String(f.count)));
        tr.appendChild(el("td", { "data-field": "rps" }, fixed(f.rps, 1)));
        tr.appendChild(el("td", { "data-field": "error_rate" }, fixed(100 * f.error_rate, 2)));
        ["p50", "p95", "p99"].forEach(function (p) { tr.appendChild(el("td", { "data-field": p }, fixed(lat[p], 3))); });
        t.appendChild(tr);
      });
      box.appendChild(t);
    });
  }

  // where says where the run stands: each scenario's stage, or the step
  // of its capacity search.
  function where(ev) {
    var parts = [];
    series.scenarios.forEach(function (sc) {
      var c = (ev.capacity || {})[sc.name];
      if (c) {
        parts.push(sc.name + ": capacity step " + c.step + " of " + c.steps + ", " + c.load + " " + c.unit);
        return;
      }
      var ends = sc.stages_s || [], i = 0;
      while (i < ends.length - 1 && ev.elapsed_s >= ends[i]) i++;
      if (ends.length) parts.push(sc.name + ": stage " + (i + 1) + " of " + ends.length);
    });
    return parts.join(" · ");
  }

  function showWarnings(ev) {
    (ev.warnings || []).forEach(function (w) {
      $("warnings").appendChild(el("li", {}, fixed(ev.elapsed_s, 1) + " s: " + w));
      $("warnings-section").hidden = false;
    });
  }

  function verdict(passed, note) {
    var v = $("verdict");
    v.className = "verdict " + (passed ? "pass" : "fail");
    v.textContent = (passed ? "PASSED" : "FAILED") + (note || "");
  }

  function state(s, text) {
    document.body.setAttribute("data-state", s);
    $("state").textContent = text;
  }

  function onEvent(ev) {
    // A reconnection resumes after the last id; this guards a repeat.
    if (ev.id <= lastID) return;
    lastID = ev.id;
    var n = series.time_s.length;
    append(series, ev.interval, n);
    pad(series, n + 1);
    drawCharts();
    showThresholds(ev.thresholds);
    showRequests(ev.scenarios);
    // The run so far may be a few intervals old: the core rebuilds it
    // only while that is cheap.
    $("requests-note").textContent = ev.so_far_s < ev.elapsed_s - 0.5 ?
      "The run up to " + fixed(ev.so_far_s, 1) + " s; latencies in ms." : "The run so far; latencies in ms.";
    showWarnings(ev);
    $("run-id").textContent = ev.run_id;
    $("elapsed").textContent = fixed(ev.elapsed_s, 1) + " s";
    document.body.setAttribute("data-event", String(ev.id));
    document.body.setAttribute("data-elapsed", String(ev.elapsed_s));
    if (ev.final) {
      finish(ev);
      return;
    }
    state("running", "running, " + fixed(ev.elapsed_s, 1) + " s" + (where(ev) ? " · " + where(ev) : ""));
  }

  // finish shows the run's end: the final event's verdict at once, then
  // the summary's tables and the report, which the stream's "summary"
  // event brings when the run's sinks have closed. Should the stream end
  // without it (a dashboard of an older hload, a dropped connection),
  // the page asks /summary.json, which a lingering dashboard serves.
  function finish(ev) {
    ended = true;
    verdict(ev.passed, ev.aborted ? " · ABORTED by threshold " + ev.aborted : "");
    state("ended", "the run has ended after " + fixed(ev.elapsed_s, 1) + " s; waiting for its summary");
    fallback = setTimeout(function () { source.close(); fetchSummary(0); }, 3000);
  }

  // onSummary shows the summary the stream brought, and offers it and the
  // HTML report as files made in the page: the server may be gone.
  function onSummary(m) {
    clearTimeout(fallback);
    source.close();
    var d = JSON.parse(m.data);
    showSummary(d.summary);
    var link = function (id, data, type) {
      $(id).href = URL.createObjectURL(new Blob([data], { type: type }));
    };
    link("report-link", d.report_html, "text/html");
    link("summary-link", JSON.stringify(d.summary, null, 2), "application/json");
  }

  function fetchSummary(tries) {
    fetch("summary.json" + query, { cache: "no-store" }).then(function (r) {
      // 503: the run's last sinks are still closing.
      if (r.status === 503 && tries < 40) {
        setTimeout(function () { fetchSummary(tries + 1); }, 250);
        return;
      }
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json().then(function (sum) {
        showSummary(sum);
        $("report-link").href = "report.html" + query;
        $("summary-link").href = "summary.json" + query;
      });
    }).catch(function (e) {
      state("ended", "the run has ended; its summary could not be fetched (" + e.message +
        "): the dashboard has closed. Run with --dashboard-linger to keep it open after the run.");
    });
  }

  function showSummary(sum) {
    showThresholds(sum.thresholds);
    showRequests(sum.scenarios);
    $("requests-note").textContent = "The whole run, from its summary; latencies in ms.";
    verdict(sum.passed, (sum.interrupted ? " · INTERRUPTED: stopped before its planned end" : "") +
      (sum.aborted ? " · ABORTED by threshold " + sum.aborted : ""));
    $("download").hidden = false;
    state("summary", "the run has ended after " + fixed(sum.duration_s, 1) + " s");
  }

  var source = new EventSource("events" + query);
  source.onmessage = function (m) { onEvent(JSON.parse(m.data)); };
  source.addEventListener("summary", onSummary);
  source.onopen = function () {
    if (lastID >= 0 && !ended) state("running", "reconnected; resuming after interval " + lastID);
  };
  // EventSource reconnects by itself, sending the last id it had.
  source.onerror = function () {
    if (ended) {
      // The stream ended before the summary came: ask for it.
      clearTimeout(fallback);
      source.close();
      fetchSummary(0);
      return;
    }
    if (source.readyState === EventSource.CLOSED) state("closed", "the dashboard refused the stream; reload the page to try again");
    else state("reconnecting", "the connection was lost; reconnecting");
  };
})();
