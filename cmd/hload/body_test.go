package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
)

// bodyCounts are what the body server sent on one path: the bodies, and
// those that end with the substring the checks look for.
type bodyCounts struct{ served, marked atomic.Int64 }

// TestFaultLargeBodyChecks runs `hload apply` with checks on bodies of 8 MB,
// in-process and isolated: every third body ends with the substring the
// check looks for, and a gzip body holds it only once decoded. The checks
// that passed are the bodies the server marked, by its own count, and a
// capture on a body past max_body fails every call as body_too_large.
func TestFaultLargeBodyChecks(t *testing.T) {
	const size = 8 << 20
	filler := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	counts := map[string]*bodyCounts{"/big": {}, "/gzip": {}, "/json": {}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := counts[r.URL.Path]
		head, tail := "", ""
		if c.served.Add(1)%3 == 0 {
			tail = "THE END"
			c.marked.Add(1)
		}
		var out io.Writer = w
		switch r.URL.Path {
		case "/json":
			head, tail = `{"pad":"`, `","id":1}`
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		if r.URL.Path != "/gzip" {
			w.Header().Set("Content-Length", strconv.Itoa(len(head)+size+len(tail)))
		}
		out.Write([]byte(head))
		for n := 0; n < size; n += len(filler) {
			out.Write(filler)
		}
		out.Write([]byte(tail))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
variable "base_url" {}
variable "isolate" {}
target "t" {
  base_url = var.base_url
  isolate  = var.isolate
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 15
  request "big" {
    path = "/big"
    check {
      body_contains = "THE END"
    }
  }
}
scenario "z" {
  executor   = "iterations"
  vus        = 1
  iterations = 6
  request "gzip" {
    path = "/gzip"
    check {
      body_contains = "THE END"
    }
  }
}
scenario "c" {
  executor   = "iterations"
  vus        = 1
  iterations = 3
  request "json" {
    path = "/json"
    capture {
      id = json("id")
    }
  }
}
`)
	for _, isolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("isolate %v", isolate), func(t *testing.T) {
			for _, c := range counts {
				c.served.Store(0)
				c.marked.Store(0)
			}
			out := fmt.Sprintf("summary-%v.json", isolate)
			r := hload(t, dir, "apply", "test.hcl", "--quiet", "--var", "base_url="+srv.URL, "--var", fmt.Sprintf("isolate=%v", isolate), "--summary-export", out)
			sum := exportedSummary(t, filepath.Join(dir, out))
			for _, name := range []string{"big", "gzip"} {
				scenario := map[string]string{"big": "s", "gzip": "z"}[name]
				f := sum.Scenarios[scenario].Requests[name]
				c := counts["/"+name]
				if f == nil {
					t.Fatalf("exit %d, no figures for %s:\n%s%s", r.code, name, r.stdout, r.stderr)
				}
				t.Logf("%s: %d calls, %d errors, checks %+v; the server sent %d bodies, %d of them marked",
					name, f.Count, f.Errors, f.Checks, c.served.Load(), c.marked.Load())
				if f.Count != c.served.Load() || f.Errors != 0 || f.Checks.Passed != c.marked.Load() || f.Checks.Failed != c.served.Load()-c.marked.Load() {
					t.Errorf("%s: hload counted %d calls, %d errors, checks %+v; the server sent %d bodies, %d marked", name, f.Count, f.Errors, f.Checks, c.served.Load(), c.marked.Load())
				}
			}
			json := sum.Scenarios["c"].Requests["json"]
			if json == nil || json.ErrorsByKind["body_too_large"] != counts["/json"].served.Load() || json.Count != 3 {
				t.Errorf("a json capture past max_body: %+v, want all 3 of kind body_too_large", json)
			}
		})
	}
}
