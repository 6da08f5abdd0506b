package wire

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	goproto "google.golang.org/protobuf/proto"

	"github.com/hload/hload/plugins/proto"
)

// The direct call stream (within wire version 4). A Run stream over gRPC costs,
// per batch and on both ends, HTTP/2 framing, flow control, TLS records
// and a hand-off to gRPC's own writer goroutine: about 10 µs of CPU per
// call of the bench harness's dynamic POST, both processes together. The
// Direct RPC opens a connection of the stream's own instead, on a unix
// socket in a folder only the plugin's user can enter, which the host
// proves it may use with a token it got over go-plugin's mutual TLS; the
// same messages then go each behind its length, one write per batch.

// directToken is how many random bytes the connection's token has.
const directToken = 32

// directTimeout bounds the Direct RPC, the host's dial, and how long the
// plugin waits for the connection and its token.
const directTimeout = 10 * time.Second

// directReadBuffer is the size of a direct connection's read buffer: a
// batch of a few dozen calls or samples fits, in one read.
const directReadBuffer = 32 << 10

// callStream is the host's end of a Run stream: gRPC's
// proto.Protocol_RunClient or a direct connection.
type callStream interface {
	Send(*proto.CallBatch) error
	Recv() (*proto.SampleBatch, error)
}

// sampleStream is the plugin's end of a Run stream: gRPC's
// proto.Protocol_RunServer or a direct connection.
type sampleStream interface {
	Send(*proto.SampleBatch) error
	Recv() (*proto.CallBatch, error)
}

// frames reads and writes messages on a direct connection, each preceded
// by its length as a varint. One goroutine reads and one writes.
type frames struct {
	conn net.Conn
	r    *bufio.Reader
	rbuf []byte // the last message read; proto.Unmarshal copies out of it
	wbuf []byte // the last message written
}

func newFrames(conn net.Conn) *frames {
	return &frames{conn: conn, r: bufio.NewReaderSize(conn, directReadBuffer)}
}

// write sends m in one write. A failed write closes the connection, so
// the reader fails too and reports why the stream ended.
func (f *frames) write(m goproto.Message) error {
	n := goproto.Size(m)
	f.wbuf = protowire.AppendVarint(f.wbuf[:0], uint64(n))
	var err error
	if f.wbuf, err = (goproto.MarshalOptions{UseCachedSize: true}).MarshalAppend(f.wbuf, m); err != nil {
		return err
	}
	if _, err := f.conn.Write(f.wbuf); err != nil {
		f.conn.Close()
		return io.EOF
	}
	if cap(f.wbuf) > directReadBuffer<<4 {
		f.wbuf = nil // a batch of big bodies: do not keep its buffer
	}
	return nil
}

// errDirectClosed is what a read of a direct connection that the other
// end closed returns: the plugin process exited, or the host ended the
// stream. Not io.EOF, which a gRPC stream returns for a stream the
// plugin ended on purpose.
var errDirectClosed = errors.New("the plugin is unreachable: its call stream's connection closed")

// read reads the next message into m.
func (f *frames) read(m goproto.Message) error {
	n, err := binary.ReadUvarint(f.r)
	if err != nil {
		return readErr(err)
	}
	if n > maxMessage {
		f.conn.Close()
		return fmt.Errorf("a message of %d bytes on the call stream, over the limit of %d", n, maxMessage)
	}
	if uint64(cap(f.rbuf)) < n {
		f.rbuf = make([]byte, n)
	}
	b := f.rbuf[:n]
	if _, err := io.ReadFull(f.r, b); err != nil {
		return readErr(err)
	}
	if cap(f.rbuf) > directReadBuffer<<4 {
		f.rbuf = nil // as in write
	}
	if err := goproto.Unmarshal(b, m); err != nil {
		// The writer must not block on a stream nobody reads any more.
		f.conn.Close()
		return err
	}
	return nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return errDirectClosed
	}
	return fmt.Errorf("the plugin is unreachable: %w", err)
}

// directCalls is the host's end of a direct connection.
type directCalls struct{ *frames }

func (d directCalls) Send(b *proto.CallBatch) error { return d.write(b) }

func (d directCalls) Recv() (*proto.SampleBatch, error) {
	b := new(proto.SampleBatch) // the receiver keeps its gauges and bodies
	if err := d.read(b); err != nil {
		return nil, err
	}
	return b, nil
}

