package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
)

// servePprof serves the process's runtime profiles (goroutine, heap,
// allocs, threadcreate, block, mutex) at /debug/pprof/NAME (?gc=1 runs a
// garbage collection first, ?debug=1 writes text) on the
// loopback address HLOAD_PPROF_ADDR names, for as long as the process
// runs: bench/soak reads the goroutines of a long run there. It uses
// runtime/pprof on a mux of its own, not net/http/pprof, whose import
// would register on http.DefaultServeMux. Unset, it does nothing.
func servePprof(stderr io.Writer) {
	addr := os.Getenv("HLOAD_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(stderr, "hload: HLOAD_PPROF_ADDR=%s: want a loopback address such as 127.0.0.1:6060; profiles not served\n", addr)
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "hload: HLOAD_PPROF_ADDR: %v; profiles not served\n", err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/{name}", func(w http.ResponseWriter, r *http.Request) {
		p := pprof.Lookup(r.PathValue("name"))
		if p == nil {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("gc") == "1" {
			runtime.GC() // as net/http/pprof's gc=1: the heap's live objects only
		}
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		if debug > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		p.WriteTo(w, debug)
	})
	go http.Serve(ln, mux)
}
