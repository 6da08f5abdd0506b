package host

import (
	"bytes"
	"os"
	"strconv"
)

// dead reports whether process pid has exited (a zombie not yet reaped,
// or gone), as /proc says. A stopped or running process is not dead.
func dead(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}
