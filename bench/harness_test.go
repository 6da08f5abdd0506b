package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain makes this test binary the target server when startServer runs
// it with -serve, as it runs the harness's own binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-serve" {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startTestServer starts the target server for one test, within 30 s, and
// stops it when the test ends; ctx bounds what the test does with it.
func startTestServer(t *testing.T) (context.Context, *server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	srv, err := startServer(ctx, pinning{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return ctx, srv
}

// A run's result carries the server's own count of the calls and of the
// connections they came on, and a tool whose calls the server must count
// exactly (hload's) fails when the counts differ. The "tool" is /bin/true;
// its figures are the calls the test makes to the real target server
// while reading them.
func TestRunOnceChecksTheServersCount(t *testing.T) {
	ctx, srv := startTestServer(t)
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("true (coreutils) is not on PATH: %v", err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	// Each request of fresh comes on a connection of its own, which the server
	// counts; the harness's own reads of the counts are not among them.
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string, n int) error {
		return getWith(client, srv.url+path, n)
	}
	getNew := func(n int) error {
		return getWith(fresh, srv.url, n)
	}
	echo := func(n int) error {
		for range n {
			conn, err := net.DialTimeout("tcp", srv.echoAddr, 5*time.Second)
			if err != nil {
				return err
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			conn.Write([]byte("ping"))
			got := make([]byte, 4)
			_, err = io.ReadFull(conn, got)
			conn.Close()
			if err != nil || string(got) != "ping" {
				return fmt.Errorf("echo: %q, %v", got, err)
			}
		}
		return nil
	}
	for _, tt := range []struct {
		name     string
		counted  string
		send     func() error
		reported int64
		server   int64
		conns    int64 // the connections the server must have counted; -1: not checked
		wantErr  string
	}{
		{"hload agrees", "http", func() error { return get("", 3) }, 3, 3, -1, ""},
		{"hload reports one more than the server got", "http", func() error { return get("", 2) }, 3, 2, -1, "the server counted 2 http calls, tool reported 3"},
		{"the slow path answers the body and counts", "http", func() error { return get("slow?ms=20", 2) }, 2, 2, -1, ""},
		{"echo plugin agrees", "echo", func() error { return echo(2) }, 2, 2, 0, ""},
		{"echo plugin reports one more", "echo", func() error { return echo(1) }, 2, 1, 0, "the server counted 1 echo calls, tool reported 2"},
		{"a peer is not held to the count", "", func() error { return get("", 2) }, 3, 2, -1, ""},
		{"a connection per request", "http", func() error { return getNew(4) }, 4, 4, 4, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tl := &tool{name: "tool", caseName: "open-10000", counted: tt.counted, vus: 7,
				args: func(toolRun) []string { return nil },
				figures: func(context.Context, toolRun, []byte) (figures, error) {
					if err := tt.send(); err != nil {
						return figures{}, err
					}
					return figures{rps: 1, requests: tt.reported, latenessP99: 0.5}, nil
				}}
			r := toolRun{url: srv.url, echoAddr: srv.echoAddr, duration: time.Second, rate: 2000, program: trueBin, files: t.TempDir() + "/run"}
			res, err := runOnce(ctx, pinning{}, srv, tl, r)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if res.ServerRequests != tt.server || res.Requests != tt.reported || res.Case != "open-10000" ||
				res.Planned != 2000 || res.VUs != 7 || res.LatenessP99Ms == nil || *res.LatenessP99Ms != 0.5 {
				t.Errorf("result %+v, want the server's count %d", res, tt.server)
			}
			if tt.conns >= 0 && res.ServerConnections != tt.conns {
				t.Errorf("the server counted %d connections, want %d", res.ServerConnections, tt.conns)
			}
		})
	}
}

// getWith GETs url n times with client, each answered with the body.
func getWith(client *http.Client, url string, n int) error {
	for range n {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, body) {
			return fmt.Errorf("GET %s: %q", url, got)
		}
	}
	return nil
}

// A missing tool is skipped with its install command, or fails the
// harness with -require-all, before any load is sent.
func TestMissingTool(t *testing.T) {
	missing := &tool{name: "nosuch", program: "hload-bench-no-such-tool", install: "apt-get install -y nosuch", caseName: "get"}
	o := options{duration: time.Second, rounds: 1, connections: 1, tools: []*tool{missing}}
	var out strings.Builder
	err := bench(context.Background(), o, &out)
	if err == nil || err.Error() != "no tool to run" || !strings.Contains(out.String(), "nosuch: missing, skipped; install: apt-get install -y nosuch") {
		t.Errorf("error %v, output %q", err, out.String())
	}
	o.requireAll = true
	out.Reset()
	err = bench(context.Background(), o, &out)
	if err == nil || !strings.Contains(err.Error(), "-require-all: missing nosuch") {
		t.Errorf("-require-all: error %v", err)
	}
}

// The slow path holds its answer: a request sent after a slow one reached
// the server is answered while the slow one still waits. Order, not time,
// is asserted; the slow request is cancelled at the end.
func TestSlowPathHolds(t *testing.T) {
	ctx, srv := startTestServer(t)
	before, err := srv.counts()
	if err != nil {
		t.Fatal(err)
	}
	slowCtx, stopSlow := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(slowCtx, "GET", srv.url+"slow?ms=60000", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for {
		n, err := srv.counts()
		if err != nil {
			t.Fatal(err)
		}
		if n.requests > before.requests {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-done:
		t.Fatalf("the slow request was answered before a later fast one (error %v)", err)
	default:
	}
	stopSlow()
	<-done
}
