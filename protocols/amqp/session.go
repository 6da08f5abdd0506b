package amqp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// dialTimeout bounds the TCP connect and the TLS and AMQP handshakes.
const dialTimeout = 10 * time.Second

// Reconnect backoff: the first retry is quick, as a broker restart takes
// seconds; the cap keeps a long outage from hammering the broker.
const (
	backoffFirst = 100 * time.Millisecond
	backoffMax   = 2 * time.Second
)

// replyQueue is RabbitMQ's direct reply-to pseudo-queue: the rpc channel
// consumes it, and replies to its messages come back on that channel
// without a queue of our own.
const replyQueue = "amq.rabbitmq.reply-to"

var (
	errNotConnected = errors.New("amqp: no connection to the broker within reconnect_wait")
	errClientClosed = errors.New("amqp: client closed")
)

// session is one broker connection and the channel pools on it. A new
// session replaces it after a reconnect; nothing is carried over.
type session struct {
	conn *amqp.Connection
	lost chan struct{} // closed when the connection is gone
	// confirm holds channels in confirm mode, one publish in flight each,
	// so a return is known to belong to the publish whose ack follows it.
	confirm *pool
	// plain holds channels for publishes without confirms, whose returns
	// are counted apart because nothing waits for them.
	plain *pool
	// rpc holds channels that consume the direct reply-to queue.
	rpc *pool
}

// channel is a pooled channel with its notifications.
type channel struct {
	ch      *amqp.Channel
	closed  chan *amqp.Error
	err     *amqp.Error          // what closed held, once read
	returns chan amqp.Return     // nil for the plain pool, which drains them itself
	replies <-chan amqp.Delivery // rpc only
}

// closeError returns the error the channel was closed with, or nil. Only
// the call holding the channel calls it.
func (c *channel) closeError() *amqp.Error {
	if c.err == nil {
		select {
		case e := <-c.closed: // nil once the library closed it
			c.err = e
		default:
		}
	}
	return c.err
}

// pool lends channels, creating up to its size lazily.
type pool struct {
	tokens chan struct{} // one per channel lent or being created
	idle   chan *channel
	open   func() (*channel, error)
	// release closes a channel that is not returned, without blocking the
	// call: a channel close waits for the broker's answer.
	release func(*channel)
}

func newPool(size int, open func() (*channel, error), release func(*channel)) *pool {
	return &pool{
		tokens:  make(chan struct{}, size),
		idle:    make(chan *channel, size),
		open:    open,
		release: release,
	}
}

// get lends a channel, waiting for one while all are lent.
func (p *pool) get(ctx context.Context, lost <-chan struct{}) (*channel, error) {
	select {
	case p.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-lost:
		return nil, amqp.ErrClosed
	}
	for {
		select {
		case ch := <-p.idle:
			if ch.ch.IsClosed() {
				continue
			}
			return ch, nil
		default:
		}
		ch, err := p.open()
		if err != nil {
			<-p.tokens
			return nil, err
		}
		return ch, nil
	}
}

// put returns a healthy channel.
func (p *pool) put(ch *channel) {
	p.idle <- ch // never blocks: idle holds at most as many as there are tokens
	<-p.tokens
}

// discard drops a channel whose state is unknown, such as one whose
// confirm never came.
func (p *pool) discard(ch *channel) {
	p.release(ch)
	<-p.tokens
}

// connect dials the broker, declares the topology and builds the pools.
func (c *Client) connect() (*session, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(c.cfg.name)
	conf := amqp.Config{
		Heartbeat:  c.cfg.heartbeat,
		Properties: props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: dialTimeout}
			conn, err := d.DialContext(c.ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Cleared by the library once the AMQP handshake is done.
			if err := conn.SetDeadline(time.Now().Add(dialTimeout)); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		},
	}
	if c.cfg.tls != nil {
		conf.TLSClientConfig = c.cfg.tls.Clone()
	}
	conn, err := amqp.DialConfig(c.cfg.url, conf)
	if err != nil {
		return nil, fmt.Errorf("amqp: connect to %s: %w", redact(c.cfg.url), err)
	}
	if err := declare(conn, c.cfg); err != nil {
		conn.Close()
		return nil, err
	}
	s := &session{conn: conn, lost: make(chan struct{})}
	s.confirm = newPool(c.cfg.channels, func() (*channel, error) { return c.openChannel(conn, true, false) }, c.release)
	s.plain = newPool(c.cfg.channels, func() (*channel, error) { return c.openChannel(conn, false, false) }, c.release)
	s.rpc = newPool(c.cfg.channels, func() (*channel, error) { return c.openChannel(conn, false, true) }, c.release)
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	// The library's reader goroutine blocks on this channel, so it is
	// drained by watch for the connection's whole life.
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	c.wg.Add(1)
	go c.watch(s, closes, blocks)
	return s, nil
}

