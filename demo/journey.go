package demo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The journey API is the part of the shop that a user journey walks: a login
// that hands out a bearer token, then a product list, a product detail and an
// order that accept only that token and only ids the list showed to it. It
// counts every way a client can get such a journey wrong, so that a load
// test's captures and flows can be checked against the server's own figures.
//
//	POST /api/login          {"user"} -> {"token"}
//	GET  /api/products       bearer -> {"page":1,"items":[{"id","name","price_cents"},...]}
//	GET  /api/products/{id}  bearer -> the product, or 404 if never listed to the token
//	POST /api/orders         bearer, X-User, {"product_id"[,"quantity"]} -> 201 {"order_id",...}
//	GET  /api/journey/stats  the counts, as JourneyStats
//
// Every endpoint but the stats takes ?delay=D (a Go duration from 0 to
// MaxDelay): the handler then waits exactly D instead of its simulated
// database wait, and its responses (all but a malformed body's 400) say how
// long the handler took in a Server-Timing header ("app;dur=" milliseconds),
// so that a timing test knows each step's server time.

// DefaultListOmitEvery is how often GET /api/products leaves its items out
// when Options.ListOmitEvery is zero: one list response in every 20, 5 %.
const DefaultListOmitEvery = 20

// ListItems is the number of products in one GET /api/products response.
const ListItems = 5

// MaxDelay bounds the ?delay parameter, so that a typo cannot hold a
// connection for minutes.
const MaxDelay = time.Second

// Bounds on the journey API's state, for the same reason as maxSessions: a
// long run must not grow the demo's memory without end. A token's listed ids
// take one bit per catalogue product.
const (
	maxJourneyTokens = 10000
	maxJourneyUsers  = 10000
	maxUserName      = 128
)

// JourneyStats are the journey API's own counts, served by
// GET /api/journey/stats and returned by (*Server).JourneyStats.
type JourneyStats struct {
	// Logins counts successful logins (200), LoginsByUser them per user
	// name. Once LoginsByUser holds 10000 names, the logins of further
	// names are counted in Logins and LoginsUntracked only.
	Logins          int64            `json:"logins"`
	LoginsByUser    map[string]int64 `json:"logins_by_user"`
	LoginsUntracked int64            `json:"logins_untracked"`
	// TokensEvicted counts tokens forgotten because 10000 newer ones were
	// issued; a request with such a token is unauthorized.
	TokensEvicted int64 `json:"tokens_evicted"`

	// Lists counts product lists served (200), ListsWithoutItems those of
	// them that left the "items" field out on purpose.
	Lists             int64 `json:"lists"`
	ListsWithoutItems int64 `json:"lists_without_items"`

	// Details counts product details served (200), DetailsNotListed the
	// details refused (404) because the id was never listed to the token.
	Details          int64 `json:"details"`
	DetailsNotListed int64 `json:"details_not_listed"`

	// Orders counts every order request received, whatever its outcome;
	// OrdersCreated those answered 201. OrdersBadToken counts orders with
	// a missing or unknown token (401) or with the token of another user
	// than X-User (403); OrdersNotListed orders (422) for an id never
	// listed to the token.
	Orders          int64 `json:"orders"`
	OrdersCreated   int64 `json:"orders_created"`
	OrdersBadToken  int64 `json:"orders_bad_token"`
	OrdersNotListed int64 `json:"orders_not_listed"`

	// Unauthorized counts the list, detail and order requests answered 401
	// because their bearer token was missing or unknown.
	Unauthorized int64 `json:"unauthorized"`
	// SentAfterFailedCapture counts detail and order requests made with a
	// token whose latest list left the items out: a client whose capture
	// failed there should not have sent them.
	SentAfterFailedCapture int64 `json:"sent_after_failed_capture"`
}

