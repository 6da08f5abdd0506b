package demo

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SessionCookie is the name of the cookie that POST /login sets.
const SessionCookie = "session"

// passwordIterations makes one password check cost about 0.5 ms of CPU, like
// a real service's deliberately slow hash, while staying well below what
// would starve a load generator sharing two cores.
const passwordIterations = 3000

// credential is a salted, stretched password hash.
type credential struct {
	salt []byte
	hash []byte
}

// newCredential derives the stored hash once. All seeded users share the
// password "secret", so they share one credential: deriving a thousand
// per-user hashes would make NewHandler take half a second, while a login
// costs the same either way.
func newCredential(password string, seed uint64) credential {
	r := mathrand.New(mathrand.NewPCG(seed, 0x73616c74)) // stream "salt"
	salt := make([]byte, 16)
	for i := range salt {
		salt[i] = byte(r.Uint32())
	}
	return credential{salt: salt, hash: derive(password, salt)}
}

func derive(password string, salt []byte) []byte {
	key, err := pbkdf2.Key(sha256.New, password, salt, passwordIterations, sha256.Size)
	if err != nil {
		// Only FIPS-mode parameter checks can fail, and ours are fixed.
		panic("demo: pbkdf2: " + err.Error())
	}
	return key
}

// matches reports whether password matches, in constant time.
func (c credential) matches(password string) bool {
	return subtle.ConstantTimeCompare(derive(password, c.salt), c.hash) == 1
}

func health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}

func (s *shop) mainPage(w http.ResponseWriter, r *http.Request) {
	// A front page is usually served from a cache, so its wait is the shortest.
	if !s.wait(r.Context(), 500*time.Microsecond, 1500*time.Microsecond) {
		return
	}
	data := struct {
		Total    int
		Featured []product
	}{len(s.products), s.featured}
	// Render to a buffer first so that a template error becomes a clean 500
	// instead of a half-written page.
	var buf bytes.Buffer
	if err := s.page.Execute(&buf, data); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
}

type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	if req.Email == "" || req.Password == "" {
		writeError(w, http.StatusBadRequest, "email and password are required")
		return
	}
	// The user lookup.
	if !s.wait(r.Context(), 1*time.Millisecond, 2*time.Millisecond) {
		return
	}
	userID, known := s.users[req.Email]
	// Check the password even for unknown emails, so that the response time
	// does not tell which accounts exist.
	if !s.password.matches(req.Password) || !known {
		writeError(w, http.StatusUnauthorized, "invalid email or password")
		return
	}
	token := s.newSession(userID)
	http.SetCookie(w, &http.Cookie{
		Name:     SessionCookie,
		Value:    token,
		Path:     "/",
		MaxAge:   3600,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
	writeJSON(w, http.StatusOK, struct {
		Token string `json:"token"`
	}{token})
}

// newSession stores a session for userID and returns its token, evicting the
// oldest session once maxSessions are held.
func (s *shop) newSession(userID int) string {
	token := rand.Text()
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	if old := s.tokens[s.nextToken]; old != "" {
		delete(s.sessions, old)
	}
	s.tokens[s.nextToken] = token
	s.nextToken = (s.nextToken + 1) % len(s.tokens)
	s.sessions[token] = userID
	return token
}

// sessionUser returns the user of the request's session, from the session
// cookie or an "Authorization: Bearer" token, or 0 for an anonymous request.
func (s *shop) sessionUser(r *http.Request) int {
	token := ""
	if c, err := r.Cookie(SessionCookie); err == nil {
		token = c.Value
	} else if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = v
	}
	if token == "" {
		return 0
	}
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	return s.sessions[token]
}

type productPage struct {
	Page    int       `json:"page"`
	PerPage int       `json:"per_page"`
	Total   int       `json:"total"`
	Pages   int       `json:"pages"`
	Items   []product `json:"items"`
}

