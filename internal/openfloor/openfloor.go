// Package openfloor is the open model at its cheapest, for comparison:
// keep-alive connections that write a constant GET and read its answer
// with nothing between the socket and the caller, and a pacer with one
// timer that hands each planned start to the connection freed last, as
// hload's pool hands it to the VU freed last. What it spends per request
// at a rate is what any Go client spends there, before any protocol,
// metric or feature of its own: the floor that hload's open model is
// judged against, measured on the same machine in the same run (the
// bench harness's floor tool, and core's BenchmarkOpenFloor).
package openfloor

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is one keep-alive connection that sends a fixed GET.
type Conn struct {
	c   net.Conn
	get []byte
	buf []byte
}

// Dial opens a connection to addr (host:port) for GETs of path.
func Dial(addr, path string) (*Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	get := fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
	return &Conn{c: c, get: get, buf: make([]byte, 4096)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

var (
	headEnd       = []byte("\r\n\r\n")
	contentLength = []byte("\r\ncontent-length:")
)

// Get sends the GET and reads its answer, which must fit the buffer and
// carry a Content-Length, as a hello server's does; a status other than
// 2xx is an error.
func (c *Conn) Get() error {
	if _, err := c.c.Write(c.get); err != nil {
		return err
	}
	n, want := 0, -1
	for want < 0 || n < want {
		if n == len(c.buf) {
			return errors.New("openfloor: the answer is larger than 4 KB")
		}
		m, err := c.c.Read(c.buf[n:])
		if err != nil {
			return err
		}
		n += m
		if want < 0 {
			want = answerLength(c.buf[:n])
			if want == -2 {
				return fmt.Errorf("openfloor: an answer without Content-Length: %q", c.buf[:min(n, 64)])
			}
		}
	}
	if n < 12 || c.buf[9] != '2' {
		return fmt.Errorf("openfloor: %q", c.buf[:min(n, 12)])
	}
	return nil
}

// answerLength is the length of the answer whose start is in b: its head
// and its body; -1 while the head is incomplete, -2 when it has no
// Content-Length.
func answerLength(b []byte) int {
	end := bytes.Index(b, headEnd)
	if end < 0 {
		return -1
	}
	head := bytes.ToLower(b[:end+2])
	i := bytes.Index(head, contentLength)
	if i < 0 {
		return -2
	}
	v := head[i+len(contentLength):]
	v = v[:bytes.IndexByte(v, '\r')]
	size, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	if err != nil {
		return -2
	}
	return end + 4 + size
}

// Closed loops a GET on every connection for d, and returns how many were
// answered: the closed model, each connection busy all the time.
func Closed(conns []*Conn, d time.Duration) (int64, error) {
	end := time.Now().Add(d)
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errs  = make([]error, len(conns))
	)
	for i, c := range conns {
		wg.Go(func() {
			n := int64(0)
			for time.Now().Before(end) {
				if errs[i] = c.Get(); errs[i] != nil {
					break
				}
				n++
			}
			total.Add(n)
		})
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}

// Result is what an open run did.
type Result struct {
	// Late is how late each GET started against its planned start.
	Late []time.Duration
	// Dropped counts the planned starts that found no idle connection.
	Dropped int64
	// Failed counts the GETs that failed; Err is the first failure.
	Failed int64
	Err    error
}

// Open sends rate GETs a second for d, each on the connection that went
// idle last, starting each at its planned time.
func Open(conns []*Conn, rate int, d time.Duration) Result {
	var (
		mu   sync.Mutex
		res  Result
		idle = slices.Clone(conns)
		wg   sync.WaitGroup
	)
	res.Late = make([]time.Duration, 0, int(d.Seconds()*float64(rate))+1)
	jobs := make(map[*Conn]chan time.Time, len(conns))
	for _, c := range conns {
		ch := make(chan time.Time, 1)
		jobs[c] = ch
		wg.Go(func() {
			for planned := range ch {
				late := time.Since(planned)
				err := c.Get()
				mu.Lock()
				res.Late = append(res.Late, late)
				if err != nil {
					res.Failed++
					if res.Err == nil {
						res.Err = err
					}
				} else {
					// A failed connection stays out of the pool.
					idle = append(idle, c)
				}
				mu.Unlock()
			}
		})
	}
	every := time.Second / time.Duration(rate)
	timer := time.NewTimer(time.Hour)
	start := time.Now()
	for k := range int(d / every) {
		planned := start.Add(time.Duration(k) * every)
		if wait := time.Until(planned); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		mu.Lock()
		var c *Conn
		if n := len(idle); n > 0 {
			c, idle = idle[n-1], idle[:n-1]
		} else {
			res.Dropped++
		}
		mu.Unlock()
		if c != nil {
			jobs[c] <- planned
		}
	}
	for _, ch := range jobs {
		close(ch)
	}
	wg.Wait()
	return res
}

// P99 is the 99th percentile of ds, which it sorts.
func P99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)*99/100]
}
