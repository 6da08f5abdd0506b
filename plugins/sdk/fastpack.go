package sdk

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"math/big"
	"slices"
	"sync"
	"unsafe"

	"github.com/zclconf/go-cty/cty"
)

// packer writes cty values in go-cty's msgpack format (cty/msgpack's
// Unmarshal reads them back as the same values), for the attributes a
// request sends per call. Profiled through a plugin on the bench
// harness's dynamic POST, go-cty's Marshal spent more than half of the
// host's CPU on numbers: it compares each with both infinities through
// RawEquals, which formats both numbers in decimal, and writes a number
// no float64 holds exactly (19.99, as HCL parses it) as the decimal text
// math/big computes anew every time. packer tells an infinity by its
// flag, and keeps the text of such a number, found by identity: a
// literal in the config is the same value on every call.
type packer struct {
	mu      sync.RWMutex
	numbers map[valueWords]packedNumber
}

type packedNumber struct {
	val  cty.Value // kept, so its payload's address is not reused
	text string
}

// maxPackedNumbers bounds the texts a packer keeps; numbers computed per
// call (a random price) would otherwise grow it without end.
const maxPackedNumbers = 1024

// errNotPackable says a value needs go-cty's own encoding: it is unknown,
// marked, or of a type packer does not write.
var errNotPackable = errors.New("not packable")

// pack appends v, whose type is its own, to b. It fails with
// errNotPackable rather than write what go-cty's Unmarshal would read
// differently.
func (p *packer) pack(b []byte, v cty.Value) ([]byte, error) {
	if v.IsMarked() || !v.IsKnown() {
		return b, errNotPackable
	}
	if v.IsNull() {
		return append(b, 0xc0), nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return packString(b, v.AsString()), nil
	case ty == cty.Bool:
		if v.True() {
			return append(b, 0xc3), nil
		}
		return append(b, 0xc2), nil
	case ty == cty.Number:
		return p.packNumber(b, v), nil
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType():
		b = packHeader(b, v.LengthInt(), 0x90, 0xdc, 0xdd)
		var err error
		for it := v.ElementIterator(); it.Next() && err == nil; {
			_, e := it.Element()
			b, err = p.pack(b, e)
		}
		return b, err
	case ty.IsMapType():
		b = packHeader(b, v.LengthInt(), 0x80, 0xde, 0xdf)
		var err error
		for it := v.ElementIterator(); it.Next() && err == nil; {
			k, e := it.Element()
			b = packString(b, k.AsString())
			b, err = p.pack(b, e)
		}
		return b, err
	case ty.IsObjectType():
		// go-cty writes attributes by name, sorted.
		names := slices.Sorted(maps.Keys(ty.AttributeTypes()))
		b = packHeader(b, len(names), 0x80, 0xde, 0xdf)
		var err error
		for _, name := range names {
			b = packString(b, name)
			if b, err = p.pack(b, v.GetAttr(name)); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, errNotPackable
}

// packNumber writes a number as go-cty does: a whole number that fits as
// an int64, another that a float64 holds exactly as a float64, an
// infinity as a float64, and anything else as its decimal text.
func (p *packer) packNumber(b []byte, v cty.Value) []byte {
	if t, ok := p.text(v); ok {
		return packString(b, t)
	}
	bf := v.AsBigFloat()
	switch {
	case bf.IsInf():
		return packFloat(b, math.Inf(bf.Sign()))
	case bf.IsInt():
		if i, acc := bf.Int64(); acc == big.Exact {
			return packInt(b, i)
		}
	default:
		if f, acc := bf.Float64(); acc == big.Exact {
			return packFloat(b, f)
		}
	}
	t := bf.Text('f', -1)
	p.remember(v, t)
	return packString(b, t)
}

func (p *packer) text(v cty.Value) (string, bool) {
	if !identityOK {
		return "", false
	}
	p.mu.RLock()
	n, ok := p.numbers[*(*valueWords)(unsafe.Pointer(&v))]
	p.mu.RUnlock()
	return n.text, ok
}

func (p *packer) remember(v cty.Value, text string) {
	if !identityOK || !p.mu.TryLock() {
		return
	}
	if p.numbers == nil || len(p.numbers) >= maxPackedNumbers {
		p.numbers = make(map[valueWords]packedNumber)
	}
	p.numbers[*(*valueWords)(unsafe.Pointer(&v))] = packedNumber{val: v, text: text}
	p.mu.Unlock()
}

func packString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<8:
		b = append(b, 0xd9, byte(n))
	case n < 1<<16:
		b = append(b, 0xda)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0xdb)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return append(b, s...)
}

// packHeader writes an array's or a map's length: fix is the code of the
// short form, c16 and c32 those of the longer ones.
func packHeader(b []byte, n int, fix, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
	}
}

func packInt(b []byte, i int64) []byte {
	switch {
	case i >= 0 && i < 128:
		return append(b, byte(i))
	case i < 0 && i >= -32:
		return append(b, byte(i))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(i))
}

func packFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}
