package core

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
)

// errCapture marks a request whose response lacked a value a capture
// needed: the call itself succeeded, but the journey cannot go on as
// written, so it counts as a failed request of its own kind.
const errCapture protocols.ErrorKind = "capture"

// errBodyTooLarge marks a request whose capture reads the body (json,
// regex) when the body was longer than the request's max_body: hload kept
// only its start, and a value read from a part of a body could be wrong.
const errBodyTooLarge protocols.ErrorKind = "body_too_large"

// captureAll takes every capture of req from a successful response into
// the VU's vars. It returns the kind and message of the first capture that
// found nothing, or none; the captures that did find a value keep it
// either way. Values are copied out of the sample, whose body and headers
// are valid only during emit.
func (v *vu) captureAll(req *request, s *protocols.Sample) (protocols.ErrorKind, string) {
	kind, failed := protocols.ErrNone, ""
	for i := range req.cfg.Captures {
		c := &req.cfg.Captures[i]
		if c.Source == config.CaptureJSON || c.Source == config.CaptureRegex {
			if size := bodySize(s); req.maxBody > 0 && size > req.maxBody {
				if kind == protocols.ErrNone {
					kind, failed = errBodyTooLarge, fmt.Sprintf("capture %q: the response body is %d bytes, more than max_body keeps (%d); raise max_body on the request or its target", c.Name, size, req.maxBody)
				}
				continue
			}
		}
		val, msg := capture(c, s)
		if msg != "" {
			if kind == protocols.ErrNone {
				kind, failed = errCapture, fmt.Sprintf("capture %q: %s", c.Name, msg)
			}
			continue
		}
		if v.vars == nil {
			v.vars = make(map[string]cty.Value, len(req.cfg.Captures))
		}
		v.vars[c.Name] = val
	}
	return kind, failed
}

// bodySize is the length of the sample's whole body: what the protocol
// said, or what it kept, when it kept it whole (a protocol that does not
// bound it).
func bodySize(s *protocols.Sample) int64 {
	return max(s.BodySize, int64(len(s.Body)))
}

// capture reads one capture's value from a response, or says why it found
// nothing.
func capture(c *config.Capture, s *protocols.Sample) (cty.Value, string) {
	switch c.Source {
	case config.CaptureJSON:
		return captureJSON(c.Arg, s.Body)
	case config.CaptureRegex:
		m := c.Regexp.FindSubmatch(s.Body)
		if m == nil {
			return cty.NilVal, fmt.Sprintf("regex %q matched nothing in the body", c.Arg)
		}
		if len(m) > 1 {
			return cty.StringVal(string(m[1])), ""
		}
		return cty.StringVal(string(m[0])), ""
	case config.CaptureHeader:
		if vs := header(s.Headers, c.Arg); len(vs) > 0 {
			return cty.StringVal(vs[0]), ""
		}
		return cty.NilVal, fmt.Sprintf("the response has no header %q", c.Arg)
	case config.CaptureCookie:
		for _, line := range header(s.Headers, "Set-Cookie") {
			if ck, err := http.ParseSetCookie(line); err == nil && ck.Name == c.Arg {
				return cty.StringVal(ck.Value), ""
			}
		}
		return cty.NilVal, fmt.Sprintf("the response sets no cookie %q", c.Arg)
	case config.CaptureStatus:
		if s.Status == 0 {
			return cty.NilVal, "the response has no status"
		}
		return cty.NumberIntVal(int64(s.Status)), ""
	}
	// config checks the function names at load.
	panic(fmt.Sprintf("core: unknown capture source %q", c.Source))
}

// captureJSON reads a gjson path from a JSON body. A number keeps its
// every digit (an id above 2^53 must not be rounded); an object or array
// becomes the cty value HCL would give the same JSON.
func captureJSON(path string, body []byte) (cty.Value, string) {
	r := gjson.GetBytes(body, path)
	switch r.Type {
	case gjson.String:
		return cty.StringVal(r.Str), ""
	case gjson.Number:
		if n, err := cty.ParseNumberVal(r.Raw); err == nil {
			return n, ""
		}
		return cty.NumberFloatVal(r.Num), ""
	case gjson.True:
		return cty.True, ""
	case gjson.False:
		return cty.False, ""
	case gjson.JSON:
		raw := []byte(r.Raw)
		ty, err := ctyjson.ImpliedType(raw)
		if err == nil {
			var v cty.Value
			if v, err = ctyjson.Unmarshal(raw, ty); err == nil {
				return v, ""
			}
		}
		return cty.NilVal, fmt.Sprintf("json path %q found invalid JSON: %s", path, err)
	}
	if r.Exists() {
		return cty.NilVal, fmt.Sprintf("json path %q found null", path)
	}
	return cty.NilVal, fmt.Sprintf("json path %q found nothing", path)
}

// header returns the values of a header, looked up without regard to
// case: a protocol names headers its own way (HTTP in canonical form, a
// plugin as it likes).
func header(h map[string][]string, name string) []string {
	if vs, ok := h[name]; ok {
		return vs
	}
	if vs, ok := h[textproto.CanonicalMIMEHeaderKey(name)]; ok {
		return vs
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			return vs
		}
	}
	return nil
}
