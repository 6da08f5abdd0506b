package wire

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// httpLikeSpec is the shape of protocols/http's request schema: a few
// strings and maps, and a json attribute of any type. Copied rather than
// imported, so that the wire's benchmark does not move with the HTTP
// protocol's code.
var httpLikeSpec = hcldec.ObjectSpec{
	"method":          &hcldec.AttrSpec{Name: "method", Type: cty.String},
	"path":            &hcldec.AttrSpec{Name: "path", Type: cty.String},
	"query":           &hcldec.AttrSpec{Name: "query", Type: cty.Map(cty.String)},
	"headers":         &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
	"body":            &hcldec.AttrSpec{Name: "body", Type: cty.String},
	"json":            &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
	"form":            &hcldec.AttrSpec{Name: "form", Type: cty.Map(cty.String)},
	"timeout":         &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
	"expected_status": &hcldec.AttrSpec{Name: "expected_status", Type: cty.List(cty.Number)},
}

// httpLike is a protocol with httpLikeSpec whose Do answers at once.
type httpLike struct {
	calls atomic.Int64
}

func (p *httpLike) Describe() protocols.Info {
	return protocols.Info{Name: "httplike", Version: "1", TargetSpec: fakeInfo.TargetSpec, RequestSpec: httpLikeSpec}
}

func (p *httpLike) Open(context.Context, cty.Value) (protocols.Client, error) {
	return httpLikeClient{p}, nil
}

type httpLikeClient struct{ p *httpLike }

func (c httpLikeClient) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.p.calls.Add(1)
	okSample(emit)
}

func (httpLikeClient) Close() error { return nil }

// Template implements protocols.Templater: the client renders nothing,
// so the benchmark measures the wire's part of a template's calls.
func (httpLikeClient) Template(cty.Value, int) (any, error) { return struct{}{}, nil }

// postShape is the dynamic POST's shape, as the config makes it: its
// holes are the path and, inside the json, quantity, user, vu and
// iteration (in the order cty.Walk meets them: json's by name, then
// path).
var postShape = func() cty.Value {
	attrs := maps.Clone(postStatic)
	attrs["path"] = cty.DynamicVal
	attrs["json"] = cty.ObjectVal(map[string]cty.Value{
		"sku": cty.StringVal("A-100"), "quantity": cty.DynamicVal, "price": price,
		"gift": cty.False, "tags": cty.TupleVal([]cty.Value{cty.StringVal("red"), cty.StringVal("small")}),
		"user": cty.DynamicVal, "vu": cty.DynamicVal, "iteration": cty.DynamicVal,
	})
	return cty.ObjectVal(attrs)
}()

// postHoles are the values of postShape's holes for one call, as
// postDynamic's, into dst.
func postHoles(vu, it uint64, dst []cty.Value) []cty.Value {
	return append(dst[:0],
		cty.NumberUIntVal(it),
		cty.NumberIntVal(int64(1+it%9)),
		cty.StringVal(fmt.Sprintf("user%d@example.com", 1+it%100)),
		cty.NumberUIntVal(vu),
		cty.StringVal(fmt.Sprintf("/orders/%08x", vu*7919+it)),
	)
}

// postStatic is the constant part of the bench harness's POST, as the
// config hands it over: the same values on every call.
var postStatic = map[string]cty.Value{
	"method":          cty.StringVal("POST"),
	"query":           cty.MapVal(map[string]cty.Value{"page": cty.StringVal("1"), "sort": cty.StringVal("price")}),
	"headers":         cty.NullVal(cty.Map(cty.String)),
	"body":            cty.NullVal(cty.String),
	"form":            cty.NullVal(cty.Map(cty.String)),
	"timeout":         cty.NullVal(cty.String),
	"expected_status": cty.NullVal(cty.List(cty.Number)),
}

// price is the POST's price as HCL parses the literal: a number of 512
// bits that no float64 holds, the same value on every call.
var price = cty.MustParseNumberVal("19.99")

