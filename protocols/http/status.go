package http

import (
	"math/big"
	"strconv"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// statusKinds are the error kinds of a failed response, by status class:
// http_4xx for a 404. Go's client accepts any three-digit status.
var statusKinds = [10]protocols.ErrorKind{
	"http_0xx", "http_1xx", "http_2xx", "http_3xx", "http_4xx",
	"http_5xx", "http_6xx", "http_7xx", "http_8xx", "http_9xx",
}

// Error kinds of the two failed-response classes a user meets most.
const (
	ErrHTTP4xx protocols.ErrorKind = "http_4xx"
	ErrHTTP5xx protocols.ErrorKind = "http_5xx"
)

// statusKind returns the error kind for a response with status.
func statusKind(status int) protocols.ErrorKind {
	if status < 0 || status > 999 {
		return statusKinds[0]
	}
	return statusKinds[status/100]
}

// statusSet is the set of statuses an expected_status lists, as a bitmap,
// so that a request's own list is read per call without allocating a set.
type statusSet struct {
	bits [10]uint64 // status s is bit s%64 of bits[s/64], for 100 to 599
	set  bool       // expected_status was given
}

func (s *statusSet) add(status int) { s.bits[status/64] |= 1 << (status % 64) }

func (s *statusSet) has(status int) bool {
	return status >= 0 && status < 640 && s.bits[status/64]&(1<<(status%64)) != 0
}

// failed reports whether a response with status fails: one that
// expected_status does not list when it is set, else one of 400 and above.
func (s *statusSet) failed(status int) bool {
	if s.set {
		return !s.has(status)
	}
	return status >= 400
}

// expectedStatus reads obj's expected_status: a list of statuses from 100
// to 599. An empty list is refused: every response would then fail.
func expectedStatus(obj cty.Value) (statusSet, error) {
	var s statusSet
	v := protocols.Attr(obj, "expected_status")
	if v.IsNull() {
		return s, nil
	}
	const form = "must be a list of HTTP statuses from 100 to 599, such as [200, 404]"
	if !v.IsWhollyKnown() {
		return s, protocols.AttrErrorf("expected_status", "is not known")
	}
	if t := v.Type(); !t.IsListType() && !t.IsTupleType() && !t.IsSetType() {
		return s, protocols.AttrErrorf("expected_status", "%s", form)
	}
	if v.LengthInt() == 0 {
		return s, protocols.AttrErrorf("expected_status", "is empty; it %s", form)
	}
	lo, hi := big.NewFloat(100), big.NewFloat(599)
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		e, _ = e.Unmark()
		if e.IsNull() || e.Type() != cty.Number {
			return s, protocols.AttrErrorf("expected_status", "%s; it holds %s", form, friendly(e))
		}
		bf := e.AsBigFloat()
		if !bf.IsInt() || bf.Cmp(lo) < 0 || bf.Cmp(hi) > 0 {
			return s, protocols.AttrErrorf("expected_status", "%s; it holds %s", form, bf.Text('g', -1))
		}
		n, _ := bf.Int64()
		s.add(int(n))
	}
	s.set = true
	return s, nil
}

// friendly shows a value that is not a status.
func friendly(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case v.Type() == cty.String:
		return "the string " + strconv.Quote(v.AsString())
	}
	return v.Type().FriendlyName()
}
