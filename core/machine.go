package core

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The process limits ReadMachine asks the system for.
type rlimitResource int

const (
	rlimitAS     rlimitResource = iota // the process's size (ulimit -v)
	rlimitData                         // its data: heap and other private memory (ulimit -d)
	rlimitNofile                       // its open files (ulimit -n)
)

// noLimit is what a limit read as "unlimited", or beyond any machine,
// becomes: cgroup v1 writes about 2^63 for no limit.
const noLimit = 1 << 62

// ReadMachine reads the limits of the machine hload runs on: the memory
// available (MemAvailable in /proc/meminfo), the memory limit of hload's
// cgroup (v2 or v1), and the process's address-space, data and open-file
// limits (RLIMIT_AS, RLIMIT_DATA, RLIMIT_NOFILE; Go raises the open-file
// limit to its hard limit at start, so that is the one read). A limit that
// is not set, or that this system does not have, is left out.
func ReadMachine() Machine {
	return readMachine(os.DirFS("/"), getrlimit)
}

// readMachine is ReadMachine on the files under root, with rlimit for the
// process limits: it returns the current limit, or false when there is
// none.
func readMachine(root fs.FS, rlimit func(rlimitResource) (uint64, bool)) Machine {
	var m Machine
	if avail, ok := meminfo(root, "MemAvailable"); ok {
		m.Limits = append(m.Limits, Limit{Kind: LimitMemory, Name: "MemAvailable in /proc/meminfo", Max: avail})
	}
	m.Limits = append(m.Limits, cgroupLimits(root)...)
	status := procStatus(root)
	if max, ok := rlimit(rlimitAS); ok {
		m.Limits = append(m.Limits, Limit{Kind: LimitAddressSpace, Name: "the address-space limit (ulimit -v, RLIMIT_AS)", Max: max, Used: status["VmSize"]})
	}
	if max, ok := rlimit(rlimitData); ok {
		m.Limits = append(m.Limits, Limit{Kind: LimitAddressSpace, Name: "the data limit (ulimit -d, RLIMIT_DATA)", Max: max, Used: status["VmData"]})
	}
	if max, ok := rlimit(rlimitNofile); ok {
		open, _ := fs.ReadDir(root, "proc/self/fd")
		m.Limits = append(m.Limits, Limit{Kind: LimitFiles, Name: "the open-file limit (ulimit -n, RLIMIT_NOFILE)", Max: max, Used: uint64(len(open))})
	}
	return m
}

// meminfo returns a field of /proc/meminfo in bytes.
func meminfo(root fs.FS, field string) (uint64, bool) {
	data, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	v, ok := kilobytes(data)[field]
	return v, ok
}

// procStatus returns the sizes of /proc/self/status in bytes, such as
// VmSize; empty when it cannot be read.
func procStatus(root fs.FS) map[string]uint64 {
	data, _ := fs.ReadFile(root, "proc/self/status")
	return kilobytes(data)
}

// kilobytes reads the "Name:   123 kB" lines of a /proc file, in bytes.
func kilobytes(data []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
			out[name] = n << 10
		}
	}
	return out
}

// cgroupLimits returns the memory limits of hload's cgroup and of its
// ancestors that set one, each less what the cgroup already uses, its
// reclaimable page cache aside. /proc/self/cgroup names the cgroup; in a
// container, whose cgroup is the root of its own view, the path it gives
// may not exist under /sys/fs/cgroup: the walk up to the root then finds
// the root's files, which are the container's own.
func cgroupLimits(root fs.FS) []Limit {
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return nil
	}
	var limits []Limit
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			limits = append(limits, cgroupChain(root, "sys/fs/cgroup", parts[2],
				"memory.max", "memory.current", "inactive_file")...)
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			limits = append(limits, cgroupChain(root, "sys/fs/cgroup/memory", parts[2],
				"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")...)
		}
	}
	return limits
}

// cgroupChain reads the memory limit of the cgroup at dir under mount, and
// of each of its ancestors up to mount itself, from the files named max and current; cache is
// the field of memory.stat that counts the page cache the kernel can take
// back.
func cgroupChain(root fs.FS, mount, dir, max, current, cache string) []Limit {
	dir = path.Clean("/" + dir)
	var limits []Limit
	for {
		at := path.Join(mount, dir)
		if limit, ok := readNumber(root, path.Join(at, max)); ok && limit < noLimit {
			used, _ := readNumber(root, path.Join(at, current))
			if stat, err := fs.ReadFile(root, path.Join(at, "memory.stat")); err == nil {
				if c, ok := statField(stat, cache); ok && c <= used {
					used -= c
				}
			}
			limits = append(limits, Limit{Kind: LimitMemory, Name: "the memory limit of cgroup /" + at + "/" + max, Max: limit, Used: used})
		}
		if dir == "/" {
			return limits
		}
		dir = path.Dir(dir)
	}
}

// readNumber reads a file that holds one number; "max" is no number.
func readNumber(root fs.FS, name string) (uint64, bool) {
	data, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}

// statField reads a "name value" line of a memory.stat file.
func statField(stat []byte, field string) (uint64, bool) {
	for _, line := range strings.Split(string(stat), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if ok && name == field {
			n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
