package config

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestRequestValuePerIteration(t *testing.T) {
	test := mustParse(t, oneRequest(`
    method  = "POST"
    path    = "/users/${vu.id}/items/${vu.iteration}"
    headers = { X-Scenario = scenario.name, X-Static = "s" }
    json    = { n = random_int(10, 20), id = vu.id }
`), testOptions())
	r := test.Scenarios[0].Requests[0]
	if !r.Dynamic() {
		t.Fatal("request is static, want dynamic")
	}
	for vu := uint64(1); vu <= 3; vu++ {
		for it := uint64(0); it < 50; it++ {
			v, diags := r.Value(Iteration{VU: vu, Iteration: it, Scenario: "browse"})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if got, want := v.GetAttr("path").AsString(), "/users/"+strconv.FormatUint(vu, 10)+"/items/"+strconv.FormatUint(it, 10); got != want {
				t.Fatalf("path = %q, want %q", got, want)
			}
			if v.GetAttr("method").AsString() != "POST" {
				t.Fatalf("method = %#v", v.GetAttr("method"))
			}
			h := v.GetAttr("headers")
			if h.Index(cty.StringVal("X-Scenario")).AsString() != "browse" || h.Index(cty.StringVal("X-Static")).AsString() != "s" {
				t.Fatalf("headers = %#v", h)
			}
			n, _ := v.GetAttr("json").GetAttr("n").AsBigFloat().Int64()
			if n < 10 || n > 20 {
				t.Fatalf("random_int(10, 20) = %d", n)
			}
			// Every RequestSpec attribute is present; unset ones are null.
			for _, name := range []string{"query", "body", "form", "timeout"} {
				if !v.GetAttr(name).IsNull() {
					t.Fatalf("%s = %#v, want null", name, v.GetAttr(name))
				}
			}
		}
	}
}

func TestRandomFunctionsCoverTheirRange(t *testing.T) {
	test := mustParse(t, oneRequest(`
    path = "/${random_int(1, 3)}"
    body = random_string(12)
    json = { pick = random_choice(["a", "b"]), id = uuid() }
`), testOptions())
	r := test.Scenarios[0].Requests[0]
	seen := map[string]bool{}
	picks := map[string]bool{}
	ids := map[string]bool{}
	for i := range 300 {
		v, diags := r.Value(Iteration{VU: 1, Iteration: uint64(i)})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		seen[v.GetAttr("path").AsString()] = true
		body := v.GetAttr("body").AsString()
		if len(body) != 12 || strings.Trim(body, alphanumeric) != "" {
			t.Fatalf("random_string(12) = %q", body)
		}
		picks[v.GetAttr("json").GetAttr("pick").AsString()] = true
		ids[v.GetAttr("json").GetAttr("id").AsString()] = true
	}
	if len(seen) != 3 || !seen["/1"] || !seen["/3"] {
		t.Errorf("random_int(1, 3) gave %v, want all of 1, 2, 3", seen)
	}
	if len(picks) != 2 {
		t.Errorf("random_choice gave %v", picks)
	}
	if len(ids) != 300 {
		t.Errorf("uuid() repeated: %d distinct of 300", len(ids))
	}
}

func TestStaticRequestValueDoesNotAllocate(t *testing.T) {
	test := mustParse(t, oneRequest(`path = "/static"`), testOptions())
	r := test.Scenarios[0].Requests[0]
	allocs := testing.AllocsPerRun(100, func() {
		if _, diags := r.Value(Iteration{VU: 1}); diags != nil {
			t.Fatal(diags)
		}
	})
	if allocs != 0 {
		t.Errorf("static Value allocates %v times, want 0", allocs)
	}
}

