package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// shopper drives the journey API of one handler, as one logged-in user.
type shopper struct {
	t     *testing.T
	h     http.Handler
	user  string
	token string
}

func newJourneyHandler(t *testing.T, opts Options) (http.Handler, *journey) {
	t.Helper()
	if opts.Products == 0 {
		opts.Products = testProducts
	}
	return newHandler(opts)
}

// login logs user in and returns a shopper holding its token.
func login(t *testing.T, h http.Handler, user string) *shopper {
	t.Helper()
	rec := do(t, h, "POST", "/api/login", `{"user":`+strconv.Quote(user)+`}`, "Content-Type", "application/json")
	if rec.Code != http.StatusOK {
		t.Fatalf("login %q: status %d, body %s", user, rec.Code, rec.Body)
	}
	body := decode[map[string]string](t, rec)
	if body["token"] == "" {
		t.Fatalf("login %q: no token in %s", user, rec.Body)
	}
	return &shopper{t: t, h: h, user: user, token: body["token"]}
}

func (s *shopper) bearer() []string {
	return []string{"Authorization", "Bearer " + s.token, "X-User", s.user, "Content-Type", "application/json"}
}

// list returns the ids listed, and whether the response had an "items"
// field at all.
func (s *shopper) list() ([]int, bool) {
	s.t.Helper()
	rec := do(s.t, s.h, "GET", "/api/products", "", s.bearer()...)
	if rec.Code != http.StatusOK {
		s.t.Fatalf("list: status %d, body %s", rec.Code, rec.Body)
	}
	var page struct {
		Page  int             `json:"page"`
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		s.t.Fatalf("list: %v in %s", err, rec.Body)
	}
	if page.Page != 1 {
		s.t.Errorf("list: page = %d, want 1", page.Page)
	}
	if page.Items == nil {
		return nil, false
	}
	var items []listItem
	if err := json.Unmarshal(page.Items, &items); err != nil {
		s.t.Fatalf("list items: %v in %s", err, rec.Body)
	}
	ids := make([]int, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids, true
}

func (s *shopper) detail(id string) *httptest.ResponseRecorder {
	return do(s.t, s.h, "GET", "/api/products/"+id, "", s.bearer()...)
}

func (s *shopper) order(body string) *httptest.ResponseRecorder {
	return do(s.t, s.h, "POST", "/api/orders", body, s.bearer()...)
}

// listed lists until it gets items, and returns them.
func (s *shopper) listed() []int {
	s.t.Helper()
	for range 3 {
		if ids, ok := s.list(); ok {
			return ids
		}
	}
	s.t.Fatal("three lists in a row without items")
	return nil
}

// wantStats compares the counts with want, field by field, ignoring
// LoginsByUser when want has none.
func wantStats(t *testing.T, j *journey, want JourneyStats) {
	t.Helper()
	got := j.snapshot()
	if want.LoginsByUser == nil {
		got.LoginsByUser = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats:\n got %+v\nwant %+v", got, want)
	}
}

func TestJourneyLogin(t *testing.T) {
	h, j := newJourneyHandler(t, Options{})
	bad := []struct{ name, body string }{
		{"no user", `{}`},
		{"empty user", `{"user":""}`},
		{"long user", `{"user":"` + strings.Repeat("u", maxUserName+1) + `"}`},
		{"email and password", `{"email":"user1@example.com","password":"secret"}`},
		{"not JSON", `user=a`},
		{"number", `{"user":1}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, "POST", "/api/login", tt.body)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want 400; body %s", rec.Code, rec.Body)
			}
		})
	}
	tokens := map[string]bool{}
	for _, user := range []string{"vu-1", "vu-2", "vu-1", strings.Repeat("u", maxUserName)} {
		s := login(t, h, user)
		if len(s.token) < 26 || tokens[s.token] {
			t.Errorf("token %q of %s is short or was issued before", s.token, user)
		}
		tokens[s.token] = true
	}
	wantStats(t, j, JourneyStats{
		Logins:       4,
		LoginsByUser: map[string]int64{"vu-1": 2, "vu-2": 1, strings.Repeat("u", maxUserName): 1},
	})
}

func TestJourneyListNeedsToken(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: -1})
	for _, header := range [][]string{
		nil,
		{"Authorization", "Bearer "},
		{"Authorization", "Bearer nosuchtoken"},
		{"Authorization", "Basic dXNlcjpwYXNz"},
	} {
		rec := do(t, h, "GET", "/api/products", "", header...)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("list with %q: status %d, want 401", header, rec.Code)
		}
	}
	s := login(t, h, "vu-1")
	seen := map[int]bool{}
	for range 10 {
		ids, ok := s.list()
		if !ok || len(ids) != ListItems {
			t.Fatalf("list = %v (items %v), want %d ids", ids, ok, ListItems)
		}
		distinct := map[int]bool{}
		for _, id := range ids {
			if id < 1 || id > testProducts || distinct[id] {
				t.Errorf("list %v: id %d outside the catalogue or repeated", ids, id)
			}
			distinct[id] = true
			seen[id] = true
		}
	}
	// Ten random picks of five from a hundred all alike would mean the
	// list is not random, and a journey would not need to capture.
	if len(seen) <= ListItems {
		t.Errorf("ten lists showed only %d distinct ids", len(seen))
	}
	wantStats(t, j, JourneyStats{Logins: 1, Lists: 10, Unauthorized: 4})
}

// omissions returns the lists, counted from 1, that left their items out,
// out of n lists by two users taking turns: the count is over all list
// responses, not per token.
func omissions(t *testing.T, opts Options, n int) ([]int, *journey) {
	t.Helper()
	h, j := newJourneyHandler(t, opts)
	shoppers := []*shopper{login(t, h, "a"), login(t, h, "b")}
	var without []int
	for i := 1; i <= n; i++ {
		if _, ok := shoppers[i%2].list(); !ok {
			without = append(without, i)
		}
	}
	return without, j
}

func TestJourneyListOmitsItems(t *testing.T) {
	for _, tt := range []struct {
		every, want int // want: the run length; 0 for never
	}{
		{0, DefaultListOmitEvery},
		{4, 4},
		{-1, 0},
	} {
		t.Run(fmt.Sprint(tt.every), func(t *testing.T) {
			const runs = 6
			n := runs * max(tt.want, 1)
			without, j := omissions(t, Options{ListOmitEvery: tt.every}, n)
			wantStats(t, j, JourneyStats{Logins: 2, Lists: int64(n), ListsWithoutItems: int64(len(without))})
			if tt.want == 0 {
				if len(without) > 0 {
					t.Errorf("lists %v left their items out, want none", without)
				}
				return
			}
			// Exactly one in each run of tt.want, 5 % by default...
			if len(without) != runs {
				t.Fatalf("lists without items = %v, want %d, one in each run of %d", without, runs, tt.want)
			}
			places := map[int]bool{}
			for run, i := range without {
				if (i-1)/tt.want != run {
					t.Errorf("lists without items = %v, want one in each run of %d", without, tt.want)
				}
				places[(i-1)%tt.want] = true
			}
			// ...but not always at the same place in its run, or a client
			// that picks its flows in a fixed cycle would see every
			// omission in the same flow.
			if len(places) == 1 {
				t.Errorf("lists without items = %v: always at the same place in a run of %d", without, tt.want)
			}
		})
	}
	// The places are drawn from the seed: the same seed, the same lists.
	first, _ := omissions(t, Options{Seed: 5}, 100)
	again, _ := omissions(t, Options{Seed: 5}, 100)
	other, _ := omissions(t, Options{Seed: 6}, 100)
	if !reflect.DeepEqual(first, again) || reflect.DeepEqual(first, other) {
		t.Errorf("seed 5 omits %v then %v, seed 6 %v; want the same for one seed, not for another", first, again, other)
	}
}

func TestJourneyDetail(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: -1})
	a, b := login(t, h, "a"), login(t, h, "b")
	ids := a.listed()
	rec := a.detail(strconv.Itoa(ids[0]))
	if rec.Code != http.StatusOK {
		t.Fatalf("detail of a listed id: status %d, body %s", rec.Code, rec.Body)
	}
	if p := decode[product](t, rec); p.ID != ids[0] || p.Name == "" {
		t.Errorf("detail of %d = %+v", ids[0], p)
	}
	notListed := 0
	for id := 1; id <= testProducts && notListed == 0; id++ {
		if !contains(ids, id) {
			notListed = id
		}
	}
	for _, tt := range []struct {
		name string
		s    *shopper
		id   string
		want int
	}{
		{"never listed", a, strconv.Itoa(notListed), http.StatusNotFound},
		{"listed to another token", b, strconv.Itoa(ids[0]), http.StatusNotFound},
		{"outside the catalogue", a, "100000", http.StatusNotFound},
		{"not a number", a, "abc", http.StatusNotFound},
		{"unknown token", &shopper{t: t, h: h, token: "nosuchtoken"}, strconv.Itoa(ids[0]), http.StatusUnauthorized},
	} {
		if rec := tt.s.detail(tt.id); rec.Code != tt.want {
			t.Errorf("%s: status %d, want %d; body %s", tt.name, rec.Code, tt.want, rec.Body)
		}
	}
	wantStats(t, j, JourneyStats{Logins: 2, Lists: 1, Details: 1, DetailsNotListed: 4, Unauthorized: 1})
}

func contains(ids []int, id int) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

func TestJourneyOrder(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: -1})
	a, b := login(t, h, "a"), login(t, h, "b")
	ids := a.listed()
	id := strconv.Itoa(ids[0])
	notListed := 0
	for n := 1; n <= testProducts && notListed == 0; n++ {
		if !contains(ids, n) {
			notListed = n
		}
	}
	stranger := &shopper{t: t, h: h, user: "a", token: "nosuchtoken"}
	impostor := &shopper{t: t, h: h, user: "a", token: b.token} // b's token, claiming to be a
	anonymous := &shopper{t: t, h: h, user: "a"}
	noUser := &shopper{t: t, h: h, token: a.token}
	for _, tt := range []struct {
		name string
		s    *shopper
		body string
		want int
	}{
		{"listed id", a, `{"product_id":` + id + `}`, http.StatusCreated},
		{"listed id as a string", a, `{"product_id":"` + id + `"}`, http.StatusCreated},
		{"with a quantity", a, `{"product_id":` + id + `,"quantity":3}`, http.StatusCreated},
		{"never listed", a, `{"product_id":` + strconv.Itoa(notListed) + `}`, http.StatusUnprocessableEntity},
		{"outside the catalogue", a, `{"product_id":100000}`, http.StatusUnprocessableEntity},
		{"no token", anonymous, `{"product_id":` + id + `}`, http.StatusUnauthorized},
		{"unknown token", stranger, `{"product_id":` + id + `}`, http.StatusUnauthorized},
		{"another user's token", impostor, `{"product_id":` + id + `}`, http.StatusForbidden},
		{"no X-User", noUser, `{"product_id":` + id + `}`, http.StatusForbidden},
		{"no product_id", a, `{}`, http.StatusBadRequest},
		{"product_id not a number", a, `{"product_id":"x"}`, http.StatusBadRequest},
		{"fractional product_id", a, `{"product_id":1.5}`, http.StatusBadRequest},
		{"too many", a, `{"product_id":` + id + `,"quantity":1000}`, http.StatusBadRequest},
		{"unknown field", a, `{"product_id":` + id + `,"coupon":"x"}`, http.StatusBadRequest},
	} {
		rec := tt.s.order(tt.body)
		if rec.Code != tt.want {
			t.Errorf("%s: status %d, want %d; body %s", tt.name, rec.Code, tt.want, rec.Body)
			continue
		}
		if rec.Code == http.StatusCreated {
			o := decode[journeyOrder](t, rec)
			if o.OrderID < 1 || o.User != "a" || strconv.Itoa(o.ProductID) != id || o.TotalCents < 1 {
				t.Errorf("%s: order %+v", tt.name, o)
			}
		}
	}
	wantStats(t, j, JourneyStats{
		Logins: 2, Lists: 1,
		Orders: 14, OrdersCreated: 3, OrdersBadToken: 4, OrdersNotListed: 2, Unauthorized: 2,
	})
}

// listUntil lists until a list has items (want true) or has none, and
// returns the last ids listed and the number of lists made.
func (s *shopper) listUntil(want bool) ([]int, int64) {
	s.t.Helper()
	for n := int64(1); n <= 20; n++ {
		if ids, ok := s.list(); ok == want {
			return ids, n
		}
	}
	s.t.Fatalf("20 lists in a row, none with items %v", want)
	return nil, 0
}

func TestJourneyAfterFailedCapture(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: 3})
	a, b := login(t, h, "a"), login(t, h, "b")
	ids, lists := a.listUntil(true)
	without := lists - 1
	id := strconv.Itoa(ids[0])
	if rec := a.detail(id); rec.Code != http.StatusOK {
		t.Fatalf("detail: status %d", rec.Code)
	}
	_, n := a.listUntil(false) // a's capture would fail here
	lists, without = lists+n, without+1
	// A client that went on regardless still holds an id listed before:
	// the requests succeed, but they are counted.
	if rec := a.detail(id); rec.Code != http.StatusOK {
		t.Errorf("detail after the failed capture: status %d", rec.Code)
	}
	if rec := a.order(`{"product_id":` + id + `}`); rec.Code != http.StatusCreated {
		t.Errorf("order after the failed capture: status %d", rec.Code)
	}
	// Another token is not marked.
	bids, n := b.listUntil(true)
	lists, without = lists+n, without+n-1
	if rec := b.detail(strconv.Itoa(bids[0])); rec.Code != http.StatusOK {
		t.Errorf("b's detail: status %d", rec.Code)
	}
	wantStats(t, j, JourneyStats{
		Logins: 2, Lists: lists, ListsWithoutItems: without, Details: 3,
		Orders: 1, OrdersCreated: 1, SentAfterFailedCapture: 2,
	})
	// The next list of a's with items clears the mark.
	a.listUntil(true)
	a.detail(id)
	a.order(`{"product_id":` + id + `}`)
	if got := j.snapshot().SentAfterFailedCapture; got != 2 {
		t.Errorf("sent after a failed capture = %d after a list cleared the mark, want 2", got)
	}
}

func TestJourneyTokensBounded(t *testing.T) {
	h, j := newJourneyHandler(t, Options{})
	j.ring = make([]string, 3)
	first := login(t, h, "first")
	for i := range 3 {
		login(t, h, "vu-"+strconv.Itoa(i))
	}
	if rec := do(t, h, "GET", "/api/products", "", first.bearer()...); rec.Code != http.StatusUnauthorized {
		t.Errorf("list with an evicted token: status %d, want 401", rec.Code)
	}
	j.mu.Lock()
	held := len(j.sessions)
	j.mu.Unlock()
	if held != 3 {
		t.Errorf("%d sessions held, want 3", held)
	}
	if got := j.snapshot(); got.TokensEvicted != 1 || got.Unauthorized != 1 {
		t.Errorf("evicted %d, unauthorized %d, want 1 and 1", got.TokensEvicted, got.Unauthorized)
	}
}

func TestJourneyUsersBounded(t *testing.T) {
	h, j := newJourneyHandler(t, Options{})
	j.stats.LoginsByUser = make(map[string]int64, maxJourneyUsers)
	for i := range maxJourneyUsers - 1 {
		j.stats.LoginsByUser["seeded-"+strconv.Itoa(i)] = 1
	}
	login(t, h, "last") // the 10000th name: tracked
	login(t, h, "over") // one too many: counted, not tracked
	login(t, h, "last") // a tracked name stays tracked
	st := j.snapshot()
	if st.LoginsByUser["last"] != 2 || st.LoginsByUser["over"] != 0 || st.LoginsUntracked != 1 || st.Logins != 3 {
		t.Errorf("last %d, over %d, untracked %d, logins %d; want 2, 0, 1, 3",
			st.LoginsByUser["last"], st.LoginsByUser["over"], st.LoginsUntracked, st.Logins)
	}
}

// TestJourneyConcurrent runs whole journeys at once, under -race in CI,
// and checks that the counts add up to what the clients did.
func TestJourneyConcurrent(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: 7})
	const users, rounds = 8, 7 // 56 lists: 8 runs of 7
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lists, without, details, created int64
	for u := range users {
		wg.Go(func() {
			s := login(t, h, "vu-"+strconv.Itoa(u))
			for range rounds {
				ids, ok := s.list()
				if !ok {
					mu.Lock()
					lists, without = lists+1, without+1
					mu.Unlock()
					continue // the flow stops, as a client's should
				}
				id := strconv.Itoa(ids[0])
				d := s.detail(id).Code == http.StatusOK
				o := s.order(`{"product_id":`+id+`}`).Code == http.StatusCreated
				mu.Lock()
				lists++
				if d {
					details++
				}
				if o {
					created++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	done := users*rounds - without
	if details != done || created != done {
		t.Errorf("details %d, orders %d accepted; want %d each", details, created, done)
	}
	wantStats(t, j, JourneyStats{
		Logins: users, Lists: lists, ListsWithoutItems: without,
		Details: details, Orders: created, OrdersCreated: created,
	})
	if want := int64(users * rounds / 7); without != want {
		t.Errorf("%d lists without items out of %d, want %d", without, lists, want)
	}
}

func TestJourneyStatsEndpoint(t *testing.T) {
	h, j := newJourneyHandler(t, Options{ListOmitEvery: 2})
	s := login(t, h, "vu-1")
	s.list()
	s.list()
	do(t, h, "GET", "/api/products", "")
	rec := do(t, h, "GET", "/api/journey/stats", "")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("stats: status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	// Every count, by its JSON name, so that a renamed field shows here.
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"logins": 1.0, "logins_by_user": map[string]any{"vu-1": 1.0}, "logins_untracked": 0.0, "tokens_evicted": 0.0,
		"lists": 2.0, "lists_without_items": 1.0,
		"details": 0.0, "details_not_listed": 0.0,
		"orders": 0.0, "orders_created": 0.0, "orders_bad_token": 0.0, "orders_not_listed": 0.0,
		"unauthorized": 1.0, "sent_after_failed_capture": 0.0,
	}
	if !reflect.DeepEqual(raw, want) {
		t.Errorf("GET /api/journey/stats =\n%v\nwant\n%v", raw, want)
	}
	if got := decode[JourneyStats](t, rec); !reflect.DeepEqual(got, j.snapshot()) {
		t.Errorf("the endpoint says %+v, the snapshot %+v", got, j.snapshot())
	}
}

func TestJourneyDelayBounds(t *testing.T) {
	h, _ := newJourneyHandler(t, Options{})
	s := login(t, h, "vu-1")
	for _, delay := range []string{"abc", "-1ms", "1001ms", "2s", "10"} {
		rec := do(t, h, "GET", "/api/products?delay="+delay, "", s.bearer()...)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "delay") {
			t.Errorf("delay=%s: status %d, body %s; want 400 naming the delay", delay, rec.Code, rec.Body)
		}
	}
	rec := do(t, h, "GET", "/api/products?delay=1ms&delay=2ms", "", s.bearer()...)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("two delays: status %d, want 400", rec.Code)
	}
	for _, delay := range []string{"0s", "0", "1s", "1ms"} {
		if rec := do(t, h, "GET", "/api/products?delay="+delay, "", s.bearer()...); rec.Code != http.StatusOK {
			t.Errorf("delay=%s: status %d, want 200; body %s", delay, rec.Code, rec.Body)
		}
	}
}

// serverTiming returns the handler's own time from a Server-Timing header.
func serverTiming(t *testing.T, resp *http.Response) time.Duration {
	t.Helper()
	v, ok := strings.CutPrefix(resp.Header.Get("Server-Timing"), "app;dur=")
	ms, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		t.Fatalf("Server-Timing = %q, want app;dur=MS", resp.Header.Get("Server-Timing"))
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// TestJourneyDelayOnLoopback checks, through a real server, that ?delay sets
// each endpoint's server time: the handler's own measure is at least the
// delay, and at most what the client measured around it.
func TestJourneyDelayOnLoopback(t *testing.T) {
	srv, err := Start(t.Context(), "", Options{Products: testProducts, ListOmitEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	// send returns the response, its decoded body and the round trip as
	// the client measured it.
	send := func(method, path, body, token string) (*http.Response, map[string]any, time.Duration) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-User", "vu-1")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		rtt := time.Since(start)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp, v, rtt
	}
	const delay = 40 * time.Millisecond
	q := "?delay=" + delay.String()
	check := func(name string, resp *http.Response, rtt time.Duration, want int) {
		t.Helper()
		st := serverTiming(t, resp)
		if resp.StatusCode != want || st < delay || st > rtt {
			t.Errorf("%s: status %d, server time %v, client round trip %v; want %d, %v <= server time <= round trip",
				name, resp.StatusCode, st, rtt, want, delay)
		}
	}
	resp, body, rtt := send("POST", "/api/login"+q, `{"user":"vu-1"}`, "")
	check("login", resp, rtt, http.StatusOK)
	token, _ := body["token"].(string)
	resp, body, rtt = send("GET", "/api/products"+q, "", token)
	check("list", resp, rtt, http.StatusOK)
	items, _ := body["items"].([]any)
	if len(items) == 0 {
		t.Fatalf("list without items: %v", body)
	}
	id := fmt.Sprint(items[0].(map[string]any)["id"])
	resp, _, rtt = send("GET", "/api/products/"+id+q, "", token)
	check("detail", resp, rtt, http.StatusOK)
	resp, _, rtt = send("POST", "/api/orders"+q, `{"product_id":`+id+`}`, token)
	check("order", resp, rtt, http.StatusCreated)
	// An error is timed too, and a request without ?delay keeps the
	// simulated wait.
	resp, _, rtt = send("GET", "/api/products/0"+q, "", token)
	check("404", resp, rtt, http.StatusNotFound)
	resp, _, rtt = send("GET", "/api/products", "", token)
	if st := serverTiming(t, resp); resp.StatusCode != http.StatusOK || st > rtt {
		t.Errorf("list without a delay: status %d, server time %v > round trip %v", resp.StatusCode, st, rtt)
	}
	if got := srv.JourneyStats(); got.Logins != 1 || got.Lists != 2 || got.Details != 1 || got.OrdersCreated != 1 || got.DetailsNotListed != 1 {
		t.Errorf("JourneyStats() = %+v, want 1 login, 2 lists, 1 detail, 1 order, 1 detail not listed", got)
	}
}

// TestServerJourneyStats checks that the accessor and the endpoint of a
// running server tell the same counts, and that the accessor's map is a copy.
func TestServerJourneyStats(t *testing.T) {
	srv, err := Start(t.Context(), "", Options{Products: testProducts})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, user := range []string{"vu-1", "vu-2", "vu-1"} {
		resp, err := http.Post(srv.URL()+"/api/login", "application/json", strings.NewReader(`{"user":"`+user+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	code, body, err := get(srv.URL() + "/api/journey/stats")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/journey/stats = %d %v", code, err)
	}
	var served JourneyStats
	if err := json.Unmarshal([]byte(body), &served); err != nil {
		t.Fatal(err)
	}
	got := srv.JourneyStats()
	want := JourneyStats{Logins: 3, LoginsByUser: map[string]int64{"vu-1": 2, "vu-2": 1}}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(served, want) {
		t.Errorf("JourneyStats() = %+v, endpoint %+v, want %+v", got, served, want)
	}
	got.LoginsByUser["vu-1"] = 100
	if srv.JourneyStats().LoginsByUser["vu-1"] != 2 {
		t.Error("changing the returned map changed the server's counts")
	}
}
