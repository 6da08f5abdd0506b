package http

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// renderSnapshot is what a rendering sends: the request as the engine
// writes it, and what the client reads of it besides.
func renderSnapshot(rd *rendered) string {
	h := firstHop(rd)
	wire := appendRequest(nil, &h, "")
	body := ""
	if rd.getBody != nil {
		r, _ := rd.getBody()
		var b bytes.Buffer
		b.ReadFrom(r)
		body = b.String()
	}
	var u url.URL
	user := ""
	if rd.url != nil {
		u = *rd.url
		if u.User != nil {
			user, u.User = u.User.String(), nil
		}
	}
	return fmt.Sprintf("%q url=%#v user=%s timeout=%v expected=%v getBody=%v:%q", wire, u, user, rd.opt.timeout, rd.opt.expected, rd.getBody != nil, body)
}

// randomRequests returns a source of random request values: each
// attribute drawn from a few values, most of them made once and shared
// among the requests (as the config shares its constant attributes), some
// made anew, equal but not shared, and some that render refuses.
func randomRequests(seed uint64) func() cty.Value {
	rng := rand.New(rand.NewPCG(seed, 1))
	str := cty.StringVal
	null := cty.NullVal(cty.DynamicPseudoType)
	pick := func(vs ...cty.Value) cty.Value { return vs[rng.IntN(len(vs))] }
	shared := map[string][]cty.Value{
		"timeout":         {null, str("5s"), str("2"), str("0.5")},
		"expected_status": {null, cty.ListVal([]cty.Value{cty.NumberIntVal(200), cty.NumberIntVal(201)}), cty.ListVal([]cty.Value{cty.NumberIntVal(404)})},
		"method":          {null, null, str("post"), str("PUT"), str("purge")},
		"headers":         {null, strMap("x-a", "1"), strMap("host", "other.test", "x-b", "2"), strMap("content-type", "text/plain")},
		"query":           {null, null, cty.MapValEmpty(cty.String), strMap("page", "1", "sort", "price"), strMap("q", "a b&c")},
		"form":            {strMap("user", "ada", "pass", "x=y")},
		"body":            {str(""), str("hello")},
	}
	// bad are values render refuses, drawn now and then.
	bad := map[string]cty.Value{
		"timeout": str("-1s"), "expected_status": cty.ListValEmpty(cty.Number), "method": str("GTE"),
		"headers": strMap("x-bad", "a\nb"), "query": cty.MapVal(map[string]cty.Value{"q": cty.UnknownVal(cty.String)}),
	}
	fresh := func(name string) cty.Value {
		switch name {
		case "method":
			return pick(str("post"), str("GET"))
		case "headers":
			return strMap("x-a", "1")
		case "query":
			return strMap("page", "1", "sort", "price")
		case "expected_status":
			return cty.ListVal([]cty.Value{cty.NumberIntVal(200), cty.NumberIntVal(201)})
		}
		return str("5s")
	}
	plain := "abcXYZ019-._~/"
	path := func() cty.Value {
		switch rng.IntN(8) {
		case 0:
			return null
		case 1:
			return str("/orders/7")
		case 2:
			return str("items/" + fmt.Sprint(rng.IntN(3)))
		case 3:
			if rng.IntN(4) > 0 {
				return str("/orders/" + fmt.Sprint(rng.IntN(3)))
			}
			return str(pick(str("/a b"), str("/é"), str("/x?y=1"), str("/p%2Fq"), str("/x#f"), str("%zz")).AsString())
		}
		var b strings.Builder
		b.WriteByte('/')
		for range rng.IntN(12) {
			b.WriteByte(plain[rng.IntN(len(plain))])
		}
		return str(b.String())
	}
	numbers := []cty.Value{
		cty.MustParseNumberVal("19.99"), cty.NumberFloatVal(19.99), cty.NumberFloatVal(0.1),
		cty.NumberVal(new(big.Float).SetPrec(512).SetFloat64(0.1)), cty.NumberIntVal(7),
		cty.NumberFloatVal(math.Copysign(0, -1)), cty.Zero, quotient(1, 3), quotient(2, 6),
		cty.MustParseNumberVal("1e300"), cty.NumberFloatVal(2.5),
	}
	var jsonValue func(depth int) cty.Value
	jsonValue = func(depth int) cty.Value {
		k := rng.IntN(8)
		if depth > 2 {
			k %= 4
		}
		switch k {
		case 0, 1:
			return numbers[rng.IntN(len(numbers))]
		case 2:
			return pick(str("A-100"), str("<x>"), cty.True, cty.False, cty.NullVal(cty.Number))
		case 3:
			return cty.NumberIntVal(int64(rng.IntN(9)))
		case 4, 5:
			// Sets of names of the same size, and of others.
			attrs := map[string]cty.Value{}
			for _, name := range []string{"sku", "price", "qty", "tags", "gift"} {
				if rng.IntN(3) > 0 {
					attrs[name] = jsonValue(depth + 1)
				}
			}
			return cty.ObjectVal(attrs)
		case 6:
			return cty.TupleVal([]cty.Value{jsonValue(depth + 1), jsonValue(depth + 1)}[:1+rng.IntN(2)])
		}
		return cty.ListVal([]cty.Value{numbers[rng.IntN(len(numbers))], numbers[rng.IntN(len(numbers))]})
	}
	sharedJSON := jsonValue(0)
	return func() cty.Value {
		set := map[string]cty.Value{"path": path()}
		for name, vs := range shared {
			if name == "form" || name == "body" {
				continue
			}
			switch rng.IntN(100) {
			case 0:
				set[name] = bad[name]
			case 1, 2, 3, 4, 5, 6, 7, 8:
				set[name] = fresh(name)
			default:
				set[name] = vs[rng.IntN(len(vs))]
			}
		}
		switch rng.IntN(20) {
		case 0, 1, 2:
			set["body"] = pick(shared["body"]...)
		case 3, 4:
			set["form"] = shared["form"][0]
		case 5, 6, 7, 8:
			set["json"] = sharedJSON
		case 9, 10, 11, 12, 13, 14:
			set["json"] = jsonValue(0)
		case 15:
			set["json"], set["body"] = sharedJSON, str("two bodies") // refused
		}
		return req(set)
	}
}

