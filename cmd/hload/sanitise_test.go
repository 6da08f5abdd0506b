package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// hostile is what a server answers to clear the screen and retitle the
// terminal of whoever reads hload's output.
const hostile = "\x1b[2J\x1b]0;owned\x07"

// TestFaultServerTextSanitised: a server answers every call with a status line
// and a body that carry terminal escapes. Its words reach the console's
// errors by kind and warnings with the escapes shown as text, never as
// control characters; the CSV files and the HTML report hold none; the
// summary JSON keeps the server's words exactly, escaped by its encoding.
func TestFaultServerTextSanitised(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var answered atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					// Read a request's head; the calls are GETs without a body.
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					body := "<h1>" + hostile + "</h1>"
					fmt.Fprintf(c, "HTTP/1.1 500 %s\r\nContent-Length: %d\r\n\r\n%s", hostile, len(body), body)
					answered.Add(1)
				}
			}()
		}
	}()

	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 5
  request "r" {
    path = "/"
    check {
      body_contains = "never"
    }
  }
}
sink "csv" {
  path = "out.csv"
  raw  = true
}
sink "html" {
  path = "report.html"
}
`)
	r := hload(t, dir, "apply", "--no-color", "--summary-export", "out.json", "--var", "base_url=http://"+ln.Addr().String(), "test.hcl")
	if r.code != exitThreshold || answered.Load() != 5 {
		t.Fatalf("exit %d and the server answered %d calls, want 99 (every call failed) and 5\n%s%s", r.code, answered.Load(), r.stdout, r.stderr)
	}
	t.Logf("the console:\n%s", r.stdout)
	console := r.stdout + r.stderr
	if i := strings.IndexAny(console, "\x1b\x07"); i >= 0 {
		t.Errorf("the console holds a control character at %d: %q", i, console[max(0, i-40):min(len(console), i+40)])
	}
	shown := `500 \x1b[2J\x1b]0;owned\x07`
	for _, where := range []string{"      http_5xx: " + shown + "\n", "every call failed (5 of 5: http_5xx 5): " + shown + "\n"} {
		if !strings.Contains(r.stdout, where) {
			t.Errorf("the console lacks %q: the server's words, escaped", where)
		}
	}

	for _, name := range []string{"out.csv", "out.raw.csv", "report.html", "out.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexAny(data, "\x1b\x07"); i >= 0 {
			t.Errorf("%s holds a control character at %d: %q", name, i, data[max(0, i-40):min(len(data), i+40)])
		}
		if name == "report.html" && !bytes.Contains(data, []byte("<div>"+shown+"</div>")) {
			t.Errorf("the report does not show the server's words escaped")
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Scenarios map[string]struct {
			Requests map[string]struct {
				ErrorMessages map[string][]string `json:"error_messages"`
			} `json:"requests"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if got := sum.Scenarios["s"].Requests["r"].ErrorMessages["http_5xx"]; len(got) != 1 || got[0] != "500 "+hostile {
		t.Errorf("summary JSON messages %q, want the server's status line as it came, %q", got, "500 "+hostile)
	}
}

// TestErrorLineSanitised: the error hload prints last, on stderr, may
// quote what it did not write (a sink's database, a plugin, a path); its
// control characters are escaped.
func TestErrorLineSanitised(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"report", filepath.Join(t.TempDir(), "x"+hostile+".json")}, &stdout, &stderr)
	if code != exitUsage || strings.ContainsAny(stderr.String(), "\x1b\x07") || !strings.Contains(stderr.String(), `x\x1b[2J\x1b]0;owned\x07.json`) {
		t.Errorf("exit %d, stderr %q; want 2 and the name escaped", code, stderr.String())
	}
}