// journey holds the journey API's state. One lock guards the sessions and
// the counts together, so that a snapshot of the counts is consistent.
type journey struct {
	products  []product
	seed      uint64
	omitEvery int64
	omitAt    int64         // the list, counted from 1, that leaves its items out in the current run of omitEvery
	requests  atomic.Uint64 // seeds each list's and each wait's random source

	mu       sync.Mutex
	sessions map[string]*journeySession
	ring     []string // tokens in creation order, for eviction
	next     int
	lastID   int64 // the last order id
	stats    JourneyStats
}

// journeySession is what a token remembers: its user, every id listed to it
// (one bit per product), and whether its latest list left the items out.
type journeySession struct {
	user          string
	listed        []uint64
	captureFailed bool
}

// list remembers that product id, from 1, was listed to the token.
func (s *journeySession) list(id int) {
	s.listed[(id-1)/64] |= 1 << ((id - 1) % 64)
}

// wasListed reports whether product id was ever listed to the token; an id
// outside the catalogue never was.
func (s *journeySession) wasListed(id int) bool {
	return id >= 1 && id <= len(s.listed)*64 && s.listed[(id-1)/64]&(1<<((id-1)%64)) != 0
}

func newJourney(products []product, seed uint64, omitEvery int) *journey {
	if omitEvery == 0 {
		omitEvery = DefaultListOmitEvery
	}
	return &journey{
		products:  products,
		seed:      seed,
		omitEvery: int64(omitEvery),
		sessions:  make(map[string]*journeySession),
		ring:      make([]string, maxJourneyTokens),
		stats:     JourneyStats{LoginsByUser: make(map[string]int64)},
	}
}

func (j *journey) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/login", j.login)
	mux.HandleFunc("GET /api/products", j.list)
	mux.HandleFunc("GET /api/products/{id}", j.detail)
	mux.HandleFunc("POST /api/orders", j.order)
	mux.HandleFunc("GET /api/journey/stats", j.serveStats)
}

// snapshot returns a copy of the counts, safe to keep and to read.
func (j *journey) snapshot() JourneyStats {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.stats
	st.LoginsByUser = make(map[string]int64, len(j.stats.LoginsByUser))
	for user, n := range j.stats.LoginsByUser {
		st.LoginsByUser[user] = n
	}
	return st
}

func (j *journey) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, j.snapshot())
}

// begin parses ?delay and waits: exactly the delay if one is given, else a
// simulated database wait of lo to hi. It returns the handler's start time
// for the Server-Timing header, and false if it already answered (a bad
// delay) or the client went away.
func (j *journey) begin(w http.ResponseWriter, r *http.Request, lo, hi time.Duration) (time.Time, bool) {
	start := time.Now()
	d := lo + time.Duration(mathrand.NewPCG(j.seed, j.requests.Add(1)).Uint64()%uint64(hi-lo+1))
	if v, given := r.URL.Query()["delay"]; given {
		parsed, err := time.ParseDuration(v[0])
		if err != nil || parsed < 0 || parsed > MaxDelay || len(v) > 1 {
			reply(w, start, http.StatusBadRequest, errorBody{"delay must be one duration from 0s to " + MaxDelay.String() + ", such as 20ms; got " + strconv.Quote(strings.Join(v, ","))})
			return start, false
		}
		d = parsed
	}
	return start, sleep(r.Context(), d)
}

// sleep waits d, or reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

type errorBody struct {
	Error string `json:"error"`
}

// reply writes v as JSON with a Server-Timing header: the time since start,
// in milliseconds, as the handler measured it.
func reply(w http.ResponseWriter, start time.Time, status int, v any) {
	ms := float64(time.Since(start).Nanoseconds()) / 1e6
	w.Header().Set("Server-Timing", "app;dur="+strconv.FormatFloat(ms, 'f', 3, 64))
	writeJSON(w, status, v)
}

