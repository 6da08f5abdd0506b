package h1

import "strconv"

// AppendField appends one header field line.
func AppendField(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// AppendContentLength appends a Content-Length field line.
func AppendContentLength(dst []byte, n int) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n"...)
}

// SendsLength reports whether a request sends Content-Length, as net/http
// does: when it has a body of some bytes, or an empty one on a method
// that expects a body.
func SendsLength(method string, hasBody bool, n int) bool {
	if !hasBody {
		return false
	}
	if n > 0 {
		return true
	}
	return method == "POST" || method == "PUT" || method == "PATCH"
}