// declare applies the target's topology: exchanges, then queues, then
// bindings, each on one channel so the first refusal names its entity.
func declare(conn *amqp.Connection, cfg *targetConfig) error {
	if len(cfg.exchanges)+len(cfg.queues)+len(cfg.bindings) == 0 {
		return nil
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("amqp: open a channel to declare the topology: %w", err)
	}
	// A refusal closes the channel, and Open fails with it.
	fail := func(what string, err error) error {
		return fmt.Errorf("amqp: the broker refused target %s: %w", what, err)
	}
	for i, e := range cfg.exchanges {
		if err := ch.ExchangeDeclare(e.name, e.kind, e.durable, e.autoDelete, e.internal, false, e.args); err != nil {
			return fail(fmt.Sprintf("exchanges[%d] %q", i, e.name), err)
		}
	}
	for i, q := range cfg.queues {
		if _, err := ch.QueueDeclare(q.name, q.durable, q.autoDelete, q.exclusive, false, q.args); err != nil {
			return fail(fmt.Sprintf("queues[%d] %q", i, q.name), err)
		}
	}
	for i, b := range cfg.bindings {
		if err := ch.QueueBind(b.queue, b.key, b.exchange, false, b.args); err != nil {
			return fail(fmt.Sprintf("bindings[%d] (%q to %q)", i, b.exchange, b.queue), err)
		}
	}
	return ch.Close()
}

func (c *Client) openChannel(conn *amqp.Connection, confirm, rpc bool) (*channel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	pc := &channel{ch: ch, closed: ch.NotifyClose(make(chan *amqp.Error, 1))}
	if confirm {
		if err := ch.Confirm(false); err != nil {
			_ = ch.Close()
			return nil, err
		}
	}
	if confirm || rpc {
		// At most one message is in flight on these channels and stale
		// returns are drained before each use, so a few slots are enough
		// for the library never to block on them.
		pc.returns = ch.NotifyReturn(make(chan amqp.Return, 8))
	} else {
		returns := ch.NotifyReturn(make(chan amqp.Return, 64))
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for range returns { // closed by the library with the channel
				c.returnedLate.Add(1)
			}
		}()
	}
	if rpc {
		tag := fmt.Sprintf("%s-reply-%d", c.prefix, c.seq.Add(1))
		replies, err := ch.Consume(replyQueue, tag, true, false, false, false, nil)
		if err != nil {
			_ = ch.Close()
			return nil, fmt.Errorf("amqp: consume %s for rpc replies: %w", replyQueue, err)
		}
		pc.replies = replies
	}
	return pc, nil
}

// release closes a channel in the background; Close waits for it.
func (c *Client) release(ch *channel) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = ch.ch.Close() // an already closed channel is the common case
	}()
}

// watch follows one connection: blocked and unblocked events while it
// lives, then its loss, which wakes the reconnect loop.
func (c *Client) watch(s *session, closes <-chan *amqp.Error, blocks <-chan amqp.Blocking) {
	defer c.wg.Done()
	var blockedAt time.Time
	for {
		select {
		case b, ok := <-blocks:
			if !ok {
				blocks = nil
				continue
			}
			if b.Active {
				if blockedAt.IsZero() {
					blockedAt = time.Now()
				}
				c.blocked.Store(1)
			} else if !blockedAt.IsZero() {
				c.event(MetricBlocked, time.Since(blockedAt))
				blockedAt = time.Time{}
				c.blocked.Store(0)
			}
		case <-closes: // an error, or closed without one by Close
			c.mu.Lock()
			if c.cur == s {
				c.cur = nil
				c.ready = make(chan struct{})
			}
			close(s.lost)
			c.mu.Unlock()
			c.up.Store(0)
			c.blocked.Store(0)
			return
		}
	}
}

// reconnect runs for the client's life: each time the session is lost, it
// dials again with backoff until it succeeds or the client is closed.
func (c *Client) reconnect(s *session) {
	defer c.wg.Done()
	for {
		select {
		case <-s.lost:
		case <-c.closed:
			return
		}
		c.event(MetricConnectionLost, 0)
		down := time.Now()
		backoff := backoffFirst
		for {
			next, err := c.connect()
			if err == nil {
				s = next
				break
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-c.closed:
				t.Stop()
				return
			}
			backoff = min(2*backoff, backoffMax)
		}
		c.mu.Lock()
		if c.shut {
			c.mu.Unlock()
			_ = s.conn.Close()
			return
		}
		c.cur = s
		close(c.ready)
		c.mu.Unlock()
		c.up.Store(1)
		c.event(MetricReconnected, time.Since(down))
	}
}

// session returns the live session, waiting for a reconnect up to
// reconnect_wait.
func (c *Client) session(ctx context.Context) (*session, error) {
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		s, ready, shut := c.cur, c.ready, c.shut
		c.mu.Unlock()
		if shut {
			return nil, errClientClosed
		}
		if s != nil {
			return s, nil
		}
		if timeout == nil {
			t := time.NewTimer(c.cfg.reconnectWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout:
			return nil, errNotConnected
		case <-c.closed:
			return nil, errClientClosed
		}
	}
}
