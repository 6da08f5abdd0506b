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

func TestNewStaticRequest(t *testing.T) {
	want := cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/")})
	r := NewStaticRequest("r", "shop", "http", 3, want)
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
