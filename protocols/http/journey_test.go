package http

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// tokenShop issues a token in a header, a session in a cookie and a user
// id in the body at login, hands a cart id in a header and a product id in
// the body of each list, and counts every order that does not carry what
// it handed that very login.
type tokenShop struct {
	mu      sync.Mutex
	logins  int
	lists   int
	orders  int
	wrong   int
	first   []string             // what the first wrong orders lacked
	issued  map[string][2]string // token -> session, user
	carts   map[string]string    // token -> cart of its last list
	listed  map[string]string    // token -> product of its last list
	nextTok int
}

func (s *tokenShop) bad(format string, args ...any) {
	s.wrong++
	if len(s.first) < 5 {
		s.first = append(s.first, fmt.Sprintf(format, args...))
	}
}

func (s *tokenShop) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/login":
		s.logins++
		s.nextTok++
		tok, sess, user := fmt.Sprint("tok-", s.nextTok), fmt.Sprint("sess-", s.nextTok), fmt.Sprint("u-", s.nextTok)
		s.issued[tok] = [2]string{sess, user}
		w.Header()["x-auth-token"] = []string{tok} // lower case on the wire
		nethttp.SetCookie(w, &nethttp.Cookie{Name: "theme", Value: "dark"})
		nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: sess})
		json.NewEncoder(w).Encode(map[string]any{"user": map[string]string{"id": user}})
		return
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	got, ok := s.issued[tok]
	if !ok {
		s.bad("%s with token %q, never issued", r.URL.Path, tok)
		w.WriteHeader(nethttp.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/list":
		s.lists++
		s.carts[tok], s.listed[tok] = fmt.Sprint("cart-", s.lists), fmt.Sprint("p-", s.lists)
		w.Header().Set("X-Cart", s.carts[tok])
		fmt.Fprintf(w, `{"items":[{"id":%q}]}`, s.listed[tok])
	case "/order":
		s.orders++
		if v := r.Header.Get("X-Session"); v != got[0] {
			s.bad("order by %s with session %q, issued %q", tok, v, got[0])
		}
		if v := r.Header.Get("X-User"); v != got[1] {
			s.bad("order by %s as user %q, issued %q", tok, v, got[1])
		}
		if v := r.Header.Get("X-Cart"); v != s.carts[tok] {
			s.bad("order by %s with cart %q, its list's was %q", tok, v, s.carts[tok])
		}
		if v := r.URL.Query().Get("product"); v != s.listed[tok] {
			s.bad("order by %s of %q, its list's was %q", tok, v, s.listed[tok])
		}
	default:
		w.WriteHeader(nethttp.StatusNotFound)
	}
}

const journeyTest = `
target "shop" {
  protocol = "http"
  base_url = "%s"
}

scenario "shop" {
  executor   = "iterations"
  vus        = 3
  iterations = 20
  max_duration = "10s" # bounds a run whose captures fail: its setups retry
  setup {
    request "login" {
      method = "POST"
      path   = "/login"
      capture {
        token   = header("X-Auth-Token")
        session = cookie("session")
        user    = json("user.id")
      }
    }
  }
  flow "order" {
    request "list" {
      path    = "/list"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      capture {
        product = json("items.0.id")
        cart    = header("x-cart")
      }
    }
    request "order" {
      method  = "POST"
      path    = "/order"
      query   = { product = vu.vars.product }
      headers = {
        Authorization = "Bearer ${vu.vars.token}"
        X-Session     = vu.vars.session
        X-User        = vu.vars.user
        X-Cart        = vu.vars.cart
      }
    }
  }
}
`

// TestJourneyCapturesOnBothPaths runs a journey whose captures read a
// header, a cookie and the body of HTTP responses, through the core, with
// the target in-process and isolated (isolate = true): on both, every
// order carries what the shop handed that VU, by the shop's own count.
func TestJourneyCapturesOnBothPaths(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		s := &tokenShop{issued: map[string][2]string{}, carts: map[string]string{}, listed: map[string]string{}}
		srv := httptest.NewServer(s)
		defer srv.Close()
		test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, journeyTest, srv.URL)}, t.TempDir(),
			config.Options{Protocols: protocols.NewRegistry(New())})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		opts := core.Options{Protocols: protocols.NewRegistry(p)}
		if path.Isolated {
			for _, tg := range test.Targets {
				tg.Isolate = true
			}
			opts.Protocols = protocols.NewRegistry(New())
			opts.Isolated = func(*config.Target) (protocols.Protocol, error) { return p, nil }
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sum, err := core.Run(ctx, test, opts)
		if err != nil {
			t.Fatal(err)
		}
		sc := sum.Scenarios["shop"]
		order := sc.Flows["order"]
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("shop: %d logins, %d lists, %d orders, %d wrong; hload: %+v", s.logins, s.lists, s.orders, s.wrong, order)
		if s.wrong != 0 {
			t.Errorf("the shop found %d wrong requests, such as %q", s.wrong, s.first)
		}
		// The iterations executor: 20 per VU.
		if s.logins != 3 || s.lists != 60 || s.orders != 60 {
			t.Errorf("the shop took %d logins, %d lists, %d orders; want 3, 60, 60", s.logins, s.lists, s.orders)
		}
		if order == nil || order.Completed != int64(s.orders) || order.Failed != 0 {
			t.Errorf("hload's order flows: %+v; the shop took %d orders", order, s.orders)
		}
		if r := sc.Requests["order"]; r == nil || r.Count != int64(s.orders) || r.Errors != 0 {
			t.Errorf("hload's order requests: %+v; the shop took %d", r, s.orders)
		}
	})
}