// TestRenderedPerVUIsFresh renders long random sequences of requests into
// one VU's rendering, which keeps what did not change since the VU's last
// call, and checks each against a fresh rendering: the same bytes on the
// wire, the same URL, options and replayable body, and the same error.
func TestRenderedPerVUIsFresh(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v1/?key=k", "https://u:p@shop.test/a%20b"} {
		cfg, err := parseTarget(object(targetSpec(), map[string]cty.Value{"base_url": cty.StringVal(base)}))
		if err != nil {
			t.Fatal(err)
		}
		next := randomRequests(uint64(len(base)))
		var kept rendered
		var s scratch
		reused, failed := 0, 0
		for i := range 3000 {
			r := next()
			var fresh rendered
			wantErr := render(cfg, r, &fresh, &scratch{})
			wasValid := s.valid
			gotErr := render(cfg, r, &kept, &s)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s, call %d: error %v, fresh %v\nrequest %#v", base, i, gotErr, wantErr, r)
			}
			if wantErr != nil {
				failed++
				continue
			}
			if wasValid {
				reused++
			}
			if got, want := renderSnapshot(&kept), renderSnapshot(&fresh); got != want {
				t.Fatalf("%s, call %d: kept rendering\n%s\nfresh\n%s\nrequest %#v", base, i, got, want, r)
			}
		}
		t.Logf("%s: %d calls reused the last rendering, %d failed", base, reused, failed)
		if reused < 1000 || failed < 100 {
			t.Fatalf("%s: %d calls reused the last rendering and %d failed; the sequence is not testing both", base, reused, failed)
		}
	}
}

