package amqp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hload/hload/protocols"
)

// maxEvents bounds the connection events kept for the next call to report,
// should no call come for a long time.
const maxEvents = 1024

// Client executes calls against one broker. Calls share its connection;
// each call borrows a channel from a pool, except consume, which opens its
// own so that its prefetch and its unacked messages are its own.
type Client struct {
	cfg     *targetConfig
	observe func(body []byte)
	prefix  string // tells this client's consumer tags and correlation ids apart

	// ctx is cancelled by Close, to abort a dial in progress.
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	cur   *session      // nil while reconnecting
	ready chan struct{} // closed when cur is set again
	shut  bool

	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	seq          atomic.Uint64
	up, blocked  atomic.Int64
	returnedLate atomic.Int64 // returns of publishes without confirm

	// Connection events happen between calls; the next call reports them.
	evMu      sync.Mutex
	events    []protocols.Sample
	hasEvents atomic.Bool
}

var (
	_ protocols.Client = (*Client)(nil)
	_ protocols.Gauger = (*Client)(nil)
)

func open(ctx context.Context, cfg *targetConfig, observe func([]byte)) (*Client, error) {
	var id [4]byte
	_, _ = rand.Read(id[:])
	c := &Client{
		cfg:     cfg,
		observe: observe,
		prefix:  "hload-" + hex.EncodeToString(id[:]),
		ready:   make(chan struct{}),
		closed:  make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	type result struct {
		s   *session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := c.connect()
		done <- result{s, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		c.cancel()
		r = <-done // the dial is bounded by dialTimeout
		if r.err == nil {
			_ = r.s.conn.Close()
			c.wg.Wait()
		}
		return nil, ctx.Err()
	}
	if r.err != nil {
		c.cancel()
		return nil, r.err
	}
	c.cur = r.s
	close(c.ready)
	c.up.Store(1)
	c.wg.Add(1)
	go c.reconnect(r.s)
	return c, nil
}

// Close closes the connection and waits for the client's goroutines. It is
// safe to call twice.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.shut = true
		s := c.cur
		c.mu.Unlock()
		close(c.closed)
		c.cancel()
		if s != nil {
			// Bounded: a broker that stopped answering does not hold the
			// end of the run.
			if e := s.conn.CloseDeadline(time.Now().Add(5 * time.Second)); e != nil && !errors.Is(e, amqp.ErrClosed) {
				err = fmt.Errorf("amqp: close: %w", e)
			}
		}
		c.wg.Wait()
	})
	return err
}

// Gauges reports whether the connection is up and whether the broker
// blocks it.
func (c *Client) Gauges(report func(name string, value int64)) {
	report(GaugeConnected, c.up.Load())
	report(GaugeBlocked, c.blocked.Load())
}

// event keeps a connection event for the next call to emit.
func (c *Client) event(metric string, value time.Duration) {
	c.evMu.Lock()
	if len(c.events) < maxEvents {
		c.events = append(c.events, protocols.Sample{Metric: metric, Time: time.Now(), Value: value})
	}
	c.evMu.Unlock()
	c.hasEvents.Store(true)
}

// flushEvents emits what happened between calls: connection events and the
// returns of publishes nobody waited for.
func (c *Client) flushEvents(emit func(protocols.Sample)) {
	if n := c.returnedLate.Swap(0); n > 0 {
		now := time.Now()
		for range n {
			emit(protocols.Sample{Metric: MetricReturned, Time: now})
		}
	}
	if !c.hasEvents.Load() {
		return
	}
	c.evMu.Lock()
	evs := c.events
	c.events = nil
	c.hasEvents.Store(false)
	c.evMu.Unlock()
	for _, e := range evs {
		emit(e)
	}
}

// outcome is what a call reports in its request sample.
type outcome struct {
	err      protocols.ErrorKind
	status   int
	sent     int64
	received int64
	// body and headers are an rpc reply's, for a check or a capture, set
	// only when the call asks (protocols.Call).
	body    []byte
	headers map[string][]string
}

