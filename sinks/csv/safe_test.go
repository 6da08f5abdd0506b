package csv

import (
	"encoding/csv"
	"strings"
	"testing"
)

// TestAppendFieldSafe: a text cell that a spreadsheet would run as a
// formula reads back prefixed with ', as OWASP advises against CSV
// injection, and its control characters read back escaped; the cell is
// quoted as encoding/csv quotes it.
func TestAppendFieldSafe(t *testing.T) {
	cases := []struct{ in, cell string }{
		{"=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"},
		{"+1", "'+1"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tcmd", "'\tcmd"},
		{"\rcmd", `\x0dcmd`},
		{"a\r\nb", "a\\x0d\nb"},
		{"kind\x1b[2J\x1b]0;owned\x07", `kind\x1b[2J\x1b]0;owned\x07`},
		{"a=b", "a=b"},
		{"http_5xx", "http_5xx"},
	}
	for _, tc := range cases {
		got := string(appendField(nil, tc.in)) + "\n"
		var want strings.Builder
		w := csv.NewWriter(&want)
		w.Write([]string{tc.cell})
		w.Flush()
		if got != want.String() {
			t.Errorf("appendField(%q) = %q, want %q", tc.in, got, want.String())
		}
		rec, err := csv.NewReader(strings.NewReader(got)).Read()
		if err != nil || len(rec) != 1 || rec[0] != tc.cell {
			t.Errorf("appendField(%q) reads back as %q (%v), want %q", tc.in, rec, err, tc.cell)
		}
	}
}
