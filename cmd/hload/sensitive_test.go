package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hload/hload/config"
)

// The secrets of TestFaultSensitiveValuesNeverWritten, one per way in, and
// what the test derives from them.
const (
	flagSecret = "FlagSecret7x" // --var, on a variable with sensitive = true
	envSecret  = "EnvSecret42x" // HLOAD_VAR_, sensitive by default
	apiSecret  = "EnvTokenXYZ9" // env(), always sensitive
)

// secretForms are the secrets and the values derived from them that the
// test sends: none may appear in anything hload writes.
var secretForms = []string{flagSecret, envSecret, apiSecret, strings.ToUpper(envSecret), strings.ToLower(apiSecret)}

// sensitiveTest sends every secret, as it is and derived, in headers that
// reflectingServer sends back in its status line, and writes every output.
// X-Dyn is computed per call through HCL: its odd branch is never
// evaluated at load.
const sensitiveTest = `
variable "base_url" {}
variable "influx_url" {}
variable "flag_token" {
  sensitive = true
}
variable "env_token" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 5
  request "r" {
    path = "/items/${vu.id}"
    headers = {
      Authorization = "Bearer ${var.flag_token}"
      X-Token       = var.env_token
      X-Api         = env("HLOAD_TEST_API_TOKEN")
      X-Upper       = upper(var.env_token)
      X-Dyn         = vu.iteration % 2 == 0 ? "${lower(env("HLOAD_TEST_API_TOKEN"))}-even" : "${lower(env("HLOAD_TEST_API_TOKEN"))}-odd"
    }
  }
}
sink "csv" {
  path     = "out/intervals.csv"
  raw      = true
  raw_path = "out/raw.csv"
}
sink "html" {
  path = "out/report.html"
}
sink "influxdb" {
  url    = var.influx_url
  bucket = "hload"
  token  = env("HLOAD_TEST_API_TOKEN")
}
`

// badSensitiveTest has an error in an expression on each secret: hcl
// would print each with its value, a function's error quotes it, and so
// does the HTTP protocol's validator.
const badSensitiveTest = `
variable "flag_token" {
  sensitive = true
}
variable "env_token" {}
target "t" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "a" {
    path = "/${var.flag_token + 1}"
  }
  request "b" {
    path = "/${var.env_token * 2}/${vu.id}"
  }
  request "c" {
    path = "/${tonumber(env("HLOAD_TEST_API_TOKEN"))}"
  }
  request "d" {
    path   = "/"
    method = "${upper(var.env_token)} X"
  }
}
`

// reflectingServer answers every request 500, its status line echoing the
// request's headers, as a server that reflects what it was sent: the
// messages of the failed calls then hold every secret.
func reflectingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		echo := strings.Join([]string{r.Header.Get("Authorization"), r.Header.Get("X-Token"), r.Header.Get("X-Api"),
			r.Header.Get("X-Upper"), r.Header.Get("X-Dyn")}, " ")
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 500 echo %s\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", echo, len(echo), echo)
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// influxRecorder is an InfluxDB that keeps the lines written to it.
type influxRecorder struct {
	*httptest.Server
	mu    sync.Mutex
	lines []string
}

