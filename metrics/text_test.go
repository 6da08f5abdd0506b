package metrics

import "testing"

func TestPrintable(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text, 상품 ✓", "plain text, 상품 ✓"},
		{"lines\nand\ttabs stay", "lines\nand\ttabs stay"},
		{"500 \x1b[2J\x1b]0;owned\x07", `500 \x1b[2J\x1b]0;owned\x07`},
		{"over\rwrite", `over\x0dwrite`},
		{"nul\x00 del\x7f", `nul\x00 del\x7f`},
		{"c1 csi \u009b2J", `c1 csi \u009b2J`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`},
		{"bad utf-8 \xff\xfe end", `bad utf-8 \xff\xfe end`},
		{"back\\slash", "back\\slash"},
		{"", ""},
	}
	for _, tc := range cases {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	clean := "scenario \"s\", request \"r\": every call failed (5 of 5: http_5xx 5): 500 Internal Server Error"
	if n := testing.AllocsPerRun(100, func() { _ = Printable(clean) }); n != 0 {
		t.Errorf("Printable of clean text allocates %v times, want 0", n)
	}
}