func (j *journey) login(w http.ResponseWriter, r *http.Request) {
	start, ok := j.begin(w, r, 1*time.Millisecond, 2*time.Millisecond)
	if !ok {
		return
	}
	var req struct {
		User string `json:"user"`
	}
	if !decodeJSON(w, r, &req) {
		return
	}
	if req.User == "" || len(req.User) > maxUserName {
		reply(w, start, http.StatusBadRequest, errorBody{"user must be a name of 1 to " + strconv.Itoa(maxUserName) + " bytes"})
		return
	}
	token := rand.Text()
	j.mu.Lock()
	if old := j.ring[j.next]; old != "" {
		delete(j.sessions, old)
		j.stats.TokensEvicted++
	}
	j.ring[j.next] = token
	j.next = (j.next + 1) % len(j.ring)
	j.sessions[token] = &journeySession{user: req.User, listed: make([]uint64, (len(j.products)+63)/64)}
	j.stats.Logins++
	if _, seen := j.stats.LoginsByUser[req.User]; seen || len(j.stats.LoginsByUser) < maxJourneyUsers {
		j.stats.LoginsByUser[req.User]++
	} else {
		j.stats.LoginsUntracked++
	}
	j.mu.Unlock()
	reply(w, start, http.StatusOK, struct {
		Token string `json:"token"`
	}{token})
}

// session returns the session of the request's bearer token. It must be
// called with j.mu held; on a missing or unknown token it counts the request
// as unauthorized and returns nil.
func (j *journey) session(r *http.Request) *journeySession {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var s *journeySession
	if ok && token != "" {
		s = j.sessions[token]
	}
	if s == nil {
		j.stats.Unauthorized++
	}
	return s
}

// noteFailedCapture counts a detail or order request sent with a token
// whose latest list left the items out. It must be called with j.mu held.
func (j *journey) noteFailedCapture(s *journeySession) {
	if s.captureFailed {
		j.stats.SentAfterFailedCapture++
	}
}

var unauthorized = errorBody{"a bearer token from POST /api/login is required"}

type listItem struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	PriceCents int    `json:"price_cents"`
}

type listPage struct {
	Page  int        `json:"page"`
	Items []listItem `json:"items,omitempty"`
}

func (j *journey) list(w http.ResponseWriter, r *http.Request) {
	start, ok := j.begin(w, r, 1*time.Millisecond, 3*time.Millisecond)
	if !ok {
		return
	}
	// A few products at random, as a "recommended for you" list: a journey
	// cannot guess an id it was shown, it has to capture one.
	pick := mathrand.New(mathrand.NewPCG(j.seed, j.requests.Add(1)))
	items := make([]listItem, 0, ListItems)
	for _, i := range pick.Perm(len(j.products))[:min(ListItems, len(j.products))] {
		p := j.products[i]
		items = append(items, listItem{ID: p.ID, Name: p.Name, PriceCents: p.PriceCents})
	}
	j.mu.Lock()
	s := j.session(r)
	if s == nil {
		j.mu.Unlock()
		reply(w, start, http.StatusUnauthorized, unauthorized)
		return
	}
	j.stats.Lists++
	s.captureFailed = j.omitList(j.stats.Lists)
	if s.captureFailed {
		// The field a journey captures from is missing, on purpose: the
		// ids are not shown, so none is listed to the token either.
		j.stats.ListsWithoutItems++
		items = nil
	}
	for _, it := range items {
		s.list(it.ID)
	}
	j.mu.Unlock()
	reply(w, start, http.StatusOK, listPage{Page: 1, Items: items})
}

// omitList reports whether list n, counted from 1, leaves its items out:
// exactly one in each run of omitEvery lists, at a place in the run drawn
// from the seed. Always the last of each run would be simpler, but a client
// that picks its flows in a fixed cycle (hload's weighted round-robin does)
// would then see every omission in the same flow. It must be called with
// j.mu held, for each n in turn.
func (j *journey) omitList(n int64) bool {
	if j.omitEvery <= 0 {
		return false
	}
	run := (n - 1) / j.omitEvery
	if (n-1)%j.omitEvery == 0 {
		draw := mathrand.NewPCG(j.seed^0x6f6d6974, uint64(run)) // stream "omit"
		j.omitAt = run*j.omitEvery + 1 + int64(draw.Uint64()%uint64(j.omitEvery))
	}
	return n == j.omitAt
}

