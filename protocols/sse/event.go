package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// frame is one parsed event-stream frame: the lines up to a blank line.
// Its slices point into the frame's bytes, which the reader hands out, or
// into joined, and are valid until the next frame is parsed into it.
type frame struct {
	// data is the data lines joined with "\n": the frame's own bytes when
	// there is one line, else joined.
	data    []byte
	hasData bool // a data field was present: the frame is an event
	// joined holds the data of a frame of several data lines, reused
	// between frames up to startBuffer bytes, so that an idle stream
	// keeps no large one.
	joined   []byte
	id       []byte
	hasID    bool
	retry    time.Duration
	hasRetry bool
	// malformed is set when a line is neither a comment nor one of the
	// four fields, when retry is not a number, or the frame is not UTF-8.
	// Browsers skip such lines; hload counts them, as they are a server
	// bug, and dispatches the rest.
	malformed bool
}

var (
	fieldData  = []byte("data")
	fieldID    = []byte("id")
	fieldEvent = []byte("event")
	fieldRetry = []byte("retry")
)

// parse parses b, a frame without its terminating blank line, into f.
func (f *frame) parse(b []byte) {
	f.data = nil
	if cap(f.joined) > startBuffer {
		f.joined = nil
	}
	f.hasData, f.hasID, f.hasRetry, f.malformed = false, false, false, false
	joined := false // f.data is f.joined
	f.id = nil
	if !utf8.Valid(b) {
		f.malformed = true
	}
	for len(b) > 0 {
		var line []byte
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			line, b = b, nil
		} else {
			line = b[:i]
			if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			b = b[i+1:]
		}
		if len(line) == 0 || line[0] == ':' {
			continue // an empty line inside the frame, or a comment
		}
		name, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			name, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch {
		case bytes.Equal(name, fieldData):
			switch {
			case !f.hasData:
				f.data, f.hasData = value, true
			case !joined:
				// A second line: the data moves to joined.
				f.joined = append(append(append(f.joined[:0], f.data...), '\n'), value...)
				f.data, joined = f.joined, true
			default:
				f.joined = append(append(f.joined, '\n'), value...)
				f.data = f.joined
			}
		case bytes.Equal(name, fieldID):
			if bytes.IndexByte(value, 0) >= 0 {
				f.malformed = true // the spec ignores such an id
				continue
			}
			f.id, f.hasID = value, true
		case bytes.Equal(name, fieldEvent):
		case bytes.Equal(name, fieldRetry):
			ms, err := strconv.ParseUint(string(value), 10, 32)
			if err != nil || len(value) == 0 || value[0] == '+' {
				f.malformed = true
				continue
			}
			f.retry, f.hasRetry = time.Duration(ms)*time.Millisecond, true
		default:
			f.malformed = true
		}
	}
}

// extractor reads a value out of an event's data: a field of a JSON
// object, by a dotted path, or the first capture group of a regular
// expression (the whole match when it has none).
type extractor struct {
	path []string
	re   *regexp.Regexp
}

func (x extractor) set() bool { return x.path != nil || x.re != nil }

// describe names the extractor for a message: what, the attribute's
// stem ("id", "sent_at"), with _field or _regex and its value.
func (x extractor) describe(what string) string {
	if x.re != nil {
		return fmt.Sprintf("%s_regex %q", what, x.re.String())
	}
	return fmt.Sprintf("%s_field %q", what, strings.Join(x.path, "."))
}

var errNotFound = errors.New("not found")

// extract returns the value's text: a JSON string is unquoted, a number
// is returned as written.
func (x extractor) extract(data []byte) ([]byte, error) {
	if x.re != nil {
		m := x.re.FindSubmatch(data)
		if m == nil {
			return nil, errNotFound
		}
		if len(m) > 1 {
			return m[1], nil
		}
		return m[0], nil
	}
	raw := json.RawMessage(data)
	for _, key := range x.path {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		v, ok := obj[key]
		if !ok {
			return nil, errNotFound
		}
		raw = v
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || bytes.Equal(raw, []byte("null")) {
		return nil, errNotFound
	}
	return raw, nil
}

// parseTimestamp reads a send time written as a number of units since the
// Unix epoch, such as unix_micros() writes.
func parseTimestamp(b []byte, unit time.Duration) (time.Time, error) {
	s := string(bytes.TrimSpace(b))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(0, 0).Add(time.Duration(n) * unit), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, 0).Add(time.Duration(f * float64(unit))), nil
}
