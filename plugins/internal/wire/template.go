package wire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// Requests as templates over the wire (version 4). In-process, a request
// evaluated per call reaches a protocol that can render templates
// (protocols.Templater) as its shape, once, and each call's holes' values.
// Profiled through a plugin process on the bench harness's dynamic POST,
// the host spent 40 % of its CPU evaluating the whole request
// (config.(*Request).Eval) and a fifth encoding it by attribute, and the
// plugin most of its own decoding and rendering it. So the host hands the
// plugin the shape once (the Template RPC), the plugin has its protocol's
// client make its template of it, and each call carries the handle and
// its holes' values, packed one after the other in one blob per batch.
// A plugin whose client is no Templater refuses the shape, and its calls
// carry their whole requests, as at version 3.

// errNoTemplates is Template's answer for a plugin of a wire version
// before 4: the core then sends the request with each call, as before.
var errNoTemplates = errors.New("the plugin speaks a wire version before 4, which has no templates")

// template is what the host's Template returns: the plugin's handle of a
// request's shape on one client.
type template struct {
	c      *client
	handle uint32
	holes  int
	// last is each hole's type number of the last call, looked at first;
	// under c.attrs.typesMu.
	last []uint32
}

// Template implements protocols.Templater: it sends the request's shape
// to the plugin once, whose protocol's client makes its template of it,
// and the calls that carry what it returns send only the handle and their
// holes' values. An error (an older plugin, or one whose client takes no
// templates) leaves the calls to carry their whole requests.
func (c *client) Template(shape cty.Value, holes int) (any, error) {
	if c.r.opts.ProtocolVersion < 4 || c.attrs == nil {
		return nil, errNoTemplates
	}
	// The wire carries no marks, and the plugin reads every attribute of
	// the schema, as a whole request has them.
	if shape.ContainsMarked() {
		shape, _ = shape.UnmarkDeep()
	}
	shape = withNulls(shape, c.r.requestType)
	ty := shape.Type()
	// Of its own type: a hole has any type, which the schema's does not
	// allow for most attributes.
	tyJSON, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encoding the request's shape type: %w", c.r.opts.Name, err)
	}
	b, err := msgpack.Marshal(shape, ty)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encoding the request's shape: %w", c.r.opts.Name, err)
	}
	ctx, cancel := context.WithTimeout(c.streamCtx, prepareTimeout)
	defer cancel()
	resp, err := c.r.c.Template(ctx, &proto.TemplateRequest{ClientId: c.id, ShapeType: tyJSON, ShapeMsgpack: b, Holes: uint32(holes)})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: template: %w", c.r.opts.Name, rpcErr(err))
	}
	if resp.Handle == 0 {
		return nil, fmt.Errorf("plugin %q: template: the plugin returned no handle", c.r.opts.Name)
	}
	return &template{c: c, handle: resp.Handle, holes: holes, last: make([]uint32, holes)}, nil
}

// encodeHoles sets p's template and its holes' values, encoded: each
// hole as its own type, numbered in the stream's table, as an attribute
// of any type is.
func (c *client) encodeHoles(t *template, holes []cty.Value, p *pendingCall) error {
	if len(holes) != t.holes {
		return fmt.Errorf("%d hole values for a template of %d", len(holes), t.holes)
	}
	e := c.attrs
	p.holeType = p.holeType[:0]
	e.typesMu.Lock()
	for h, v := range holes {
		n, _ := e.typeNumber(&t.last[h], v.Type())
		p.holeType = append(p.holeType, n)
	}
	e.typesMu.Unlock()
	p.holeData, p.holeSize = p.holeData[:0], p.holeSize[:0]
	for h, v := range holes {
		start := len(p.holeData)
		var err error
		if n := p.holeType[h]; n != 0 {
			if p.holeData, err = e.packer.pack(p.holeData, v); err != nil {
				// A marked value, or one the packer does not write.
				var b []byte
				b, err = encodeValue(v, v.Type())
				p.holeData = append(p.holeData[:start], b...)
			}
		} else {
			var b []byte
			b, err = encodeValue(v, cty.DynamicPseudoType)
			p.holeData = append(p.holeData, b...)
		}
		if err != nil {
			return fmt.Errorf("hole %d: %w", h, err)
		}
		p.holeSize = append(p.holeSize, uint32(len(p.holeData)-start))
	}
	p.template = t.handle
	return nil
}

