package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// body is what the target server answers every request with.
var body = bytes.Repeat([]byte("x"), 60)

// bigFiller is what /big's bodies are made of, and bigEnd how they end:
// the big-body case's check looks for bigEnd, at the very end.
var (
	bigFiller = bytes.Repeat([]byte("0123456789abcdef"), 4096)
	bigEnd    = []byte("THE END")
)

// serveBig answers /big?size=N: N bytes of filler that end with bigEnd,
// written from one buffer, with a Content-Length.
func serveBig(w http.ResponseWriter, size int64) {
	size = max(size, int64(len(bigEnd)))
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	for rest := size - int64(len(bigEnd)); rest > 0; {
		n := min(rest, int64(len(bigFiller)))
		if _, err := w.Write(bigFiller[:n]); err != nil {
			return
		}
		rest -= n
	}
	w.Write(bigEnd)
}

// countPath is where the target server tells how many requests it has
// answered, how many echo connections it has served, how many HTTP
// connections it has accepted and its longest stall since the last read,
// as "HTTP ECHO CONNS STALL_US": counts hload did not write, to check its
// own against, the connections a tool's pool opened, which no tool
// reports the same way, and how long the server's core stopped serving.
const countPath = "/__count"

// stallTick is how often the server's stall watch wakes.
const stallTick = time.Millisecond

// stallWindow is how near a stall requests must have come, before it or
// after it, for the stall to be the load's.
const stallWindow = 10 * time.Millisecond

// watchStalls wakes every stallTick until done closes, and keeps in most
// the longest a wake-up came late while the server was answering
// requests: how long the server's core went without running the server
// (the hypervisor, another process). An open model that keeps its
// schedule through a stall of S has rate x S calls in flight at once, one
// connection each over HTTP/1.1, whatever the tool: this is the server's
// own account of what a pool had to grow for.
//
// A stall counts when requests came within stallWindow before it or
// after it. Not only in the tick before or across it: a light load, a
// client that itself waits for a CPU, may leave a tick or two without a
// request, and after a stall the watch may wake before the handlers that
// were held. A stall with no request near it is not the load's.
func watchStalls(requests *atomic.Int64, most *atomic.Int64, done <-chan struct{}) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last, seen := time.Now(), requests.Load()
	var moved time.Time // the last wake at which requests had come
	// A stall with no request before it, kept until stallWindow has
	// passed: requests that come in that time make it the load's.
	var pending time.Duration
	var pendingUntil time.Time
	keep := func(late time.Duration) {
		if late > time.Duration(most.Load()) {
			most.Store(int64(late))
		}
	}
	for {
		select {
		case <-done:
			return
		case <-t.C:
			now := time.Now()
			n := requests.Load()
			if n != seen {
				if pending > 0 && !now.After(pendingUntil) {
					keep(pending)
				}
				pending = 0
				moved = now
			}
			if late := now.Sub(last) - stallTick; late > 0 {
				switch {
				case n != seen || last.Sub(moved) <= stallWindow:
					keep(late)
				case late > pending || now.After(pendingUntil):
					pending, pendingUntil = late, now.Add(stallWindow)
				}
			}
			last, seen = now, n
		}
	}
}

// serve is the target server: this binary run again with -serve. It
// answers every request on a loopback port with the 60-byte body, after
// sleeping ms milliseconds when the path is /slow?ms=N (the idle-VU case),
// or with N bytes ending with "THE END" when it is /big?size=N,
// and echoes every byte on a second port (the echo plugin's case). It
// prints both addresses on one line on stdout and exits when stdin
// closes, that is when the harness stops it or dies.
func serve(stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	echoLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var requests, echoes, conns, stall atomic.Int64
	done := make(chan struct{})
	defer close(done)
	go watchStalls(&requests, &stall, done)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == countPath {
				fmt.Fprintf(w, "%d %d %d %d", requests.Load(), echoes.Load(), conns.Load(), stall.Swap(0)/int64(time.Microsecond))
				return
			}
			requests.Add(1)
			if r.URL.Path == "/big" {
				size, _ := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
				serveBig(w, size)
				return
			}
			if r.URL.Path == "/slow" {
				ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
				select {
				case <-time.After(time.Duration(ms) * time.Millisecond):
				case <-r.Context().Done():
				}
			}
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		// StateNew comes before the connection's first request is read, so
		// a count read on a new connection already includes it.
		ConnState: func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	go func() {
		for {
			conn, err := echoLn.Accept()
			if err != nil {
				return
			}
			echoes.Add(1)
			go func() {
				defer conn.Close()
				io.Copy(conn, conn)
			}()
		}
	}()
	fmt.Fprintln(stdout, ln.Addr().String(), echoLn.Addr().String())
	io.Copy(io.Discard, stdin)
	echoLn.Close()
	return srv.Close()
}

