// Command freeport prints N free TCP ports on 127.0.0.1, one a line, for
// the service scripts (scripts/rabbitmq.sh, scripts/influxd.sh):
//
//	go run ./scripts/freeport 3
//
// A fresh Debian with only Go has neither python3 nor ss, so the scripts
// cannot find a free port in bash alone; this is the smallest tool that can.
//
// The ports are picked at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): a port in that range may be
// handed to any outgoing connection between our probe and the service's
// bind, a port below it only to another program that picks it on purpose.
// Each port is probed by listening on it and closing it again, so a port
// is still only free at the time of the probe: a script that starts a
// service on it must check that the service it started is the one that
// answers, and pick again when the bind fails.
package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

func main() {
	n := 1
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: freeport [N]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil || v < 1 || v > 100 {
			fmt.Fprintf(os.Stderr, "freeport: N must be a whole number from 1 to 100, not %q\n", os.Args[1])
			os.Exit(2)
		}
		n = v
	}
	lo, hi := candidateRange(readFile("/proc/sys/net/ipv4/ip_local_port_range"))
	ports, err := pick(n, lo, hi, probe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	for _, p := range ports {
		fmt.Println(p)
	}
}

func readFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 256))
	return string(b)
}

// minPort keeps clear of the well-known ports and of the 1024-9999 band,
// where developers run their own servers by hand.
const minPort = 10000

// candidateRange returns the ports to pick from, [lo, hi], given the
// content of ip_local_port_range ("32768\t60999\n"). When the ephemeral
// range leaves fewer than 1000 ports below it, or cannot be read, it
// returns 0, 0: let the kernel choose.
func candidateRange(ephemeral string) (lo, hi int) {
	f := strings.Fields(ephemeral)
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first-minPort < 1000 {
		return 0, 0
	}
	return minPort, first - 1
}

// probe reports a port that can be listened on now, on 127.0.0.1. Port 0
// asks the kernel for one.
func probe(port int) (int, bool) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, false
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, true
}

// pick returns n distinct ports that probe accepts, drawn at random from
// [lo, hi], or from the kernel when lo is 0.
func pick(n, lo, hi int, probe func(int) (int, bool)) ([]int, error) {
	seen := make(map[int]bool, n)
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 50*n {
			return nil, fmt.Errorf("found %d free ports of %d after %d tries", len(ports), n, tries)
		}
		want := 0
		if lo > 0 {
			want = lo + rand.IntN(hi-lo+1)
		}
		if seen[want] {
			continue
		}
		got, ok := probe(want)
		if !ok || seen[got] {
			continue
		}
		seen[got] = true
		ports = append(ports, got)
	}
	return ports, nil
}
