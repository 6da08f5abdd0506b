package wire

import (
	"bytes"
	"fmt"
	"sort"
	"sync"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// A per-call request crosses wire version 3 attribute by attribute
// (CallBatch.attr_value). Profiled on the bench harness's dynamic POST,
// the whole-object encoding cost the host a RawEquals of every cached
// request (a deep walk that fails on the varying attributes) and a
// msgpack encoding of the whole object, in which an attribute of any type
// carries its type as JSON, written by encoding/json on the host and
// parsed by it on the plugin, on every call. By attribute, the attributes
// that do not vary are found by identity and travel once per batch, and
// a varying attribute of any type is encoded as its own type, named by a
// number in a table the stream sends once.

// maxStreamTypes bounds a stream's type table. An attribute whose types
// keep changing (a tuple of varying length) goes as cty's own dynamic
// encoding, type and all, once the table is full, rather than grow it
// without end.
const maxStreamTypes = 256

// attrCacheSize is how many encodings each attribute keeps: a client is
// shared by the requests of its target, each with its own constants.
const attrCacheSize = 4

// schemaAttrs is a request schema's attributes in wire order: their names
// sorted.
type schemaAttrs struct {
	names []string
	types []cty.Type
	// dynamic says the attribute's type is cty.DynamicPseudoType or holds
	// it, so its values carry their own type.
	dynamic []bool
}

func newSchemaAttrs(ty cty.Type) schemaAttrs {
	var s schemaAttrs
	if !ty.IsObjectType() {
		return s
	}
	for name := range ty.AttributeTypes() {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	for _, name := range s.names {
		at := ty.AttributeType(name)
		s.types = append(s.types, at)
		s.dynamic = append(s.dynamic, at.HasDynamicTypes())
	}
	return s
}

// attrEnc is one attribute of a call's request, encoded: its bytes
// (shared, never modified) and its type's number (0: the schema's type).
type attrEnc struct {
	enc []byte
	ty  uint32
}

// attrEncoder is the host's end: it encodes the attributes of a client's
// requests, each through a small cache found by identity, and numbers the
// types of the attributes of any type. Safe for concurrent use.
type attrEncoder struct {
	schema schemaAttrs
	nulls  [][]byte // each attribute's null, encoded once
	packer packer

	mu    sync.RWMutex
	cache [][attrCacheSize]cachedAttr
	next  []int

	typesMu sync.Mutex
	types   []cty.Type // the stream's table: number n is types[n-1]
	sent    int        // types[:sent] went out in a batch
	last    []uint32   // each attribute's last type, looked at first
}

func newAttrEncoder(ty cty.Type) (*attrEncoder, error) {
	e := &attrEncoder{schema: newSchemaAttrs(ty)}
	n := len(e.schema.names)
	e.nulls = make([][]byte, n)
	for i, at := range e.schema.types {
		b, err := msgpack.Marshal(cty.NullVal(at), at)
		if err != nil {
			return nil, fmt.Errorf("encoding a null %s: %w", e.schema.names[i], err)
		}
		e.nulls[i] = b
	}
	e.cache = make([][attrCacheSize]cachedAttr, n)
	e.next = make([]int, n)
	e.last = make([]uint32, n)
	return e, nil
}

// encode appends the attributes of request to out. ok is false when the
// request cannot go by attribute (it is not a known object, or a value
// will not encode on its own, such as a marked one): the caller sends it
// whole, as wire version 2 does.
func (e *attrEncoder) encode(request cty.Value, out []attrEnc) ([]attrEnc, bool) {
	if !request.Type().IsObjectType() || request.IsNull() || !request.IsKnown() || len(e.schema.names) == 0 {
		return out, false
	}
	// The type's own map, rather than HasAttribute, which normalises the
	// name on every call.
	atys := request.Type().AttributeTypes()
	for i, name := range e.schema.names {
		if _, ok := atys[name]; !ok {
			out = append(out, attrEnc{enc: e.nulls[i]})
			continue
		}
		v := getAttr(request, name)
		if v.IsNull() {
			// A null of any type decodes as the null of the schema's.
			out = append(out, attrEnc{enc: e.nulls[i]})
			continue
		}
		if a, ok := e.cached(i, v); ok {
			out = append(out, a)
			continue
		}
		a, err := e.encodeAttr(i, v)
		if err != nil {
			return out, false
		}
		e.remember(i, v, a)
		out = append(out, a)
	}
	return out, true
}

// cached finds v's encoding by identity: a request's constant attributes
// are the config's same values on every call.
func (e *attrEncoder) cached(i int, v cty.Value) (attrEnc, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, c := range &e.cache[i] {
		if c.enc.enc != nil && identical(c.val, v) {
			return c.enc, true
		}
	}
	return attrEnc{}, false
}

// cachedAttr is an attribute's value and its encoding; the type's number
// is the stream's, as the cache is.
type cachedAttr struct {
	val cty.Value
	enc attrEnc
}

// remember caches v's encoding, unless another VU holds the cache: a
// varying attribute misses on every call, and waiting for the lock there
// would cost more than the encoding it saves. cty values are immutable,
// so an identical value always has the same encoding.
func (e *attrEncoder) remember(i int, v cty.Value, a attrEnc) {
	if !e.mu.TryLock() {
		return
	}
	c := &e.cache[i][e.next[i]]
	c.val, c.enc = v, a
	e.next[i] = (e.next[i] + 1) % attrCacheSize
	e.mu.Unlock()
}

// encodeAttr encodes attribute i's value v: as the schema's type, or as
// its own type, numbered in the stream's table, when the schema's type
// lets it have any. The packer writes it when it can, and go-cty's
// msgpack otherwise (an unknown value, or one the schema's type converts).
func (e *attrEncoder) encodeAttr(i int, v cty.Value) (attrEnc, error) {
	at := e.schema.types[i]
	if e.schema.dynamic[i] {
		e.typesMu.Lock()
		n, ok := e.typeNumber(&e.last[i], v.Type())
		e.typesMu.Unlock()
		if ok {
			// Sized for a usual json, so it grows once at most.
			if b, err := e.packer.pack(make([]byte, 0, 256), v); err == nil {
				return attrEnc{enc: b, ty: n}, nil
			}
			b, err := msgpack.Marshal(v, v.Type())
			return attrEnc{enc: b, ty: n}, err
		}
	} else if v.Type().Equals(at) {
		// A type without cty.DynamicPseudoType in it, as the schema's is:
		// what the packer writes needs no type of its own.
		if b, err := e.packer.pack(make([]byte, 0, 32), v); err == nil {
			return attrEnc{enc: b}, nil
		}
	}
	b, err := msgpack.Marshal(v, at)
	return attrEnc{enc: b}, err
}

// typeNumber returns ty's number in the stream's table, adding it when it
// is new. last is the number the same attribute or hole had last, looked
// at first, and updated. ok is false for a type that cannot be named (one
// that still holds cty.DynamicPseudoType, as a null of any type does) and
// when the table is full: the value then carries its type, as cty encodes
// it. e.typesMu must be held.
func (e *attrEncoder) typeNumber(last *uint32, ty cty.Type) (uint32, bool) {
	if n := *last; n != 0 && e.types[n-1].Equals(ty) {
		return n, true
	}
	for j, t := range e.types {
		if t.Equals(ty) {
			*last = uint32(j + 1)
			return uint32(j + 1), true
		}
	}
	if len(e.types) >= maxStreamTypes || ty.HasDynamicTypes() {
		return 0, false
	}
	e.types = append(e.types, ty)
	*last = uint32(len(e.types))
	return uint32(len(e.types)), true
}

// unsent returns the types numbered since the last call, encoded, for the
// next batch: the batch carries every type its calls use, because each
// call's types were numbered before it was queued.
func (e *attrEncoder) unsent(out [][]byte) ([][]byte, error) {
	e.typesMu.Lock()
	defer e.typesMu.Unlock()
	for ; e.sent < len(e.types); e.sent++ {
		b, err := ctyjson.MarshalType(e.types[e.sent])
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, nil
}

// attrDecoder is the plugin's end, one per Run stream: the stream's type
// table and the last few values of each attribute, found by their bytes.
// Run's goroutine only.
type attrDecoder struct {
	schema schemaAttrs
	types  []cty.Type // number n is types[n-1]; cty.NilType for a type that did not decode
	cache  [][attrCacheSize]struct {
		enc []byte
		ty  uint32
		val cty.Value
	}
	next     []int
	unpacker unpacker

	// The last call's attribute values, and the types of the last
	// object type made, by attribute.
	vals      []cty.Value
	attrTypes []cty.Type
	objType   cty.Type
}

func newAttrDecoder(ty cty.Type) *attrDecoder {
	d := &attrDecoder{schema: newSchemaAttrs(ty)}
	d.cache = make([][attrCacheSize]struct {
		enc []byte
		ty  uint32
		val cty.Value
	}, len(d.schema.names))
	d.next = make([]int, len(d.schema.names))
	return d
}

// addTypes extends the stream's table with a batch's types. A type that
// does not decode keeps its number, so the later ones keep theirs, and
// fails the calls that use it.
func (d *attrDecoder) addTypes(types [][]byte) {
	for _, b := range types {
		ty, err := ctyjson.UnmarshalType(b)
		if err != nil {
			ty = cty.NilType
		}
		d.types = append(d.types, ty)
	}
}

// decode builds a call's request from its attributes' encodings, values
// and types being the batch's columns for that call.
func (d *attrDecoder) decode(values [][]byte, value, types []uint32) (cty.Value, error) {
	if len(d.vals) != len(d.schema.names) {
		d.vals = make([]cty.Value, len(d.schema.names))
	}
	for i, name := range d.schema.names {
		v, err := d.attr(i, values[value[i]], types[i])
		if err != nil {
			return cty.NilVal, fmt.Errorf("attribute %q: %w", name, err)
		}
		d.vals[i] = v
	}
	return d.object(d.vals), nil
}

// object is the request of attribute values vals, as cty.ObjectVal makes
// it, with the last call's object type when each attribute has the type
// it had then (a varying attribute of a type from the table, or one that
// did not change, has the very same type), rather than a new one.
func (d *attrDecoder) object(vals []cty.Value) cty.Value {
	same := d.objType != cty.NilType && rawOK
	for i := range vals {
		if vals[i].IsMarked() || !rawOK {
			// Not from the wire, which carries no marks; cty's own way.
			return d.objectVal(vals)
		}
		if same && !sameType(vals[i].Type(), d.attrTypes[i]) {
			same = false
		}
	}
	if !same {
		if d.attrTypes == nil {
			d.attrTypes = make([]cty.Type, len(vals))
		}
		atys := make(map[string]cty.Type, len(vals))
		for i, v := range vals {
			d.attrTypes[i] = v.Type()
			atys[d.schema.names[i]] = v.Type()
		}
		d.objType = cty.Object(atys)
	}
	raw := make(map[string]any, len(vals))
	for i, v := range vals {
		raw[d.schema.names[i]] = rawPayload(v)
	}
	return rawValue(d.objType, raw)
}

func (d *attrDecoder) objectVal(vals []cty.Value) cty.Value {
	attrs := make(map[string]cty.Value, len(vals))
	for i, v := range vals {
		attrs[d.schema.names[i]] = v
	}
	return cty.ObjectVal(attrs)
}

func (d *attrDecoder) attr(i int, b []byte, n uint32) (cty.Value, error) {
	for _, c := range &d.cache[i] {
		if c.enc != nil && c.ty == n && bytes.Equal(c.enc, b) {
			return c.val, nil
		}
	}
	ty := d.schema.types[i]
	if n != 0 {
		if int(n) > len(d.types) {
			return cty.NilVal, fmt.Errorf("type %d of a table of %d", n, len(d.types))
		}
		if ty = d.types[n-1]; ty == cty.NilType {
			return cty.NilVal, fmt.Errorf("type %d did not decode", n)
		}
	}
	var v cty.Value
	err := errNotPackable
	if n != 0 || !d.schema.dynamic[i] {
		// A type without cty.DynamicPseudoType in it: what the packer
		// writes. The schema's type of an attribute of any type is
		// go-cty's, type and all.
		v, err = d.unpacker.unpack(b, ty)
	}
	if err != nil {
		// Not the packer's: go-cty's own encoding, or a bad one.
		if v, err = msgpack.Unmarshal(b, ty); err != nil {
			return cty.NilVal, err
		}
	}
	// The batch's bytes are the receiver's own, so they can be kept.
	c := &d.cache[i][d.next[i]]
	c.enc, c.ty, c.val = b, n, v
	d.next[i] = (d.next[i] + 1) % attrCacheSize
	return v, nil
}
