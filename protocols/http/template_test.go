package http

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// punch returns r's shape with holes at random: whole attributes, and
// values inside its json, at any depth; and the holes' values, in the
// order cty.Walk meets them, as the core hands them.
func punch(rng *rand.Rand, r cty.Value) (cty.Value, []cty.Value) {
	var inner func(v cty.Value) cty.Value
	inner = func(v cty.Value) cty.Value {
		t := v.Type()
		switch {
		case v.IsNull() || rng.IntN(3) == 0:
			if rng.IntN(2) == 0 {
				return cty.DynamicVal
			}
			return v
		case t.IsObjectType():
			attrs := map[string]cty.Value{}
			for k, e := range v.AsValueMap() {
				attrs[k] = inner(e)
			}
			return cty.ObjectVal(attrs)
		case t.IsTupleType():
			var elems []cty.Value
			for _, e := range v.AsValueSlice() {
				elems = append(elems, inner(e))
			}
			return cty.TupleVal(elems)
		}
		if rng.IntN(2) == 0 {
			return cty.DynamicVal
		}
		return v
	}
	attrs := map[string]cty.Value{}
	for k, v := range r.AsValueMap() {
		switch {
		case k == "json" && !v.IsNull() && (v.Type().IsObjectType() || v.Type().IsTupleType()) && rng.IntN(8) > 0:
			attrs[k] = inner(v)
		case rng.IntN(3) == 0:
			attrs[k] = cty.DynamicVal
		default:
			attrs[k] = v
		}
	}
	shape := cty.ObjectVal(attrs)
	var holes []cty.Value
	cty.Walk(shape, func(p cty.Path, v cty.Value) (bool, error) {
		if !v.IsKnown() {
			h, err := p.Apply(r)
			if err != nil {
				panic(err)
			}
			holes = append(holes, h)
		}
		return true, nil
	})
	return shape, holes
}

// TestTemplateRendersAsWhole renders long random sequences of requests
// into one VU's rendering, each through a template of a random shape of
// it with its holes' values (now and then as a whole object, as a
// request that could not be templated comes), and checks each against a
// fresh rendering of the whole request: the same bytes on the wire, the
// same URL, options and replayable body, and the same error.
func TestTemplateRendersAsWhole(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v1/?key=k"} {
		c := newClient(mustTarget(t, base))
		next := randomRequests(uint64(len(base)) + 11)
		rng := rand.New(rand.NewPCG(3, uint64(len(base))))
		var kept rendered
		var s scratch
		templated, inJSON, failed := 0, 0, 0
		for i := range 3000 {
			r := next()
			var fresh rendered
			wantErr := render(c.cfg, r, &fresh, &scratch{})
			var gotErr error
			if !r.IsWhollyKnown() || rng.IntN(10) == 0 {
				gotErr = render(c.cfg, r, &kept, &s)
			} else {
				shape, holes := punch(rng, r)
				tmpl, err := c.Template(shape, len(holes))
				if err != nil {
					t.Fatalf("%s, call %d: Template: %v\nshape %#v", base, i, err, shape)
				}
				templated++
				if tmpl.(*template).json != nil {
					inJSON++
				}
				gotErr = renderHoles(c.cfg, tmpl.(*template), holes, &kept, &s)
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s, call %d: error %v, whole %v\nrequest %#v", base, i, gotErr, wantErr, r)
			}
			if wantErr != nil {
				failed++
				continue
			}
			if got, want := renderSnapshot(&kept), renderSnapshot(&fresh); got != want {
				t.Fatalf("%s, call %d: templated rendering\n%s\nwhole\n%s\nrequest %#v", base, i, got, want, r)
			}
		}
		t.Logf("%s: %d calls templated, %d with holes in json; %d failed", base, templated, inJSON, failed)
		if templated < 2000 || inJSON < 100 || failed < 100 {
			t.Fatalf("%s: %d templated, %d with holes in json, %d failed: the sequence is not testing them all", base, templated, inJSON, failed)
		}
	}
}

// mustTarget parses a target of base_url base.
func mustTarget(t *testing.T, base string) *targetConfig {
	t.Helper()
	cfg, err := parseTarget(object(targetSpec(), map[string]cty.Value{"base_url": cty.StringVal(base)}))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTemplateRefusesWhatItCannotRender: a shape with holes inside an
// attribute other than json, or whose hole count is not the core's, is
// refused, for the core to send those requests whole.
func TestTemplateRefusesWhatItCannotRender(t *testing.T) {
	c := newClient(mustTarget(t, "http://127.0.0.1:8080"))
	headers := req(map[string]cty.Value{"headers": cty.ObjectVal(map[string]cty.Value{"x-a": cty.DynamicVal})})
	if _, err := c.Template(headers, 1); err == nil {
		t.Error("holes inside headers were taken")
	}
	path := req(map[string]cty.Value{"path": cty.DynamicVal})
	if _, err := c.Template(path, 2); err == nil {
		t.Error("a shape of 1 hole was taken for 2")
	}
	if _, err := c.Template(path, 1); err != nil {
		t.Errorf("a whole path hole: %v", err)
	}
}
