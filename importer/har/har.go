// Package har turns a browser's recording, a HAR 1.2 file as Chromium and
// Firefox save it (DevTools, "Save all as HAR"), into an hload test: one
// flow of the recorded requests in order, a setup for the login, captures
// for the values that flow from a response to a later request, and
// variables for the origins and for the secrets typed into the recording.
//
// Parse reads the file and Import infers the test; both are pure
// functions of their input, so `hload import har` is a thin shell around
// them.
package har

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// HAR is the part of a HAR 1.2 file the importer reads. Unknown fields,
// the browsers' own ("_resourceType", "_initiator"...) among them, are
// ignored, except those named here.
type HAR struct {
	// File is the name the file was read from, for messages and comments.
	File    string
	Creator Creator
	// Browser is the browser that recorded it, when the file says.
	Browser Creator
	Entries []Entry
}

// Creator is the program that wrote the file, or the browser.
type Creator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Entry is one request and its response.
type Entry struct {
	// Line is the line of the file where the entry starts, from 1.
	Line            int       `json:"-"`
	StartedDateTime time.Time `json:"startedDateTime"`
	// Time is the entry's total time in milliseconds.
	Time     float64  `json:"time"`
	Request  Request  `json:"request"`
	Response Response `json:"response"`
	// ResourceType is Chromium's "_resourceType": document, fetch, xhr,
	// script, stylesheet, image, font, media, websocket, ping, other.
	ResourceType string `json:"_resourceType"`
}

// Request is an entry's request.
type Request struct {
	Method   string    `json:"method"`
	URL      string    `json:"url"`
	Headers  []NameVal `json:"headers"`
	PostData *PostData `json:"postData"`
}

// PostData is a request's body.
type PostData struct {
	MimeType string    `json:"mimeType"`
	Text     string    `json:"text"`
	Params   []NameVal `json:"params"`
}

// Response is an entry's response.
type Response struct {
	Status  int       `json:"status"`
	Headers []NameVal `json:"headers"`
	Cookies []NameVal `json:"cookies"`
	Content Content   `json:"content"`
	// Error is Chromium's "_error" for a request that got no response
	// (net::ERR_ABORTED, a blocked request).
	Error string `json:"_error"`
}

