package browsertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Recorder writes what a tab sent and received as a HAR 1.2 file, from
// the Network domain's events, as DevTools' "Save all as HAR" does:
// requestWillBeSent (and its ExtraInfo, the headers as sent, cookies
// included), responseReceived (and its ExtraInfo, Set-Cookie included),
// loadingFinished or loadingFailed, then Network.getResponseBody and
// Network.getRequestPostData for the bodies. Its types are its own, not
// the importer's, so that a mistake in one is not copied into the other.
type Recorder struct {
	tab     context.Context
	mu      sync.Mutex
	entries []*recorded
	current map[network.RequestID]*recorded
}

// recorded is one request of the tab, as the events describe it.
type recorded struct {
	id           network.RequestID
	method, url  string
	resourceType string
	reqHeaders   network.Headers
	extraReq     network.Headers
	postData     []byte
	hasPostData  bool
	wall         time.Time
	start, end   float64 // monotonic seconds
	status       int64
	statusText   string
	protocol     string
	respHeaders  network.Headers
	extraResp    network.Headers
	mimeType     string
	failed       string
	finished     bool
	redirected   bool // its response was a redirect: no body to ask for
}

// Record starts recording the tab's requests; tab is a chromedp context
// of a tab (chromedp.NewContext of NewBrowser's). Events come in order,
// on chromedp's event goroutine.
func Record(tab context.Context) (*Recorder, error) {
	r := &Recorder{tab: tab, current: map[network.RequestID]*recorded{}}
	if err := chromedp.Listen(tab, r.event); err != nil {
		return nil, fmt.Errorf("DevTools Target.attachToTarget failed in %s: %w", Version(tab), err)
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		return nil, fmt.Errorf("DevTools %s failed in %s: %w", network.Enable.Method, Version(tab), err)
	}
	return r, nil
}

func (r *Recorder) event(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if prev := r.current[e.RequestID]; prev != nil && e.RedirectResponse != nil {
			// A redirect: the same id goes on with a new request, and the
			// previous one ends with the redirect's response.
			prev.response(e.RedirectResponse)
			prev.end, prev.finished, prev.redirected = float64(e.Timestamp), true, true
		}
		ms := math.Round(float64(e.WallTime) * 1000)
		rec := &recorded{id: e.RequestID, method: e.Request.Method, url: e.Request.URL + e.Request.URLFragment,
			resourceType: strings.ToLower(string(e.Type)), reqHeaders: e.Request.Headers, hasPostData: e.Request.HasPostData,
			wall: time.UnixMilli(int64(ms)).UTC(), start: float64(e.Timestamp)}
		for _, d := range e.Request.PostDataEntries {
			rec.postData = append(rec.postData, d.Bytes...)
		}
		r.current[e.RequestID] = rec
		r.entries = append(r.entries, rec)
	case *network.EventRequestWillBeSentExtraInfo:
		if rec := r.current[e.RequestID]; rec != nil {
			rec.extraReq = e.Headers
		}
	case *network.EventResponseReceived:
		if rec := r.current[e.RequestID]; rec != nil {
			rec.response(e.Response)
		}
	case *network.EventResponseReceivedExtraInfo:
		if rec := r.current[e.RequestID]; rec != nil {
			rec.extraResp = e.Headers
		}
	case *network.EventLoadingFinished:
		if rec := r.current[e.RequestID]; rec != nil {
			rec.end, rec.finished = float64(e.Timestamp), true
		}
	case *network.EventLoadingFailed:
		if rec := r.current[e.RequestID]; rec != nil {
			rec.end, rec.finished, rec.failed = float64(e.Timestamp), true, e.ErrorText
		}
	}
}

func (rec *recorded) response(resp *network.Response) {
	rec.status, rec.statusText = resp.Status, resp.StatusText
	rec.respHeaders, rec.mimeType, rec.protocol = resp.Headers, resp.MimeType, resp.Protocol
}

