package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/hload/hload/internal/openfloor"
)

// The floor is the open model at its cheapest (internal/openfloor): raw
// keep-alive connections and hload's kind of pacer, with no protocol,
// metric or feature between the socket and the pacer. The harness runs
// it as this binary with -floor, pinned as every tool is, in the same
// round as hload: what it spends per request at a rate is what any Go
// client spends there on this machine, and hload is judged against it.

// floorConnsPerRate is the floor's connections, dialed before its pacer
// starts: 20 ms of the rate, twice hload's default pre-allocated VUs, so
// that a stall of the machine of a few milliseconds drops nothing.
const floorConnsPerRate = 0.020

// floorFigures is what -floor prints, on one line of JSON.
type floorFigures struct {
	Requests      int64   `json:"requests"`
	Failed        int64   `json:"failed"`
	Dropped       int64   `json:"dropped"`
	LatenessP99Ms float64 `json:"lateness_p99_ms"`
	Connections   int     `json:"connections"`
	Error         string  `json:"error,omitempty"`
}

// runFloor is bench -floor: GETs of base at rate a second for d.
func runFloor(base string, rate int, d time.Duration, stdout io.Writer) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-floor-url %q: want http://host:port/", base)
	}
	if rate < 1 {
		return fmt.Errorf("-floor-rate %d: want requests per second, at least 1", rate)
	}
	n := max(1, int(float64(rate)*floorConnsPerRate+0.5))
	conns := make([]*openfloor.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := openfloor.Dial(u.Host, "/")
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	res := openfloor.Open(conns, rate, d)
	f := floorFigures{Requests: int64(len(res.Late)), Failed: res.Failed, Dropped: res.Dropped,
		LatenessP99Ms: float64(openfloor.P99(res.Late)) / float64(time.Millisecond), Connections: n}
	if res.Err != nil {
		f.Error = res.Err.Error()
	}
	return json.NewEncoder(stdout).Encode(f)
}

// floorOpen is the floor at the run's rate.
func floorOpen(name string) *tool {
	return &tool{name: name, self: true, counted: "http", figures: parseFloor,
		note: fmt.Sprintf("a raw Go client: keep-alive connections (%.0f ms of the rate, dialed first), hload's kind of pacer, nothing else", floorConnsPerRate*1000),
		args: func(r toolRun) []string {
			return []string{"-floor", "-floor-url", r.url, "-floor-rate", strconv.Itoa(r.rate), "-duration", r.duration.String()}
		}}
}

func parseFloor(_ context.Context, r toolRun, stdout []byte) (figures, error) {
	var f floorFigures
	if err := json.Unmarshal(stdout, &f); err != nil {
		return figures{}, fmt.Errorf("the floor's figures: %v: %q", err, tail(stdout))
	}
	if f.Error != "" && f.Failed == 0 {
		return figures{}, fmt.Errorf("the floor: %s", f.Error)
	}
	return figures{rps: float64(f.Requests) / r.duration.Seconds(), requests: f.Requests, errors: f.Failed, dropped: f.Dropped, latenessP99: f.LatenessP99Ms}, nil
}
