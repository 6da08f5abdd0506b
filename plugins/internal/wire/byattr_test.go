package wire

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// byAttrCases are requests that must reach the plugin as they were sent,
// whichever way they travel: nulls, a json of every kind of type, numbers
// that no float64 holds, and a marked value, which only the whole
// encoding takes. Each has every attribute of the schema, as the core
// hands them.
func byAttrCases(t *testing.T) []cty.Value {
	t.Helper()
	precise, err := cty.ParseNumberVal("0.1000000000000000000000001")
	if err != nil {
		t.Fatal(err)
	}
	price, _ := cty.ParseNumberVal("19.99") // as HCL parses it: no float64 holds it
	out := []cty.Value{
		request("/"),
		cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/only-path")}),
		cty.EmptyObjectVal,
		cty.ObjectVal(map[string]cty.Value{
			"path":    cty.StringVal("/posts/7"),
			"headers": cty.MapVal(map[string]cty.Value{"Accept": cty.StringVal("application/json")}),
			"json": cty.ObjectVal(map[string]cty.Value{
				"price": price, "precise": precise, "big": cty.MustParseNumberVal("123456789012345678901234567890"),
				"ok": cty.True, "none": cty.NullVal(cty.String), "tags": cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}),
				"list": cty.ListVal([]cty.Value{cty.StringVal("x")}), "set": cty.SetVal([]cty.Value{cty.NumberIntVal(2)}),
			}),
		}),
		cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/s"), "json": cty.StringVal("just a string")}),
		cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/n"), "json": cty.NumberIntVal(-3)}),
		cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/m"), "json": cty.MapValEmpty(cty.Bool)}),
		cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("secret").Mark("sensitive"), "json": cty.True}),
	}
	// More shapes than a stream's type table holds: the later ones carry
	// their own type.
	for i := range maxStreamTypes + 20 {
		elems := make([]cty.Value, i+1)
		for j := range elems {
			elems[j] = cty.NumberIntVal(int64(j))
		}
		out = append(out, cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(fmt.Sprint(i)), "json": cty.TupleVal(elems)}))
	}
	ty := hcldec.ImpliedType(fakeInfo.RequestSpec)
	for i, v := range out {
		out[i] = withNulls(v, ty)
	}
	return out
}

// TestHarnessRequestsByAttribute: each request reaches the plugin equal
// to what was sent, marks dropped, at wire version 3 (by attribute) and 2 (whole), from two
// clients of one plugin at once, whose streams number their types
// apart.
func TestHarnessRequestsByAttribute(t *testing.T) {
	ty := hcldec.ImpliedType(fakeInfo.RequestSpec)
	cases := byAttrCases(t)
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			var mu sync.Mutex
			got := map[uint64][]cty.Value{}
			h, a, _ := open(t, RemoteOptions{ProtocolVersion: version}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
				mu.Lock()
				got[call.VU] = append(got[call.VU], call.Request)
				mu.Unlock()
				okSample(emit)
			})
			b, err := h.Open(context.Background(), testTarget)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var wg sync.WaitGroup
			for vu, c := range map[uint64]protocols.Client{1: a, 2: b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Client b sends the cases backwards, so its stream
					// meets the types in another order.
					for i := range cases {
						v := cases[i]
						if vu == 2 {
							v = cases[len(cases)-1-i]
						}
						if s := collect(context.Background(), c, protocols.Call{VU: vu, Request: v}); len(s) != 1 || s[0].Error != "" {
							t.Errorf("client %d, case %d: samples %+v", vu, i, s)
						}
					}
				}()
			}
			wg.Wait()
			if version >= 3 {
				for _, c := range []protocols.Client{a, b} {
					if n := len(c.(*client).attrs.types); n != maxStreamTypes {
						t.Errorf("a stream's type table holds %d types, want it full at %d", n, maxStreamTypes)
					}
				}
			}
			for vu := uint64(1); vu <= 2; vu++ {
				if len(got[vu]) != len(cases) {
					t.Fatalf("client %d: %d calls reached the plugin, want %d", vu, len(got[vu]), len(cases))
				}
				for i, v := range got[vu] {
					sent := cases[i]
					if vu == 2 {
						sent = cases[len(cases)-1-i]
					}
					sent, _ = sent.UnmarkDeep()
					if want := withNulls(sent, ty); !v.RawEquals(want) {
						t.Errorf("client %d, case %d: got %#v, want %#v", vu, i, v, want)
					}
				}
			}
		})
	}
}

