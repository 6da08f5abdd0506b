package demo

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultAddr is where Start listens when addr is empty: loopback only, so
// that the demo is never reachable from other machines unless asked, and on
// a free port, so that it never clashes with a service already running.
const DefaultAddr = "127.0.0.1:0"

// shutdownGrace bounds how long Close waits for requests in flight. The
// slowest endpoint answers in a few milliseconds, so a second is ample; after
// it, connections are closed regardless.
const shutdownGrace = time.Second

// Server is a running demo shop. Create it with Start.
type Server struct {
	http     *http.Server
	url      string
	served   chan struct{} // closed when Serve has returned
	serveErr error         // set before served is closed
	stop     func() bool   // unregisters the watch on Start's context
	journey  *journey

	closeOnce sync.Once
	closeErr  error
}

// Start listens on addr (DefaultAddr if empty) and serves the demo shop
// built from opts until Close is called or ctx ends. It returns once the
// listener is bound, so the URL is ready for requests.
func Start(ctx context.Context, addr string, opts Options) (*Server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	handler, j := newHandler(opts)
	s := &Server{
		journey: j,
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      10 * time.Second,
			IdleTimeout:       60 * time.Second,
			MaxHeaderBytes:    64 << 10,
		},
		url:    "http://" + dialAddr(ln.Addr()),
		served: make(chan struct{}),
	}
	go func() {
		defer close(s.served)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	// The watch calls shutdown, not Close, because Close reads s.stop, which
	// is only set once AfterFunc has returned.
	s.stop = context.AfterFunc(ctx, func() { s.shutdown() })
	return s, nil
}

// dialAddr turns a listener's address into one a client can dial: a server
// bound to all interfaces ("0.0.0.0" or "::") is reached through loopback.
func dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	host := "127.0.0.1"
	if tcp.IP.To4() == nil {
		host = "::1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// URL returns the base URL of the shop, such as "http://127.0.0.1:41234",
// with no trailing slash.
func (s *Server) URL() string {
	return s.url
}

// JourneyStats returns the journey API's counts so far, the same figures as
// GET /api/journey/stats, for tests that check a load test's figures against
// the server's own.
func (s *Server) JourneyStats() JourneyStats {
	return s.journey.snapshot()
}

// Done returns a channel that is closed once the server has stopped serving,
// whether by Close or because the context given to Start ended.
func (s *Server) Done() <-chan struct{} {
	return s.served
}

// Close stops the server: it stops accepting, lets requests in flight finish
// for a short grace period, then closes every connection. It waits until the
// serving goroutine has returned. Close is safe to call more than once and
// from several goroutines; every call returns the first call's result.
func (s *Server) Close() error {
	s.stop()
	return s.shutdown()
}

func (s *Server) shutdown() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		err := s.http.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.http.Close()
		}
		<-s.served
		s.closeErr = errors.Join(err, s.serveErr)
	})
	return s.closeErr
}
