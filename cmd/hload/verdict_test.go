package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hload/hload/metrics"
)

// countingServer serves HTTP/1.1 by hand on 127.0.0.1 and counts, per
// request line ("GET /get"), the requests it read and the ones it answered
// with a reset or a 500. Every resetEvery-th connection is reset (SO_LINGER
// 0, then close) after reading its second request, without answering, so
// the reset falls on a reused keep-alive connection: where net/http would
// send a GET again. A connection carries at most three requests, the third
// answered with "Connection: close", so that connections keep coming.
// Every fiveHundredEvery-th request is answered 500.
type countingServer struct {
	url              string
	resetEvery       int
	fiveHundredEvery int

	mu       sync.Mutex
	conns    int
	requests int
	received map[string]int
	resets   map[string]int
	errors   map[string]int // answered 500
}

func newCountingServer(t *testing.T, resetEvery, fiveHundredEvery int) *countingServer {
	t.Helper()
	s := &countingServer{
		resetEvery: resetEvery, fiveHundredEvery: fiveHundredEvery,
		received: map[string]int{}, resets: map[string]int{}, errors: map[string]int{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			reset := s.resetEvery > 0 && s.conns%s.resetEvery == 0
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn.(*net.TCPConn), reset)
			}()
		}
	}()
	s.url = "http://" + ln.Addr().String()
	return s
}

func (s *countingServer) serve(conn *net.TCPConn, reset bool) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; n <= 3; n++ {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, r.Body)
		key := r.Method + " " + r.URL.Path
		s.mu.Lock()
		s.received[key]++
		s.requests++
		fail := s.fiveHundredEvery > 0 && s.requests%s.fiveHundredEvery == 0
		if reset && n == 2 {
			s.resets[key]++
			s.mu.Unlock()
			conn.SetLinger(0) // close with RST
			return
		}
		if fail {
			s.errors[key]++
		}
		s.mu.Unlock()
		status, closing := "200 OK", ""
		if fail {
			status = "500 Internal Server Error"
		}
		if n == 3 {
			closing = "Connection: close\r\n"
		}
		if _, err := fmt.Fprintf(conn, "HTTP/1.1 %s\r\nContent-Length: 2\r\n%s\r\nok", status, closing); err != nil {
			return
		}
	}
}

// counts returns copies of the server's counters.
func (s *countingServer) counts() (received, resets, errors map[string]int, conns int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return cp(s.received), cp(s.resets), cp(s.errors), s.conns
}

// applyTest runs `hload apply` in-process, through the CLI's own code path,
// and returns its exit code, output and summary.
func applyTest(t *testing.T, hcl string, vars ...string) (int, string, *metrics.Summary) {
	t.Helper()
	dir := t.TempDir()
	path := writeFile(t, dir, "test.hcl", hcl)
	out := filepath.Join(dir, "summary.json")
	args := []string{"apply", path, "--quiet", "--summary-export", out}
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("exit %d, no summary: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	var sum metrics.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, b)
	}
	return code, stdout.String() + stderr.String(), &sum
}

// The two loads of Must-show 1: a GET and a POST in the closed and in the
// open model, bounded to two seconds each.
const resetLoadClosed = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
  timeout  = 5
}
scenario "s" {
  executor      = "constant-vus"
  vus           = 8
  duration      = "2s"
  graceful_stop = "5s"
  request "get" {
    path = "/get"
  }
  request "post" {
    method = "POST"
    path   = "/post"
    body   = "hello"
  }
}
`

const resetLoadOpen = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
  timeout  = "5s"
}
scenario "s" {
  executor          = "constant-arrival-rate"
  rate              = 400
  duration          = "2s"
  pre_allocated_vus = 20
  max_vus           = 40
  graceful_stop     = "5s"
  request "get" {
    path = "/get"
  }
  request "post" {
    path = "/post"
    json = { n = 1 }
  }
}
`

// TestEveryRequestIsCountedOnce is Must-show 1 of issue 12: against a
// server that resets every 10th connection after reading a request, hload
// counts per request what the server received, and its errors of kind
// reset are the server's resets: no request is sent twice behind its back.
func TestEveryRequestIsCountedOnce(t *testing.T) {
	for _, tc := range []struct{ name, hcl string }{
		{"closed model", resetLoadClosed},
		{"open model", resetLoadOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountingServer(t, 10, 0)
			code, out, sum := applyTest(t, tc.hcl, "base_url="+srv.url)
			received, resets, _, conns := srv.counts()
			if code != exitOK {
				t.Fatalf("exit %d, want 0:\n%s", code, out)
			}
			reqs := sum.Scenarios["s"].Requests
			for name, key := range map[string]string{"get": "GET /get", "post": "POST /post"} {
				r := reqs[name]
				if r == nil {
					t.Fatalf("no figures for request %q: %v", name, reqs)
				}
				t.Logf("%s: hload counted %d, %d resets (errors %v); the server received %d and reset %d",
					name, r.Count, r.ErrorsByKind["reset"], r.ErrorsByKind, received[key], resets[key])
				if r.Count != int64(received[key]) {
					t.Errorf("%s: hload counted %d requests, the server received %d", name, r.Count, received[key])
				}
				if r.ErrorsByKind["reset"] != int64(resets[key]) || r.Errors != r.ErrorsByKind["reset"] {
					t.Errorf("%s: hload counted %d reset errors (%d errors in all: %v), the server reset %d",
						name, r.ErrorsByKind["reset"], r.Errors, r.ErrorsByKind, resets[key])
				}
			}
			// The test means something only if resets happened to both.
			if resets["GET /get"] < 5 || resets["POST /post"] < 5 {
				t.Errorf("too few resets to judge: %v over %d connections", resets, conns)
			}
		})
	}
}

// TestFailedResponsesFailTheRun is Must-show 2 of issue 12: with every 10th
// response a 500, an errors threshold of 1 % fails the run (exit 99), and
// hload's errors of kind http_5xx are the server's 500s.
func TestFailedResponsesFailTheRun(t *testing.T) {
	srv := newCountingServer(t, 0, 10)
	code, out, sum := applyTest(t, `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 4
  duration = "1s"
  request "r" {
    path = "/r"
  }
}
threshold {
  metric    = "errors"
  condition = "rate < 1%"
}
`, "base_url="+srv.url)
	received, _, errs, _ := srv.counts()
	r := sum.Scenarios["s"].Requests["r"]
	if r == nil {
		t.Fatalf("no figures for request r:\n%s", out)
	}
	t.Logf("hload: %d requests, errors %v, rate %.4f; the server: %d requests, %d answered 500",
		r.Count, r.ErrorsByKind, r.ErrorRate, received["GET /r"], errs["GET /r"])
	if code != exitThreshold || sum.Passed {
		t.Errorf("exit %d, passed %v; want %d and a failed run:\n%s", code, sum.Passed, exitThreshold, out)
	}
	if r.ErrorsByKind["http_5xx"] != int64(errs["GET /r"]) || r.Errors != r.ErrorsByKind["http_5xx"] {
		t.Errorf("hload counted %d http_5xx errors (%v), the server answered %d with 500", r.ErrorsByKind["http_5xx"], r.ErrorsByKind, errs["GET /r"])
	}
	if r.Count != int64(received["GET /r"]) || errs["GET /r"] < 10 {
		t.Errorf("hload counted %d requests, the server %d of which %d were 500s", r.Count, received["GET /r"], errs["GET /r"])
	}
}
