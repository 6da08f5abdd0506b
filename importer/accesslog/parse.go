// Package accesslog reads web servers' access logs (nginx's and Apache's
// combined format, or JSON lines) and infers from them a load test: the
// requests grouped into templates, their mix, their statuses and the rate
// over time. Render writes that test as HCL for `hload import access-log`.
//
// Everything here is a pure function of its input, so that the command
// stays a thin wrapper and the inference can be tested line by line.
package accesslog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Format is a log format: FormatCombined, FormatJSON, or FormatAuto,
// which reads each file's first line to choose.
type Format string

// The formats Parse reads.
const (
	FormatAuto     Format = ""
	FormatCombined Format = "combined"
	FormatJSON     Format = "json"
)

// Entry is one logged request.
type Entry struct {
	Time   time.Time
	Method string
	// Path is the request's path, percent-decoded as url.URL.Path is.
	Path string
	// Query is the request's raw query, without its "?".
	Query  string
	Status int
	// Duration is how long the server took, when the log says
	// (HasDuration): nginx's $request_time and the like.
	Duration    time.Duration
	HasDuration bool
}

// LineError is a line Parse could not read, or a file with none.
type LineError struct {
	File string
	Line int // 0: the file as a whole
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// maxLine bounds one line: a log line longer than this is not a request
// a server logged but something else.
const maxLine = 1 << 20

// Log is what Parse read of one file.
type Log struct {
	Entries []Entry
	// Skipped counts the lines in the format without an HTTP request.
	Skipped int
	// Format is the format read: the one asked for, or the one detected.
	Format Format
}

// Parse reads the log in r, named file in its errors, in format f. Blank
// lines are skipped. Any other line that is not in the format is a
// *LineError naming the file and the line; so is a file without a
// request. FormatAuto takes a first line that starts with "{" for JSON
// lines, any other for combined. Lines in the format whose request is not
// an HTTP request line (nginx logs a probe of garbage as "-" or the
// garbage, with status 400) are counted in Skipped, not returned.
func Parse(r io.Reader, file string, f Format) (*Log, error) {
	var entries []Entry
	skipped := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if f == FormatAuto {
			f = detect(line)
		}
		var e Entry
		var ok bool
		var msg string
		switch f {
		case FormatCombined:
			e, ok, msg = parseCombined(line)
		case FormatJSON:
			e, ok, msg = parseJSON(line)
		default:
			return nil, &LineError{File: file, Msg: fmt.Sprintf("unknown format %q: want combined or json", f)}
		}
		if msg != "" {
			return nil, &LineError{File: file, Line: n, Msg: msg + ": " + quote(line)}
		}
		if !ok {
			skipped++
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, &LineError{File: file, Line: n + 1, Msg: fmt.Sprintf("a line longer than %d bytes: not an access log", maxLine)}
		}
		return nil, &LineError{File: file, Msg: err.Error()}
	}
	if len(entries) == 0 {
		msg := "empty: no logged request in it"
		if skipped > 0 {
			msg = fmt.Sprintf("no logged request in it (lines without an HTTP request line: %d)", skipped)
		}
		return nil, &LineError{File: file, Msg: msg}
	}
	return &Log{Entries: entries, Skipped: skipped, Format: f}, nil
}

// detect chooses a file's format from its first line.
func detect(line string) Format {
	if strings.HasPrefix(strings.TrimSpace(line), "{") {
		return FormatJSON
	}
	return FormatCombined
}

// quote shows a line in an error, cut to a length a terminal shows.
func quote(line string) string {
	if len(line) > 120 {
		line = line[:120] + "..."
	}
	return strconv.Quote(line)
}

// combined is nginx's and Apache's combined format:
//
//	$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
//
// The referer and user agent may be missing (Apache's common format), and
// one more field may follow them: the response time, in seconds with a
// decimal point (nginx's $request_time) or in whole microseconds (Apache's
// %D). Quoted fields may hold escaped quotes (\" or nginx's \x22).
var combined = regexp.MustCompile(`^\S+ \S+ (?:\S+|"[^"]*") \[([^\]]+)\] "((?:[^"\\]|\\.)*)" (\d{3}) (?:\d+|-)(?: "(?:[^"\\]|\\.)*" "(?:[^"\\]|\\.)*")?(?: ([0-9.]+|-))?$`)

const timeLocal = "02/Jan/2006:15:04:05 -0700"

func parseCombined(line string) (Entry, bool, string) {
	m := combined.FindStringSubmatch(line)
	if m == nil {
		return Entry{}, false, "not a combined log line (nginx's or Apache's: ADDR - USER [TIME] \"REQUEST\" STATUS BYTES \"REFERER\" \"AGENT\")"
	}
	t, err := time.Parse(timeLocal, m[1])
	if err != nil {
		return Entry{}, false, fmt.Sprintf("time [%s] is not as nginx writes $time_local (%s)", m[1], timeLocal)
	}
	e := Entry{Time: t}
	e.Status, _ = strconv.Atoi(m[3])
	if !requestLine(&e, m[2]) {
		return Entry{}, false, ""
	}
	if d := m[4]; d != "" && d != "-" {
		v, err := strconv.ParseFloat(d, 64)
		if err != nil || v < 0 {
			return Entry{}, false, fmt.Sprintf("the response time %q after the user agent is not a number", d)
		}
		if strings.Contains(d, ".") {
			e.Duration = time.Duration(v * float64(time.Second)) // nginx's $request_time
		} else {
			e.Duration = time.Duration(v) * time.Microsecond // Apache's %D
		}
		e.HasDuration = true
	}
	return e, true, ""
}

