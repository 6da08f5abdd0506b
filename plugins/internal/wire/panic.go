package wire

import (
	"fmt"
	"path/filepath"
	"strings"
)

// panicFrames is how many stack frames of a recovered panic its message
// keeps: the function that panicked and its caller say where; the whole
// stack is on the plugin's stderr, which hload shows.
const panicFrames = 2

// panicMessage is the sample message of a call whose Do panicked with p:
// the value and the first frames below the panic, as "func (file:line)".
// stack is debug.Stack() taken in the recovering function.
func panicMessage(p any, stack []byte) string {
	var frames []string
	lines := strings.Split(strings.TrimSpace(string(stack)), "\n")
	// The stack starts with the goroutine's header, then debug.Stack, the
	// recovering function and runtime's panic, each a function line and a
	// file line: the frames that matter follow "panic(".
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 2
			break
		}
	}
	for i := start; start >= 0 && i+1 < len(lines) && len(frames) < panicFrames; i += 2 {
		fn := lines[i]
		if j := strings.LastIndexByte(fn, '('); j > 0 {
			fn = fn[:j] // the arguments' words say nothing to a reader
		}
		file := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(file, " +0x"); j > 0 {
			file = file[:j]
		}
		frames = append(frames, fmt.Sprintf("%s (%s)", fn, filepath.Base(file)))
	}
	msg := fmt.Sprintf("Do panicked: %v", p)
	if len(frames) > 0 {
		msg += " at " + strings.Join(frames, ", called by ")
	}
	return msg
}