func (s *shop) productList(w http.ResponseWriter, r *http.Request) {
	page := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "page must be a whole number from 1")
			return
		}
		page = n
	}
	// A paged range query: the slowest read of the shop.
	if !s.wait(r.Context(), 1*time.Millisecond, 3*time.Millisecond) {
		return
	}
	total := len(s.products)
	pages := (total + PageSize - 1) / PageSize
	items := []product{} // a page past the end is empty, not null
	if page <= pages {
		start := (page - 1) * PageSize
		items = s.products[start:min(start+PageSize, total)]
	}
	writeJSON(w, http.StatusOK, productPage{Page: page, PerPage: PageSize, Total: total, Pages: pages, Items: items})
}

type productDetail struct {
	product
	Views int64 `json:"views"`
}

func (s *shop) productDetail(w http.ResponseWriter, r *http.Request) {
	// Anything that is not the id of a product, numeric or not, is simply not
	// found: the path names no resource.
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "no such product")
		return
	}
	// The lookup happens whether or not the product exists.
	if !s.wait(r.Context(), 500*time.Microsecond, 1500*time.Microsecond) {
		return
	}
	p, ok := s.product(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no such product")
		return
	}
	s.viewsMu.Lock()
	s.views[p.ID-1]++
	views := s.views[p.ID-1]
	s.viewsMu.Unlock()
	writeJSON(w, http.StatusOK, productDetail{product: p, Views: views})
}

func (s *shop) product(id int) (product, bool) {
	if id < 1 || id > len(s.products) {
		return product{}, false
	}
	return s.products[id-1], true
}

type orderRequest struct {
	ProductID int `json:"product_id"`
	Quantity  int `json:"quantity"`
}

type order struct {
	ID         int64     `json:"id"`
	UserID     int       `json:"user_id,omitempty"`
	ProductID  int       `json:"product_id"`
	Quantity   int       `json:"quantity"`
	TotalCents int       `json:"total_cents"`
	CreatedAt  time.Time `json:"created_at"`
}

// maxQuantity keeps totals far from overflow and rejects obvious typos.
const maxQuantity = 100

func (s *shop) createOrder(w http.ResponseWriter, r *http.Request) {
	var req orderRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	if req.ProductID < 1 {
		writeError(w, http.StatusBadRequest, "product_id must be a positive integer")
		return
	}
	if req.Quantity < 1 || req.Quantity > maxQuantity {
		writeError(w, http.StatusBadRequest, "quantity must be from 1 to "+strconv.Itoa(maxQuantity))
		return
	}
	// The session is optional: the quickstart's iterations are independent,
	// so an order may be anonymous.
	userID := s.sessionUser(r)
	// A product lookup and an insert: the slowest wait of the shop.
	if !s.wait(r.Context(), 2*time.Millisecond, 3*time.Millisecond) {
		return
	}
	p, ok := s.product(req.ProductID)
	if !ok {
		writeError(w, http.StatusNotFound, "no such product")
		return
	}
	o := order{
		UserID:     userID,
		ProductID:  p.ID,
		Quantity:   req.Quantity,
		TotalCents: p.PriceCents * req.Quantity,
		CreatedAt:  time.Now().UTC(),
	}
	writeJSON(w, http.StatusCreated, s.addOrder(o))
}

// addOrder numbers o and stores it, keeping only the latest maxOrders.
func (s *shop) addOrder(o order) order {
	s.ordersMu.Lock()
	defer s.ordersMu.Unlock()
	s.lastOrderID++
	o.ID = s.lastOrderID
	if len(s.orders) < maxOrders {
		s.orders = append(s.orders, o)
	} else {
		s.orders[(o.ID-1)%maxOrders] = o
	}
	return o
}

// wait simulates a database round trip of lo to hi, with jitter from a source
// seeded per request. It reports false if the client went away first, in
// which case there is nobody to answer.
func (s *shop) wait(ctx context.Context, lo, hi time.Duration) bool {
	source := mathrand.NewPCG(s.seed, s.requests.Add(1))
	d := lo + time.Duration(source.Uint64()%uint64(hi-lo+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// decodeJSON reads one JSON object from a bounded body, rejecting unknown
// fields so that a misspelt field in a load script is a 400, not a silent
// zero. It writes the error response itself and reports whether to go on.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one value in the body")
	}
	if err == nil {
		return true
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, "body larger than "+strconv.Itoa(maxBody)+" bytes")
		return false
	}
	writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{message})
}