// requestLine reads "GET /path?query HTTP/1.1" into e, or reports false
// for what is not a request line.
func requestLine(e *Entry, s string) bool {
	method, rest, ok := strings.Cut(s, " ")
	if !ok || !isMethod(method) {
		return false
	}
	target, _, _ := strings.Cut(rest, " ")
	return setTarget(e, method, target)
}

// setTarget sets e's method, path and query from a request target.
func setTarget(e *Entry, method, target string) bool {
	if !strings.HasPrefix(target, "/") {
		// An absolute URL (a proxy request) keeps its path.
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return false
		}
		target = u.RequestURI()
	}
	path, query, _ := strings.Cut(target, "?")
	p, err := url.PathUnescape(path)
	if err != nil {
		p = path
	}
	e.Method, e.Path, e.Query = method, p, query
	return true
}

func isMethod(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// The JSON field names Parse reads, first match wins. docs/import.md
// lists them.
var (
	jsonTime     = []string{"time", "time_iso8601", "timestamp", "@timestamp", "time_local", "ts"}
	jsonMethod   = []string{"method", "request_method"}
	jsonPath     = []string{"uri", "request_uri", "path", "url"}
	jsonQuery    = []string{"query", "query_string", "args"}
	jsonRequest  = []string{"request"}
	jsonStatus   = []string{"status", "status_code"}
	jsonSeconds  = []string{"request_time", "response_time", "duration"}
	jsonMillisec = []string{"duration_ms", "response_time_ms"}
)

func parseJSON(line string) (Entry, bool, string) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		return Entry{}, false, "not a JSON object (a JSON-lines log has one object a line)"
	}
	var e Entry
	tv, name := field(obj, jsonTime)
	if tv == nil {
		return Entry{}, false, "no time field (" + strings.Join(jsonTime, ", ") + ")"
	}
	t, ok := jsonTimeValue(tv)
	if !ok {
		return Entry{}, false, fmt.Sprintf("%s %v is not a time (RFC 3339, nginx's $time_local, or Unix seconds)", name, tv)
	}
	e.Time = t
	sv, name := field(obj, jsonStatus)
	if sv == nil {
		return Entry{}, false, "no status field (" + strings.Join(jsonStatus, ", ") + ")"
	}
	status, ok := number(sv)
	if !ok || status < 100 || status > 999 || status != math.Trunc(status) {
		return Entry{}, false, fmt.Sprintf("%s %v is not an HTTP status", name, sv)
	}
	e.Status = int(status)
	method, _ := field(obj, jsonMethod)
	target, _ := field(obj, jsonPath)
	ms, mok := method.(string)
	ts, tok := target.(string)
	switch {
	case mok && tok:
		if !isMethod(ms) {
			return Entry{}, false, ""
		}
		if !setTarget(&e, ms, ts) {
			return Entry{}, false, ""
		}
		if e.Query == "" {
			if q, _ := field(obj, jsonQuery); q != nil {
				if qs, ok := q.(string); ok && qs != "-" {
					e.Query = strings.TrimPrefix(qs, "?")
				}
			}
		}
	default:
		r, _ := field(obj, jsonRequest)
		rs, ok := r.(string)
		if !ok {
			return Entry{}, false, "no method and path fields (" + strings.Join(jsonMethod, ", ") + "; " + strings.Join(jsonPath, ", ") + "), nor a request line (request)"
		}
		if !requestLine(&e, rs) {
			return Entry{}, false, ""
		}
	}
	if v, name := field(obj, jsonSeconds); v != nil {
		if s, ok := number(v); ok && s >= 0 {
			e.Duration, e.HasDuration = time.Duration(s*float64(time.Second)), true
		} else if v != "-" && v != "" {
			return Entry{}, false, fmt.Sprintf("%s %v is not a number of seconds", name, v)
		}
	} else if v, name := field(obj, jsonMillisec); v != nil {
		if s, ok := number(v); ok && s >= 0 {
			e.Duration, e.HasDuration = time.Duration(s*float64(time.Millisecond)), true
		} else {
			return Entry{}, false, fmt.Sprintf("%s %v is not a number of milliseconds", name, v)
		}
	}
	return e, true, ""
}

// field returns the first of names that obj has, and its name.
func field(obj map[string]any, names []string) (any, string) {
	for _, n := range names {
		if v, ok := obj[n]; ok && v != nil {
			return v, n
		}
	}
	return nil, ""
}

// number reads a JSON number, or a string holding one (nginx's
// escape=json writes $request_time as the config quotes it).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func jsonTimeValue(v any) (time.Time, bool) {
	if f, ok := v.(float64); ok {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, timeLocal, "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return jsonTimeValue(f)
	}
	return time.Time{}, false
}
