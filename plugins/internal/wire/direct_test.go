package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// TestDirectStream runs calls through go-plugin's own transport at wire
// versions 3 and 4: at 4 the Run stream goes on a direct connection, at
// 3 over gRPC, and the samples come back the same either way.
func TestDirectStream(t *testing.T) {
	for _, tc := range []struct {
		version int
		direct  bool
	}{
		{3, false},
		{4, true},
	} {
		t.Run(fmt.Sprintf("v%d", tc.version), func(t *testing.T) {
			c := openGoPluginProtocol(t, &fake{do: func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
				emit(protocols.Sample{Metric: protocols.MetricRequest, Status: int(call.VU), Body: []byte("hi")})
			}}, tc.version)
			_, direct := c.(*client).stream.(directCalls)
			if direct != tc.direct {
				t.Fatalf("the stream is a %T, want direct %v", c.(*client).stream, tc.direct)
			}
			for vu := uint64(1); vu <= 20; vu++ {
				got := collect(context.Background(), c, protocols.Call{VU: vu, Request: request("/"), KeepBody: true})
				if len(got) != 1 || got[0].Status != int(vu) || string(got[0].Body) != "hi" {
					t.Fatalf("call of VU %d: samples %+v", vu, got)
				}
			}
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDirectListener checks the plugin's side of the Direct RPC on a real
// socket: a connection without the token is dropped and the listener is
// gone with it, and once the host's connection is in, the socket's folder
// is removed.
func TestDirectListener(t *testing.T) {
	s := newServer(&fake{}, ProtocolVersion)
	ctx := context.Background()

	t.Run("wrong token", func(t *testing.T) {
		resp, err := s.Direct(ctx, &proto.DirectRequest{})
		if err != nil {
			t.Fatal(err)
		}
		wrong := bytes.Repeat([]byte{'x'}, len(resp.Token))
		conn, err := dialDirect(ctx, (&net.Dialer{}).DialContext, &proto.DirectResponse{Network: resp.Network, Address: resp.Address, Token: wrong})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("the plugin kept a connection with a wrong token: read %d bytes, %v", n, err)
		}
		// One connection per Direct: the listener is closed, so the right
		// token comes too late.
		if conn, err := dialDirect(ctx, (&net.Dialer{}).DialContext, resp); err == nil {
			conn.Close()
			t.Fatal("a second connection was accepted")
		}
	})

	t.Run("socket removed", func(t *testing.T) {
		resp, err := s.Direct(ctx, &proto.DirectRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Network != "unix" {
			// Windows may lack unix sockets; elsewhere a TCP listener means
			// the unix one failed (or TMPDIR is too long for a socket).
			if runtime.GOOS == "windows" {
				t.Skipf("a %s listener: no socket to remove", resp.Network)
			}
			t.Fatalf("a %s listener on %s, want a unix socket (TMPDIR %q)", resp.Network, runtime.GOOS, os.TempDir())
		}
		dir := filepath.Dir(resp.Address)
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("the socket's folder: %v, %v; want one only its owner may enter", fi.Mode(), err)
		}
		conn, err := dialDirect(ctx, (&net.Dialer{}).DialContext, resp)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is still there 10 s after the connection", dir)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// TestDirectFallback checks that the calls of a plugin that cannot listen
// for a direct connection, or was built before Direct, still run, over
// gRPC.
func TestDirectFallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen func() (directListener, error)
	}{
		{"cannot listen", func() (directListener, error) { return directListener{}, errors.New("no sockets today") }},
		{"built before Direct", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{do: func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) { okSample(emit) }}
			h, err := newHarness(f, RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			h.server.listen = tc.listen
			c, err := h.Open(context.Background(), testTarget)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, direct := c.(*client).stream.(directCalls); direct {
				t.Fatal("the stream is direct")
			}
			if got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")}); len(got) != 1 || got[0].Error != protocols.ErrNone {
				t.Fatalf("samples %+v", got)
			}
		})
	}
}
