package http

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// appendJSON appends the JSON encoding of v, an unmarked, wholly known
// value, to dst. Its bytes are ctyjson.Marshal(v, v.Type())'s, which the
// json attribute has always sent (FuzzJSON holds the two to the same
// bytes), but it costs a fraction: ctyjson compares every number with the
// infinities and prints it with math/big, whose shortest formatting at
// cty's 512 bits of precision was most of a POST's CPU time. Shapes it
// does not know (capsules, dynamic types) and the errors (infinity) go to
// ctyjson itself.
func appendJSON(dst []byte, v cty.Value) ([]byte, error) {
	if out, ok := appendJSONValue(dst, v, v.Type()); ok {
		return out, nil
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendJSONValue appends v, which conforms to t, and reports false,
// leaving the caller to fall back on ctyjson, for anything it does not
// encode exactly as ctyjson would. ctyjson walks the type it is given, not
// the value's, and so does this.
func appendJSONValue(dst []byte, v cty.Value, t cty.Type) ([]byte, bool) {
	if v.IsMarked() || !v.IsKnown() || t == cty.DynamicPseudoType && v.Type() != cty.DynamicPseudoType {
		return dst, false // ctyjson errs, or wraps the value with its type
	}
	if v.IsNull() {
		return append(dst, "null"...), true
	}
	switch {
	case t == cty.String:
		return appendJSONString(dst, v.AsString()), true
	case t == cty.Number:
		return appendJSONNumber(dst, v.AsBigFloat())
	case t == cty.Bool:
		if v.True() {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case t.IsListType(), t.IsSetType():
		ety := t.ElementType()
		dst = append(dst, '[')
		first := true
		for it := v.ElementIterator(); it.Next(); {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			_, e := it.Element()
			var ok bool
			if dst, ok = appendJSONValue(dst, e, ety); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case t.IsTupleType():
		etys := t.TupleElementTypes()
		dst = append(dst, '[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			_, e := it.Element()
			var ok bool
			if dst, ok = appendJSONValue(dst, e, etys[i]); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case t.IsMapType():
		ety := t.ElementType()
		dst = append(dst, '{')
		first := true
		for it := v.ElementIterator(); it.Next(); {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			k, e := it.Element()
			dst = appendJSONString(dst, k.AsString())
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendJSONValue(dst, e, ety); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case t.IsObjectType():
		return appendJSONObject(dst, v, t)
	}
	return dst, false // a capsule, or a type cty does not have yet
}

// appendJSONObject appends an object's attributes in name order, as
// ctyjson does.
func appendJSONObject(dst []byte, v cty.Value, t cty.Type) ([]byte, bool) {
	atys := t.AttributeTypes()
	var stack [16]string
	names := stack[:0]
	for k := range atys {
		names = append(names, k)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, k := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendJSONValue(dst, v.GetAttr(k), atys[k]); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendJSONNumber appends f as ctyjson does, f.Text('f', -1): the
// shortest decimal that reads back as f at f's precision. It leaves the
// infinities to ctyjson, which refuses them. A whole number is printed
// with strconv; so is any other whose nearest float64's shortest decimal
// reads back as f itself (12.5, and 19.99 as HCL parses it, at 512
// bits), which is then also math/big's: see shortestAtPrecision. math/big
// prints the rest.
func appendJSONNumber(dst []byte, f *big.Float) ([]byte, bool) {
	if f.IsInf() {
		return dst, false
	}
	if f.Sign() == 0 {
		return f.Append(dst, 'f', -1), true // "0", or "-0" for a negative zero
	}
	if f.IsInt() {
		if n, acc := f.Int64(); acc == big.Exact {
			return strconv.AppendInt(dst, n, 10), true
		}
		return f.Append(dst, 'f', -1), true
	}
	if f.Prec() >= 53 {
		if x, _ := f.Float64(); x != 0 && !math.IsInf(x, 0) {
			start := len(dst)
			dst = strconv.AppendFloat(dst, x, 'f', -1, 64)
			if shortestAtPrecision(dst[start:], x, f) {
				return dst, true
			}
			dst = dst[:start]
		}
	}
	return f.Append(dst, 'f', -1), true
}

// shortestAtPrecision reports whether s, the shortest decimal that reads
// back as the float64 x nearest to f, is also the shortest that reads back
// as f at f's precision of 53 bits or more, as math/big prints it. It is
// when s reads back as f: a shorter decimal that read back as f would lie
// as close to f, so it would read back as x too (f is not near the middle
// of two float64s, since s, a decimal of at most 17 digits, is within
// f's last bit of it), and strconv found none. When x is f and s is x's
// exact value, s reads back as f at any precision; that is checked
// without parsing.
func shortestAtPrecision(s []byte, x float64, f *big.Float) bool {
	if exactDecimal(s, x) {
		if g, acc := f.Float64(); g == x && acc == big.Exact {
			return true
		}
	}
	g, _, err := big.ParseFloat(string(s), 10, f.Prec(), big.ToNearestEven)
	return err == nil && g.Cmp(f) == 0
}

// exactDecimal reports whether s, x printed in 'f' format, is x's value
// exactly rather than rounded, for an x that is not a whole number: x's
// exact decimal has as many digits after the point as x has binary digits
// after it, and s is exact when it has that many.
func exactDecimal(s []byte, x float64) bool {
	b := math.Float64bits(x)
	exp := int(b>>52&0x7ff) - 1075 // x = mant * 2^exp
	mant := b & (1<<52 - 1)
	if exp == -1075 {
		exp++ // subnormal: no implicit bit
	} else {
		mant |= 1 << 52
	}
	if mant == 0 {
		return false
	}
	fraction := -(exp + bits.TrailingZeros64(mant)) // binary digits after the point
	point := slices.Index(s, '.')
	return point >= 0 && len(s)-point-1 == fraction
}

// hexDigits are the digits of a \u00XX escape.
const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json does, which is how
// ctyjson encodes strings: with <, > and & escaped for HTML, U+2028 and
// U+2029 escaped for JSONP, and each invalid UTF-8 byte replaced by
// U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
