package protocols

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBodyScanFindsWhatContainsFinds writes random bodies in random
// pieces, and checks that what the scan found is what bytes.Contains finds
// in the whole body, and that it kept the body's first MaxBody bytes.
func TestBodyScanFindsWhatContainsFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var b BodyScan
	const alphabet = "ab"
	word := func(n int) string {
		s := make([]byte, n)
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(s)
	}
	found := 0
	for i := range 20000 {
		body := []byte(word(rng.IntN(40)))
		var needles []string
		for range 1 + rng.IntN(3) {
			needles = append(needles, word(1+rng.IntN(6)))
		}
		call := Call{KeepBody: rng.IntN(2) == 0, MaxBody: int64(rng.IntN(50)), BodyContains: needles}
		b.Reset(&call)
		for rest := body; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			if rng.IntN(3) == 0 {
				n = min(len(rest), 1+rng.IntN(3)) // many tiny pieces
			}
			b.Write(rest[:n])
			rest = rest[n:]
		}
		var s Sample
		b.Fill(&s)
		for j, n := range needles {
			want := bytes.Contains(body, []byte(n))
			if s.BodyFound[j] != want {
				t.Fatalf("case %d: %q in %q: found %v, want %v", i, n, body, s.BodyFound[j], want)
			}
			if want {
				found++
			}
		}
		kept := body
		if call.MaxBody > 0 && int64(len(kept)) > call.MaxBody {
			kept = kept[:call.MaxBody]
		}
		if !call.KeepBody {
			kept = nil
		}
		if !bytes.Equal(s.Body, kept) || call.KeepBody && s.BodySize != int64(len(body)) {
			t.Fatalf("case %d: kept %q of size %d, want %q of %d", i, s.Body, s.BodySize, kept, len(body))
		}
	}
	if found < 10000 {
		t.Errorf("only %d substrings found: the cases are too easy to miss", found)
	}
}

// TestBodyScan checks the cases by name: a match split across pieces, at
// the very end of a 200 MB body, no match, several substrings.
func TestBodyScan(t *testing.T) {
	block := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	const blocks = 200 << 20 / (64 << 10)
	cases := []struct {
		name    string
		pieces  func(write func([]byte))
		needles []string
		want    []bool
	}{
		{"split across pieces", func(w func([]byte)) {
			w([]byte("<html>... \"status\":\"o"))
			w([]byte("k\" ..."))
		}, []string{`"status":"ok"`}, []bool{true}},
		{"split over three pieces", func(w func([]byte)) {
			w([]byte("xxsta"))
			w([]byte("t"))
			w([]byte("usxx"))
		}, []string{"status"}, []bool{true}},
		{"at the end of 200 MB", func(w func([]byte)) {
			for range blocks {
				w(block)
			}
			w([]byte("THE END"))
		}, []string{"THE END"}, []bool{true}},
		{"split at the end of 200 MB", func(w func([]byte)) {
			for range blocks {
				w(block)
			}
			w([]byte("THE "))
			w([]byte("END"))
		}, []string{"THE END"}, []bool{true}},
		{"no match in 200 MB", func(w func([]byte)) {
			for range blocks {
				w(block)
			}
		}, []string{"THE END"}, []bool{false}},
		{"several", func(w func([]byte)) {
			w([]byte("alpha beta ga"))
			w([]byte("mma"))
		}, []string{"gamma", "delta", "alpha", "a b"}, []bool{true, false, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b BodyScan
			b.Reset(&Call{BodyContains: tc.needles})
			tc.pieces(func(p []byte) { b.Write(p) })
			var s Sample
			b.Fill(&s)
			if fmt.Sprint(s.BodyFound) != fmt.Sprint(tc.want) || s.Body != nil {
				t.Errorf("found %v, kept %d bytes; want %v and nothing kept", s.BodyFound, len(s.Body), tc.want)
			}
		})
	}
}

// TestBodyScanAllocatesNothing checks a scan reset for the same call again
// and again: once its buffers have grown, a body costs no allocation.
func TestBodyScanAllocatesNothing(t *testing.T) {
	call := Call{KeepBody: true, MaxBody: 1 << 10, BodyContains: []string{"needle", "other"}}
	piece := []byte(strings.Repeat("hay ", 300) + "nee")
	var b BodyScan
	one := func() {
		b.Reset(&call)
		b.Write(piece)
		b.Write([]byte("dle"))
		b.Write(piece)
		var s Sample
		b.Fill(&s)
	}
	one()
	if n := testing.AllocsPerRun(100, one); n != 0 {
		t.Errorf("a body allocated %v times", n)
	}
}
