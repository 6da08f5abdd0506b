package protocols

import "bytes"

// BodyScan reads a response body as it streams, for what a call's checks
// and captures need of it: it keeps the body's first Call.MaxBody bytes
// when Call.KeepBody is set, and looks for each of Call.BodyContains,
// across the pieces it is written in, without keeping them. A client
// keeps one per VU and resets it per call; once its buffers have grown,
// it allocates nothing.
type BodyScan struct {
	keep bool
	max  int64 // 0: no bound
	kept []byte
	size int64

	// strs are the substrings of the last call, needles the same as
	// bytes, converted when they change.
	strs    []string
	needles [][]byte
	found   []bool
	left    int // substrings not found yet
	longest int
	// tail holds the last longest-1 bytes written, and seam is where a
	// piece's start is joined to it, so that a substring split across two
	// pieces is found.
	tail, seam []byte
}

// Reset starts the body of call.
func (b *BodyScan) Reset(call *Call) {
	b.keep, b.max, b.kept, b.size = call.KeepBody, call.MaxBody, b.kept[:0], 0
	if !sameStrings(b.strs, call.BodyContains) {
		b.strs = append(b.strs[:0], call.BodyContains...)
		b.needles = b.needles[:0]
		b.longest = 0
		for _, s := range call.BodyContains {
			b.needles = append(b.needles, []byte(s))
			b.longest = max(b.longest, len(s))
		}
	}
	b.found = b.found[:0]
	b.left = 0
	for _, n := range b.needles {
		b.found = append(b.found, len(n) == 0)
		if len(n) > 0 {
			b.left++
		}
	}
	b.tail = b.tail[:0]
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Write takes in the next piece of the body. It never fails.
func (b *BodyScan) Write(p []byte) (int, error) {
	b.size += int64(len(p))
	if b.keep {
		k := p
		if b.max > 0 {
			room := b.max - int64(len(b.kept))
			if room <= 0 {
				k = nil
			} else if int64(len(k)) > room {
				k = k[:room]
			}
		}
		b.kept = append(b.kept, k...)
	}
	if b.left > 0 {
		b.search(p)
	}
	return len(p), nil
}

// search looks for the substrings not found yet in p, and in p's start
// joined to the bytes before it.
func (b *BodyScan) search(p []byte) {
	w := b.longest - 1
	if len(b.tail) > 0 {
		b.seam = append(append(b.seam[:0], b.tail...), p[:min(len(p), w)]...)
		b.look(b.seam)
	}
	b.look(p)
	if b.left == 0 || w == 0 {
		return
	}
	if len(p) >= w {
		b.tail = append(b.tail[:0], p[len(p)-w:]...)
		return
	}
	b.tail = append(b.tail, p...)
	if n := len(b.tail); n > w {
		copy(b.tail, b.tail[n-w:])
		b.tail = b.tail[:w]
	}
}

func (b *BodyScan) look(h []byte) {
	for i, n := range b.needles {
		if !b.found[i] && bytes.Contains(h, n) {
			b.found[i] = true
			b.left--
		}
	}
}

// Searching reports whether a substring is still looked for: when none is
// and nothing is kept, the rest of the body need not be looked at (but it
// must still be read off the connection).
func (b *BodyScan) Searching() bool { return b.left > 0 || b.keep }

// Size returns the length of what was written since Reset.
func (b *BodyScan) Size() int64 { return b.size }

// Fill sets s's Body, BodySize and BodyFound from what was written. They
// are b's own buffers: valid until the next Reset.
func (b *BodyScan) Fill(s *Sample) {
	if b.keep {
		s.Body, s.BodySize = b.kept, b.size
	}
	if len(b.needles) > 0 {
		s.BodyFound = b.found
	}
}

// Shrink drops a kept buffer longer than limit, so that one large body
// does not hold its memory for the rest of the run.
func (b *BodyScan) Shrink(limit int) {
	if cap(b.kept) > limit {
		b.kept = nil
	}
}