// Wait waits until every request the tab started has ended, or ctx ends.
func (r *Recorder) Wait(ctx context.Context) error {
	for {
		r.mu.Lock()
		done := true
		for _, e := range r.entries {
			done = done && e.finished
		}
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("requests still open: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harEntry struct {
	StartedDateTime string  `json:"startedDateTime"`
	Time            float64 `json:"time"`
	Request         struct {
		Method      string   `json:"method"`
		URL         string   `json:"url"`
		HTTPVersion string   `json:"httpVersion"`
		Headers     []harNV  `json:"headers"`
		QueryString []harNV  `json:"queryString"`
		Cookies     []harNV  `json:"cookies"`
		HeadersSize int      `json:"headersSize"`
		BodySize    int      `json:"bodySize"`
		PostData    *harPost `json:"postData,omitempty"`
	} `json:"request"`
	Response struct {
		Status      int64   `json:"status"`
		StatusText  string  `json:"statusText"`
		HTTPVersion string  `json:"httpVersion"`
		Headers     []harNV `json:"headers"`
		Cookies     []harNV `json:"cookies"`
		Content     struct {
			Size     int    `json:"size"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text,omitempty"`
			Encoding string `json:"encoding,omitempty"`
		} `json:"content"`
		RedirectURL string `json:"redirectURL"`
		HeadersSize int    `json:"headersSize"`
		BodySize    int    `json:"bodySize"`
		Error       string `json:"_error,omitempty"`
	} `json:"response"`
	Cache   struct{} `json:"cache"`
	Timings struct {
		Send    float64 `json:"send"`
		Wait    float64 `json:"wait"`
		Receive float64 `json:"receive"`
	} `json:"timings"`
	ResourceType string `json:"_resourceType"`
}

type harPost struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

// HAR returns the recording as a HAR 1.2 file, indented as Chromium
// saves it, with each response's body as the browser kept it.
func (r *Recorder) HAR(ctx context.Context) ([]byte, error) {
	r.mu.Lock()
	entries := append([]*recorded(nil), r.entries...)
	r.mu.Unlock()
	var out []harEntry
	for _, rec := range entries {
		var e harEntry
		e.StartedDateTime = rec.wall.Format("2006-01-02T15:04:05.000Z")
		e.Time = math.Round(max(0, rec.end-rec.start)*1e6) / 1e3
		e.Timings.Wait = e.Time
		e.ResourceType = rec.resourceType
		e.Request.Method, e.Request.URL = rec.method, rec.url
		e.Request.HTTPVersion = httpVersion(rec.protocol)
		e.Request.Headers = headerList(rec.reqHeaders, rec.extraReq)
		e.Request.QueryString, e.Request.Cookies = []harNV{}, []harNV{}
		if u, err := url.Parse(rec.url); err == nil {
			for k, vs := range u.Query() {
				for _, v := range vs {
					e.Request.QueryString = append(e.Request.QueryString, harNV{k, v})
				}
			}
			sort.Slice(e.Request.QueryString, func(a, b int) bool { return e.Request.QueryString[a].Name < e.Request.QueryString[b].Name })
		}
		if rec.hasPostData {
			body := rec.postData
			if len(body) == 0 {
				res, err := chromedp.Call(r.tab, network.GetRequestPostData, network.GetRequestPostDataParams{RequestID: rec.id})
				if err != nil {
					return nil, fmt.Errorf("DevTools %s failed in %s: %w", network.GetRequestPostData.Method, Version(r.tab), err)
				}
				body = res.PostData
			}
			e.Request.PostData = &harPost{MimeType: headerValue(e.Request.Headers, "Content-Type"), Text: string(body)}
			e.Request.BodySize = len(body)
		}
		e.Response.Status, e.Response.StatusText = rec.status, rec.statusText
		e.Response.HTTPVersion = httpVersion(rec.protocol)
		e.Response.Headers = headerList(rec.respHeaders, rec.extraResp)
		e.Response.Cookies = []harNV{}
		for _, h := range e.Response.Headers {
			if strings.EqualFold(h.Name, "Set-Cookie") {
				nv, _, _ := strings.Cut(h.Value, ";")
				if name, value, ok := strings.Cut(nv, "="); ok {
					e.Response.Cookies = append(e.Response.Cookies, harNV{strings.TrimSpace(name), value})
				}
			}
		}
		e.Response.RedirectURL = headerValue(e.Response.Headers, "Location")
		e.Response.Content.MimeType = rec.mimeType
		e.Response.Error = rec.failed
		if rec.failed == "" && !rec.redirected && rec.status != 0 && rec.status != 204 && rec.status != 304 {
			res, err := chromedp.Call(r.tab, network.GetResponseBody, network.GetResponseBodyParams{RequestID: rec.id})
			if err == nil {
				e.Response.Content.Size = len(res.Body)
				if utf8.Valid(res.Body) {
					e.Response.Content.Text = string(res.Body)
				} else {
					e.Response.Content.Text, e.Response.Content.Encoding = base64.StdEncoding.EncodeToString(res.Body), "base64"
				}
			}
			// No body is kept for some responses (a 404 of a favicon);
			// DevTools saves those without one too.
		}
		out = append(out, e)
	}
	doc := map[string]any{"log": map[string]any{
		"version": "1.2",
		"creator": map[string]string{"name": "WebInspector", "version": "537.36"},
		"browser": map[string]string{"name": "Chromium", "version": strings.TrimPrefix(Version(r.tab), "HeadlessChrome/")},
		"pages":   []any{},
		"entries": out,
	}}
	return json.MarshalIndent(doc, "", "  ")
}

func httpVersion(protocol string) string {
	switch protocol {
	case "h2":
		return "http/2.0"
	case "":
		return "HTTP/1.1"
	}
	return strings.ToUpper(protocol)
}

// headerList merges the headers an event gave with those its ExtraInfo
// gave (the ones actually sent, cookies included), sorted by name.
// Headers with several values (Set-Cookie) come as one value of lines.
func headerList(basic, extra network.Headers) []harNV {
	h := basic
	if len(extra) > 0 {
		h = extra
	}
	out := []harNV{}
	for k, v := range h {
		for line := range strings.SplitSeq(fmt.Sprint(v), "\n") {
			out = append(out, harNV{k, line})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return strings.ToLower(out[a].Name) < strings.ToLower(out[b].Name) })
	return out
}

func headerValue(h []harNV, name string) string {
	for _, nv := range h {
		if strings.EqualFold(nv.Name, name) {
			return nv.Value
		}
	}
	return ""
}