// postConstant is the constant POST of the bench harness.
var postConstant = func() cty.Value {
	attrs := maps.Clone(postStatic)
	attrs["path"] = cty.StringVal("/orders")
	attrs["json"] = cty.ObjectVal(map[string]cty.Value{
		"sku": cty.StringVal("A-100"), "quantity": cty.NumberIntVal(2), "price": price,
		"gift": cty.False, "tags": cty.TupleVal([]cty.Value{cty.StringVal("red"), cty.StringVal("small")}),
	})
	return cty.ObjectVal(attrs)
}()

// postDynamic builds the dynamic POST of the bench harness for one call,
// as the config evaluates it: the static attributes shared, the path and
// the json built anew.
func postDynamic(vu, it uint64) cty.Value {
	attrs := make(map[string]cty.Value, len(httpLikeSpec))
	maps.Copy(attrs, postStatic)
	attrs["path"] = cty.StringVal(fmt.Sprintf("/orders/%08x", vu*7919+it))
	attrs["json"] = cty.ObjectVal(map[string]cty.Value{
		"sku": cty.StringVal("A-100"), "quantity": cty.NumberIntVal(int64(1 + it%9)), "price": price,
		"gift": cty.False, "tags": cty.TupleVal([]cty.Value{cty.StringVal("red"), cty.StringVal("small")}),
		"user": cty.StringVal(fmt.Sprintf("user%d@example.com", 1+it%100)),
		"vu":   cty.NumberUIntVal(vu), "iteration": cty.NumberUIntVal(it),
	})
	return cty.ObjectVal(attrs)
}

// BenchmarkWire runs the bench harness's constant and dynamic POST
// through go-plugin's gRPC on a unix socket to a protocol that answers at
// once, from 50 VUs: what a call costs on the wire, both ends together,
// at wire version 2 (the request whole on every call), at version 3 (a
// constant request prepared once, a dynamic one by attribute) and at
// version 4 (a dynamic one as a template and its holes' values, for
// "template"), and in-process, for what building the values and running
// the VUs cost on their own. The core's part is played as it does it: a
// constant request is prepared once when the client can, and a dynamic
// one is built per call, in the loop, whole or as its holes.
func BenchmarkWire(b *testing.B) {
	for _, req := range []struct {
		name     string
		value    func(vu, it uint64) cty.Value
		holes    func(vu, it uint64, dst []cty.Value) []cty.Value
		fixed    bool
		versions []int
	}{
		{"constant", func(uint64, uint64) cty.Value { return postConstant }, nil, true, []int{0, 2, 3, 4}},
		{"dynamic", postDynamic, nil, false, []int{0, 2, 3}},
		{"template", nil, postHoles, false, []int{0, 4}},
	} {
		for _, version := range req.versions {
			name := fmt.Sprintf("%s/v%d", req.name, version)
			if version == 0 {
				name = req.name + "/in-process"
			}
			b.Run(name, func(b *testing.B) {
				benchmarkWire(b, version, req.value, req.holes, req.fixed)
			})
		}
	}
}

func benchmarkWire(b *testing.B, version int, value func(vu, it uint64) cty.Value, holes func(vu, it uint64, dst []cty.Value) []cty.Value, fixed bool) {
	p := &httpLike{}
	var c protocols.Client = httpLikeClient{p}
	if version != 0 {
		c = openGoPluginProtocol(b, p, version)
	}
	var prep any
	if pr, ok := c.(protocols.Preparer); ok && fixed {
		prep, _ = pr.Prepare(value(0, 0)) // an error leaves it unprepared, as in the core
	}
	if holes != nil {
		var err error
		if prep, err = c.(protocols.Templater).Template(postShape, 5); err != nil {
			b.Fatal(err)
		}
	}
	const vus = 50
	var next, samples atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			emit := func(protocols.Sample) { samples.Add(1) }
			var hv []cty.Value
			for it := uint64(0); next.Add(1) <= int64(b.N); it++ {
				call := protocols.Call{VU: vu, Iteration: it, Prepared: prep}
				if holes != nil {
					hv = holes(vu, it, hv)
					call.Holes = hv
				} else {
					call.Request = value(vu, it)
				}
				c.Do(context.Background(), call, emit)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportBatches(b, c)
	if samples.Load() != int64(b.N) || p.calls.Load() != int64(b.N) {
		b.Fatalf("%d samples and %d calls in the plugin for %d calls", samples.Load(), p.calls.Load(), b.N)
	}
}