func newInfluxRecorder(t *testing.T) *influxRecorder {
	f := &influxRecorder{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ping":
			w.WriteHeader(http.StatusNoContent)
		case "/api/v2/write":
			body, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			f.lines = append(f.lines, strings.Split(strings.TrimSpace(string(body)), "\n")...)
			f.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestFaultSensitiveValuesNeverWritten runs a test that sends a secret from
// each way in (--var on a sensitive variable, HLOAD_VAR_, env()), as it is
// and derived (upper(), lower(), in a template with a per-call value),
// to a server that echoes them in its status line, so that every failed
// call's message holds them. No output may: stdout (progress and
// summary), stderr, the summary JSON, the CSV of intervals and of raw
// calls, the HTML report, the lines InfluxDB received. The redaction must
// show where the echo was. Then a file with a bad expression on each
// secret is validated and applied: the diagnostics hold none either.
func TestFaultSensitiveValuesNeverWritten(t *testing.T) {
	srv, served := reflectingServer(t)
	influx := newInfluxRecorder(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", sensitiveTest)
	writeFile(t, dir, "bad.hcl", badSensitiveTest)
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HLOAD_VAR_env_token=" + envSecret, "HLOAD_TEST_API_TOKEN=" + apiSecret}

	r := hloadEnv(t, dir, env, "apply", "--var", "base_url="+srv.URL, "--var", "influx_url="+influx.URL,
		"--var", "flag_token="+flagSecret, "--summary-export", "out/summary.json", "test.hcl")
	if r.code != 99 {
		t.Fatalf("exit %d, want 99 (every call failed)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := served.Load(); n != 10 {
		t.Fatalf("the server answered %d calls, want 10", n)
	}
	outputs := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
	for _, name := range []string{"summary.json", "intervals.csv", "raw.csv", "report.html"} {
		data, err := os.ReadFile(filepath.Join(dir, "out", name))
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = string(data)
	}
	influx.mu.Lock()
	outputs["influxdb"] = strings.Join(influx.lines, "\n")
	influx.mu.Unlock()
	for name, text := range outputs {
		if text == "" {
			t.Errorf("%s is empty", name)
		}
		for _, secret := range secretForms {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q:\n%s", name, secret, excerpt(text, secret))
			}
		}
	}

	// The echo reached the figures, redacted: the calls' messages, and
	// the --var value the summary records.
	var sum struct {
		Variables map[string]string `json:"variables"`
		Scenarios map[string]struct {
			Requests map[string]struct {
				ErrorMessages map[string][]string `json:"error_messages"`
			} `json:"requests"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(outputs["summary.json"]), &sum); err != nil {
		t.Fatal(err)
	}
	messages := sum.Scenarios["s"].Requests["r"].ErrorMessages["http_5xx"]
	// Five headers echoed, five values redacted.
	if len(messages) == 0 || !strings.HasPrefix(messages[0], "500 echo ") || strings.Count(messages[0], config.Redacted) != 5 {
		t.Errorf("error messages %q: want the echoed status line, its secrets redacted", messages)
	}
	if got := sum.Variables["flag_token"]; got != config.Redacted {
		t.Errorf("variables.flag_token = %q, want %q", got, config.Redacted)
	}
	if !strings.Contains(r.stdout, "http_5xx: 500 echo "+config.Redacted) {
		t.Errorf("the console does not show the redacted message:\n%s", r.stdout)
	}

	for _, cmd := range []string{"validate", "apply"} {
		r := hloadEnv(t, dir, env, cmd, "--var", "flag_token="+flagSecret, "bad.hcl")
		if r.code != 2 {
			t.Fatalf("%s bad.hcl: exit %d, want 2\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
		text := unwrapped(r.stderr)
		for _, want := range []string{
			"Unsuitable value for left operand", // var.flag_token + 1 and var.env_token * 2
			`cannot convert "` + config.Redacted + `" to number`,
			"hload: 4 error(s) in the config",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s bad.hcl: stderr does not say %q:\n%s", cmd, want, r.stderr)
			}
		}
		for _, secret := range append(secretForms, "with var.") {
			if strings.Contains(r.stderr, secret) {
				t.Errorf("%s bad.hcl: stderr holds %q:\n%s", cmd, secret, r.stderr)
			}
		}
	}
}

// TestSensitiveOptOut: a variable set from HLOAD_VAR_ with sensitive =
// false is printed in diagnostics like any value.
func TestSensitiveOptOut(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
variable "n" {
  sensitive = false
}
target "t" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "a" {
    path = "/${var.n * 2}"
  }
}
`)
	r := hloadEnv(t, dir, []string{"HLOAD_VAR_n=visible"}, "validate", "test.hcl")
	if r.code != 2 || !strings.Contains(r.stderr, `with var.n as "visible"`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and the value, which sensitive = false allows", r.code, r.stderr)
	}
}

// excerpt returns the lines of text that hold s.
func excerpt(text, s string) string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}

// TestSensitiveInfluxTag: InfluxDB stores its tags in clear on every
// point, so a sensitive tag is refused before the run, as a config error;
// a variable that says sensitive = false may tag.
func TestSensitiveInfluxTag(t *testing.T) {
	dir := t.TempDir()
	src := `
variable "host" {
  sensitive = false
}
target "t" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    path = "/"
  }
}
sink "influxdb" {
  url    = "http://127.0.0.1:1"
  bucket = "hload"
  tags   = { host = %s }
}
`
	writeFile(t, dir, "secret.hcl", fmt.Sprintf(src, `env("HLOAD_TEST_HOST")`))
	writeFile(t, dir, "plain.hcl", fmt.Sprintf(src, "var.host"))
	env := []string{"HLOAD_TEST_HOST=host-secret-1", "HLOAD_VAR_host=host-1"}
	for _, cmd := range []string{"validate", "apply"} {
		r := hloadEnv(t, dir, env, cmd, "secret.hcl")
		if r.code != 2 || !strings.Contains(r.stderr, `secret.hcl:16,1-16: sink "influxdb": a value of tags is sensitive`) || strings.Contains(r.stderr+r.stdout, "host-secret-1") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 2, naming the sink and the tags", cmd, r.code, r.stderr)
		}
	}
	if r := hloadEnv(t, dir, env, "validate", "plain.hcl"); r.code != 0 {
		t.Errorf("a tag from a variable with sensitive = false: exit %d\n%s", r.code, r.stderr)
	}
}
