package http

import (
	"math/big"
	"net/url"
	"slices"
	"unsafe"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// A request that is not the same for every call is rendered per call, but
// most of it is the same as the VU's previous call's: the constant leaves
// of its JSON body, its query, headers, method, timeout and expected
// statuses. What a VU keeps of its previous rendering lets the next one
// skip the work for what did not change. Each shortcut is taken only when
// the fresh rendering would give the same bytes: render_cache_test.go
// renders random sequences of requests both ways and compares them.

// jsonCache mirrors the JSON value a VU encoded last, node by node, so
// that encoding the next reuses what did not change: an object's attribute
// names in order, and a number's text, whose shortest formatting at cty's
// precision is the costly part of an encoding.
type jsonCache struct {
	// last is the last number or collection this node held, walked as ty,
	// and whole its encoding; has says they are set. The very same value
	// again is appended as it was, without a walk. Holding last keeps its
	// payload alive, so no other value can take its address.
	last  cty.Value
	ty    cty.Type
	whole []byte
	has   bool
	// num is the number this node held last and text its encoding; nil
	// when the node held no number that needed formatting.
	num  *big.Float
	text []byte
	// names are the attribute names of the object this node held last,
	// sorted, as they are encoded.
	names []string
	// kids are the caches of the object's attributes, by names, or of a
	// tuple's or list's elements.
	kids []jsonCache
}

// appendJSONCached appends v, which conforms to t, as appendJSONValue
// does, reusing and updating c. It reports false where appendJSONValue
// does, for the caller to fall back on ctyjson.
func appendJSONCached(dst []byte, v cty.Value, t cty.Type, c *jsonCache) ([]byte, bool) {
	if v.IsMarked() || !v.IsKnown() || v.IsNull() {
		return appendJSONValue(dst, v, t)
	}
	if t == cty.Number || t.IsObjectType() || t.IsTupleType() || t.IsListType() || t.IsMapType() || t.IsSetType() {
		if c.has && sameWords(&v, &c.last) && sameType(t, c.ty) {
			return append(dst, c.whole...), true
		}
		start := len(dst)
		dst, ok := appendJSONWalk(dst, v, t, c)
		if !ok {
			c.has, c.last = false, cty.NilVal
			return dst, false
		}
		c.has, c.last, c.ty = true, v, t
		c.whole = append(c.whole[:0], dst[start:]...)
		return dst, true
	}
	return appendJSONValue(dst, v, t)
}

// appendJSONWalk is appendJSONCached for a known, unmarked value that is
// not null and not the node's last: its parts are reused where they can.
func appendJSONWalk(dst []byte, v cty.Value, t cty.Type, c *jsonCache) ([]byte, bool) {
	switch {
	case t == cty.Number:
		return c.number(dst, v.AsBigFloat())
	case t.IsObjectType():
		return c.object(dst, v, t)
	case t.IsTupleType():
		etys := t.TupleElementTypes()
		c.grow(len(etys))
		dst = append(dst, '[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			_, e := it.Element()
			var ok bool
			if dst, ok = appendJSONCached(dst, e, etys[i], &c.kids[i]); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case t.IsListType():
		ety := t.ElementType()
		c.grow(v.LengthInt())
		dst = append(dst, '[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			_, e := it.Element()
			var ok bool
			if dst, ok = appendJSONCached(dst, e, ety, &c.kids[i]); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	// Strings and bools cost little; sets and maps are rare.
	return appendJSONValue(dst, v, t)
}

// grow makes room for n kids.
func (c *jsonCache) grow(n int) {
	if len(c.kids) < n {
		c.kids = append(c.kids, make([]jsonCache, n-len(c.kids))...)
	}
}

// number appends f as appendJSONNumber does. The text depends on f's
// value and on its precision, which the shortest decimal depends on: when
// both are the last number's, the last text is reused. Whole numbers
// (zeros of either sign among them) are formatted with strconv, which
// costs less than the comparison.
func (c *jsonCache) number(dst []byte, f *big.Float) ([]byte, bool) {
	if f.IsInf() || f.IsInt() {
		return appendJSONNumber(dst, f)
	}
	if c.num != nil && f.Prec() == c.num.Prec() && f.Cmp(c.num) == 0 {
		return append(dst, c.text...), true
	}
	start := len(dst)
	dst, ok := appendJSONNumber(dst, f)
	if !ok {
		c.num = nil
		return dst, false
	}
	c.num = f // AsBigFloat's copy: no one else holds it
	c.text = append(c.text[:0], dst[start:]...)
	return dst, true
}

// object appends an object's attributes in name order, as
// appendJSONObject does, with the names sorted only when the attribute
// set changed: a name missing from the object's type says it did. (cty's iterator would give them sorted, but allocates a
// string value per attribute.)
func (c *jsonCache) object(dst []byte, v cty.Value, t cty.Type) ([]byte, bool) {
	atys := t.AttributeTypes()
	if len(c.names) != len(atys) || c.names == nil {
		c.sortNames(atys)
	}
	start := len(dst)
	dst = append(dst, '{')
	for i := 0; i < len(c.names); i++ {
		k := c.names[i]
		aty, ok := atys[k]
		if !ok {
			// Another attribute set of the same size: sort it, start over.
			c.sortNames(atys)
			dst, i = append(dst[:start], '{'), -1
			continue
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		if dst, ok = appendJSONCached(dst, v.GetAttr(k), aty, &c.kids[i]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// sortNames sets c's names to atys's keys, sorted, with new caches for
// their values: the old ones were another attribute's.
func (c *jsonCache) sortNames(atys map[string]cty.Type) {
	c.names = c.names[:0]
	for k := range atys {
		c.names = append(c.names, k)
	}
	slices.Sort(c.names)
	c.kids = make([]jsonCache, len(c.names))
}

// requestAttrs are a request's attributes, each as protocols.Attr returns
// it, read in one pass.
type requestAttrs struct {
	timeout, expected, method, headers, query, path, body, json, form cty.Value
}

// numRequestAttrs counts requestAttrs's fields, and requestAttrNames
// names them in fields' order.
const numRequestAttrs = 9

var requestAttrNames = [numRequestAttrs]string{"timeout", "expected_status", "method", "headers", "query", "path", "body", "json", "form"}

// fields are a's fields, in requestAttrNames's order.
func (a *requestAttrs) fields() [numRequestAttrs]*cty.Value {
	return [...]*cty.Value{&a.timeout, &a.expected, &a.method, &a.headers, &a.query, &a.path, &a.body, &a.json, &a.form}
}

// read sets a from r, each attribute as protocols.Attr reads it, with one
// name normalization fewer: the names here are ASCII, already normal.
func (a *requestAttrs) read(r cty.Value) {
	if r.IsMarked() || r.IsNull() || !r.IsKnown() || !r.Type().IsObjectType() {
		attr := func(name string) cty.Value { return protocols.Attr(r, name) }
		*a = requestAttrs{attr("timeout"), attr("expected_status"), attr("method"), attr("headers"),
			attr("query"), attr("path"), attr("body"), attr("json"), attr("form")}
		return
	}
	atys := r.Type().AttributeTypes()
	attr := func(name string) cty.Value {
		if _, ok := atys[name]; !ok {
			return cty.NullVal(cty.DynamicPseudoType)
		}
		v, _ := r.GetAttr(name).Unmark()
		return v
	}
	*a = requestAttrs{attr("timeout"), attr("expected_status"), attr("method"), attr("headers"),
		attr("query"), attr("path"), attr("body"), attr("json"), attr("form")}
}

// plainPath reports whether path is made only of the bytes that url.Parse
// keeps as they are in a URL's path and that EscapedPath writes as they
// are: letters, digits, "-", ".", "_", "~" and "/". Such a path, joined
// to the base URL, needs no parsing: see joinPlain.
func plainPath(path string) bool {
	for i := 0; i < len(path); i++ {
		c := path[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case '-', '.', '_', '~', '/':
			continue
		}
		return false
	}
	return true
}

// plainBase is the base URL parsed, when a plain path can be joined to
// it without parsing: url.Parse(baseURL+path) is then base with path
// appended to its path, for base's path is written as it is and has no
// query or fragment to come after it.
type plainBase struct {
	raw  string   // the base URL it was parsed from
	base *url.URL // nil when joining needs url.Parse
}

// parse sets b for raw, once.
func (b *plainBase) parse(raw string) {
	if b.raw == raw && raw != "" {
		return
	}
	b.raw, b.base = raw, nil
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || u.Host == "" || !plainPath(u.Path) {
		return
	}
	b.base = u
}

// join returns url.Parse(b.raw + path) for a plain path, which starts
// with "/", or nil when it must be parsed.
func (b *plainBase) join(path string) *url.URL {
	if b.base == nil || !plainPath(path) {
		return nil
	}
	u := new(url.URL)
	*u = *b.base
	u.Path += path
	return u
}

// sameValue reports whether a and b are the same value, as RawEquals
// does, but cheaply for what a request's attributes hold: a string is
// compared as one, and a map, object, list or tuple that is the very one
// the last call held (as the attributes that are constant in a dynamic
// request are: the config shares one value among the calls) is the same
// without a walk. Anything else is RawEquals's.
func sameValue(pa, pb *cty.Value) bool {
	a, b := *pa, *pb
	if a.IsMarked() || b.IsMarked() || !a.IsKnown() || !b.IsKnown() {
		return a.RawEquals(b)
	}
	ta, tb := a.Type(), b.Type()
	switch {
	case a.IsNull() || b.IsNull():
		return a.IsNull() && b.IsNull() && ta.Equals(tb)
	case ta == cty.String && tb == cty.String:
		return a.AsString() == b.AsString()
	case ta.IsPrimitiveType() || tb.IsPrimitiveType():
		return a.RawEquals(b)
	}
	if sameWords(pa, pb) {
		return true
	}
	return a.RawEquals(b)
}

// identical reports whether a and b are the very same known value (see
// sameWords), without comparing them otherwise.
func identical(a, b *cty.Value) bool {
	return !a.IsMarked() && !b.IsMarked() && a.IsKnown() && b.IsKnown() && sameWords(a, b)
}

// valueWords is cty.Value's layout: its type and its payload, two
// interfaces (plugins/sdk reads it the same way), and typeWords
// cty.Type's, one interface.
type (
	valueWords [4]uintptr
	typeWords  [2]uintptr
)

// wordsOK says whether cty.Value and cty.Type have the layouts sameWords
// and sameType rely on; when they do not, nothing is found identical.
var wordsOK = unsafe.Sizeof(cty.Value{}) == unsafe.Sizeof(valueWords{}) &&
	unsafe.Sizeof(cty.Type{}) == unsafe.Sizeof(typeWords{})

// sameWords reports whether a and b are the very same value: the same
// type and the same payload, word for word. cty never changes a value's
// payload once made, so such values are equal: the map of an object, the
// array of a tuple, the *big.Float of a number, the string. The config
// shares one value of each constant part of a request among its calls,
// which this finds without RawEquals's walk. false only means "not known
// to be the same". The caller holds a or b, so its payload cannot be
// freed and its address taken by another.
func sameWords(a, b *cty.Value) bool {
	return wordsOK && *(*valueWords)(unsafe.Pointer(a)) == *(*valueWords)(unsafe.Pointer(b))
}

// sameType reports whether a and b are equal types, word for word when
// they are the very same (as a value's type is on every call), else by
// Equals.
func sameType(a, b cty.Type) bool {
	if wordsOK && *(*typeWords)(unsafe.Pointer(&a)) == *(*typeWords)(unsafe.Pointer(&b)) {
		return true
	}
	return a.Equals(b)
}