// directSamples is the plugin's end of a direct connection.
type directSamples struct{ *frames }

func (d directSamples) Send(b *proto.SampleBatch) error { return d.write(b) }

func (d directSamples) Recv() (*proto.CallBatch, error) {
	b := new(proto.CallBatch) // the calls keep their body_contains strings
	if err := d.read(b); err != nil {
		return nil, err
	}
	return b, nil
}

// directListener listens for one direct connection; close removes what it
// made on disk.
type directListener struct {
	net.Listener
	close func()
}

// listenDirect listens on a unix socket in a new folder of its own, which
// only this user may enter (os.MkdirTemp makes it 0700), or on a loopback
// TCP port where that fails (a temporary folder whose path is too long
// for a socket, a system without unix sockets); the token guards both.
func listenDirect() (directListener, error) {
	if dir, err := os.MkdirTemp("", "hload-plugin-"); err == nil {
		lis, err := net.Listen("unix", filepath.Join(dir, "s"))
		if err == nil {
			return directListener{lis, func() { lis.Close(); os.RemoveAll(dir) }}, nil
		}
		os.RemoveAll(dir)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return directListener{}, err
	}
	return directListener{lis, func() { lis.Close() }}, nil
}

// newToken returns a fresh random token for a direct connection.
func newToken() []byte {
	t := make([]byte, directToken)
	rand.Read(t) // never fails, as crypto/rand documents
	return t
}

// acceptDirect takes the one connection lis expects, checks its token and
// returns it; it gives up after directTimeout. lis is closed, and its
// socket removed, either way.
func acceptDirect(lis directListener, token []byte) (net.Conn, error) {
	stop := time.AfterFunc(directTimeout, lis.close)
	conn, err := lis.Accept()
	stop.Stop()
	// Closed before the token is read: one connection per Direct, so a
	// second dial fails whether the first one's token was right or not.
	lis.close()
	if err != nil {
		return nil, err
	}
	conn.SetReadDeadline(time.Now().Add(directTimeout))
	got := make([]byte, len(token))
	if _, err := io.ReadFull(conn, got); err != nil {
		conn.Close()
		return nil, err
	}
	if subtle.ConstantTimeCompare(got, token) != 1 {
		conn.Close()
		return nil, errors.New("a direct connection with a wrong token")
	}
	conn.SetReadDeadline(time.Time{})
	return conn, nil
}

// dialDirect connects to the plugin's direct listener and sends the token.
func dialDirect(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), resp *proto.DirectResponse) (net.Conn, error) {
	conn, err := dial(ctx, resp.Network, resp.Address)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetWriteDeadline(dl)
	}
	if _, err := conn.Write(resp.Token); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// memNet is an in-memory network of direct listeners, for a Harness,
// which runs without a process and opens no socket.
type memNet struct {
	mu   sync.Mutex
	next int
	lis  map[string]*memListener
}

// listen returns a new listener on the network.
func (n *memNet) listen() (directListener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lis == nil {
		n.lis = make(map[string]*memListener)
	}
	n.next++
	l := &memListener{addr: fmt.Sprintf("direct-%d", n.next), conns: make(chan net.Conn), done: make(chan struct{})}
	n.lis[l.addr] = l
	var once sync.Once
	return directListener{l, func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.lis, l.addr)
			n.mu.Unlock()
			close(l.done)
		})
	}}, nil
}

// dial connects to the listener at address.
func (n *memNet) dial(ctx context.Context, _, address string) (net.Conn, error) {
	n.mu.Lock()
	l := n.lis[address]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("no direct listener at %s", address)
	}
	host, plugin := net.Pipe()
	select {
	case l.conns <- plugin:
		return host, nil
	case <-l.done:
	case <-ctx.Done():
	}
	host.Close()
	plugin.Close()
	return nil, fmt.Errorf("no direct listener at %s", address)
}

// memListener is a memNet listener. Its Close does nothing: the
// directListener that holds it closes it.
type memListener struct {
	addr  string
	conns chan net.Conn
	done  chan struct{}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error   { return nil }
func (l *memListener) Addr() net.Addr { return memAddr(l.addr) }

type memAddr string

func (memAddr) Network() string  { return "memory" }
func (a memAddr) String() string { return string(a) }