// Content is a response's body, as far as the browser kept it.
type Content struct {
	Size     int64  `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	// Encoding is "base64" for a body kept as base64, else "".
	Encoding string `json:"encoding"`
}

// NameVal is a header, a cookie, or a form or query parameter.
type NameVal struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Error is a mistake in a HAR file, at a line and column (from 1) when
// the mistake has a place.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Parse reads a HAR file's text. A file that is not a HAR (empty, not
// JSON, cut short, without log.entries) is an *Error naming the file, the
// line and the column; for a JSON syntax error, those of the error.
func Parse(file string, data []byte) (*HAR, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: file, Line: 1, Column: 1, Msg: "the file is empty; a HAR is a JSON object whose log holds the entries (DevTools: Network, Save all as HAR)"}
	}
	p := &parser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	h := &HAR{File: file}
	var sawLog, sawEntries bool
	if err := p.object(func(key string) error {
		if key != "log" {
			return p.skip()
		}
		sawLog = true
		return p.object(func(key string) error {
			switch key {
			case "creator":
				return p.decode(&h.Creator)
			case "browser":
				return p.decode(&h.Browser)
			case "entries":
				sawEntries = true
				return p.entries(&h.Entries)
			}
			return p.skip()
		})
	}); err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(p.dec.InputOffset(), "there is more after the HAR's closing brace")
	}
	switch {
	case !sawLog:
		return nil, &Error{File: file, Line: 1, Column: 1, Msg: `this JSON is not a HAR: it has no "log" object (DevTools: Network, Save all as HAR)`}
	case !sawEntries:
		return nil, &Error{File: file, Line: 1, Column: 1, Msg: `this HAR has no "log.entries"`}
	}
	return h, nil
}

// parser walks a HAR with a streaming decoder, so that each entry's line
// is known and a large recording is never held twice.
type parser struct {
	file string
	data []byte
	dec  *json.Decoder
}

// errAt is an *Error at byte offset off.
func (p *parser) errAt(off int64, msg string) *Error {
	line, col := position(p.data, off)
	return &Error{File: p.file, Line: line, Column: col, Msg: msg}
}

// jsonErr turns the decoder's error into an *Error at its place.
func (p *parser) jsonErr(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		// A streaming decoder's offsets count from the value it was
		// reading; a whole decode, on this error path only, gives them
		// from the start of the file.
		var whole struct {
			Log struct {
				Entries []Entry `json:"entries"`
			} `json:"log"`
		}
		err = json.Unmarshal(p.data, &whole)
	}
	switch {
	case errors.As(err, &syntax) && syntax.Error() == "unexpected end of JSON input":
		return p.errAt(int64(len(p.data)), "the file ends in the middle of its JSON: it was cut short (a recording saved before it finished, or a partial copy)")
	case errors.As(err, &syntax):
		// Offset is just after the character that is wrong.
		return p.errAt(max(syntax.Offset-1, 0), "not valid JSON: "+syntax.Error())
	case errors.As(err, &typ):
		return p.errAt(valueStart(p.data, typ.Offset), fmt.Sprintf("%s is a JSON %s; a HAR has %s there", typ.Field, typ.Value, jsonKind(typ.Type.Kind().String())))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return p.errAt(int64(len(p.data)), "the file ends in the middle of its JSON: it was cut short (a recording saved before it finished, or a partial copy)")
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return p.errAt(p.dec.InputOffset(), err.Error())
}

// object reads a JSON object, calling field for each key; field must read
// the key's value.
func (p *parser) object(field func(key string) error) error {
	start := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return p.jsonErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p.errAt(start+leadingSpace(p.data[start:]), "expected a JSON object here")
	}
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return p.jsonErr(err)
		}
		if err := field(tok.(string)); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return p.jsonErr(err)
	}
	return nil
}

func (p *parser) skip() error {
	var raw json.RawMessage
	return p.decode(&raw)
}

func (p *parser) decode(v any) error {
	if err := p.dec.Decode(v); err != nil {
		return p.jsonErr(err)
	}
	return nil
}

// entries reads log.entries, noting the line where each starts.
func (p *parser) entries(out *[]Entry) error {
	start := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return p.jsonErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return p.errAt(start+leadingSpace(p.data[start:]), "log.entries must be a JSON list")
	}
	for p.dec.More() {
		off := p.dec.InputOffset()
		off += leadingSpace(p.data[off:])
		var e Entry
		if err := p.decode(&e); err != nil {
			return err
		}
		e.Line, _ = position(p.data, off)
		if err := p.check(&e, off); err != nil {
			return err
		}
		*out = append(*out, e)
	}
	_, err = p.dec.Token()
	if err != nil {
		return p.jsonErr(err)
	}
	return nil
}

// check refuses an entry the importer cannot read, at the entry's place.
func (p *parser) check(e *Entry, off int64) error {
	switch {
	case e.Request.Method == "":
		return p.errAt(off, "an entry has no request.method")
	case e.Request.URL == "":
		return p.errAt(off, "an entry has no request.url")
	case e.StartedDateTime.IsZero():
		return p.errAt(off, "an entry has no startedDateTime")
	}
	return nil
}

// valueStart steps back from end, just after a string or a scalar, to
// where that value starts, so that a place points at the value.
func valueStart(data []byte, end int64) int64 {
	if end <= 0 || end > int64(len(data)) {
		return end
	}
	i := end - 1
	if data[i] == '"' {
		for i--; i > 0; i-- {
			if data[i] == '"' && data[i-1] != '\\' {
				return i
			}
		}
		return 0
	}
	for i > 0 && strings.IndexByte("0123456789.eE+-truefalsn", data[i-1]) >= 0 {
		i--
	}
	return i
}

// jsonKind names a Go kind as JSON does.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "float"), strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "a list"
	case kind == "struct":
		return "an object"
	}
	return "a " + kind
}

// leadingSpace counts the separators (white space, a comma, a colon)
// before the next value, so that a place points at the value itself.
func leadingSpace(b []byte) int64 {
	n := 0
	for n < len(b) && strings.IndexByte(" \t\r\n,:", b[n]) >= 0 {
		n++
	}
	return int64(n)
}

// position turns a byte offset into a line and a column, both from 1;
// the column counts characters, not bytes.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	col = len([]rune(string(before[lineStart:]))) + 1
	return line, col
}
