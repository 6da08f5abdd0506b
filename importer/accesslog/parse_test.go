package accesslog

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 12, 26, 0, time.UTC)
	cases := []struct {
		name    string
		format  Format
		line    string
		want    *Entry // nil: the line is skipped
		wantErr string
	}{
		{"nginx combined", FormatAuto,
			`127.0.0.1 - - [07/Dec/2026:00:12:26 +0000] "GET /products/5?x=1 HTTP/1.1" 200 160 "-" "curl/7.88.1"`,
			&Entry{Time: at, Method: "GET", Path: "/products/5", Query: "x=1", Status: 200}, ""},
		{"apache common, a user, no referer or agent", FormatCombined,
			`10.0.0.1 - frank [07/Dec/2026:01:12:26 +0100] "POST /login HTTP/1.0" 401 -`,
			&Entry{Time: at, Method: "POST", Path: "/login", Status: 401}, ""},
		{"combined and $request_time", FormatCombined,
			`::1 - - [07/Dec/2026:00:12:26 +0000] "GET / HTTP/2.0" 200 5 "https://a/" "Mozilla \"quoted\"" 0.125`,
			&Entry{Time: at, Method: "GET", Path: "/", Status: 200, Duration: 125 * time.Millisecond, HasDuration: true}, ""},
		{"combined and Apache's %D", FormatCombined,
			`::1 - - [07/Dec/2026:00:12:26 +0000] "GET / HTTP/1.1" 200 5 "-" "-" 2500`,
			&Entry{Time: at, Method: "GET", Path: "/", Status: 200, Duration: 2500 * time.Microsecond, HasDuration: true}, ""},
		{"nginx's \\x22 escape", FormatCombined,
			`1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "GET /a\x22b HTTP/1.1" 404 0 "-" "x"`,
			&Entry{Time: at, Method: "GET", Path: `/a\x22b`, Status: 404}, ""},
		{"a proxy request's absolute URL", FormatCombined,
			`1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "GET http://shop.example/cart?id=2 HTTP/1.1" 200 0 "-" "x"`,
			&Entry{Time: at, Method: "GET", Path: "/cart", Query: "id=2", Status: 200}, ""},
		{"a garbage request nginx logged", FormatCombined,
			`1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "\x16\x03\x01" 400 157 "-" "-"`, nil, ""},
		{"an empty request", FormatCombined,
			`1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "" 400 0 "-" "-"`, nil, ""},
		{"not combined", FormatCombined, `GET /index.html 200`, nil, "t.log:1: not a combined log line"},
		{"a bad time", FormatCombined,
			`1.2.3.4 - - [2026-12-07 00:12:26] "GET / HTTP/1.1" 200 0 "-" "-"`, nil, "t.log:1: time [2026-12-07 00:12:26] is not as nginx writes"},
		{"json, nginx's escape=json", FormatAuto,
			`{"time":"2026-12-07T00:12:26+00:00","method":"GET","uri":"/p/7?page=2","status":"200","request_time":"0.004"}`,
			&Entry{Time: at, Method: "GET", Path: "/p/7", Query: "page=2", Status: 200, Duration: 4 * time.Millisecond, HasDuration: true}, ""},
		{"json, a request line and Unix seconds", FormatJSON,
			`{"ts":1796602346,"request":"DELETE /cart/3 HTTP/1.1","status_code":204,"duration_ms":12}`,
			&Entry{Time: at, Method: "DELETE", Path: "/cart/3", Status: 204, Duration: 12 * time.Millisecond, HasDuration: true}, ""},
		{"json, path and query apart", FormatJSON,
			`{"@timestamp":"2026-12-07T00:12:26Z","request_method":"GET","path":"/search","query_string":"q=shoes","status":200}`,
			&Entry{Time: at, Method: "GET", Path: "/search", Query: "q=shoes", Status: 200}, ""},
		{"json without a time", FormatJSON, `{"method":"GET","uri":"/","status":200}`, nil, "t.log:1: no time field"},
		{"json without a status", FormatJSON, `{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/"}`, nil, "t.log:1: no status field"},
		{"json, a status that is not one", FormatJSON, `{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/","status":"ok"}`, nil, `t.log:1: status ok is not an HTTP status`},
		{"json, a bad request_time", FormatJSON, `{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/","status":200,"request_time":"soon"}`, nil, "request_time soon is not a number of seconds"},
		{"not json", FormatJSON, `{"time": `, nil, "t.log:1: not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A good line first, so that a skipped line leaves a log.
			good := `1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "GET /first HTTP/1.1" 200 0 "-" "-"`
			if strings.HasPrefix(tc.line, "{") {
				good = `{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/first","status":200}`
			}
			input := tc.line + "\n" + good + "\n"
			log, err := Parse(strings.NewReader(input), "t.log", tc.format)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if log.Skipped != 1 || len(log.Entries) != 1 {
					t.Fatalf("skipped %d, entries %+v; want the line skipped", log.Skipped, log.Entries)
				}
				return
			}
			got := log.Entries[0]
			if !got.Time.Equal(tc.want.Time) {
				t.Errorf("time %v, want %v", got.Time, tc.want.Time)
			}
			got.Time = tc.want.Time
			if got != *tc.want {
				t.Errorf("got %+v\nwant %+v", got, *tc.want)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"empty", "", "t.log: empty: no logged request in it"},
		{"blank lines", "\n \n\r\n", "t.log: empty"},
		{"only garbage requests", `1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "-" 400 0 "-" "-"` + "\n", "t.log: no logged request in it (lines without an HTTP request line: 1)"},
		{"the line number counts blank lines", "\n\n" + `1.2.3.4 - - [07/Dec/2026:00:12:26 +0000] "GET / HTTP/1.1" 200 0 "-" "-"` + "\nnope\n", "t.log:4: not a combined"},
		{"a line too long", strings.Repeat("x", maxLine+10), "t.log:1: a line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.input), "t.log", FormatAuto)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzParse: no input panics or hangs the parser.
func FuzzParse(f *testing.F) {
	f.Add(`127.0.0.1 - - [07/Dec/2026:00:12:26 +0000] "GET /products/5 HTTP/1.1" 200 160 "-" "curl"` + "\n")
	f.Add(`{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/","status":200}`)
	f.Fuzz(func(t *testing.T, s string) {
		log, err := Parse(strings.NewReader(s), "f", FormatAuto)
		if err == nil {
			Infer(log.Entries, Options{MinShare: 0.01})
		}
	})
}