func ok(sent, received int64) outcome {
	return outcome{status: StatusOK, sent: sent, received: received}
}

// Do executes one call.
func (c *Client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	start := time.Now()
	var o outcome
	q, err := parseRequest(call.Request)
	if err != nil {
		o = outcome{err: ErrRequest}
	} else {
		switch q.kind {
		case kindPublish:
			o = c.publish(ctx, q, emit)
		case kindConsume:
			o = c.consume(ctx, q, emit)
		case kindRPC:
			o = c.rpc(ctx, q, call)
		}
	}
	end := time.Now()
	emit(protocols.Sample{
		Metric:        protocols.MetricRequest,
		Time:          end,
		Value:         end.Sub(start),
		Status:        o.status,
		Error:         o.err,
		BytesSent:     o.sent,
		BytesReceived: o.received,
		Body:          o.body,
		Headers:       o.headers,
	})
	c.flushEvents(emit)
}

// fail classifies a failed call. ch may be nil.
func (c *Client) fail(ctx context.Context, s *session, ch *channel, err error) outcome {
	if ctx.Err() != nil {
		return outcome{err: protocols.ErrInterrupted}
	}
	if errors.Is(err, errNotConnected) || errors.Is(err, errClientClosed) {
		return outcome{err: ErrNotConnected}
	}
	var ae *amqp.Error
	if ch != nil {
		ae = ch.closeError()
	}
	if ae == nil {
		errors.As(err, &ae)
	}
	if s != nil && s.conn.IsClosed() {
		o := outcome{err: ErrConnectionLost}
		if ae != nil {
			o.status = ae.Code
		}
		return o
	}
	if ae != nil {
		return outcome{err: ErrChannel, status: ae.Code}
	}
	if errors.Is(err, amqp.ErrClosed) || isNetworkError(err) {
		return outcome{err: ErrConnectionLost}
	}
	return outcome{err: protocols.ErrProtocol}
}

// isNetworkError reports whether err is the connection's socket failing.
// amqp091-go returns a failed frame write as the socket's own error and
// only then shuts the connection down, on a goroutine of its own, so a
// publish racing a broker's restart can see "broken pipe" while the
// connection still reads as open.
func isNetworkError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *Client) publish(ctx context.Context, q *request, emit func(protocols.Sample)) outcome {
	s, err := c.session(ctx)
	if err != nil {
		return c.fail(ctx, nil, nil, err)
	}
	p := s.plain
	if q.confirm {
		p = s.confirm
	}
	ch, err := p.get(ctx, s.lost)
	if err != nil {
		return c.fail(ctx, s, nil, err)
	}
	drainReturns(ch)
	sent := time.Now()
	dc, err := ch.ch.PublishWithDeferredConfirmWithContext(ctx, q.exchange, q.routingKey, q.mandatory, false, q.publishing(sent))
	if err != nil {
		p.discard(ch)
		return c.fail(ctx, s, ch, err)
	}
	n := int64(len(q.body))
	if !q.confirm {
		p.put(ch)
		return ok(n, 0)
	}
	t := time.NewTimer(q.timeout)
	defer t.Stop()
	select {
	case <-dc.Done():
	case <-t.C:
		p.discard(ch) // a late ack would be taken for the next publish's
		return outcome{err: protocols.ErrTimeout}
	case <-ctx.Done():
		p.discard(ch)
		return outcome{err: protocols.ErrInterrupted}
	}
	if !dc.Acked() {
		// The library nacks what is pending when the channel or the
		// connection closes; only a nack on an open channel is the
		// broker's.
		if ch.ch.IsClosed() {
			p.discard(ch)
			return c.fail(ctx, s, ch, amqp.ErrClosed)
		}
		p.put(ch)
		emit(protocols.Sample{Metric: MetricNacked, Time: time.Now(), Value: time.Since(sent)})
		return outcome{err: ErrNacked, sent: n}
	}
	took := time.Since(sent)
	// The broker sends basic.return before the ack of the same message,
	// and the library hands both over in that order, so a return is
	// already here if there is one.
	select {
	case r := <-ch.returns:
		p.put(ch)
		emit(protocols.Sample{Metric: MetricReturned, Time: time.Now(), Value: took})
		return outcome{err: ErrReturned, status: int(r.ReplyCode), sent: n}
	default:
	}
	p.put(ch)
	emit(protocols.Sample{Metric: MetricConfirmed, Time: time.Now(), Value: took})
	return ok(n, 0)
}

