package influxdb

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// line builds one point in InfluxDB line protocol into a reused buffer. The
// sink writes its own encoder, rather than the client's write.Point, because
// raw = true encodes a point per request from many goroutines: this one
// appends with strconv and allocates nothing once the buffer has grown.
//
// Field types never change between points of a measurement (counts are
// always integers, rates and latencies always floats), because InfluxDB
// rejects a point whose field type differs from the one already stored.
type line struct {
	b      []byte
	fields int // fields written so far; the first one follows a space
}

func (l *line) start(measurement string, tags string) {
	l.b = appendEscaped(l.b[:0], measurement, measurementEscapes)
	l.b = append(l.b, tags...)
	l.fields = 0
}

// tag appends a tag; empty values are left out, as InfluxDB refuses them.
func (l *line) tag(key, value string) {
	if value == "" {
		return
	}
	l.b = append(l.b, ',')
	l.b = appendEscaped(l.b, key, tagEscapes)
	l.b = append(l.b, '=')
	l.b = appendEscaped(l.b, value, tagEscapes)
}

func (l *line) fieldKey(key string) {
	if l.fields == 0 {
		l.b = append(l.b, ' ')
	} else {
		l.b = append(l.b, ',')
	}
	l.fields++
	l.b = appendEscaped(l.b, key, tagEscapes)
	l.b = append(l.b, '=')
}

func (l *line) int(key string, v int64) {
	l.fieldKey(key)
	l.b = strconv.AppendInt(l.b, v, 10)
	l.b = append(l.b, 'i')
}

// float appends a float field. NaN and infinities cannot be stored, so
// they are left out rather than failing the whole batch.
func (l *line) float(key string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	l.fieldKey(key)
	// "3" without a suffix is a float in line protocol, as wanted.
	l.b = strconv.AppendFloat(l.b, v, 'f', -1, 64)
}

func (l *line) bool(key string, v bool) {
	l.fieldKey(key)
	l.b = strconv.AppendBool(l.b, v)
}

func (l *line) string(key, v string) {
	l.fieldKey(key)
	l.b = append(l.b, '"')
	l.b = appendEscaped(l.b, v, stringEscapes)
	l.b = append(l.b, '"')
}

// end appends the timestamp in nanoseconds and the newline, and returns the
// finished point, or nil when it has no field (InfluxDB refuses such a
// point).
func (l *line) end(t time.Time) []byte {
	if l.fields == 0 {
		return nil
	}
	l.b = append(l.b, ' ')
	l.b = strconv.AppendInt(l.b, t.UnixNano(), 10)
	l.b = append(l.b, '\n')
	return l.b
}

// The characters line protocol needs escaped, per element. Newlines cannot
// be escaped in names or tag values, so they become spaces (escaped).
const (
	measurementEscapes = ", "
	tagEscapes         = ",= "
	stringEscapes      = `"\`
)

func appendEscaped(b []byte, s, escapes string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\r':
			if escapes == stringEscapes {
				b = append(b, c) // allowed inside a quoted string
				continue
			}
			b = append(b, '\\', ' ')
		case c == '\\' && escapes != stringEscapes && i == len(s)-1:
			// A trailing backslash would escape the separator after it.
			b = append(b, '\\', '\\')
		case strings.IndexByte(escapes, c) >= 0:
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return b
}
