package core

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// TestCapture reads each kind of capture from a response, as the core
// hands it over: the body, the headers as a protocol names them, and the
// status.
func TestCapture(t *testing.T) {
	body := []byte(`{"token":"abc","items":[{"id":9007199254740993,"price":12.5}],"ok":true,"off":false,"none":null,` +
		`"tags":["a","b"],"user":{"name":"ann","age":41}}`)
	html := []byte(`<a href="/product/42">x</a> <a href="/product/7">y</a>`)
	headers := map[string][]string{
		"Location":   {"/orders/17", "/ignored"},
		"x-request":  {"r-1"}, // a plugin's own spelling
		"Set-Cookie": {"theme=dark; Path=/", "session=s3cr3t; HttpOnly; Path=/"},
	}
	re := func(p string) *regexp.Regexp { return regexp.MustCompile(p) }
	cases := []struct {
		name string
		c    config.Capture
		body []byte
		want cty.Value
		fail string // a substring of the message, when it finds nothing
	}{
		{"json string", config.Capture{Source: config.CaptureJSON, Arg: "token"}, body, cty.StringVal("abc"), ""},
		{"json number keeps every digit", config.Capture{Source: config.CaptureJSON, Arg: "items.0.id"}, body,
			cty.MustParseNumberVal("9007199254740993"), ""},
		{"json fraction", config.Capture{Source: config.CaptureJSON, Arg: "items.0.price"}, body, cty.NumberFloatVal(12.5), ""},
		{"json true", config.Capture{Source: config.CaptureJSON, Arg: "ok"}, body, cty.True, ""},
		{"json false", config.Capture{Source: config.CaptureJSON, Arg: "off"}, body, cty.False, ""},
		{"json array", config.Capture{Source: config.CaptureJSON, Arg: "tags"}, body,
			cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), ""},
		{"json object", config.Capture{Source: config.CaptureJSON, Arg: "user"}, body,
			cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("ann"), "age": cty.NumberIntVal(41)}), ""},
		{"json count", config.Capture{Source: config.CaptureJSON, Arg: "items.#"}, body, cty.NumberIntVal(1), ""},
		{"json missing", config.Capture{Source: config.CaptureJSON, Arg: "items.1.id"}, body, cty.NilVal,
			`json path "items.1.id" found nothing`},
		{"json null", config.Capture{Source: config.CaptureJSON, Arg: "none"}, body, cty.NilVal, `json path "none" found null`},
		{"json of a body that is not JSON", config.Capture{Source: config.CaptureJSON, Arg: "token"}, html, cty.NilVal,
			"found nothing"},
		{"regex first group", config.Capture{Source: config.CaptureRegex, Arg: `/product/(\d+)`, Regexp: re(`/product/(\d+)`)},
			html, cty.StringVal("42"), ""},
		{"regex whole match", config.Capture{Source: config.CaptureRegex, Arg: `\d+`, Regexp: re(`\d+`)}, html, cty.StringVal("42"), ""},
		{"regex no match", config.Capture{Source: config.CaptureRegex, Arg: `order=(\d+)`, Regexp: re(`order=(\d+)`)}, html,
			cty.NilVal, `regex "order=(\\d+)" matched nothing`},
		{"header, first value", config.Capture{Source: config.CaptureHeader, Arg: "location"}, nil, cty.StringVal("/orders/17"), ""},
		{"header in a plugin's case", config.Capture{Source: config.CaptureHeader, Arg: "X-Request"}, nil, cty.StringVal("r-1"), ""},
		{"header missing", config.Capture{Source: config.CaptureHeader, Arg: "ETag"}, nil, cty.NilVal, `no header "ETag"`},
		{"cookie", config.Capture{Source: config.CaptureCookie, Arg: "session"}, nil, cty.StringVal("s3cr3t"), ""},
		{"cookie missing", config.Capture{Source: config.CaptureCookie, Arg: "cart"}, nil, cty.NilVal, `no cookie "cart"`},
		{"status", config.Capture{Source: config.CaptureStatus}, nil, cty.NumberIntVal(201), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Name = "x"
			s := protocols.Sample{Metric: protocols.MetricRequest, Status: 201, Body: tc.body, Headers: headers}
			got, msg := capture(&tc.c, &s)
			if tc.fail != "" {
				if !strings.Contains(msg, tc.fail) {
					t.Fatalf("message %q, want one with %q", msg, tc.fail)
				}
				return
			}
			if msg != "" {
				t.Fatalf("found nothing: %s", msg)
			}
			if !got.RawEquals(tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestCaptureAllNamesTheCapture: the message of a failed capture names it
// and says what it looked for, and the captures that found their value
// keep it in the VU's vars.
func TestCaptureAllNamesTheCapture(t *testing.T) {
	req := &request{cfg: &config.Request{Name: "list", Captures: []config.Capture{
		{Name: "product", Source: config.CaptureJSON, Arg: "items.0.id"},
		{Name: "code", Source: config.CaptureStatus},
	}}}
	v := &vu{}
	kind, msg := v.captureAll(req, &protocols.Sample{Status: 200, Body: []byte(`{"items":[]}`)})
	if want := `capture "product": json path "items.0.id" found nothing`; msg != want || kind != errCapture {
		t.Errorf("kind %q, message %q, want %q, %q", kind, msg, errCapture, want)
	}
	if got := v.vars["code"]; !got.RawEquals(cty.NumberIntVal(200)) {
		t.Errorf("vu.vars.code = %#v, want 200", got)
	}
	if _, ok := v.vars["product"]; ok {
		t.Errorf("vu.vars.product set by a capture that found nothing")
	}
}

// TestNoCaptureNoVars: a VU whose requests capture nothing never
// allocates its vars.
func TestNoCaptureNoVars(t *testing.T) {
	v := &vu{}
	if _, msg := v.captureAll(&request{cfg: &config.Request{}}, &protocols.Sample{Status: 200}); msg != "" || v.vars != nil {
		t.Fatalf("message %q, vars %v", msg, v.vars)
	}
}

// TestKeepOnlyWhatCapturesRead: a call asks the protocol for the body only
// when a check or a capture reads it, and for the headers only when a
// capture reads one, so capturing costs nothing where it is not used.
func TestKeepOnlyWhatCapturesRead(t *testing.T) {
	test := loadTest(t, loopbackTarget+`scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 1
  flow "f" {
    request "plain" {
      path = "/"
    }
    request "json" {
      path = "/"
      capture {
        id = json("id")
      }
    }
    request "regex" {
      path = "/"
      capture {
        id = regex("id=(\\d+)")
      }
    }
    request "header" {
      path = "/"
      capture {
        where = header("Location")
      }
    }
    request "cookie" {
      path = "/"
      capture {
        session = cookie("session")
      }
    }
    request "status" {
      path = "/"
      capture {
        code = status()
      }
    }
    request "check" {
      path = "/"
      check {
        body_contains = "ok"
      }
    }
  }
}
`, map[string]string{"base_url": "http://127.0.0.1:1"})
	r := &run{state: &runState{}, agg: metrics.NewAggregator(), runCtx: context.Background()}
	sc := newScenarioRun(r, test.Scenarios[0], -1)
	want := map[string][2]bool{ // body, headers
		"plain": {false, false}, "json": {true, false}, "regex": {true, false}, "header": {false, true},
		"cookie": {false, true}, "status": {false, false}, "check": {true, false},
	}
	for _, req := range sc.requests {
		if got := [2]bool{req.keepBody, req.keepHeaders}; got != want[req.cfg.Name] {
			t.Errorf("%s: keep body, headers = %v, want %v", req.cfg.Name, got, want[req.cfg.Name])
		}
	}
}
