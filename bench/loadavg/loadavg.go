// Package loadavg reads the machine's load average, which the bench
// harness and the soak print beside their figures: other work on the
// machine makes them noisy.
package loadavg

import (
	"os"
	"strings"
)

// Read returns the 1, 5 and 15-minute load average, or "?".
func Read() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