// pinning says whether processes can be pinned to a core each, and why
// not when they cannot.
type pinning struct {
	taskset string // taskset's path; "" when not pinning
	why     string // why not, when not pinning
}

func findPinning() pinning {
	if n := runtime.NumCPU(); n < 2 {
		return pinning{why: fmt.Sprintf("not pinned: %d core", n)}
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return pinning{why: "not pinned: taskset not found (Debian package util-linux)"}
	}
	return pinning{taskset: taskset}
}

// command returns the command that runs path with args, on core cpu when
// pinning. taskset execs the program, so the process, its rusage and its
// peak RSS are the program's own. The process gets a group of its own, so
// cancelling ctx sends SIGTERM to it and whatever it started (hload's
// plugin process); it is killed 10 s later if it has not exited, and when
// the harness dies.
func (p pinning) command(ctx context.Context, cpu int, path string, args ...string) *exec.Cmd {
	if p.taskset != "" {
		args = append([]string{"-c", strconv.Itoa(cpu), path}, args...)
		path = p.taskset
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// server is the running target server.
type server struct {
	cmd      *exec.Cmd
	stdin    io.Closer
	url      string // the HTTP server's base URL, ending in "/"
	echoAddr string // the echo server's host:port
	// counter reads the counts on a transport of its own, so that no
	// tool or test takes or closes its connection; ownConns are the
	// connections it opened, which the server counted as any other.
	counter  *http.Client
	ownConns int64
}

// startServer starts this binary with -serve, on core 1 when pinning, and
// checks that it answers with the body.
func startServer(ctx context.Context, p pinning) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := p.command(context.WithoutCancel(ctx), 1, self, "-serve")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the target server: %w", err)
	}
	s := &server{cmd: cmd, stdin: stdin,
		counter: &http.Client{Timeout: 5 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		httpAddr, echoAddr, ok := strings.Cut(a, " ")
		if !ok {
			s.stop()
			return nil, fmt.Errorf("the target server printed %q, want its two addresses", a)
		}
		s.url, s.echoAddr = "http://"+httpAddr+"/", echoAddr
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, errors.New("the target server printed no address within 10s")
	}
	if err := s.check(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// check makes one request, so a server that does not answer as planned
// fails the harness before any tool runs.
func (s *server) check() error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(s.url)
	if err != nil {
		return fmt.Errorf("the target server does not answer: %w", err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		return fmt.Errorf("the target server answered %s with %d bytes (%v), want 200 with %d bytes", resp.Status, len(got), err, len(body))
	}
	return nil
}

// serverCounts are what the server has counted so far: the requests it
// answered, the echo connections and the HTTP connections it accepted;
// and its longest stall under load since the count before, in µs.
type serverCounts struct {
	requests, echoes, conns int64
	stallUs                 int64
}

// counts are the server's counts so far, or an error. The connections
// leave out those the harness opened to read them: a run's difference of
// two counts is then the tool's own.
func (s *server) counts() (serverCounts, error) {
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			s.ownConns++
		}
	}}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+strings.TrimPrefix(countPath, "/"), nil)
	if err != nil {
		return serverCounts{}, err
	}
	resp, err := s.counter.Do(req)
	if err != nil {
		return serverCounts{}, fmt.Errorf("the target server's count: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return serverCounts{}, fmt.Errorf("the target server's count: %w", err)
	}
	c, err := parseCounts(data)
	if err != nil {
		return c, err
	}
	c.conns -= s.ownConns
	return c, nil
}

// parseCounts reads the server's "HTTP ECHO CONNS STALL_US" counts.
func parseCounts(data []byte) (serverCounts, error) {
	fields := strings.Fields(string(data))
	var n [4]int64
	if len(fields) != len(n) {
		return serverCounts{}, fmt.Errorf("the target server's count: cannot read %q", data)
	}
	for i, f := range fields {
		var err error
		if n[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return serverCounts{}, fmt.Errorf("the target server's count: cannot read %q", data)
		}
	}
	return serverCounts{requests: n[0], echoes: n[1], conns: n[2], stallUs: n[3]}, nil
}

// cpuSeconds is the CPU time (user+sys) the server has used so far, from
// /proc, or -1 when it cannot be read.
func (s *server) cpuSeconds() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th, stime the 13th,
	// both in clock ticks (USER_HZ, 100 on Linux).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / 100
}

// stop closes the server's stdin, which ends it, and waits for it; it
// kills it after 5 s.
func (s *server) stop() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// usage is what one run of a tool cost, from its rusage.
type usage struct {
	cpuSeconds float64 // user+sys, the tool's and the children it reaped
	peakRSSMB  float64 // the largest resident set of the tool or a child it reaped
}

func usageOf(state *os.ProcessState) usage {
	u := usage{cpuSeconds: (state.UserTime() + state.SystemTime()).Seconds()}
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		u.peakRSSMB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	return u
}

// tail returns the last lines of a tool's output, for an error message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 800 {
		s = "..." + s[len(s)-800:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}
