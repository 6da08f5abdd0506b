package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// fill puts holes into shape's unknown values, in the order cty.Walk
// meets them, as a protocol's template does.
func fill(t *testing.T, shape cty.Value, holes []cty.Value) cty.Value {
	t.Helper()
	var order []cty.Path
	cty.Walk(shape, func(p cty.Path, v cty.Value) (bool, error) {
		if !v.IsKnown() {
			order = append(order, p.Copy())
		}
		return true, nil
	})
	// Transform meets them in another order.
	i := 0
	v, err := cty.Transform(shape, func(p cty.Path, v cty.Value) (cty.Value, error) {
		if v.IsKnown() {
			return v, nil
		}
		for j, q := range order {
			if q.Equals(p) && j < len(holes) {
				i++
				return holes[j], nil
			}
		}
		return v, fmt.Errorf("hole %#v not found among %d", p, len(holes))
	})
	if err != nil || i != len(holes) {
		t.Fatalf("fill: %v, %d of %d holes used", err, i, len(holes))
	}
	return v
}

// TestEvalHolesMatchEval: a request's shape filled with EvalHoles's values
// is the very request Eval gives for the same iteration and draws, with
// the same delivery, compiled or through HCL; the shape keeps the
// constant parts of an object constructor and leaves its dynamic values
// as holes.
func TestEvalHolesMatchEval(t *testing.T) {
	for _, mode := range []string{"compiled", "hcl"} {
		t.Run(mode, func(t *testing.T) {
			whole, holed := loadFixed(t), loadFixed(t)
			if mode == "hcl" {
				interpretOnly(whole)
				interpretOnly(holed)
			}
			post := holed.Scenarios[0].Requests[1]
			shape, n, ok := post.Shape()
			if !ok {
				t.Fatal("a dynamic request has no shape")
			}
			json := shape.GetAttr("json")
			if mode == "compiled" {
				// The constants of the json constructor stay; its values
				// per call, tags among them (a tuple with a draw), are holes.
				if !json.Type().IsObjectType() || json.GetAttr("price").IsKnown() != true ||
					json.GetAttr("sku").AsString() != "A-100" || json.GetAttr("quantity").IsKnown() || json.GetAttr("tags").IsKnown() {
					t.Errorf("json's shape %#v: want constants kept, values per call as holes", json)
				}
				if n != 10 { // form, headers, 6 in json, path, query
					t.Errorf("%d holes, want 10", n)
				}
			} else if json.IsKnown() {
				t.Errorf("json through HCL is one hole, got %#v", json)
			}
			feeder := holed.Feeders[0]
			var holes []cty.Value
			for i := range 200 {
				it := fixedIteration(i, feeder)
				for j, r := range holed.Scenarios[0].Requests[1:] {
					shape, _, _ := r.Shape()
					var d Delivery
					var diags error
					h, d, hdiags := r.EvalHoles(it, holes)
					if hdiags.HasErrors() {
						diags = hdiags
					}
					holes = h
					w, wd, wdiags := whole.Scenarios[0].Requests[j+1].Eval(it)
					if diags != nil || wdiags.HasErrors() {
						t.Fatalf("%s: %v / %v", r.Name, diags, wdiags)
					}
					sameValue(t, fmt.Sprintf("%s, iteration %d", r.Name, i), fill(t, shape, holes), w)
					if d != wd {
						t.Fatalf("%s, iteration %d: delivery %+v, Eval's %+v", r.Name, i, d, wd)
					}
				}
			}
			// A missing capture fails as Eval does.
			_, _, diags := post.EvalHoles(Iteration{VU: 1, Data: map[string]cty.Value{"users": feeder.Row(0)}}, nil)
			if want := `This object does not have an attribute named "token".`; !strings.Contains(diags.Error(), want) {
				t.Errorf("missing capture: %v; want %q", diags, want)
			}
		})
	}
}

// TestEvalHolesGivesUpToHCL: a hole inside json whose compiled form gives
// up for a call (a capture not known, in a template) takes its value from
// the attribute evaluated through HCL, as Eval does, and the attribute's
// other holes keep theirs; one that HCL refuses too (a list in a
// template) fails as Eval fails.
func TestEvalHolesGivesUpToHCL(t *testing.T) {
	test := mustLoadFiles(t, map[string]string{"test.hcl": `
target "t" { base_url = "http://127.0.0.1:8080" }
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  request "r" {
    json = {
      ref    = "r-${vu.vars.token}"
      n      = vu.iteration
      nested = { a = vu.id, b = "x" }
    }
  }
}
`})
	r := test.Scenarios[0].Requests[1]
	shape, n, _ := r.Shape()
	if n != 3 || !shape.GetAttr("json").GetAttr("nested").GetAttr("b").IsKnown() {
		t.Fatalf("shape %#v with %d holes, want 3 holes and nested.b kept", shape, n)
	}
	for i, token := range []cty.Value{cty.StringVal("abc"), cty.NumberIntVal(42), cty.UnknownVal(cty.String)} {
		it := Iteration{VU: 2, Iteration: uint64(i), Scenario: "s", Vars: map[string]cty.Value{"token": token}}
		holes, _, diags := r.EvalHoles(it, nil)
		want, _, wdiags := r.Eval(it)
		if diags.HasErrors() || wdiags.HasErrors() {
			t.Fatalf("token %#v: %v / %v", token, diags, wdiags)
		}
		// An unknown value has no Equals: RawEquals compares all there is.
		if got := fill(t, shape, holes); !got.RawEquals(want) {
			t.Errorf("token %#v: %#v, Eval's %#v", token, got, want)
		}
	}
	it := Iteration{VU: 2, Scenario: "s", Vars: map[string]cty.Value{"token": cty.ListVal([]cty.Value{cty.True})}}
	_, _, diags := r.EvalHoles(it, nil)
	_, _, wdiags := r.Eval(it)
	if !diags.HasErrors() || diags.Error() != wdiags.Error() {
		t.Errorf("a list in a template: %v, Eval's %v", diags, wdiags)
	}
}
