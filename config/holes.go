package config

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A request's shape and holes.
//
// Eval hands a protocol the whole request as one cty object per call. Most
// of that object is the same on every call, yet building it costs
// cty.ObjectVal (which normalizes every attribute name and builds the
// type's maps again), and the protocol's reading of it costs a GetAttr
// per attribute: for a POST with a few dynamic values in its JSON body,
// more than the values themselves. So a protocol that can render a
// request from a template (protocols.Templater) is given, once, the
// request's shape: its value with every part evaluated per call left
// unknown (cty.DynamicVal), a hole. Per call it gets only the holes'
// values, from EvalHoles.
//
// A hole is a whole dynamic attribute, or, in an attribute of any type
// (json) written as an object constructor, each dynamic value of the
// constructor, at any depth of nested constructors: their constant parts
// stay in the shape. The holes are ordered as cty.Walk visits them in the
// shape, which is what the protocol goes by.

// holeSpec is one hole of a request's shape.
type holeSpec struct {
	attr int      // index in the request's dynamic attributes
	path cty.Path // within the attribute's value; empty for the whole
	node node     // computes it; nil for a whole attribute (a.node)
	slot int      // its place in the holes' order
}

// shape is a request's shape and its holes, made once.
type shape struct {
	once  sync.Once
	value cty.Value
	holes []holeSpec
	// inner says which dynamic attributes have holes inside them, by
	// index: those are evaluated hole by hole.
	inner []bool
}

// Shape returns the request's value with every part evaluated per call
// unknown, and the number of its holes; false when the request has
// nothing evaluated per call. It is made once, and safe for concurrent
// use.
func (r *Request) Shape() (cty.Value, int, bool) {
	if len(r.dynamic) == 0 {
		return cty.NilVal, 0, false
	}
	s := &r.extra.shape
	s.once.Do(func() { r.makeShape(s) })
	return s.value, len(s.holes), true
}

func (r *Request) makeShape(s *shape) {
	attrs := make(map[string]cty.Value, len(r.static)+len(r.dynamic))
	for k, v := range r.static {
		attrs[k] = v
	}
	var holes []holeSpec
	s.inner = make([]bool, len(r.dynamic))
	for i, a := range r.dynamic {
		o, ok := a.node.(*object)
		if !ok || a.ty != cty.DynamicPseudoType {
			// A whole attribute: converted to its type per call.
			attrs[a.key] = cty.DynamicVal
			holes = append(holes, holeSpec{attr: i, path: cty.GetAttrPath(a.key)})
			continue
		}
		s.inner[i] = true
		attrs[a.key] = objectShape(o, i, cty.GetAttrPath(a.key), &holes)
	}
	s.value = cty.ObjectVal(attrs)
	// The holes are evaluated in the order Eval evaluates their values,
	// so that the random functions draw alike both ways, and stored in
	// the order cty.Walk meets them.
	slot := 0
	cty.Walk(s.value, func(p cty.Path, v cty.Value) (bool, error) {
		if !v.IsKnown() {
			for i := range holes {
				if holes[i].path.Equals(p) {
					holes[i].slot = slot
				}
			}
			slot++
		}
		return true, nil
	})
	for i := range holes {
		holes[i].path = holes[i].path[1:] // within the attribute
	}
	s.holes = holes
}

// objectShape is the shape of a compiled object constructor at path:
// constant values as they are, nested constructors as shapes, any other
// value a hole.
func objectShape(o *object, attr int, path cty.Path, holes *[]holeSpec) cty.Value {
	attrs := make(map[string]cty.Value, len(o.keys))
	last := make(map[string]int, len(o.keys))
	for i, k := range o.keys {
		last[cty.NormalizeString(k)] = i // a repeated key keeps the last, as in HCL
	}
	// In the constructor's order, as object.value evaluates it.
	for i, k := range o.keys {
		if k = cty.NormalizeString(k); last[k] != i {
			continue
		}
		p := path.Copy().GetAttr(k)
		switch n := o.values[i].(type) {
		case constant:
			attrs[k] = n.v
		case *object:
			attrs[k] = objectShape(n, attr, p, holes)
		default:
			attrs[k] = cty.DynamicVal
			*holes = append(*holes, holeSpec{attr: attr, path: p, node: n})
		}
	}
	return cty.ObjectVal(attrs)
}

// EvalHoles evaluates the holes of the request's shape for one iteration,
// in their order, into dst (grown to their number), with the call's delivery: the values
// Eval's object holds at those places. A hole inside an attribute whose
// compiled form gives up for the call is taken from the attribute
// evaluated through HCL. EvalHoles is safe for concurrent use.
func (r *Request) EvalHoles(it Iteration, dst []cty.Value) ([]cty.Value, Delivery, hcl.Diagnostics) {
	_, n, ok := r.Shape()
	if !ok {
		return dst[:0], Delivery{}, nil
	}
	c, diags := r.begin(it)
	if c == nil {
		return dst[:0], Delivery{}, diags
	}
	defer r.end(c)
	if cap(dst) < n {
		dst = make([]cty.Value, n)
	}
	dst = dst[:n]
	s := &r.extra.shape
	whole := -1 // the attribute evaluated through HCL, when one gave up
	var wholeVal cty.Value
	for _, h := range s.holes {
		a := &r.dynamic[h.attr]
		if !s.inner[h.attr] {
			v, d := r.attr(c, a, a.node)
			diags = append(diags, d...)
			dst[h.slot] = v
			continue
		}
		if h.attr != whole {
			if v, ok := h.node.value(c); ok {
				dst[h.slot] = v
				continue
			}
			v, d := r.attr(c, a, nil)
			if diags = append(diags, d...); d.HasErrors() {
				dst[h.slot] = cty.NilVal
				continue
			}
			whole, wholeVal = h.attr, v
		}
		v, err := h.path.Apply(wholeVal)
		if err != nil {
			// Cannot be: the constructor's keys are constant.
			diags = append(diags, errorDiag(a.expr.Range(), "Unexpected value", "Attribute %q of request %q: %s.", a.key, r.Name, err))
		}
		dst[h.slot] = v
	}
	delivery, d := r.delivery(c)
	if diags = append(diags, d...); diags.HasErrors() {
		return dst[:0], Delivery{}, diags
	}
	return dst, delivery, diags
}
