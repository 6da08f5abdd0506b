// Package demo is a small shop service built into hload, so that a first run
// such as `hload apply examples/quickstart.hcl` needs no server of its own.
//
// The shop has the five pages of the weighted business mix that users describe
// (main page, login, product list, product detail, order). Each endpoint does a
// little real work (template rendering, JSON encoding, a costly password check,
// a contended view counter) plus a short simulated database wait, so that
// per-page latencies differ the way they do in a real service. The work is
// kept small on purpose: the demo usually shares the machine with the load
// generator and must not starve it.
package demo

import (
	"html/template"
	"net/http"
	"sync"
	"sync/atomic"
)

// DefaultProducts is the catalogue size used when Options.Products is zero or
// negative.
const DefaultProducts = 2000

// PageSize is the number of products on one page of GET /products, the page
// size of the group list API measured in the users' field reports.
const PageSize = 35

// Users is the number of seeded accounts, user1@example.com to
// user1000@example.com, all with the password "secret".
const Users = 1000

// Options configures the shop. The zero value is ready to use.
type Options struct {
	// Products is the catalogue size; zero or negative means DefaultProducts.
	Products int
	// Seed makes the catalogue, the featured products and the simulated
	// latencies reproducible from run to run.
	Seed int64

	// NotificationDelivery is how POST /api/notification/send delivers:
	// DeliveryPool (the default, also for "") or DeliverySequential.
	NotificationDelivery string
	// NotificationWorkers and NotificationQueue size the pool's workers
	// and queue; zero or negative means the defaults.
	NotificationWorkers int
	NotificationQueue   int
	// NotificationDropEvery, when positive, drops every Nth delivery on
	// purpose and counts it as failed, to test that a load test's missed
	// events match the server's own count.
	NotificationDropEvery int

	// ListOmitEvery is how often GET /api/products leaves its "items" out,
	// so that a journey's capture fails there: one list response in each
	// run of N, at a place drawn from Seed. Zero means
	// DefaultListOmitEvery; negative never leaves them out.
	ListOmitEvery int
}

// Bounds on retained state. A soak test can run for hours with 5 % logins and
// 5 % orders; without a bound the demo's memory would grow on the very machine
// whose load generator is being measured.
const (
	maxSessions = 10000
	maxOrders   = 10000
	maxBody     = 64 << 10
)

// shop holds all the state of one demo service, so that two handlers built in
// one process (as in tests) never share anything.
type shop struct {
	seed     uint64
	products []product // index i holds the product with id i+1
	featured []product
	page     *template.Template
	users    map[string]int // email to user id
	password credential

	// requests numbers requests to seed each one's random source, so that
	// latencies are reproducible yet independent of one another.
	requests atomic.Uint64

	// viewsMu guards views with one lock for the whole catalogue on purpose:
	// it is the hot row of field report 1, a contention point that shows up
	// as rising latency when many users read product details at once.
	viewsMu sync.Mutex
	views   []int64

	sessionsMu sync.Mutex
	sessions   map[string]int // token to user id
	tokens     []string       // ring of tokens in creation order, for eviction
	nextToken  int

	ordersMu    sync.Mutex
	orders      []order // ring of the most recent orders
	lastOrderID int64
}

// NewHandler returns the shop's HTTP handler, with its own in-memory
// catalogue, users, sessions, orders and view counter.
//
// Routes:
//
//	GET  /                main page (HTML) with 10 featured products
//	POST /login           {"email","password"} -> {"token"} and a session cookie
//	GET  /products?page=N a page of PageSize products, sorted by id
//	GET  /products/{id}   one product; counts a view
//	POST /orders          {"product_id","quantity"} -> 201 and the order
//	GET  /health          "ok"
//
// the journey API, whose bearer token, product list, detail and order a user
// journey walks in order (see journey.go for the shapes and counts):
//
//	POST /api/login          {"user"} -> {"token"}
//	GET  /api/products       a few products, listed to the bearer token
//	GET  /api/products/{id}  one product, if listed to the bearer token
//	POST /api/orders         {"product_id"} with the token and X-User -> 201
//	GET  /api/journey/stats  the journey API's counts
//
// and the notification service of field report 3:
//
//	POST /api/notification/send                {"userId", ...} -> the event to the user's subscribers
//	GET  /api/notification/subscribe/{userId}  an event stream (SSE) of the user's notifications
//	GET  /api/notification/stats               what the service delivered and failed, per user
//	PUT  /api/notification/delivery            "sequential" or "pool"
//
// and two pages for trying hload's comparisons and capacity search:
//
//	GET  /slow?delay=D  "ok" after sleeping D (0 to 2s), a page slowed on purpose
//	GET  /capacity      4 workers of 20 ms, a bounded queue, 503 beyond it: 200 requests/s at most
//
// An invalid Options.NotificationDelivery is treated as the default; the
// callers validate it (see ValidDelivery).
func NewHandler(opts Options) http.Handler {
	h, _ := newHandler(opts)
	return h
}

// newHandler builds the handler and returns its journey API as well, for
// Server.JourneyStats.
func newHandler(opts Options) (http.Handler, *journey) {
	s := newShop(opts)
	j := newJourney(s.products, s.seed, opts.ListOmitEvery)
	if !validDelivery(opts.NotificationDelivery) {
		opts.NotificationDelivery = ""
	}
	n := newNotifier(opts)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.mainPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /products", s.productList)
	mux.HandleFunc("GET /products/{id}", s.productDetail)
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("GET /health", health)
	mux.HandleFunc("GET /slow", slow)
	mux.HandleFunc("POST /api/notification/send", n.send)
	mux.HandleFunc("GET /api/notification/subscribe/{userId}", n.subscribe)
	mux.HandleFunc("GET /api/notification/stats", n.stats)
	mux.HandleFunc("PUT /api/notification/delivery", n.setDelivery)
	mux.Handle("GET /capacity", NewCapacity(CapacityOptions{})) // 200/s at most: see docs/capacity.md
	j.routes(mux)
	return mux, j
}

// ValidDelivery reports whether mode is a notification delivery mode, for
// the CLI's flag.
func ValidDelivery(mode string) bool { return validDelivery(mode) }

func newShop(opts Options) *shop {
	n := opts.Products
	if n <= 0 {
		n = DefaultProducts
	}
	seed := uint64(opts.Seed)
	products := newCatalogue(n, seed)
	s := &shop{
		seed:     seed,
		products: products,
		featured: pickFeatured(products, 10, seed),
		page:     template.Must(template.New("main").Parse(mainPageTemplate)),
		users:    make(map[string]int, Users),
		password: newCredential("secret", seed),
		views:    make([]int64, n),
		sessions: make(map[string]int),
		tokens:   make([]string, maxSessions),
		orders:   make([]order, 0, 64),
	}
	for id := 1; id <= Users; id++ {
		s.users[userEmail(id)] = id
	}
	return s
}
