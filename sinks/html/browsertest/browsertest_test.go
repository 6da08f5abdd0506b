package browsertest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// TestLoadSeesEveryForeignRequest holds the no-network check to what a
// page asks for, whichever way the browser handles the request: a
// stylesheet the page's Content-Security-Policy blocks (the report's own
// policy) and an image that reaches a server on loopback, which counts it.
// A page that asks for nothing but itself passes.
func TestLoadSeesEveryForeignRequest(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	const csp = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">`
	const ready = `<div id="metadata">m</div><script>document.body.setAttribute("data-charts", "0")</script>`
	cases := []struct {
		name  string
		head  string
		body  string
		asked []string
		hits  int64 // requests the server saw
	}{
		{"nothing foreign", csp, `<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">`, nil, 0},
		{"a stylesheet the policy blocks", csp + `<link rel="stylesheet" href="` + srv.URL + `/x.css">`, "", []string{srv.URL + "/x.css"}, 0},
		{"an image without a policy", "", `<img src="` + srv.URL + `/x.png">`, []string{srv.URL + "/x.png"}, 1},
	}
	browser := NewBrowser(t)
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := hits.Load()
			path := filepath.Join(dir, "page"+string(rune('a'+i))+".html")
			page := "<!doctype html><html><head>" + c.head + "</head><body>" + c.body + ready + "</body></html>"
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			_, asked, err := load(browser, path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(asked, c.asked) {
				t.Errorf("asked for %q; want %q", asked, c.asked)
			}
			if got := hits.Load() - before; got != c.hits {
				t.Errorf("the server saw %d requests; want %d", got, c.hits)
			}
		})
	}
}