// drainReturns drops returns left from an earlier call that gave up.
func drainReturns(ch *channel) {
	for {
		select {
		case <-ch.returns:
		default:
			return
		}
	}
}

func (c *Client) rpc(ctx context.Context, q *request, call protocols.Call) outcome {
	s, err := c.session(ctx)
	if err != nil {
		return c.fail(ctx, nil, nil, err)
	}
	ch, err := s.rpc.get(ctx, s.lost)
	if err != nil {
		return c.fail(ctx, s, nil, err)
	}
	drainReturns(ch)
	// Stale replies, of calls that timed out, are dropped by their
	// correlation id below.
	id := fmt.Sprintf("%s-%d", c.prefix, c.seq.Add(1))
	msg := q.publishing(time.Now())
	msg.ReplyTo, msg.CorrelationId = replyQueue, id
	if err := ch.ch.PublishWithContext(ctx, q.exchange, q.routingKey, q.mandatory, false, msg); err != nil {
		s.rpc.discard(ch)
		return c.fail(ctx, s, ch, err)
	}
	n := int64(len(q.body))
	t := time.NewTimer(q.timeout)
	defer t.Stop()
	for {
		select {
		case d, open := <-ch.replies:
			if !open {
				s.rpc.discard(ch)
				return c.fail(ctx, s, ch, amqp.ErrClosed)
			}
			if d.CorrelationId != id {
				continue
			}
			s.rpc.put(ch)
			o := ok(n, int64(len(d.Body)))
			if call.KeepBody {
				o.body = d.Body // the delivery's own
			}
			if call.KeepHeaders {
				o.headers = replyHeaders(&d)
			}
			return o
		case r := <-ch.returns:
			if r.CorrelationId != id {
				continue
			}
			s.rpc.put(ch)
			return outcome{err: ErrReturned, status: int(r.ReplyCode), sent: n}
		case <-t.C:
			s.rpc.put(ch) // a late reply is dropped by the next call
			return outcome{err: protocols.ErrTimeout, sent: n}
		case <-ctx.Done():
			s.rpc.put(ch)
			return outcome{err: protocols.ErrInterrupted, sent: n}
		}
	}
}

func (c *Client) consume(ctx context.Context, q *request, emit func(protocols.Sample)) outcome {
	s, err := c.session(ctx)
	if err != nil {
		return c.fail(ctx, nil, nil, err)
	}
	raw, err := s.conn.Channel()
	if err != nil {
		return c.fail(ctx, s, nil, err)
	}
	ch := &channel{ch: raw, closed: raw.NotifyClose(make(chan *amqp.Error, 1))}
	// The channel's close requeues the messages this call received but
	// did not ack. Closing waits for the broker, so it is not on the call.
	defer c.release(ch)
	tag, deliveries, err := c.subscribe(raw, q)
	if err != nil {
		return c.fail(ctx, s, ch, err)
	}
	var end <-chan time.Time
	if q.duration > 0 {
		t := time.NewTimer(q.duration)
		defer t.Stop()
		end = t.C
	}
	var count int
	var received int64
	for {
		select {
		case d, open := <-deliveries:
			if !open {
				// The channel or the connection closed, or the broker
				// cancelled the consumer (its queue was deleted).
				o := c.fail(ctx, s, ch, amqp.ErrClosed)
				if o.err == ErrConnectionLost && !s.conn.IsClosed() && !raw.IsClosed() {
					o = outcome{err: ErrChannel}
				}
				o.received = received
				return o
			}
			if err := c.take(ctx, raw, q, d, emit); err != nil {
				o := c.fail(ctx, s, ch, err)
				o.received = received
				return o
			}
			count++
			received += int64(len(d.Body))
			if q.messages > 0 && count >= q.messages {
				return c.endConsume(q, raw, tag, deliveries, emit, received)
			}
		case <-end:
			return c.endConsume(q, raw, tag, deliveries, emit, received)
		case <-ctx.Done():
			o := c.endConsume(q, raw, tag, deliveries, emit, received)
			if q.duration > 0 || q.messages > 0 {
				// Ended before its own limit: the run's end cut it short.
				o.err, o.status = protocols.ErrInterrupted, 0
			}
			return o
		}
	}
}

