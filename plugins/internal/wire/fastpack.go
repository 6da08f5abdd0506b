package wire

import (
	"encoding/binary"
	"errors"
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
		if isTrue(v) {
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
		// go-cty writes attributes by name, sorted. On the stack for an
		// object of a usual size.
		var buf [16]string
		names := buf[:0]
		for name := range ty.AttributeTypes() {
			names = append(names, name)
		}
		slices.Sort(names)
		b = packHeader(b, len(names), 0x80, 0xde, 0xdf)
		var err error
		for _, name := range names {
			b = packString(b, name)
			if b, err = p.pack(b, getAttr(v, name)); err != nil {
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
	bf, ok := rawNumber(v)
	if !ok {
		bf = v.AsBigFloat()
	}
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

// unpacker reads what packer writes, as go-cty's msgpack Unmarshal reads
// it, without its decoder's allocations, and keeps the values of the
// numbers that travel as text: parsing 19.99 at 512 bits was the larger
// part of the plugin's decoding. Anything packer does not write (an
// unknown value, the shorter integers go-cty writes) fails with
// errNotPackable, for go-cty to read instead. One goroutine only.
type unpacker struct {
	numbers map[string]cty.Value
	names   map[string]string
	// small are the numbers 0 to 127, made as they come: a hole's number
	// is most often a small count, and a number costs cty two
	// allocations.
	small [128]cty.Value
}

// unpack reads one value of type ty, all of b.
func (u *unpacker) unpack(b []byte, ty cty.Type) (cty.Value, error) {
	v, rest, err := u.value(b, ty)
	if err == nil && len(rest) != 0 {
		err = errNotPackable
	}
	return v, err
}

// value reads one value of type ty from the start of b, and returns it
// with the rest of b. A value it cannot read as ty is errNotPackable.
func (u *unpacker) value(b []byte, ty cty.Type) (cty.Value, []byte, error) {
	if len(b) == 0 {
		return cty.NilVal, b, errNotPackable
	}
	if b[0] == 0xc0 {
		return cty.NullVal(ty), b[1:], nil
	}
	switch {
	case ty == cty.String:
		s, rest, ok := unpackString(b)
		if !ok {
			return cty.NilVal, b, errNotPackable
		}
		return cty.StringVal(s), rest, nil
	case ty == cty.Bool:
		switch b[0] {
		case 0xc2:
			return cty.False, b[1:], nil
		case 0xc3:
			return cty.True, b[1:], nil
		}
	case ty == cty.Number:
		return u.number(b)
	case ty.IsListType(), ty.IsSetType():
		return u.collection(b, ty)
	case ty.IsTupleType():
		return u.tuple(b, ty)
	case ty.IsMapType(), ty.IsObjectType():
		return u.mapping(b, ty)
	}
	return cty.NilVal, b, errNotPackable
}

// collection reads a list or a set of type ty, an array.
func (u *unpacker) collection(b []byte, ty cty.Type) (cty.Value, []byte, error) {
	n, rest, ok := unpackHeader(b, 0x90, 0xdc, 0xdd)
	if !ok {
		return cty.NilVal, b, errNotPackable
	}
	ety := ty.ElementType()
	if n == 0 {
		if ty.IsListType() {
			return cty.ListValEmpty(ety), rest, nil
		}
		return cty.SetValEmpty(ety), rest, nil
	}
	vals := make([]cty.Value, n)
	var err error
	for i := range vals {
		if vals[i], rest, err = u.value(rest, ety); err != nil {
			return cty.NilVal, b, err
		}
	}
	if ty.IsListType() {
		return cty.ListVal(vals), rest, nil
	}
	return cty.SetVal(vals), rest, nil
}

// tuple reads a tuple of type ty, an array of as many elements.
func (u *unpacker) tuple(b []byte, ty cty.Type) (cty.Value, []byte, error) {
	etys := ty.TupleElementTypes()
	n, rest, ok := unpackHeader(b, 0x90, 0xdc, 0xdd)
	if !ok || (n != 0 && n != len(etys)) {
		return cty.NilVal, b, errNotPackable
	}
	if n == 0 {
		return cty.EmptyTupleVal, rest, nil
	}
	vals := make([]cty.Value, n)
	var err error
	for i := range vals {
		if vals[i], rest, err = u.value(rest, etys[i]); err != nil {
			return cty.NilVal, b, err
		}
	}
	return cty.TupleVal(vals), rest, nil
}

// mapping reads a map or an object of type ty, a msgpack map; an object
// has every attribute of ty.
func (u *unpacker) mapping(b []byte, ty cty.Type) (cty.Value, []byte, error) {
	n, rest, ok := unpackHeader(b, 0x80, 0xde, 0xdf)
	if !ok {
		return cty.NilVal, b, errNotPackable
	}
	if ty.IsMapType() && n == 0 {
		return cty.MapValEmpty(ty.ElementType()), rest, nil
	}
	if ty.IsObjectType() && n == 0 {
		return cty.EmptyObjectVal, rest, nil
	}
	if ty.IsObjectType() && n != len(ty.AttributeTypes()) {
		return cty.NilVal, b, errNotPackable
	}
	if ty.IsObjectType() && rawOK {
		return u.object(b, rest, n, ty)
	}
	vals := make(map[string]cty.Value, n)
	for range n {
		k, r, ok := unpackString(rest)
		if !ok {
			return cty.NilVal, b, errNotPackable
		}
		ety := cty.DynamicPseudoType
		if ty.IsMapType() {
			ety = ty.ElementType()
		} else if ety, ok = ty.AttributeTypes()[k]; !ok {
			return cty.NilVal, b, errNotPackable
		}
		v, r, err := u.value(r, ety)
		if err != nil {
			return cty.NilVal, b, err
		}
		vals[k], rest = v, r
	}
	if ty.IsMapType() {
		return cty.MapVal(vals), rest, nil
	}
	return cty.ObjectVal(vals), rest, nil
}

// object reads the n attributes of an object of type ty, after its
// header, into its payload, without cty.ObjectVal's new type: every
// attribute is read as its type in ty, so the object has type ty.
func (u *unpacker) object(b, rest []byte, n int, ty cty.Type) (cty.Value, []byte, error) {
	atys := ty.AttributeTypes()
	raw := make(map[string]any, n)
	for range n {
		kb, r, ok := unpackStringBytes(rest)
		if !ok {
			return cty.NilVal, b, errNotPackable
		}
		ety, ok := atys[string(kb)]
		if !ok {
			return cty.NilVal, b, errNotPackable
		}
		k := u.name(kb)
		v, r, err := u.value(r, ety)
		if err != nil {
			return cty.NilVal, b, err
		}
		raw[k], rest = rawPayload(v), r
	}
	if len(raw) != len(atys) {
		// A name twice: not what packer writes.
		return cty.NilVal, b, errNotPackable
	}
	return rawValue(ty, raw), rest, nil
}

// name is the string of an attribute's name, one per name rather than a
// new one on every call.
func (u *unpacker) name(b []byte) string {
	if s, ok := u.names[string(b)]; ok {
		return s
	}
	if u.names == nil || len(u.names) >= maxUnpackedNames {
		u.names = make(map[string]string)
	}
	s := string(b)
	u.names[s] = s
	return s
}

// maxUnpackedNames bounds the names an unpacker keeps. They are names of
// the object types of the stream's table, itself bounded; this bounds
// them should a stream's table ever not be.
const maxUnpackedNames = 1024

// number reads a number as packer writes it.
func (u *unpacker) number(b []byte) (cty.Value, []byte, error) {
	c := b[0]
	switch {
	case c < 0x80:
		v := &u.small[c]
		if *v == cty.NilVal {
			*v = cty.NumberIntVal(int64(c))
		}
		return *v, b[1:], nil
	case c >= 0xe0:
		return cty.NumberIntVal(int64(int8(c))), b[1:], nil
	case c == 0xd3 && len(b) >= 9:
		return cty.NumberIntVal(int64(binary.BigEndian.Uint64(b[1:]))), b[9:], nil
	case c == 0xcb && len(b) >= 9:
		return cty.NumberFloatVal(math.Float64frombits(binary.BigEndian.Uint64(b[1:]))), b[9:], nil
	}
	s, rest, ok := unpackString(b)
	if !ok {
		return cty.NilVal, b, errNotPackable
	}
	if v, ok := u.numbers[s]; ok {
		return v, rest, nil
	}
	v, err := cty.ParseNumberVal(s)
	if err != nil {
		return cty.NilVal, b, err
	}
	if u.numbers == nil || len(u.numbers) >= maxPackedNumbers {
		u.numbers = make(map[string]cty.Value)
	}
	u.numbers[s] = v
	return v, rest, nil
}

// unpackString reads a string's header and returns the string, copied:
// values outlive the batch they came in.
func unpackString(b []byte) (string, []byte, bool) {
	s, rest, ok := unpackStringBytes(b)
	return string(s), rest, ok
}

// unpackStringBytes is unpackString's bytes, b's own.
func unpackStringBytes(b []byte) ([]byte, []byte, bool) {
	var n, h int
	switch c := b[0]; {
	case c&0xe0 == 0xa0:
		n, h = int(c&0x1f), 1
	case c == 0xd9 && len(b) >= 2:
		n, h = int(b[1]), 2
	case c == 0xda && len(b) >= 3:
		n, h = int(binary.BigEndian.Uint16(b[1:])), 3
	case c == 0xdb && len(b) >= 5:
		n, h = int(binary.BigEndian.Uint32(b[1:])), 5
	default:
		return nil, b, false
	}
	if len(b) < h+n {
		return nil, b, false
	}
	return b[h : h+n], b[h+n:], true
}

// unpackHeader reads an array's or a map's length, as packHeader writes it.
func unpackHeader(b []byte, fix, c16, c32 byte) (int, []byte, bool) {
	switch c := b[0]; {
	case c&0xf0 == fix:
		return int(c & 0x0f), b[1:], true
	case c == c16 && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:])), b[3:], true
	case c == c32 && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:])), b[5:], true
	}
	return 0, b, false
}