// TestJSONCacheIsFresh encodes random sequences of JSON values through one
// cache, and checks each against ctyjson's bytes: values that share
// their shape and differ in their leaves, numbers equal in value and
// different in precision or sign, and leaves that change type.
func TestJSONCacheIsFresh(t *testing.T) {
	next := randomRequests(7)
	var c jsonCache
	n := 0
	for i := range 20000 {
		j := next().GetAttr("json")
		if j.IsNull() {
			continue
		}
		n++
		got, err := encodeJSONCached([]byte("x"), j, &c)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		sameJSON(t, j)
		want, _ := appendJSON([]byte("x"), j)
		if !bytes.Equal(got, want) {
			t.Fatalf("value %d: cached %s, fresh %s\nvalue %#v", i, got, want, j)
		}
	}
	if n < 5000 {
		t.Fatalf("only %d JSON values", n)
	}
	// The same value at two precisions: 0.1 as a float64 is "0.1" at 53
	// bits and its whole expansion at 512.
	for _, v := range []cty.Value{cty.NumberFloatVal(0.1), cty.NumberVal(new(big.Float).SetPrec(512).SetFloat64(0.1)), cty.NumberFloatVal(0.1)} {
		got, _ := encodeJSONCached(nil, v, &c)
		want, _ := appendJSON(nil, v)
		if !bytes.Equal(got, want) {
			t.Fatalf("%#v: cached %s, fresh %s", v, got, want)
		}
	}
}

// TestPlainPathJoinIsURLParse checks that a plain path joined to a base
// URL without parsing gives the URL that url.Parse gives, field by field.
func TestPlainPathJoinIsURLParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcXYZ019-._~/%?#:@!$&'()*+,;= é"
	joined := 0
	for _, base := range []string{"http://127.0.0.1:8080", "http://h/api", "https://u:p@shop.test:8443/v1/x", "http://[::1]:80/p", "http://h/a%2Fb", "http://h/a%20b"} {
		var b plainBase
		for range 5000 {
			var p strings.Builder
			p.WriteByte('/')
			for range rng.IntN(10) {
				if rng.IntN(4) == 0 {
					p.WriteString(alphabet[rng.IntN(len(alphabet)):][:1])
				} else {
					p.WriteByte(alphabet[rng.IntN(14)])
				}
			}
			path := p.String()
			b.parse(base)
			got := b.join(path)
			if got == nil {
				continue
			}
			joined++
			want, err := url.Parse(base + path)
			if err != nil {
				t.Fatalf("join(%q, %q) = %#v, url.Parse fails: %v", base, path, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("join(%q, %q) =\n%#v\nurl.Parse gives\n%#v", base, path, got, want)
			}
		}
	}
	if joined < 10000 {
		t.Fatalf("only %d paths joined without parsing", joined)
	}
}

// BenchmarkRenderAlternating measures what a VU's kept rendering costs
// when its calls alternate between two dynamic requests of different
// shapes (a flow of two steps), where nothing is the last call's: "kept"
// renders into the VU's own, "fresh" into a new one each call.
func BenchmarkRenderAlternating(b *testing.B) {
	cfg, err := parseTarget(object(targetSpec(), map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080")}))
	if err != nil {
		b.Fatal(err)
	}
	one := func(i int) cty.Value {
		return req(map[string]cty.Value{
			"method": cty.StringVal("POST"), "path": cty.StringVal(fmt.Sprintf("/orders/%d", i)),
			"query": strMap("page", "1"),
			"json":  cty.ObjectVal(map[string]cty.Value{"sku": cty.StringVal("A"), "n": cty.NumberIntVal(int64(i)), "price": cty.MustParseNumberVal("19.99")}),
		})
	}
	two := func(i int) cty.Value {
		return req(map[string]cty.Value{
			"method": cty.StringVal("PUT"), "path": cty.StringVal(fmt.Sprintf("/carts/%d", i)),
			"headers": strMap("x-a", "1"),
			"json":    cty.ObjectVal(map[string]cty.Value{"user": cty.StringVal("u"), "items": cty.TupleVal([]cty.Value{cty.NumberIntVal(int64(i)), cty.MustParseNumberVal("2.5")})}),
		})
	}
	values := make([]cty.Value, 64)
	for i := range values {
		if i%2 == 0 {
			values[i] = one(i)
		} else {
			values[i] = two(i)
		}
	}
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		var rd rendered
		var s scratch
		i := 0
		for b.Loop() {
			if err := render(cfg, values[i%len(values)], &rd, &s); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var rd rendered
			if err := render(cfg, values[i%len(values)], &rd, &scratch{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