// TestRequestValueConcurrent is meant for go test -race.
func TestRequestValueConcurrent(t *testing.T) {
	test := mustParse(t, oneRequest(`path = "/${vu.id}/${random_int(1, 100)}/${uuid()}"`), testOptions())
	r := test.Scenarios[0].Requests[0]
	var wg sync.WaitGroup
	for vu := range 16 {
		wg.Go(func() {
			for it := range 200 {
				v, diags := r.Value(Iteration{VU: uint64(vu + 1), Iteration: uint64(it)})
				if diags.HasErrors() {
					t.Error(diags)
					return
				}
				if !strings.HasPrefix(v.GetAttr("path").AsString(), "/"+strconv.Itoa(vu+1)+"/") {
					t.Errorf("path = %q for vu %d", v.GetAttr("path").AsString(), vu+1)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestStaticRequestValue checks that a request without dynamic
// attributes returns its fixed value, whatever the iteration.
func TestStaticRequestValue(t *testing.T) {
	want := cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/")})
	r := &Request{Name: "r", Target: "shop", Protocol: "http", Weight: 3, value: want}
	got, diags := r.Value(Iteration{VU: 1})
	if diags != nil || !got.RawEquals(want) || r.Dynamic() || r.Weight != 3 {
		t.Errorf("Value = %#v, %v", got, diags)
	}
}

func BenchmarkRequestValue(b *testing.B) {
	for _, bc := range []struct{ name, attrs string }{
		{"static", `path = "/posts/1"`},
		{"vu_id", `path = "/users/${vu.id}"`},
		{"random_int", `path = "/posts/${random_int(1, 170000)}"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			test, diags := Parse(map[string][]byte{"b.hcl": []byte(oneRequest(bc.attrs))}, b.TempDir(), testOptions())
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			r := test.Scenarios[0].Requests[0]
			b.ReportAllocs()
			var i uint64
			for b.Loop() {
				i++
				if _, diags := r.Value(Iteration{VU: 1, Iteration: i}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
		})
	}
}

// TestLetIsSharedByAttributes checks that let is evaluated once per call
// and that every attribute, delivery included, sees the same value.
func TestLetIsSharedByAttributes(t *testing.T) {
	test := mustParse(t, oneRequest(`
    let      = { uid = random_int(1, 1000000), tag = "t-${vu.id}" }
    path     = "/users/${let.uid}"
    json     = { userId = let.uid, tag = let.tag, sentAt = unix_micros() }
    delivery = { key = "user-${let.uid}", id = "${scenario.name}-${vu.id}-${vu.iteration}" }
`), testOptions())
	r := test.Scenarios[0].Requests[0]
	for i := range 50 {
		v, d, diags := r.Eval(Iteration{VU: 7, Iteration: uint64(i), Scenario: "browse"})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		uid := v.GetAttr("json").GetAttr("userId").AsBigFloat().Text('f', 0)
		if got := v.GetAttr("path").AsString(); got != "/users/"+uid {
			t.Fatalf("path = %q, json userId = %s: let evaluated twice", got, uid)
		}
		if want := (Delivery{Set: true, Key: "user-" + uid, ID: "browse-7-" + strconv.Itoa(i)}); d != want {
			t.Fatalf("delivery = %+v, want %+v", d, want)
		}
		if tag := v.GetAttr("json").GetAttr("tag").AsString(); tag != "t-7" {
			t.Fatalf("tag = %q", tag)
		}
	}
}

func TestStaticLetAndDelivery(t *testing.T) {
	test := mustParse(t, oneRequest(`
    let      = { user = "u1" }
    path     = "/${let.user}"
    delivery = { key = let.user, id = 42 }
`), testOptions())
	r := test.Scenarios[0].Requests[0]
	if r.Dynamic() {
		t.Error("a request with a static let is dynamic")
	}
	v, d, diags := r.Eval(Iteration{VU: 1})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if v.GetAttr("path").AsString() != "/u1" || d != (Delivery{Set: true, Key: "u1", ID: "42"}) {
		t.Errorf("path %#v, delivery %+v", v.GetAttr("path"), d)
	}
	plain := mustParse(t, oneRequest(`path = "/"`), testOptions()).Scenarios[0].Requests[0]
	if _, d, _ := plain.Eval(Iteration{VU: 1}); d.Set {
		t.Errorf("request without delivery has %+v", d)
	}
}

func TestLetAndDeliveryErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"let is not an object", `let = 5`, "let must be an object"},
		{"let uses let", `let = { a = 1, b = let.a }`, "let cannot use let"},
		{"unknown let value", "let = { uid = 1 }\npath = \"/${let.user}\"", `let has no attribute "user"`},
		{"no let", `path = "/${let.uid}"`, "has no let attribute"},
		{"delivery without id", `delivery = { key = "k" }`, "both are required"},
		{"delivery unknown attribute", `delivery = { key = "k", id = "i", ky = "x" }`, `delivery has no attribute "ky"`},
		{"delivery empty key", `delivery = { key = "", id = "i" }`, "key must be a non-empty string"},
		{"delivery not an object", `delivery = "k"`, "delivery is an object with a key and an id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test, diags := parseString(t, oneRequest(tc.body), testOptions())
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			if got := render(t, test, diags); !strings.Contains(got, tc.want) {
				t.Errorf("diagnostics do not say %q:\n%s", tc.want, got)
			}
		})
	}
}
