package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hload/hload/internal/tcptest"
)

// closeEveryServer answers every request with a complete keep-alive
// response, with no Connection header, and closes the connection right
// after every nth response: a FIN, as servers do at their keep-alive limit.
// With withFIN the FIN leaves in the response's last segment (TCP_CORK
// holds the response until the close); without it, it follows as the
// server's next system call sends it. It counts the requests it read and
// the responses it wrote.
type closeEveryServer struct {
	url          string
	read, served atomic.Int64
	conns        atomic.Int64
}

func newCloseEveryServer(t *testing.T, every int, withFIN bool) *closeEveryServer {
	t.Helper()
	s := &closeEveryServer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			wg.Go(func() { s.serve(t, conn.(*net.TCPConn), every, withFIN) })
		}
	})
	s.url = "http://" + ln.Addr().String()
	return s
}

func (s *closeEveryServer) serve(t *testing.T, conn *net.TCPConn, every int, withFIN bool) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, r.Body)
		s.read.Add(1)
		last := n%every == 0
		if last && withFIN {
			tcptest.Cork(t, conn)
		}
		if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
		s.served.Add(1)
		if last {
			return // the deferred Close: the FIN
		}
	}
}

// TestFaultServerCloseIsNotReused is Must-show 3 of issue 23: 2 VUs make 60
// calls to a server that closes its connection after every 3rd response
// with a FIN and no Connection: close. When the FIN comes with the
// response, all 60 are served and counted 200, by the server's count; when
// it follows the response, a call written before it arrives fails at once
// (idle_closed or reset), and hload's 200s are still the server's
// responses. No call waits for its timeout.
func TestFaultServerCloseIsNotReused(t *testing.T) {
	const calls = 60
	for _, withFIN := range []bool{true, false} {
		t.Run(fmt.Sprintf("FIN with the response %v", withFIN), func(t *testing.T) {
			if withFIN && !tcptest.CanCork {
				t.Skip("TCP_CORK is Linux's")
			}
			srv := newCloseEveryServer(t, 3, withFIN)
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", `
variable "base_url" {}
target "t" {
  base_url = var.base_url
  timeout  = "5s"
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 30
  request "r" {
    path = "/r"
  }
}
`)
			r := hload(t, dir, "apply", "test.hcl", "--quiet", "--summary-export", "summary.json", "--var", "base_url="+srv.url)
			sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
			req := sum.Scenarios["s"].Requests["r"]
			if req == nil {
				t.Fatalf("exit %d, no figures for request r:\n%s%s", r.code, r.stdout, r.stderr)
			}
			read, served := srv.read.Load(), srv.served.Load()
			t.Logf("exit %d; hload: %d calls, status %v, errors %v; the server: %d requests read, %d served, %d connections",
				r.code, req.Count, req.Status, req.ErrorsByKind, read, served, srv.conns.Load())
			if req.Count != calls || req.Status["200"] != served || req.ErrorsByKind["timeout"] != 0 {
				t.Errorf("hload counted %d calls, %d of them 200 (%d timeouts); the server served %d", req.Count, req.Status["200"], req.ErrorsByKind["timeout"], served)
			}
			if raced := req.ErrorsByKind["idle_closed"] + req.ErrorsByKind["reset"]; req.Errors != raced || req.Status["200"]+raced != calls {
				t.Errorf("errors %v: want only idle_closed or reset beside the 200s", req.ErrorsByKind)
			}
			if withFIN && (served != calls || read != calls || r.code != exitOK) {
				t.Errorf("exit %d; the server read %d requests and served %d, want %d and exit 0:\n%s%s", r.code, read, served, calls, r.stdout, r.stderr)
			}
		})
	}
}
