package http

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// A request evaluated per call arrives, when the core can, as a template
// made once from its shape plus each call's hole values (see
// protocols.Templater): the call then costs no cty object for the
// request, no GetAttr per attribute, and its JSON body is written as the
// constant text made here with the holes' values between. What the
// holes' values give is rendered exactly as the whole request would be:
// template_test.go renders random calls both ways and compares the wire
// bytes.

// template is a request's shape, read once.
type template struct {
	client *Client
	// attrs are the shape's attributes; whole[i] is the hole that gives
	// attribute i (in requestAttrs.fields order) per call, or -1.
	attrs requestAttrs
	whole [numRequestAttrs]int
	// json is the json attribute's template, when holes are inside it.
	json *jsonTemplate
}

// Template reads a request's shape once, for Do to render each call from
// it and the call's holes.
func (c *Client) Template(shape cty.Value, holes int) (any, error) {
	if shape.IsMarked() || !shape.IsKnown() || shape.IsNull() || !shape.Type().IsObjectType() {
		return nil, fmt.Errorf("the shape is not an object")
	}
	var order []cty.Path
	cty.Walk(shape, func(p cty.Path, v cty.Value) (bool, error) {
		if !v.IsKnown() {
			order = append(order, p.Copy())
		}
		return true, nil
	})
	if len(order) != holes {
		return nil, fmt.Errorf("the shape has %d holes, not %d", len(order), holes)
	}
	t := &template{client: c}
	t.attrs.read(shape)
	fields := t.attrs.fields()
	for i, v := range fields {
		t.whole[i] = -1
		switch {
		case !v.IsKnown():
			t.whole[i] = holeAt(order, cty.GetAttrPath(requestAttrNames[i]))
			if t.whole[i] < 0 {
				return nil, fmt.Errorf("attribute %s is a hole the shape does not list", requestAttrNames[i])
			}
		case v.IsWhollyKnown():
		case requestAttrNames[i] == "json":
			j := &jsonTemplate{}
			if err := j.build(*v, cty.GetAttrPath("json"), order); err != nil {
				return nil, err
			}
			j.tail, j.lit = j.lit, nil // the text after the last hole
			t.json = j
		default:
			return nil, fmt.Errorf("attribute %s has holes inside", requestAttrNames[i])
		}
	}
	return t, nil
}

// holeAt is p's index in order, or -1.
func holeAt(order []cty.Path, p cty.Path) int {
	for i, q := range order {
		if q.Equals(p) {
			return i
		}
	}
	return -1
}

// renderHoles renders a call of t whose hole values are holes into out,
// as render would render the whole request.
func renderHoles(cfg *targetConfig, t *template, holes []cty.Value, out *rendered, s *scratch) error {
	s.attrs = t.attrs
	fields := s.attrs.fields()
	for i, h := range t.whole {
		if h < 0 {
			continue
		}
		if h >= len(holes) {
			return protocols.AttrErrorf(requestAttrNames[i], "has no value: the call carries %d holes", len(holes))
		}
		v, _ := holes[h].Unmark()
		*fields[i] = v
	}
	s.r, s.tmpl, s.holes = cty.NilVal, t, holes
	err := renderAttrs(cfg, out, s)
	s.holes = nil // the core reuses them
	return err
}

// jsonTemplate is a json attribute with holes inside: literal JSON text
// with a hole's value between each part and the next.
type jsonTemplate struct {
	parts []jsonPart
	tail  []byte
	lit   []byte // while building
}

// jsonPart is literal text followed by a hole's value.
type jsonPart struct {
	lit  []byte
	hole int
}

// build adds v, found at path in the shape, to j.
func (j *jsonTemplate) build(v cty.Value, path cty.Path, order []cty.Path) error {
	t := v.Type()
	switch {
	case !v.IsKnown():
		h := holeAt(order, path)
		if h < 0 {
			return fmt.Errorf("a hole of json the shape does not list")
		}
		j.parts = append(j.parts, jsonPart{lit: j.lit, hole: h})
		j.lit = nil
	case v.IsWhollyKnown():
		b, ok := appendJSONValue(j.lit, v, t)
		if !ok {
			return fmt.Errorf("json's constant parts cannot be encoded here")
		}
		j.lit = b
	case v.IsMarked() || v.IsNull():
		return fmt.Errorf("json is marked or null around its holes")
	case t.IsObjectType():
		// In name order, as appendJSONObject writes an object, and as
		// cty.Walk numbers the holes.
		j.lit = append(j.lit, '{')
		for i, it := 0, v.ElementIterator(); it.Next(); i++ {
			k, e := it.Element()
			if i > 0 {
				j.lit = append(j.lit, ',')
			}
			j.lit = appendJSONString(j.lit, k.AsString())
			j.lit = append(j.lit, ':')
			if err := j.build(e, path.Copy().GetAttr(k.AsString()), order); err != nil {
				return err
			}
		}
		j.lit = append(j.lit, '}')
	case t.IsTupleType():
		j.lit = append(j.lit, '[')
		for i, it := 0, v.ElementIterator(); it.Next(); i++ {
			k, e := it.Element()
			if i > 0 {
				j.lit = append(j.lit, ',')
			}
			if err := j.build(e, path.Copy().Index(k), order); err != nil {
				return err
			}
		}
		j.lit = append(j.lit, ']')
	default:
		return fmt.Errorf("json has holes inside a %s", t.FriendlyName())
	}
	return nil
}

// append appends the JSON text with the holes' values to dst. cache
// holds a VU's caches of the holes' last values, grown here.
func (j *jsonTemplate) append(dst []byte, holes []cty.Value, cache *[]jsonCache) ([]byte, error) {
	if n := len(holes); len(*cache) < n {
		*cache = append(*cache, make([]jsonCache, n-len(*cache))...)
	}
	c := *cache
	for _, p := range j.parts {
		dst = append(dst, p.lit...)
		if p.hole >= len(holes) {
			return dst, protocols.AttrErrorf("json", "has no value for a hole: the call carries %d", len(holes))
		}
		v := holes[p.hole]
		b, ok := appendJSONCached(dst, v, v.Type(), &c[p.hole])
		if !ok {
			c[p.hole] = jsonCache{} // it may be half updated
			var err error
			if b, err = encodeJSON(dst, v); err != nil {
				return dst, err
			}
		}
		dst = b
	}
	return append(dst, j.tail...), nil
}