func (j *journey) detail(w http.ResponseWriter, r *http.Request) {
	start, ok := j.begin(w, r, 500*time.Microsecond, 1500*time.Microsecond)
	if !ok {
		return
	}
	// A non-numeric id was never listed either: it is simply not found.
	id, err := strconv.Atoi(r.PathValue("id"))
	j.mu.Lock()
	s := j.session(r)
	if s == nil {
		j.mu.Unlock()
		reply(w, start, http.StatusUnauthorized, unauthorized)
		return
	}
	j.noteFailedCapture(s)
	if err != nil || !s.wasListed(id) {
		j.stats.DetailsNotListed++
		j.mu.Unlock()
		reply(w, start, http.StatusNotFound, errorBody{"no product " + strconv.Quote(r.PathValue("id")) + " was listed to this token"})
		return
	}
	j.stats.Details++
	j.mu.Unlock()
	reply(w, start, http.StatusOK, j.products[id-1])
}

type journeyOrder struct {
	OrderID    int64  `json:"order_id"`
	User       string `json:"user"`
	ProductID  int    `json:"product_id"`
	Quantity   int    `json:"quantity"`
	TotalCents int    `json:"total_cents"`
}

func (j *journey) order(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.stats.Orders++
	j.mu.Unlock()
	start, ok := j.begin(w, r, 2*time.Millisecond, 3*time.Millisecond)
	if !ok {
		return
	}
	var req struct {
		ProductID productID `json:"product_id"`
		Quantity  int       `json:"quantity"`
	}
	if !decodeJSON(w, r, &req) {
		return
	}
	if req.Quantity == 0 {
		req.Quantity = 1
	}
	if req.ProductID < 1 || req.Quantity < 1 || req.Quantity > maxQuantity {
		reply(w, start, http.StatusBadRequest, errorBody{"product_id must be a positive integer, and quantity (default 1) from 1 to " + strconv.Itoa(maxQuantity)})
		return
	}
	user := r.Header.Get("X-User")
	j.mu.Lock()
	s := j.session(r)
	if s == nil {
		j.stats.OrdersBadToken++
		j.mu.Unlock()
		reply(w, start, http.StatusUnauthorized, unauthorized)
		return
	}
	j.noteFailedCapture(s)
	if s.user != user {
		j.stats.OrdersBadToken++
		j.mu.Unlock()
		reply(w, start, http.StatusForbidden, errorBody{"the token was issued to another user than X-User " + strconv.Quote(user)})
		return
	}
	id := int(req.ProductID)
	if !s.wasListed(id) {
		j.stats.OrdersNotListed++
		j.mu.Unlock()
		reply(w, start, http.StatusUnprocessableEntity, errorBody{"product " + strconv.Itoa(id) + " was never listed to this token"})
		return
	}
	j.stats.OrdersCreated++
	j.lastID++
	o := journeyOrder{OrderID: j.lastID, User: user, ProductID: id, Quantity: req.Quantity}
	j.mu.Unlock()
	o.TotalCents = j.products[id-1].PriceCents * req.Quantity
	reply(w, start, http.StatusCreated, o)
}

// productID is a product id in a JSON body: a number, or a string of
// digits, because a value captured from a response may reach the order's
// body as either.
type productID int

func (p *productID) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("product_id must be a number or a string of digits")
	}
	v, err := strconv.Atoi(n.String())
	if err != nil {
		return errors.New("product_id must be a whole number")
	}
	*p = productID(v)
	return nil
}
