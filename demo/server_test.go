package demo

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// get fetches url and returns the status and body, or an error if the server
// cannot be reached.
func get(url string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func waitDone(t *testing.T, s *Server) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server still serving 5s after it was told to stop")
	}
}

func TestStartBindsLoopbackAndCloseStops(t *testing.T) {
	s, err := Start(t.Context(), "", Options{Products: testProducts})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || strings.HasSuffix(s.URL(), ":0") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", s.URL())
	}
	if code, body, err := get(s.URL() + "/health"); err != nil || code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /health = %d %q %v, want 200 ok", code, body, err)
	}
	if code, _, err := get(s.URL() + "/products/1"); err != nil || code != http.StatusOK {
		t.Fatalf("GET /products/1 = %d %v, want 200", code, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	waitDone(t, s)
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if _, _, err := get(s.URL() + "/health"); err == nil {
		t.Error("server still answers after Close")
	}
}

func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s, err := Start(ctx, "127.0.0.1:0", Options{Products: testProducts})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(s.URL() + "/health"); err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, s)
	if _, _, err := get(s.URL() + "/health"); err == nil {
		t.Error("server still answers after its context ended")
	}
	// Close after the context ended still works and reports no error.
	if err := s.Close(); err != nil {
		t.Errorf("Close() after cancel = %v", err)
	}
}

// TestStartCancelledContext starts the shop with a context that has already
// ended. Start may refuse, but only for that reason; if it starts, the shop
// must stop at once and answer nothing.
func TestStartCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s, err := Start(ctx, "", Options{Products: testProducts})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start with a cancelled context = %v, want a running shop or context.Canceled", err)
		}
		return
	}
	waitDone(t, s)
	if code, _, err := get(s.URL() + "/health"); err == nil {
		t.Errorf("GET /health = %d after the context ended before Start; want no answer", code)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
}

func TestStartAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if s, err := Start(t.Context(), ln.Addr().String(), Options{Products: testProducts}); err == nil {
		s.Close()
		t.Fatalf("Start on %s, which is in use, succeeded", ln.Addr())
	}
}

// TestCloseUnderLoad closes the server while clients are busy and checks
// that Close returns and every client stops, for -race to watch the
// shutdown path.
func TestCloseUnderLoad(t *testing.T) {
	s, err := Start(t.Context(), "", Options{Products: testProducts})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				if _, _, err := get(s.URL() + "/products?page=2"); err != nil {
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	var closers sync.WaitGroup
	for range 3 {
		closers.Go(func() { s.Close() })
	}
	closers.Wait()
	waitDone(t, s)
	wg.Wait()
}

func TestDialAddr(t *testing.T) {
	tests := []struct {
		addr *net.TCPAddr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "[::1]:8080"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "[::1]:8080"},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}, "10.1.2.3:80"},
	}
	for _, tt := range tests {
		if got := dialAddr(tt.addr); got != tt.want {
			t.Errorf("dialAddr(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
