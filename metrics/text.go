package metrics

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character that could drive a terminal
// escaped, so that text a server chose (a status line, an error body, a
// reason in a message or a warning) is shown as text and never acted on:
// "\x1b[2J" would clear the screen, "\x1b]0;...\x07" retitle the window,
// "\r" overwrite the line, a bidirectional override reorder what follows.
// Escaped are the C0 controls but newline and tab, DEL, the C1 controls,
// the bidirectional embeddings, overrides and isolates, and the bytes of
// invalid UTF-8; they are written as Go escapes (\x1b, \u009b, \u202e).
// Every place that prints such text to a terminal or a text file calls
// it; JSON needs no such care, as its encoding escapes controls itself.
// A string with nothing to escape is returned as is, without allocating.
func Printable(s string) string {
	i := 0
	for i < len(s) {
		esc, size := escapeAt(s, i)
		if esc {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		esc, size := escapeAt(s, i)
		switch {
		case !esc:
			b.WriteString(s[i : i+size])
		case size == 1:
			// A control byte, or a byte of invalid UTF-8.
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// escapeAt reports whether the character at s[i] must be escaped, and its
// length in bytes (1 for a byte of invalid UTF-8).
func escapeAt(s string, i int) (bool, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f, 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return true, 1
	case r >= 0x80 && r <= 0x9f: // C1 controls, such as CSI (0x9b)
		return true, size
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi
		return true, size
	}
	return false, size
}
