package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// testProducts keeps test catalogues small; 100 products make 3 pages with a
// partial last page.
const testProducts = 100

// do sends one request to h and returns the recorded response.
func do(t *testing.T, h http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, target, r)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
	return v
}

func TestHealth(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	rec := do(t, h, "GET", "/health", "")
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("GET /health = %d %q, want 200 \"ok\"", rec.Code, rec.Body.String())
	}
}

func TestRouting(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	tests := []struct {
		method, target string
		want           int
	}{
		{"GET", "/nope", http.StatusNotFound},
		{"POST", "/", http.StatusMethodNotAllowed},
		{"GET", "/login", http.StatusMethodNotAllowed},
		{"DELETE", "/products/1", http.StatusMethodNotAllowed},
		{"GET", "/orders", http.StatusMethodNotAllowed},
		{"POST", "/health", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			if rec := do(t, h, tt.method, tt.target, ""); rec.Code != tt.want {
				t.Errorf("status = %d, want %d", rec.Code, tt.want)
			}
		})
	}
}

func TestMainPage(t *testing.T) {
	h := NewHandler(Options{Products: testProducts, Seed: 7})
	rec := do(t, h, "GET", "/", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q, want text/html", ct)
	}
	body := rec.Body.String()
	if n := strings.Count(body, "<li>"); n != 10 {
		t.Errorf("page lists %d products, want 10:\n%s", n, body)
	}
	if !strings.Contains(body, "100 products") || !strings.Contains(body, `href="/products/`) {
		t.Errorf("page lacks the total or product links:\n%s", body)
	}
	// The featured products are fixed by the seed, so the page is too.
	if again := do(t, h, "GET", "/", "").Body.String(); again != body {
		t.Error("main page differs between two requests")
	}
}