// subscribe starts the call's consumer on raw, with the request's
// prefetch when it acks by hand, and returns its tag and its deliveries.
func (c *Client) subscribe(raw *amqp.Channel, q *request) (string, <-chan amqp.Delivery, error) {
	if !q.autoAck && q.prefetch > 0 {
		if err := raw.Qos(q.prefetch, 0, false); err != nil {
			return "", nil, err
		}
	}
	tag := fmt.Sprintf("%s-consume-%d", c.prefix, c.seq.Add(1))
	deliveries, err := raw.Consume(q.queue, tag, q.autoAck, false, false, false, nil)
	return tag, deliveries, err
}

// take handles one received message: it answers the message's reply_to
// when the request has a reply, acks it unless auto_ack, and emits its
// samples.
func (c *Client) take(ctx context.Context, raw *amqp.Channel, q *request, d amqp.Delivery, emit func(protocols.Sample)) error {
	if q.hasReply && d.ReplyTo != "" {
		reply := amqp.Publishing{CorrelationId: d.CorrelationId, Body: q.reply}
		if err := raw.PublishWithContext(ctx, "", d.ReplyTo, false, false, reply); err != nil {
			return err
		}
	}
	if !q.autoAck {
		if err := d.Ack(false); err != nil {
			return err
		}
	}
	c.count(d, emit)
	return nil
}

// endConsume ends a consume that reached its limit. With auto_ack the
// broker counts every message it sent as delivered, so the ones already on
// their way are received and counted too; with manual acks they are left
// unacked, and the channel's close requeues them.
func (c *Client) endConsume(q *request, raw *amqp.Channel, tag string, deliveries <-chan amqp.Delivery, emit func(protocols.Sample), received int64) outcome {
	if !q.autoAck {
		return ok(0, received)
	}
	if err := raw.Cancel(tag, false); err != nil {
		return ok(0, received) // the channel is gone, and what it held with it
	}
	for d := range deliveries { // closed once the buffered ones are handed over
		c.count(d, emit)
		received += int64(len(d.Body))
	}
	return ok(0, received)
}

// count emits the samples of one received message.
func (c *Client) count(d amqp.Delivery, emit func(protocols.Sample)) {
	now := time.Now()
	if sent, ok := sentAt(d.Headers); ok {
		emit(protocols.Sample{Metric: MetricConsumed, Time: now, Value: max(0, now.Sub(sent))})
	} else {
		emit(protocols.Sample{Metric: MetricConsumedUntimed, Time: now})
	}
	if d.Redelivered {
		emit(protocols.Sample{Metric: MetricRedelivered, Time: now})
	}
	if c.observe != nil {
		c.observe(d.Body)
	}
}

// sentAt reads the x-hload-sent-at header, whatever integer type it came
// back as.
func sentAt(h amqp.Table) (time.Time, bool) {
	var ns int64
	switch v := h[HeaderSentAt].(type) {
	case int64:
		ns = v
	case int32:
		ns = int64(v)
	case uint64:
		ns = int64(v)
	case int:
		ns = int64(v)
	default:
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}
