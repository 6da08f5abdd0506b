package main

import (
	"net"
	"strconv"
	"testing"
)

func TestCandidateRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi int
	}{
		{"32768\t60999\n", 10000, 32767},
		{"1024 65535", 0, 0},  // nothing left below: the kernel chooses
		{"10500 65535", 0, 0}, // fewer than 1000 below
		{"", 0, 0},
		{"garbage", 0, 0},
	}
	for _, tt := range tests {
		if lo, hi := candidateRange(tt.in); lo != tt.lo || hi != tt.hi {
			t.Errorf("candidateRange(%q) = %d, %d, want %d, %d", tt.in, lo, hi, tt.lo, tt.hi)
		}
	}
}

// TestPickSkipsBusyPorts holds a port and checks that pick never returns
// it: asked for a port from a range of only that one, it fails; asked the
// kernel, it gets others.
func TestPickSkipsBusyPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	for range 20 {
		ports, err := pick(1, busy, busy, probe)
		if err == nil {
			t.Fatalf("pick(1) from only the held port %d returned %v", busy, ports)
		}
	}
	for range 20 {
		ports, err := pick(2, 0, 0, probe)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 2 || ports[0] == ports[1] {
			t.Fatalf("pick(2) = %v, want two distinct ports", ports)
		}
		for _, p := range ports {
			if p == busy {
				t.Fatalf("pick returned the held port %d", busy)
			}
		}
	}
}

// TestPickReturnsListenablePorts checks, with the machine's own range, that
// every port returned can be listened on right after, and lies in the range.
func TestPickReturnsListenablePorts(t *testing.T) {
	lo, hi := candidateRange(readFile("/proc/sys/net/ipv4/ip_local_port_range"))
	ports, err := pick(5, lo, hi, probe)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 5 {
		t.Fatalf("pick(5) = %v", ports)
	}
	distinct := map[int]bool{}
	for _, p := range ports {
		distinct[p] = true
		if lo > 0 && (p < lo || p > hi) {
			t.Errorf("port %d is outside [%d, %d]", p, lo, hi)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d was returned as free, but: %v", p, err)
			continue
		}
		ln.Close()
	}
	if len(distinct) != 5 {
		t.Errorf("pick(5) = %v, not 5 distinct ports", ports)
	}
}