// TestAttrEncoderSharesConstants: an attribute that is the same value on
// every call is encoded once, and the bytes are shared, which is what
// sends it once per batch; a varying one is encoded anew; one left out
// is a null.
func TestAttrEncoderSharesConstants(t *testing.T) {
	e, err := newAttrEncoder(hcldec.ImpliedType(fakeInfo.RequestSpec))
	if err != nil {
		t.Fatal(err)
	}
	headers := cty.MapVal(map[string]cty.Value{"Accept": cty.StringVal("text/plain")})
	req := func(path string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(path), "headers": headers, "json": cty.NullVal(cty.DynamicPseudoType)})
	}
	first, ok := e.encode(req("/a"), nil)
	if !ok {
		t.Fatal("not encoded by attribute")
	}
	second, ok := e.encode(req("/b"), nil)
	if !ok {
		t.Fatal("not encoded by attribute")
	}
	// The schema's attributes, sorted: headers, json, path.
	if &first[0].enc[0] != &second[0].enc[0] {
		t.Error("the constant headers were encoded twice")
	}
	if &first[2].enc[0] == &second[2].enc[0] || string(first[2].enc) == string(second[2].enc) {
		t.Error("the varying path shares its encoding")
	}
	// An attribute left out goes as its null, as protocols.Attr reads it.
	partial, ok := e.encode(cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/c")}), nil)
	if !ok || len(partial) != 3 || string(partial[0].enc) != "\xc0" || string(partial[1].enc) != "\xc0" {
		t.Errorf("a request without headers and json: %v, %v", ok, partial)
	}
}

// TestServerMalformedAttributes: calls whose attribute columns or handles
// are wrong fail alone, each with a protocol error.
func TestServerMalformedAttributes(t *testing.T) {
	h, _, _ := open(t, RemoteOptions{}, func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) })
	pc := proto.NewProtocolClient(h.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _ := encodeValue(testTarget, hcldec.ImpliedType(fakeInfo.TargetSpec))
	opened, err := pc.Open(ctx, &proto.OpenRequest{TargetMsgpack: b})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := pc.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	null := []byte{0xc0}
	one := func(id uint64) *proto.CallBatch {
		return &proto.CallBatch{CallId: []uint64{id}, Vu: []uint64{1}, Iteration: []uint64{0},
			PlannedUnixNano: []int64{0}, KeepBody: []bool{false}, Request: []uint32{0}, Ending: []uint32{0}}
	}
	batches := []*proto.CallBatch{
		one(1), // names no request at all
		one(2), // an unknown handle
		one(3), // two attributes of three
		one(4), // an attribute value out of range
		one(5), // a type the table does not have
		one(6), // a type that does not decode
	}
	batches[0].ClientId = opened.ClientId
	batches[1].Prepared = []uint32{7}
	batches[2].ByAttribute, batches[2].AttrValue, batches[2].AttrType, batches[2].AttrValues = []bool{true}, []uint32{0, 0}, []uint32{0, 0}, [][]byte{null}
	batches[3].ByAttribute, batches[3].AttrValue, batches[3].AttrType, batches[3].AttrValues = []bool{true}, []uint32{0, 0, 1}, []uint32{0, 0, 0}, [][]byte{null}
	batches[4].ByAttribute, batches[4].AttrValue, batches[4].AttrType, batches[4].AttrValues = []bool{true}, []uint32{0, 0, 0}, []uint32{0, 9, 0}, [][]byte{null}
	batches[5].ByAttribute, batches[5].AttrValue, batches[5].AttrType, batches[5].AttrValues = []bool{true}, []uint32{0, 0, 0}, []uint32{0, 1, 0}, [][]byte{null}
	batches[5].Types = [][]byte{[]byte(`"no such type"`)}
	for _, b := range batches {
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	errs := map[uint64]string{}
	done := map[uint64]bool{}
	for len(done) < len(batches) {
		sb, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range sb.CallId {
			if e := sb.Error[i]; e > 0 {
				errs[id] = sb.Names[e-1]
			}
		}
		for _, id := range sb.Done {
			done[id] = true
		}
	}
	for id := uint64(1); id <= uint64(len(batches)); id++ {
		if errs[id] != string(protocols.ErrProtocol) {
			t.Errorf("call %d: error %q, want %q", id, errs[id], protocols.ErrProtocol)
		}
	}
	// A call by attribute that is right still runs on the same stream.
	good := one(100)
	good.ByAttribute, good.AttrValue, good.AttrType, good.AttrValues = []bool{true}, []uint32{0, 0, 0}, []uint32{0, 0, 0}, [][]byte{null}
	if err := stream.Send(good); err != nil {
		t.Fatal(err)
	}
	for {
		sb, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(sb.Done) > 0 {
			if len(sb.CallId) != 1 || sb.CallId[0] != 100 || sb.Error[0] != 0 {
				t.Errorf("the good call: %+v", sb)
			}
			break
		}
	}
}
