package wire

import (
	"sync"
	"unsafe"

	"github.com/zclconf/go-cty/cty"
)

// encodeCache remembers the encoding of the last few request values. Most
// requests have no per-iteration expression, so the core hands the same
// value on every call, and comparing it with RawEquals costs a fraction of
// go-cty's msgpack encoding, which profiled as a third of the host's CPU
// on the isolated path.
type encodeCache struct {
	mu      sync.RWMutex
	entries [8]struct {
		val cty.Value
		enc []byte
	}
	next int
}

// encode returns val's encoding as ty, from the cache when it holds an
// equal value. The bytes are shared and must not be modified.
func (c *encodeCache) encode(val cty.Value, ty cty.Type) ([]byte, error) {
	c.mu.RLock()
	// Identity first: it costs a comparison of four words per entry.
	for i := range c.entries {
		e := &c.entries[i]
		if e.enc != nil && identical(e.val, val) {
			enc := e.enc
			c.mu.RUnlock()
			return enc, nil
		}
	}
	for i := range c.entries {
		e := &c.entries[i]
		if e.enc != nil && e.val.RawEquals(val) {
			enc := e.enc
			c.mu.RUnlock()
			return enc, nil
		}
	}
	c.mu.RUnlock()
	enc, err := encodeValue(val, ty)
	if err != nil || !val.IsWhollyKnown() {
		return enc, err
	}
	c.mu.Lock()
	e := &c.entries[c.next]
	e.val, e.enc = val, enc
	c.next = (c.next + 1) % len(c.entries)
	c.mu.Unlock()
	return enc, nil
}

// valueWords is cty.Value's layout: its type and its payload, two
// interfaces.
type valueWords [4]uintptr

// identityOK says whether cty.Value has the layout identical relies on.
var identityOK = unsafe.Sizeof(cty.Value{}) == unsafe.Sizeof(valueWords{})

// identical reports whether a and b are the very same value: the same type
// and the same payload, word for word. cty values are immutable, so such
// values are equal; a request without per-iteration expressions is handed
// over as one shared value, and this spares RawEquals' deep walk of it.
// false only means "not known to be identical".
func identical(a, b cty.Value) bool {
	if !identityOK {
		return false
	}
	return *(*valueWords)(unsafe.Pointer(&a)) == *(*valueWords)(unsafe.Pointer(&b))
}
