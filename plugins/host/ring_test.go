package host

import (
	"bytes"
	"strings"
	"testing"
)

// TestRingStreams: a ring's two streams (the process's stderr and
// go-plugin's stdio) each join their own partial writes, so half lines
// written at once on both never mix; every line is copied to hload's
// stderr with the plugin's prefix as soon as it ends, and an unfinished
// last line is kept and flushed when the plugin is gone.
func TestRingStreams(t *testing.T) {
	var out bytes.Buffer
	r := newRing(10)
	r.copyTo(&out, "plugin p: ")
	stdio := r.stream()
	r.Write([]byte("runtime "))
	stdio.Write([]byte("fmt "))
	r.Write([]byte("line\n"))
	stdio.Write([]byte("line\nlog line\n"))
	r.Write([]byte("panic: no newline"))
	if got, want := out.String(), "plugin p: runtime line\nplugin p: fmt line\nplugin p: log line\n"; got != want {
		t.Errorf("copied %q, want %q", got, want)
	}
	if got, want := strings.Join(r.Lines(), "|"), "runtime line|fmt line|log line|panic: no newline"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	r.flush()
	if !strings.HasSuffix(out.String(), "plugin p: panic: no newline\n") {
		t.Errorf("flush did not copy the unfinished line: %q", out.String())
	}
	if got := strings.Join(r.Lines(), "|"); got != "runtime line|fmt line|log line|panic: no newline" {
		t.Errorf("after flush, kept %q", got)
	}
}

// TestRingEscapesControlCharacters: a plugin that quotes its server's
// words (a terminal escape that clears the screen and retitles the
// window) reaches hload's stderr and the kept lines escaped.
func TestRingEscapesControlCharacters(t *testing.T) {
	var out bytes.Buffer
	r := newRing(10)
	r.copyTo(&out, "plugin p: ")
	r.Write([]byte("server said \x1b[2J\x1b]0;owned\x07\n"))
	for _, got := range []string{out.String(), strings.Join(r.Lines(), "|")} {
		if strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b[2J`) {
			t.Errorf("%q: want the escape sequence escaped", got)
		}
	}
}
