package wire

import (
	"runtime/debug"
	"strings"
	"testing"
)

func panicky() { panic("boom") }

// TestPanicMessage: a recovered panic's message gives its value and the
// function that panicked, with file and line, without the arguments' words.
func TestPanicMessage(t *testing.T) {
	var msg string
	func() {
		defer func() {
			if p := recover(); p != nil {
				msg = panicMessage(p, debug.Stack())
			}
		}()
		panicky()
	}()
	want := "Do panicked: boom at github.com/hload/hload/plugins/internal/wire.panicky (panic_test.go:9), called by github.com/hload/hload/plugins/internal/wire.TestPanicMessage.func1 (panic_test.go:"
	if !strings.HasPrefix(msg, want) {
		t.Errorf("message %q\nwant it to start %q", msg, want)
	}
	if got := panicMessage("x", nil); got != "Do panicked: x" {
		t.Errorf("without a stack: %q", got)
	}
}
