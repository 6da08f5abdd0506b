package http

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/internal/tcptest"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// closingServer answers every request with a complete keep-alive response
// (a Content-Length, no Connection header) and ends the connection right
// after every nth response with a FIN, as servers do at their keep-alive
// limit or idle timeout. A lingering server closes its write side only and
// reads on, discarding what comes, for a while before it closes, as
// servers that drain a connection before they close it do: a request that
// reaches it is read and never answered. With withFIN, the FIN leaves in
// the same segment as the response (TCP_CORK holds the response back until
// the close): the client has both or neither. Without it, the FIN follows
// the response as the server's next system call sends it.
type closingServer struct {
	url    string
	served atomic.Int64 // responses written whole
	conns  atomic.Int64
}

type closing struct {
	every   int
	linger  bool
	withFIN bool
	tls     bool
}

func newClosingServer(t testing.TB, cl closing) *closingServer {
	s := &closingServer{}
	serve := func(conn net.Conn, tcp *net.TCPConn) {
		s.conns.Add(1)
		defer conn.Close()
		br := bufio.NewReader(conn)
		for n := 1; ; n++ {
			r, err := nethttp.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			last := n%cl.every == 0
			if last && cl.withFIN {
				tcptest.Cork(t, tcp)
			}
			// Counted before the write: the client may have the response,
			// and the test its count, before Write returns.
			s.served.Add(1)
			if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				s.served.Add(-1)
				return
			}
			if !last {
				continue
			}
			if !cl.linger {
				return // the deferred Close: a FIN, or a reset once a request is unread
			}
			if tc, ok := conn.(*tls.Conn); ok {
				tc.CloseWrite() // close_notify
			}
			tcp.CloseWrite()
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			io.Copy(io.Discard, conn)
			return
		}
	}
	if !cl.tls {
		s.url = rawServer(t, func(conn net.Conn) { serve(conn, conn.(*net.TCPConn)) })
		return s
	}
	cfg := testTLSConfig(t)
	url := rawServer(t, func(conn net.Conn) {
		tc := tls.Server(conn, cfg)
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return
		}
		serve(tc, conn.(*net.TCPConn))
	})
	s.url = strings.Replace(url, "http://", "https://", 1)
	return s
}

// testTLSConfig is httptest's certificate, offering HTTP/1.1 only, for a
// listener of a test's own.
func testTLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	cfg := srv.TLS.Clone()
	srv.Close()
	cfg.NextProtos = []string{"http/1.1"}
	return cfg
}

// TestServerCloseAfterAResponse checks that a connection the server closed
// right after a complete response is not used again. When the FIN came
// with the response, every call is served and counted 200, by the
// server's own count: the next call, made at once, finds the close and
// goes on a new connection. When the FIN follows the response, a call may
// still be written before it arrives: such a call fails at once, as
// idle_closed or reset, never by its timeout, and is not sent again.
func TestServerCloseAfterAResponse(t *testing.T) {
	const vus, calls, every = 2, 60, 3
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, withFIN := range []bool{true, false} {
			for _, linger := range []bool{false, true} {
				for _, overTLS := range []bool{false, true} {
					cl := closing{every: every, linger: linger, withFIN: withFIN, tls: overTLS}
					t.Run(fmt.Sprintf("FIN with the response %v, lingering %v, TLS %v", withFIN, linger, overTLS), func(t *testing.T) {
						if withFIN && !tcptest.CanCork {
							t.Skip("TCP_CORK is Linux's")
						}
						srv := newClosingServer(t, cl)
						c := open(t, p, srv.url, map[string]cty.Value{"timeout": cty.StringVal("2s"), "insecure_skip_verify": cty.True})
						var mu sync.Mutex
						kinds := map[string]int{}
						var wg sync.WaitGroup
						for vu := range vus {
							wg.Go(func() {
								for range calls / vus {
									res := do(t, c, uint64(vu+1), path("/"), false)
									mu.Lock()
									kinds[fmt.Sprintf("%d %s", res.request.Status, res.request.Error)]++
									mu.Unlock()
								}
							})
						}
						wg.Wait()
						served := srv.served.Load()
						if withFIN {
							if kinds["200 "] != calls || served != calls {
								t.Errorf("the server served %d of %d calls; hload counted %v", served, calls, kinds)
							}
							if want := int64(calls / every); srv.conns.Load() != want {
								t.Errorf("the server accepted %d connections, want %d", srv.conns.Load(), want)
							}
							return
						}
						raced := kinds["0 "+string(protocols.ErrIdleClosed)] + kinds["0 "+string(protocols.ErrReset)]
						if int64(kinds["200 "]) != served || kinds["200 "]+raced != calls {
							t.Errorf("the server served %d of %d calls; hload counted %v", served, calls, kinds)
						}
						t.Logf("%d of %d calls raced with the server's close", raced, calls)
					})
				}
			}
		}
	})
}

// TestBytesBetweenCallsEndTheConnection checks what a kept-alive
// connection holds between two calls, made one right after the other:
// bytes that no request asked for (a 408 sent before an idle close, or
// TLS's close_notify with the TCP connection left open) end it before
// anything is written on it, and the next call goes on a new connection.
// The server signals once its bytes are sent; the second call is made
// then, and must be served, by the server's count, on a second connection.
func TestBytesBetweenCallsEndTheConnection(t *testing.T) {
	cases := []struct {
		name  string
		tls   bool
		after func(conn net.Conn)
	}{
		{"a 408 over TCP", false, func(conn net.Conn) {
			io.WriteString(conn, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
		}},
		{"a 408 over TLS", true, func(conn net.Conn) {
			io.WriteString(conn, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
		}},
		{"close_notify alone", true, func(conn net.Conn) { conn.(*tls.Conn).CloseWrite() }},
	}
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var served, conns atomic.Int64
				sent := make(chan struct{}, 1)
				serve := func(conn net.Conn) {
					conns.Add(1)
					defer conn.Close()
					br := bufio.NewReader(conn)
					for n := 1; ; n++ {
						r, err := nethttp.ReadRequest(br)
						if err != nil {
							return
						}
						served.Add(1)
						io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						if n == 1 && conns.Load() == 1 {
							// Once the client read the response, which a
							// sleep makes likely: the bytes must come
							// between the calls, not with the response.
							time.Sleep(20 * time.Millisecond)
							tc.after(conn)
							sent <- struct{}{}
							conn.SetReadDeadline(time.Now().Add(5 * time.Second))
							io.Copy(io.Discard, r.Body)
							io.Copy(io.Discard, br) // reads on, answers nothing
							return
						}
					}
				}
				url := rawServer(t, serve)
				if tc.tls {
					cfg := testTLSConfig(t)
					url = strings.Replace(rawServer(t, func(conn net.Conn) {
						tc := tls.Server(conn, cfg)
						if tc.Handshake() != nil {
							conn.Close()
							return
						}
						serve(tc)
					}), "http://", "https://", 1)
				}
				c := open(t, p, url, map[string]cty.Value{"timeout": cty.StringVal("2s"), "insecure_skip_verify": cty.True})
				first := do(t, c, 1, path("/"), false)
				<-sent
				second := do(t, c, 1, path("/"), false)
				for i, res := range []result{first, second} {
					if res.request.Error != "" || res.request.Status != 200 {
						t.Errorf("call %d: %+v", i+1, res.request)
					}
				}
				if second.connect == nil || served.Load() != 2 || conns.Load() != 2 {
					t.Errorf("the server served %d calls on %d connections, connect %v; want 2 on 2, the second call's on a new one", served.Load(), conns.Load(), second.connect)
				}
			})
		}
	})
}