func TestLogin(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	tests := []struct {
		name string
		body string
		want int
	}{
		{"first user", `{"email":"user1@example.com","password":"secret"}`, http.StatusOK},
		{"last user", `{"email":"user1000@example.com","password":"secret"}`, http.StatusOK},
		{"wrong password", `{"email":"user1@example.com","password":"Secret"}`, http.StatusUnauthorized},
		{"unknown user", `{"email":"user1001@example.com","password":"secret"}`, http.StatusUnauthorized},
		{"missing password", `{"email":"user1@example.com"}`, http.StatusBadRequest},
		{"missing email", `{"password":"secret"}`, http.StatusBadRequest},
		{"not JSON", `email=user1@example.com`, http.StatusBadRequest},
		{"empty body", ``, http.StatusBadRequest},
		{"wrong type", `{"email":1,"password":"secret"}`, http.StatusBadRequest},
		{"unknown field", `{"email":"user1@example.com","password":"secret","remember":true}`, http.StatusBadRequest},
		{"two values", `{"email":"user1@example.com","password":"secret"} {}`, http.StatusBadRequest},
		{"too large", `{"email":"` + strings.Repeat("a", maxBody) + `","password":"secret"}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, "POST", "/login", tt.body, "Content-Type", "application/json")
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.want, rec.Body)
			}
			if tt.want != http.StatusOK {
				if e := decode[map[string]string](t, rec)["error"]; e == "" {
					t.Errorf("error body %s has no error message", rec.Body)
				}
				if len(rec.Result().Cookies()) != 0 {
					t.Error("failed login set a cookie")
				}
				return
			}
			token := decode[map[string]string](t, rec)["token"]
			if token == "" {
				t.Fatalf("no token in %s", rec.Body)
			}
			cookies := rec.Result().Cookies()
			if len(cookies) != 1 || cookies[0].Name != SessionCookie || cookies[0].Value != token || !cookies[0].HttpOnly {
				t.Errorf("cookies = %v, want one HttpOnly %q cookie holding the token", cookies, SessionCookie)
			}
		})
	}
}

type page struct {
	Page    int       `json:"page"`
	PerPage int       `json:"per_page"`
	Total   int       `json:"total"`
	Pages   int       `json:"pages"`
	Items   []product `json:"items"`
}

func TestProductList(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	tests := []struct {
		query     string
		page      int
		firstID   int
		wantItems int
	}{
		{"", 1, 1, PageSize},
		{"?page=1", 1, 1, PageSize},
		{"?page=2", 2, 36, PageSize},
		{"?page=3", 3, 71, testProducts - 2*PageSize},
		{"?page=4", 4, 0, 0},
		{"?page=9223372036854775807", 9223372036854775807, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := do(t, h, "GET", "/products"+tt.query, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", rec.Code, rec.Body)
			}
			got := decode[page](t, rec)
			if got.Page != tt.page || got.PerPage != PageSize || got.Total != testProducts || got.Pages != 3 {
				t.Errorf("header = page %d per_page %d total %d pages %d, want %d %d %d 3",
					got.Page, got.PerPage, got.Total, got.Pages, tt.page, PageSize, testProducts)
			}
			if len(got.Items) != tt.wantItems {
				t.Fatalf("got %d items, want %d", len(got.Items), tt.wantItems)
			}
			for i, p := range got.Items {
				if p.ID != tt.firstID+i || p.Name == "" || p.PriceCents <= 0 {
					t.Fatalf("item %d = %+v, want id %d with a name and a price", i, p, tt.firstID+i)
				}
			}
			if tt.wantItems == 0 && !strings.Contains(rec.Body.String(), `"items":[]`) {
				t.Errorf("empty page should have items [], got %s", rec.Body)
			}
		})
	}
	for _, bad := range []string{"0", "-1", "abc", "1.5", "99999999999999999999"} {
		t.Run("bad page "+bad, func(t *testing.T) {
			if rec := do(t, h, "GET", "/products?page="+bad, ""); rec.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", rec.Code)
			}
		})
	}
}

func TestDefaultProducts(t *testing.T) {
	h := NewHandler(Options{})
	got := decode[page](t, do(t, h, "GET", "/products", ""))
	if got.Total != DefaultProducts || got.Pages != (DefaultProducts+PageSize-1)/PageSize {
		t.Errorf("total %d pages %d, want %d products", got.Total, got.Pages, DefaultProducts)
	}
	if rec := do(t, h, "GET", fmt.Sprintf("/products/%d", DefaultProducts), ""); rec.Code != http.StatusOK {
		t.Errorf("last product: status %d, want 200", rec.Code)
	}
}

type detail struct {
	product
	Views int64 `json:"views"`
}

func TestProductDetail(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	for want := int64(1); want <= 3; want++ {
		rec := do(t, h, "GET", "/products/42", "")
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200", rec.Code)
		}
		got := decode[detail](t, rec)
		if got.ID != 42 || got.Name == "" || got.Description == "" || got.Views != want {
			t.Errorf("got %+v, want product 42 with %d views", got, want)
		}
	}
	// Views are counted per product.
	if got := decode[detail](t, do(t, h, "GET", "/products/43", "")); got.Views != 1 {
		t.Errorf("product 43 views = %d, want 1", got.Views)
	}
	for _, id := range []string{"0", "-1", "101", "abc", "99999999999999999999"} {
		t.Run("unknown "+id, func(t *testing.T) {
			rec := do(t, h, "GET", "/products/"+id, "")
			if rec.Code != http.StatusNotFound {
				t.Errorf("status = %d, want 404", rec.Code)
			}
			if decode[map[string]string](t, rec)["error"] == "" {
				t.Errorf("404 body %s has no error message", rec.Body)
			}
		})
	}
}

func TestCreateOrder(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	login := do(t, h, "POST", "/login", `{"email":"user7@example.com","password":"secret"}`)
	token := decode[map[string]string](t, login)["token"]
	price := decode[detail](t, do(t, h, "GET", "/products/5", "")).PriceCents

	tests := []struct {
		name     string
		body     string
		header   []string
		want     int
		wantUser int
	}{
		{"anonymous", `{"product_id":5,"quantity":2}`, nil, http.StatusCreated, 0},
		{"session cookie", `{"product_id":5,"quantity":2}`, []string{"Cookie", SessionCookie + "=" + token}, http.StatusCreated, 7},
		{"bearer token", `{"product_id":5,"quantity":2}`, []string{"Authorization", "Bearer " + token}, http.StatusCreated, 7},
		{"stale token", `{"product_id":5,"quantity":2}`, []string{"Authorization", "Bearer nope"}, http.StatusCreated, 0},
		{"unknown product", `{"product_id":101,"quantity":1}`, nil, http.StatusNotFound, 0},
		{"no product", `{"quantity":1}`, nil, http.StatusBadRequest, 0},
		{"negative product", `{"product_id":-5,"quantity":1}`, nil, http.StatusBadRequest, 0},
		{"no quantity", `{"product_id":5}`, nil, http.StatusBadRequest, 0},
		{"quantity too large", `{"product_id":5,"quantity":101}`, nil, http.StatusBadRequest, 0},
		{"quantity as string", `{"product_id":5,"quantity":"2"}`, nil, http.StatusBadRequest, 0},
		{"fractional quantity", `{"product_id":5,"quantity":1.5}`, nil, http.StatusBadRequest, 0},
		{"unknown field", `{"product_id":5,"quantity":1,"coupon":"x"}`, nil, http.StatusBadRequest, 0},
		{"not JSON", `product_id=5`, nil, http.StatusBadRequest, 0},
	}
	lastID := int64(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, "POST", "/orders", tt.body, tt.header...)
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.want, rec.Body)
			}
			if tt.want != http.StatusCreated {
				return
			}
			got := decode[order](t, rec)
			if got.ID != lastID+1 {
				t.Errorf("order id = %d, want %d", got.ID, lastID+1)
			}
			lastID = got.ID
			if got.ProductID != 5 || got.Quantity != 2 || got.TotalCents != 2*price || got.CreatedAt.IsZero() {
				t.Errorf("order = %+v, want 2 of product 5 for %d cents", got, 2*price)
			}
			if got.UserID != tt.wantUser {
				t.Errorf("user_id = %d, want %d", got.UserID, tt.wantUser)
			}
		})
	}
}

func TestSeed(t *testing.T) {
	get := func(seed int64, target string) string {
		return do(t, NewHandler(Options{Products: testProducts, Seed: seed}), "GET", target, "").Body.String()
	}
	if get(1, "/products?page=2") != get(1, "/products?page=2") {
		t.Error("same seed gave different catalogues")
	}
	if get(1, "/products?page=2") == get(2, "/products?page=2") {
		t.Error("different seeds gave the same catalogue")
	}
	if get(1, "/") != get(1, "/") {
		t.Error("same seed gave different main pages")
	}
}

func TestSessionsBounded(t *testing.T) {
	s := newShop(Options{Products: testProducts})
	first := s.newSession(1)
	second := s.newSession(2)
	for range maxSessions - 1 {
		s.newSession(3)
	}
	if len(s.sessions) != maxSessions {
		t.Errorf("holding %d sessions, want at most %d", len(s.sessions), maxSessions)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+first)
	if u := s.sessionUser(req); u != 0 {
		t.Errorf("oldest session still maps to user %d, want evicted", u)
	}
	req.Header.Set("Authorization", "Bearer "+second)
	if u := s.sessionUser(req); u != 2 {
		t.Errorf("second session maps to user %d, want 2", u)
	}
}

func TestOrdersBounded(t *testing.T) {
	s := newShop(Options{Products: testProducts})
	for i := range maxOrders + 5 {
		if o := s.addOrder(order{ProductID: 1, Quantity: 1}); o.ID != int64(i+1) {
			t.Fatalf("order %d got id %d", i+1, o.ID)
		}
	}
	if len(s.orders) != maxOrders {
		t.Errorf("holding %d orders, want %d", len(s.orders), maxOrders)
	}
	if got := s.orders[4].ID; got != maxOrders+5 {
		t.Errorf("newest order at slot 4 has id %d, want %d", got, maxOrders+5)
	}
}

// TestConcurrent runs the business mix from many goroutines at once, so that
// -race checks every piece of shared state, and then checks the counters.
func TestConcurrent(t *testing.T) {
	const (
		workers    = 20
		perWorker  = 50
		hotProduct = 3
	)
	srv := httptest.NewServer(NewHandler(Options{Products: testProducts}))
	t.Cleanup(srv.Close)
	client := srv.Client()

	var (
		mu          sync.Mutex
		hotViews    int
		orderIDs    = map[int64]bool{}
		maxHotViews int64
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			token := ""
			for i := range perWorker {
				var (
					method = "GET"
					path   string
					body   string
					want   = http.StatusOK
				)
				// Roughly the mix of field report 1.
				switch n := (w*perWorker + i) % 20; {
				case n < 12:
					path = "/"
				case n < 13:
					method, path = "POST", "/login"
					body = fmt.Sprintf(`{"email":"user%d@example.com","password":"secret"}`, w+1)
				case n < 17:
					path = fmt.Sprintf("/products?page=%d", i%4+1)
				case n < 19:
					path = fmt.Sprintf("/products/%d", hotProduct)
				default:
					method, path, want = "POST", "/orders", http.StatusCreated
					body = fmt.Sprintf(`{"product_id":%d,"quantity":1}`, i%testProducts+1)
				}
				req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != want {
					t.Errorf("%s %s = %d %s (%v), want %d", method, path, resp.StatusCode, data, err, want)
					return
				}
				switch {
				case path == "/login":
					var v struct{ Token string }
					json.Unmarshal(data, &v)
					token = v.Token
				case strings.HasPrefix(path, "/products/"):
					var v detail
					json.Unmarshal(data, &v)
					mu.Lock()
					hotViews++
					maxHotViews = max(maxHotViews, v.Views)
					mu.Unlock()
				case path == "/orders":
					var v order
					json.Unmarshal(data, &v)
					mu.Lock()
					if orderIDs[v.ID] {
						t.Errorf("order id %d handed out twice", v.ID)
					}
					orderIDs[v.ID] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if maxHotViews != int64(hotViews) {
		t.Errorf("view counter reached %d after %d views", maxHotViews, hotViews)
	}
	for id := int64(1); id <= int64(len(orderIDs)); id++ {
		if !orderIDs[id] {
			t.Errorf("order ids are not 1..%d: %d missing", len(orderIDs), id)
		}
	}
}