// addTemplated adds a call with a template to the batch's hole columns.
func (w *callColumns) addTemplated(p *pendingCall) {
	b := &w.batch
	b.HoleCount = append(b.HoleCount, uint32(len(p.holeType)))
	b.HoleType = append(b.HoleType, p.holeType...)
	b.HoleSize = append(b.HoleSize, p.holeSize...)
	b.HoleData = append(b.HoleData, p.holeData...)
}

// pluginTemplate is a request's shape the host sent once (the Template
// RPC), as the protocol's client made it into a template.
type pluginTemplate struct {
	template any
	holes    int
	// defaults are the schema's defaults of the attributes that are holes
	// as a whole: a call whose value there is null gets the default, as a
	// whole request's null attribute does.
	defaults []holeDefault
}

// holeDefault is the default of the attribute that hole is.
type holeDefault struct {
	hole  int
	value cty.Value
}

// Template has the protocol's client make its template of a request's
// shape, and keeps it for the calls that name its handle. A client that
// takes no templates is refused with FailedPrecondition, and one whose
// Template fails with the protocol's words: the host then sends those
// calls' requests whole.
func (s *server) Template(_ context.Context, req *proto.TemplateRequest) (*proto.TemplateResponse, error) {
	o, err := s.openedClient(req.ClientId, 4, "Template")
	if err != nil {
		return nil, err
	}
	templater, ok := o.client.(protocols.Templater)
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "the protocol's client takes no templates")
	}
	ty, err := ctyjson.UnmarshalType(req.ShapeType)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the shape's type: %v", err)
	}
	shape, err := msgpack.Unmarshal(req.ShapeMsgpack, ty)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the shape: %v", err)
	}
	if !shape.Type().IsObjectType() || shape.IsNull() || !shape.IsKnown() {
		return nil, status.Error(codes.InvalidArgument, "the shape is not an object")
	}
	shape = s.requestDefaults.apply(shape)
	t := &pluginTemplate{holes: int(req.Holes), defaults: s.requestDefaults.holes(shape)}
	if t.template, err = makeTemplate(templater, shape, t.holes); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	o.mu.Lock()
	o.lastTemplate++
	h := o.lastTemplate
	if o.templates == nil {
		o.templates = make(map[uint32]*pluginTemplate)
	}
	o.templates[h] = t
	o.mu.Unlock()
	return &proto.TemplateResponse{Handle: h}, nil
}

// holes returns the defaults of the attributes that are holes as a whole
// in shape, by the holes' order (cty.Walk's).
func (d defaults) holes(shape cty.Value) []holeDefault {
	if len(d) == 0 {
		return nil
	}
	var out []holeDefault
	hole := 0
	cty.Walk(shape, func(p cty.Path, v cty.Value) (bool, error) {
		if v.IsKnown() {
			return true, nil
		}
		if len(p) == 1 {
			if step, ok := p[0].(cty.GetAttrStep); ok {
				if def, ok := d[step.Name]; ok {
					out = append(out, holeDefault{hole: hole, value: def})
				}
			}
		}
		hole++
		return true, nil
	})
	return out
}

// makeTemplate calls the protocol's Template; a panic is its error.
func makeTemplate(t protocols.Templater, shape cty.Value, holes int) (tmpl any, err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "hload plugin: Template panicked: %v\n%s", r, debug.Stack())
			tmpl, err = nil, fmt.Errorf("the protocol's Template panicked: %v", r)
		}
	}()
	return t.Template(shape, holes)
}

func (o *opened) template(h uint32) (*pluginTemplate, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.templates[h]
	return t, ok
}

// holeReader walks a checked CallBatch's holes, call after call.
type holeReader struct {
	call int // the next of b.HoleCount
	hole int // the next of b.HoleType and b.HoleSize
	at   int // the next byte of b.HoleData
}

// templated sets a call's template and decodes its holes' values, the
// next of the batch's, into a slice of the run's own.
func (r *run) templated(b *proto.CallBatch, h uint32, holes *holeReader, call *protocols.Call) error {
	n := int(b.HoleCount[holes.call])
	holes.call++
	first, at := holes.hole, holes.at
	holes.hole += n
	for _, size := range b.HoleSize[first:holes.hole] {
		holes.at += int(size)
	}
	t, ok := r.templates[h]
	if !ok {
		if t, ok = r.opened.template(h); !ok {
			return fmt.Errorf("no template %d", h)
		}
		r.templates[h] = t
	}
	if n != t.holes {
		return fmt.Errorf("%d hole values for template %d of %d holes", n, h, t.holes)
	}
	vals := r.holeValues(n)
	for i := range n {
		size := int(b.HoleSize[first+i])
		v, err := r.attrs.hole(b.HoleData[at:at+size], b.HoleType[first+i])
		if err != nil {
			return fmt.Errorf("hole %d: %w", i, err)
		}
		vals[i], at = v, at+size
	}
	for _, d := range t.defaults {
		if vals[d.hole].IsNull() {
			vals[d.hole] = d.value
		}
	}
	call.Request, call.Prepared, call.Holes = cty.NilVal, t.template, vals
	return nil
}

// holeSlab is how many values the run's slab of holes holds: calls take
// their holes from it rather than allocate a slice each.
const holeSlab = 1024

// holeValues returns n values of the slab, used by one call only: a slab
// is never reused, and the garbage collector frees it when its calls are
// done with it.
func (r *run) holeValues(n int) []cty.Value {
	if len(r.holeSlab) < n {
		r.holeSlab = make([]cty.Value, max(n, holeSlab))
	}
	v := r.holeSlab[:n:n]
	r.holeSlab = r.holeSlab[n:]
	return v
}

// hole decodes a hole's value: of type n of the stream's table, or of
// cty's dynamic encoding for 0.
func (d *attrDecoder) hole(b []byte, n uint32) (cty.Value, error) {
	if n == 0 {
		return msgpack.Unmarshal(b, cty.DynamicPseudoType)
	}
	if int(n) > len(d.types) {
		return cty.NilVal, fmt.Errorf("type %d of a table of %d", n, len(d.types))
	}
	ty := d.types[n-1]
	if ty == cty.NilType {
		return cty.NilVal, fmt.Errorf("type %d did not decode", n)
	}
	v, err := d.unpacker.unpack(b, ty)
	if err != nil {
		// Not the packer's: go-cty's own encoding, or a bad one.
		return msgpack.Unmarshal(b, ty)
	}
	return v, nil
}

// checkHoles checks that a batch's hole columns agree with each other and
// with its calls: the part of checkCallBatch for version 4.
func checkHoles(b *proto.CallBatch) error {
	n := len(b.CallId)
	if len(b.Template) != 0 && len(b.Template) != n {
		return fmt.Errorf("template for %d of %d calls", len(b.Template), n)
	}
	templated := 0
	for _, t := range b.Template {
		if t != 0 {
			templated++
		}
	}
	if len(b.HoleCount) != templated {
		return fmt.Errorf("hole counts for %d of %d calls with a template", len(b.HoleCount), templated)
	}
	holes := 0
	for _, c := range b.HoleCount {
		holes += int(c)
	}
	if len(b.HoleType) != holes || len(b.HoleSize) != holes {
		return fmt.Errorf("%d hole types and %d sizes for %d holes", len(b.HoleType), len(b.HoleSize), holes)
	}
	size := 0
	for _, s := range b.HoleSize {
		size += int(s)
	}
	if size != len(b.HoleData) {
		return fmt.Errorf("holes of %d bytes counted, %d sent", size, len(b.HoleData))
	}
	return nil
}
