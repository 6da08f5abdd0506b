package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// ErrPlugin is the error kind of a call that a failed plugin could not
// answer: the plugin process died or hung. The run fails through
// protocols.Failer; the calls' samples only unblock the VUs.
const ErrPlugin protocols.ErrorKind = "plugin"

// DefaultHangTimeout is RemoteOptions.HangTimeout when it is zero.
const DefaultHangTimeout = 10 * time.Second

// cancelGrace is how long a cancelled Do waits for the plugin to confirm
// the cancel before it gives up on the call.
const cancelGrace = 2 * time.Second

// closeTimeout bounds the CloseClient RPC, so closing a hung plugin's
// client cannot block the end of a run.
const closeTimeout = 5 * time.Second

// validateTimeout bounds a Validate RPC: the validator decodes values and
// reaches nothing, so a plugin that takes longer is hung.
const validateTimeout = 10 * time.Second

// RemoteOptions tune the host's end of the wire.
type RemoteOptions struct {
	// Name names the plugin in errors. It defaults to the described name.
	Name string
	// HangTimeout is how long the plugin may send nothing, not even a
	// heartbeat, while calls are pending, before it is declared hung.
	// Zero means DefaultHangTimeout.
	HangTimeout time.Duration
	// Stderr returns the plugin's last stderr lines, for errors.
	Stderr func() []string
	// ProtocolVersion is the wire version the handshake agreed on
	// (go-plugin's NegotiatedVersion); zero means ProtocolVersion. At 2,
	// requests go whole on every call, as a plugin built before version 3
	// expects.
	ProtocolVersion int

	// dial connects to a plugin's direct listener; nil means net.Dialer's.
	// A Harness sets its in-memory network's.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func (o RemoteOptions) protocolVersion() int {
	if o.ProtocolVersion == 0 {
		return ProtocolVersion
	}
	return o.ProtocolVersion
}

// PluginError is the error a client's Failed channel delivers: which plugin
// failed, how, and its last stderr lines.
type PluginError struct {
	Plugin string
	// What says what happened, such as "exited: ..." or "stopped
	// responding: ...".
	What string
	// Err is the underlying error, if any, such as the stream's gRPC error.
	Err    error
	Stderr []string
}

// Error implements error.
func (e *PluginError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %q %s", e.Plugin, e.What)
	if len(e.Stderr) > 0 {
		b.WriteString("\nlast stderr lines:")
		for _, l := range e.Stderr {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *PluginError) Unwrap() error { return e.Err }

// Remote is a plugin's protocol seen from the host: it implements
// protocols.Protocol over the wire. Its clients also implement
// protocols.Failer.
type Remote struct {
	c           proto.ProtocolClient
	opts        RemoteOptions
	info        protocols.Info
	sdkVersion  string
	targetType  cty.Type
	requestType cty.Type
	cancelGrace time.Duration // cancelGrace, shortened by tests
	// Whether the plugin described validators; a plugin built before
	// Validate existed says neither.
	validatesTarget, validatesRequest bool

	// closeTimeout bounds a client's Close (closeTimeout, shortened by
	// tests).
	closeTimeout time.Duration
	// hung: a client failed because the plugin stopped responding, so
	// asking it to shut down is a waste of time (Hung).
	hung atomic.Bool

	mu      sync.Mutex
	clients map[*client]struct{} // open, so a Harness can close them
}

// noteFailure remembers that the plugin stopped responding, when what
// says so.
func (r *Remote) noteFailure(what string) {
	if strings.HasPrefix(what, hangPrefix) {
		r.hung.Store(true)
	}
}

// hangPrefix begins the What of a failure by a plugin that stopped
// responding.
const hangPrefix = "stopped responding"

// Hung reports whether a client of the plugin failed because the plugin
// stopped responding (a hang, a SIGSTOP): the host then kills the process
// outright rather than ask it to shut down and wait.
func (r *Remote) Hung() bool { return r.hung.Load() }

var (
	_ protocols.Protocol         = (*Remote)(nil)
	_ protocols.TargetValidator  = (*Remote)(nil)
	_ protocols.RequestValidator = (*Remote)(nil)
)

// NewRemote describes the plugin behind c and returns its protocol.
func NewRemote(ctx context.Context, c proto.ProtocolClient, opts RemoteOptions) (*Remote, error) {
	d, err := c.Describe(ctx, &proto.DescribeRequest{})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: describe: %w", opts.Name, rpcErr(err))
	}
	if opts.Name == "" {
		opts.Name = d.Name
	}
	if opts.HangTimeout <= 0 {
		opts.HangTimeout = DefaultHangTimeout
	}
	if v := opts.protocolVersion(); v < OldestProtocolVersion || v > ProtocolVersion {
		return nil, fmt.Errorf("plugin %q: wire version %d; this hload speaks %d to %d", opts.Name, v, OldestProtocolVersion, ProtocolVersion)
	}
	opts.ProtocolVersion = opts.protocolVersion()
	target, err := SchemaFromProto(d.TargetSchema)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: target schema: %w", opts.Name, err)
	}
	request, err := SchemaFromProto(d.RequestSchema)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: request schema: %w", opts.Name, err)
	}
	targetDocs, err := schemaDocs(d.TargetSchema, target)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: target schema: %w", opts.Name, err)
	}
	requestDocs, err := schemaDocs(d.RequestSchema, request)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: request schema: %w", opts.Name, err)
	}
	return &Remote{
		c:          c,
		opts:       opts,
		sdkVersion: d.SdkVersion,
		info: protocols.Info{
			Name:        d.Name,
			Version:     d.Version,
			TargetSpec:  target,
			RequestSpec: request,
			Metrics:     d.Metrics,
			Gauges:      d.Gauges,
			TargetDocs:  targetDocs,
			RequestDocs: requestDocs,
		},
		targetType:       hcldec.ImpliedType(target),
		requestType:      hcldec.ImpliedType(request),
		cancelGrace:      cancelGrace,
		closeTimeout:     closeTimeout,
		validatesTarget:  d.ValidatesTarget,
		validatesRequest: d.ValidatesRequest,
		clients:          make(map[*client]struct{}),
	}, nil
}

// ValidateTarget implements protocols.TargetValidator by asking the
// plugin, which checks the target with its own validator without opening
// it: nothing is dialled, so the target need not be reachable. A plugin
// without a target validator is not asked and accepts every target.
func (r *Remote) ValidateTarget(target cty.Value) (string, error) {
	if !r.validatesTarget {
		return "", nil
	}
	return r.validate(proto.ValidateRequest_TARGET, target, r.targetType)
}

// ValidateRequest implements protocols.RequestValidator by asking the
// plugin, as ValidateTarget does.
func (r *Remote) ValidateRequest(request cty.Value) (string, error) {
	if !r.validatesRequest {
		return "", nil
	}
	return r.validate(proto.ValidateRequest_REQUEST, nullIfNil(request, r.requestType), r.requestType)
}

func (r *Remote) validate(kind proto.ValidateRequest_Kind, val cty.Value, ty cty.Type) (string, error) {
	what := strings.ToLower(kind.String())
	b, err := encodeValue(withNulls(val, ty), ty)
	if err != nil {
		return "", fmt.Errorf("plugin %q: encoding the %s: %w", r.opts.Name, what, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), validateTimeout)
	defer cancel()
	resp, err := r.c.Validate(ctx, &proto.ValidateRequest{Kind: kind, ValueMsgpack: b})
	if status.Code(err) == codes.Unimplemented {
		// A plugin built before Validate existed: it has no validator.
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("plugin %q: validating the %s: %w", r.opts.Name, what, rpcErr(err))
	}
	if resp.Error == "" {
		return "", nil
	}
	return resp.Attribute, errors.New(resp.Error)
}

// Describe implements protocols.Protocol.
func (r *Remote) Describe() protocols.Info { return r.info }

// SDKVersion returns the version of the SDK the plugin was built with.
func (r *Remote) SDKVersion() string { return r.sdkVersion }

// Open implements protocols.Protocol. The client it returns also
// implements protocols.Failer. When ctx carries the run's ledger
// (delivery.LedgerFrom), the client hands the plugin the sends of the
// delivery keys its subscribers watch.
func (r *Remote) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	b, err := encodeValue(target, r.targetType)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encoding the target: %w", r.opts.Name, err)
	}
	resp, err := r.c.Open(ctx, &proto.OpenRequest{TargetMsgpack: b})
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
		// The protocol's Open refused the target: its words, without
		// gRPC's.
		return nil, fmt.Errorf("plugin %q: open: %s", r.opts.Name, st.Message())
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %q: open: %w", r.opts.Name, rpcErr(err))
	}
	// The stream lives as long as the client, not as Open's ctx.
	streamCtx, cancel := context.WithCancel(context.Background())
	stream, err := r.openStream(ctx, streamCtx)
	if err == nil {
		// Names the client at once, so the plugin starts its sender and
		// its heartbeats.
		err = stream.Send(&proto.CallBatch{ClientId: resp.ClientId})
	}
	if err != nil {
		cancel()
		closeCtx, done := context.WithTimeout(context.Background(), closeTimeout)
		r.c.CloseClient(closeCtx, &proto.CloseRequest{ClientId: resp.ClientId})
		done()
		return nil, fmt.Errorf("plugin %q: opening the call stream: %w", r.opts.Name, rpcErr(err))
	}
	c := &client{
		r:         r,
		id:        resp.ClientId,
		stream:    stream,
		streamCtx: streamCtx,
		cancel:    cancel,
		pending:   make(map[uint64]*pendingCall),
		wake:      make(chan struct{}, 1),
		failed:    make(chan error, 1),
		ledger:    delivery.LedgerFrom(ctx),
		// From a plugin built before the field: false, so the core has
		// it keep bodies for checks, as before.
		searchesBody: resp.SearchesBody,
	}
	if r.opts.ProtocolVersion >= 3 {
		// Built per client: the numbers of its types are its stream's.
		if c.attrs, err = newAttrEncoder(r.requestType); err != nil {
			c.attrs = nil // the requests go whole, as to a plugin of version 2
		}
	}
	r.mu.Lock()
	r.clients[c] = struct{}{}
	r.mu.Unlock()
	c.wg.Add(3)
	go c.send()
	go c.receive()
	go c.watch()
	return c, nil
}

// openStream opens a client's Run stream, which lives as long as
// streamCtx: on a direct connection at wire version 4, and over gRPC when
// the plugin speaks an older version, was built before Direct, or the
// connection cannot be made (the calls are the same, only dearer).
func (r *Remote) openStream(ctx, streamCtx context.Context) (callStream, error) {
	if r.opts.ProtocolVersion >= 4 {
		if s, err := r.direct(ctx, streamCtx); err == nil {
			return s, nil
		}
	}
	return r.c.Run(streamCtx)
}

// direct opens a direct connection to the plugin (the Direct RPC), closed
// when streamCtx ends.
func (r *Remote) direct(ctx, streamCtx context.Context) (callStream, error) {
	ctx, cancel := context.WithTimeout(ctx, directTimeout)
	defer cancel()
	resp, err := r.c.Direct(ctx, &proto.DirectRequest{})
	if err != nil {
		return nil, err
	}
	dial := r.opts.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dialDirect(ctx, dial, resp)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(streamCtx, func() { conn.Close() })
	return directCalls{newFrames(conn)}, nil
}

// closeClients closes the clients still open.
func (r *Remote) closeClients() {
	r.mu.Lock()
	clients := make([]*client, 0, len(r.clients))
	for c := range r.clients {
		clients = append(clients, c)
	}
	r.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
}

// pendingCall is one Do waiting for its call's samples. Pooled, so a call
// allocates little on the host.
type pendingCall struct {
	id        uint64
	vu        uint64
	iteration uint64
	planned   int64  // unix nanoseconds, 0 for none
	request   []byte // shared with the encode cache: never modified
	// prepared is the handle of the plugin's copy of the request, 0 for
	// none; attrs, when byAttr, are its attributes, encoded. Then request
	// is nil.
	prepared uint32
	attrs    []attrEnc
	byAttr   bool
	// template is the handle of the plugin's template of the request, 0
	// for none; then holeData holds its holes' values, encoded, one after
	// the other, holeSize their lengths and holeType their types'
	// numbers, and request is nil.
	template uint32
	holeData []byte
	holeSize []uint32
	holeType []uint32
	keepBody bool
	// keepHeaders asks for the response's headers (Call.KeepHeaders).
	keepHeaders bool
	scenario    uint32              // the number of the call's scenario ending, 0 for none
	samples     []protocols.Sample  // received, not yet emitted
	spare       []protocols.Sample  // emitted, for reuse
	finishing   bool                // the batch being received ends the call
	touched     bool                // the batch being received has samples of the call
	outcome     protocols.ErrorKind // ErrPlugin or ErrInterrupted when the call was given up
	done        chan struct{}       // capacity 1: one signal per use
	// more says samples came for the call while it runs on (a long call
	// streams them); capacity 1, so signals coalesce.
	more chan struct{}

	// maxBody and bodyContains are Call.MaxBody and Call.BodyContains.
	maxBody      int64
	bodyContains []string
}

var pendingCalls = sync.Pool{New: func() any {
	return &pendingCall{done: make(chan struct{}, 1), more: make(chan struct{}, 1)}
}}

// client is an opened target on the plugin, with its Run stream.
type client struct {
	r         *Remote
	id        uint64
	stream    callStream
	streamCtx context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]*pendingCall
	queue   []*pendingCall // waiting for the sender
	cancels []uint64       // waiting for the sender
	// endings numbers the scenario endings (protocols.Ending) of the calls
	// sent; ended are the numbers of those that closed, waiting for the
	// sender.
	endings  map[<-chan struct{}]uint32
	ended    []uint32
	failErr  error
	closed   bool
	received atomic.Uint64 // messages received, for the hang watchdog
	sent     atomic.Uint64 // batches sent, for the benchmark's calls per batch

	wake   chan struct{} // capacity 1, so wakes coalesce
	failed chan error    // capacity 1: the one failure
	// searchesBody says the plugin's client is a protocols.BodySearcher.
	searchesBody bool

	encoded encodeCache // request encodings, reused while the value repeats
	// attrs encodes requests by attribute; nil at wire version 2.
	attrs   *attrEncoder
	touched []*pendingCall // receive's own: calls that got samples and run on

	gaugesMu sync.Mutex
	gauges   []*proto.Gauge // the plugin's last report

	// ledger is the run's, or nil. The keys the plugin follows are
	// followed in it until the stream ends, and their steps wait in steps
	// for the sender. A lock of their own, not mu: a step is queued by a
	// sender's VU holding the key's lock in the ledger. following is set
	// at the first follow, so the sender of a client that follows nothing
	// does not take ledgerMu.
	ledger     *delivery.Ledger
	following  atomic.Bool
	ledgerMu   sync.Mutex
	steps      []ledgerStep
	follows    map[string]func() // key -> stop
	unfollowed bool              // the stream ended: follow no more
}

// maxLedgerBytes bounds the ledger steps of a CallBatch, well below
// gRPC's default limit of 4 MiB on a received message, and
// ledgerStepBytes is what a step takes at most besides its id (five
// varint columns).
const (
	maxLedgerBytes  = 1 << 20
	ledgerStepBytes = 48
)

// ledgerStep is a step of a send on a followed key, waiting for the
// sender.
type ledgerStep struct {
	key string
	delivery.SendStep
	at int64 // a Begin's wall-clock time, unix nanoseconds
}

var (
	_ protocols.Client       = (*client)(nil)
	_ protocols.Failer       = (*client)(nil)
	_ protocols.Gauger       = (*client)(nil)
	_ protocols.Preparer     = (*client)(nil)
	_ protocols.Templater    = (*client)(nil)
	_ protocols.BodySearcher = (*client)(nil)
)

// SearchesBody implements protocols.BodySearcher with what the plugin said
// of its client when it opened it.
func (c *client) SearchesBody() bool { return c.searchesBody }

// prepareTimeout bounds a Prepare RPC, which decodes a value and has the
// protocol render it, before any load.
const prepareTimeout = 10 * time.Second

// errNotPreparing is Prepare's answer for a plugin of wire version 2: the
// core then sends the request with each call, as before.
var errNotPreparing = errors.New("the plugin speaks wire version 2, which has no Prepare")

// prepared is what the host's Prepare returns: the plugin's handle of the
// request, on one client.
type prepared struct {
	c      *client
	handle uint32
}

// Prepare implements protocols.Preparer: it sends the request to the
// plugin once, and the calls that carry what it returns send only the
// handle. The plugin has its protocol's client prepare the request too,
// when that is a protocols.Preparer. An error leaves the request
// unprepared: its calls then send it whole or by attribute.
func (c *client) Prepare(request cty.Value) (any, error) {
	if c.r.opts.ProtocolVersion < 3 {
		return nil, errNotPreparing
	}
	b, err := encodeValue(withNulls(nullIfNil(request, c.r.requestType), c.r.requestType), c.r.requestType)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: encoding the request: %w", c.r.opts.Name, err)
	}
	ctx, cancel := context.WithTimeout(c.streamCtx, prepareTimeout)
	defer cancel()
	resp, err := c.r.c.Prepare(ctx, &proto.PrepareRequest{ClientId: c.id, RequestMsgpack: b})
	if err != nil {
		return nil, fmt.Errorf("plugin %q: prepare: %w", c.r.opts.Name, rpcErr(err))
	}
	if resp.Handle == 0 {
		return nil, fmt.Errorf("plugin %q: prepare: the plugin returned no handle", c.r.opts.Name)
	}
	return &prepared{c: c, handle: resp.Handle}, nil
}

// Gauges implements protocols.Gauger with the levels the plugin's client
// reported last, at most a gauge interval ago (none when it has none).
func (c *client) Gauges(report func(name string, value int64)) {
	c.gaugesMu.Lock()
	defer c.gaugesMu.Unlock()
	for _, g := range c.gauges {
		report(g.Name, g.Value)
	}
}

// Do implements protocols.Client. A call goes in four steps: its request
// is encoded as it travels on this stream, the call is queued for the
// sender, Do waits for the plugin's samples, emitting a long call's as
// they come, and then emits the rest.
func (c *client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	p := pendingCalls.Get().(*pendingCall)
	if message, ok := c.encodeRequest(&call, p); !ok {
		pendingCalls.Put(p)
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrProtocol, Message: message})
		return
	}
	p.vu, p.iteration, p.planned = call.VU, call.Iteration, unixNano(call.Planned)
	p.keepBody, p.keepHeaders = call.KeepBody, call.KeepHeaders
	p.maxBody, p.bodyContains = call.MaxBody, call.BodyContains
	p.samples = p.samples[:0]
	p.outcome = protocols.ErrNone
	p.finishing = false

	id, refused := c.enqueue(ctx, p)
	if refused != protocols.ErrNone {
		pendingCalls.Put(p)
		if refused == ErrPlugin {
			c.awaitCancel(ctx)
		}
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: refused})
		return
	}
	c.signal()
	if !c.await(ctx, p, id, emit) {
		return
	}
	if p.outcome != protocols.ErrNone {
		// Given up by a failure or Close; p may still be queued.
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: p.outcome})
		return
	}
	for i := range p.samples {
		emit(p.samples[i])
	}
	// Body is only valid during emit, so dropping the references is safe.
	clear(p.samples)
	p.bodyContains = nil
	pendingCalls.Put(p)
}

// encodeRequest puts call's request in p as it travels on this stream:
// the holes of a template, the handle of a prepared request, the
// attributes that changed, or else the whole value. When it cannot, it
// returns false and the message of the call's failure.
func (c *client) encodeRequest(call *protocols.Call, p *pendingCall) (message string, ok bool) {
	p.prepared, p.byAttr, p.request, p.template = 0, false, nil, 0
	p.attrs = p.attrs[:0]
	if t, ok := call.Prepared.(*template); ok {
		if t.c != c {
			// Another client's template: the call has no request to send.
			// The core never mixes them; a bug, reported on the call.
			return "a template of another client of the plugin", false
		}
		if err := c.encodeHoles(t, call.Holes, p); err != nil {
			return "encoding the request's values: " + err.Error(), false
		}
	} else if pr, ok := call.Prepared.(*prepared); ok && pr.c == c {
		p.prepared = pr.handle
	} else if c.attrs != nil {
		p.attrs, p.byAttr = c.attrs.encode(call.Request, p.attrs)
	}
	if p.prepared == 0 && !p.byAttr && p.template == 0 {
		req, err := c.encoded.encode(nullIfNil(call.Request, c.r.requestType), c.r.requestType)
		if err != nil {
			// The core checked the request against the schema, so this is
			// a bug, reported on the call rather than the whole run.
			return "", false
		}
		p.request = req
	}
	return "", true
}

// enqueue gives p its id and queues it for the sender. A client that
// failed or closed takes no call: enqueue then returns the kind the call
// fails as, ErrPlugin or protocols.ErrInterrupted.
func (c *client) enqueue(ctx context.Context, p *pendingCall) (id uint64, refused protocols.ErrorKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failErr != nil {
		return 0, ErrPlugin
	}
	if c.closed {
		return 0, protocols.ErrInterrupted
	}
	c.nextID++
	id = c.nextID
	p.id = id
	p.scenario = 0
	if ending := protocols.Ending(ctx); ending != nil {
		p.scenario = c.scenarioEnding(ending)
	}
	c.pending[id] = p
	c.queue = append(c.queue, p)
	return id, protocols.ErrNone
}

// awaitCancel holds a call refused by a failed client until the run
// cancels it, or cancelGrace where nobody cancels. The run cancels every
// call once a client has failed, but not at once: a call that failed at
// once would be followed by the VU's next, thousands a second until then.
func (c *client) awaitCancel(ctx context.Context) {
	t := time.NewTimer(c.r.cancelGrace)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
}

// await waits for the end of p, call id, emitting a long call's samples as
// the receiver hands them over, on Do's goroutine as the contract wants.
// When ctx is done it cancels the call; a call the plugin never confirmed
// cancelled is emitted as interrupted, and await returns false: p may
// still sit in the sender's queue, so it is left to the garbage collector.
func (c *client) await(ctx context.Context, p *pendingCall, id uint64, emit func(protocols.Sample)) bool {
	for running := true; running; {
		select {
		case <-p.done:
			running = false
		case <-p.more:
			c.mu.Lock()
			got := p.samples
			p.samples = p.spare[:0]
			c.mu.Unlock()
			for i := range got {
				emit(got[i])
			}
			clear(got)
			p.spare = got[:0]
		case <-ctx.Done():
			if !c.cancelCall(p, id) {
				emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
				return false
			}
			running = false
		}
	}
	// A signal that lost the race with done; p.samples has its samples.
	select {
	case <-p.more:
	default:
	}
	return true
}

// scenarioEnding returns the number of a scenario's ending channel on this
// stream, and has its closing sent to the plugin. c.mu must be held.
func (c *client) scenarioEnding(ending <-chan struct{}) uint32 {
	if n, ok := c.endings[ending]; ok {
		return n
	}
	if c.endings == nil {
		c.endings = make(map[<-chan struct{}]uint32)
	}
	n := uint32(len(c.endings) + 1)
	c.endings[ending] = n
	go func() {
		select {
		case <-ending:
			c.mu.Lock()
			c.ended = append(c.ended, n)
			c.mu.Unlock()
			c.signal()
		case <-c.streamCtx.Done():
		}
	}()
	return n
}

// cancelCall asks the plugin to cancel a call and waits a grace for it to
// finish. It reports whether p.done arrived.
func (c *client) cancelCall(p *pendingCall, id uint64) bool {
	c.mu.Lock()
	if c.failErr == nil && !c.closed {
		c.cancels = append(c.cancels, id)
	}
	c.mu.Unlock()
	c.signal()
	t := time.NewTimer(c.r.cancelGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
	}
	c.mu.Lock()
	_, stillPending := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !stillPending {
		// done was delivered while the timer fired.
		<-p.done
		return true
	}
	return false
}

// Failed implements protocols.Failer: it delivers one error if the plugin
// dies or hangs.
func (c *client) Failed() <-chan error { return c.failed }

// Close implements protocols.Client. It is safe to call twice and after a
// failure; calls still pending end as interrupted.
func (c *client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	failed := c.failErr != nil
	c.abandon(protocols.ErrInterrupted)
	c.mu.Unlock()

	c.cancel()
	c.wg.Wait()
	c.unfollow()
	c.r.mu.Lock()
	delete(c.r.clients, c)
	c.r.mu.Unlock()
	if failed {
		return nil // the plugin is gone; the failure was reported already
	}
	ctx, done := context.WithTimeout(context.Background(), c.r.closeTimeout)
	defer done()
	resp, err := c.r.c.CloseClient(ctx, &proto.CloseRequest{ClientId: c.id})
	if err != nil {
		// The plugin did not answer its Close: it hangs, or died, after
		// the run's last call. That is a failure of the run as it would
		// have been during the load, delivered on Failed, which the run
		// watches until its clients are closed.
		what := "failed to close its client: " + rpcErr(err).Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			what = fmt.Sprintf("%s: its client did not close within %s", hangPrefix, c.r.closeTimeout)
		}
		c.r.noteFailure(what)
		perr := &PluginError{Plugin: c.r.opts.Name, What: what, Err: err}
		if c.r.opts.Stderr != nil {
			perr.Stderr = c.r.opts.Stderr()
		}
		c.failed <- perr // capacity 1, and the stream had not failed
		return perr
	}
	if resp.Error != "" {
		return fmt.Errorf("plugin %q: close: %s", c.r.opts.Name, resp.Error)
	}
	return nil
}

// abandon completes every pending call with kind. c.mu must be held.
func (c *client) abandon(kind protocols.ErrorKind) {
	for id, p := range c.pending {
		p.outcome = kind
		p.done <- struct{}{}
		delete(c.pending, id)
	}
}

// fail records the client's one failure, delivers it on Failed, then
// unblocks every VU. In that order: the VUs' last calls end the run's
// scenarios, and the run must find the failure when they have.
func (c *client) fail(what string, err error) {
	c.mu.Lock()
	if c.failErr != nil || c.closed {
		c.mu.Unlock()
		return
	}
	perr := &PluginError{Plugin: c.r.opts.Name, What: what, Err: err}
	c.failErr = perr // new calls fail at once from here
	c.mu.Unlock()
	c.r.noteFailure(what)
	c.cancel()
	c.unfollow()
	if c.r.opts.Stderr != nil {
		perr.Stderr = c.r.opts.Stderr()
	}
	c.failed <- perr // capacity 1, and this is the one failure
	c.mu.Lock()
	c.abandon(ErrPlugin)
	c.mu.Unlock()
}

// follow follows keys in the run's ledger for the plugin, each once, and
// queues their steps for the sender. Called by receive only.
func (c *client) follow(keys []string) {
	if c.ledger == nil {
		return // no ledger, nothing to follow: the plugin's watches expect nothing
	}
	for _, key := range keys {
		c.ledgerMu.Lock()
		_, dup := c.follows[key]
		done := c.unfollowed
		c.ledgerMu.Unlock()
		if dup || done {
			continue
		}
		c.following.Store(true)
		stop := c.ledger.Follow(key, func(s delivery.SendStep) {
			step := ledgerStep{key: key, SendStep: s}
			if !s.Done {
				// Taken under the key's lock, so the times of a key's
				// Begins follow their order.
				step.at = time.Now().UnixNano()
			}
			c.ledgerMu.Lock()
			c.steps = append(c.steps, step)
			c.ledgerMu.Unlock()
			c.signal()
		})
		c.ledgerMu.Lock()
		if c.unfollowed {
			c.ledgerMu.Unlock()
			stop() // the stream ended meanwhile
			continue
		}
		if c.follows == nil {
			c.follows = make(map[string]func())
		}
		c.follows[key] = stop
		c.ledgerMu.Unlock()
	}
}

// unfollow stops following the run's ledger: the stream has ended. It is
// safe to call twice.
func (c *client) unfollow() {
	c.ledgerMu.Lock()
	c.unfollowed = true
	follows := c.follows
	c.follows = nil
	c.steps = nil
	c.ledgerMu.Unlock()
	for _, stop := range follows {
		stop()
	}
}

func (c *client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// send is the stream's only sender: it drains everything queued into one
// CallBatch as soon as there is anything, so no call waits for a timer,
// and what queues up during a Send goes in the next batch.
func (c *client) send() {
	defer c.wg.Done()
	var (
		w       callColumns
		calls   []*pendingCall
		cancels []uint64
		ended   []uint32
		steps   []ledgerStep
	)
	for {
		select {
		case <-c.streamCtx.Done():
			return
		case <-c.wake:
		}
		gather(func() int {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.queue)
		})
		c.mu.Lock()
		calls, c.queue = c.queue, calls[:0]
		cancels, c.cancels = c.cancels, cancels[:0]
		ended, c.ended = c.ended, ended[:0]
		// Copied under the lock: a call given up by Close may be queued
		// still, and its Do no longer waits for it.
		w.reset()
		for _, p := range calls {
			w.add(p)
		}
		if c.attrs != nil {
			// After the calls were taken: each numbered its types before
			// it was queued, so the batch carries them all.
			var err error
			if w.batch.Types, err = c.attrs.unsent(w.batch.Types); err != nil {
				c.mu.Unlock()
				c.fail("could not encode a request's type: "+err.Error(), err)
				return
			}
		}
		c.mu.Unlock()
		clear(calls) // keep no pooled call alive
		if c.following.Load() {
			c.ledgerMu.Lock()
			n, size := 0, 0
			for n < len(c.steps) && size < maxLedgerBytes {
				size += ledgerStepBytes + len(c.steps[n].ID)
				n++
			}
			if n == len(c.steps) {
				steps, c.steps = c.steps, steps[:0]
			} else {
				// A backlog (the plugin read nothing for a while) goes over
				// several batches, each well below gRPC's message limit.
				steps = append(steps[:0], c.steps[:n]...)
				c.steps = append(c.steps[:0], c.steps[n:]...)
				c.signal()
			}
			c.ledgerMu.Unlock()
			for i := range steps {
				w.addStep(&steps[i])
			}
			clear(steps) // keep no id alive
		}
		if len(calls) == 0 && len(cancels) == 0 && len(ended) == 0 && len(steps) == 0 {
			continue
		}
		w.batch.Cancel, w.batch.Ended = cancels, ended
		err := c.stream.Send(&w.batch)
		c.sent.Add(1)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.fail("exited: "+rpcErr(err).Error(), err)
			}
			// On io.EOF the stream's real status comes from Recv.
			return
		}
	}
}

// callColumns builds a CallBatch, column by column, reusing its slices
// from one batch to the next.
type callColumns struct {
	batch proto.CallBatch
	// index finds a request already in the batch. The encode cache hands
	// out the same bytes for a repeated value, so their address names them.
	index map[*byte]uint32
	// attrIndex finds an attribute's encoding already in the batch, as
	// index finds a request.
	attrIndex map[*byte]uint32
	// ledger holds the ledger steps, when a batch has any; keys finds a
	// ledger key already in it.
	ledger proto.LedgerSteps
	keys   map[string]uint32
	// sets finds a set of body_contains already in the batch, by its
	// slice: a request's checks hand every call the same one.
	sets map[setKey]uint32
}

// setKey names a Call.BodyContains by its backing array and length.
type setKey struct {
	first *string
	n     int
}

func (w *callColumns) reset() {
	b := &w.batch
	b.CallId, b.Vu, b.Iteration = b.CallId[:0], b.Vu[:0], b.Iteration[:0]
	b.PlannedUnixNano, b.KeepBody, b.Request = b.PlannedUnixNano[:0], b.KeepBody[:0], b.Request[:0]
	b.Ending, b.KeepHeaders = b.Ending[:0], b.KeepHeaders[:0]
	b.MaxBody, b.BodyContainsSet, b.BodyContainsSize = b.MaxBody[:0], b.BodyContainsSet[:0], b.BodyContainsSize[:0]
	clear(b.BodyContains)
	b.BodyContains = b.BodyContains[:0]
	clear(w.sets)
	clear(b.Requests)
	b.Requests = b.Requests[:0]
	if w.index == nil {
		w.index = make(map[*byte]uint32)
	}
	clear(w.index)
	b.Prepared, b.ByAttribute, b.AttrValue, b.AttrType = b.Prepared[:0], b.ByAttribute[:0], b.AttrValue[:0], b.AttrType[:0]
	b.Template, b.HoleCount, b.HoleType, b.HoleSize, b.HoleData = b.Template[:0], b.HoleCount[:0], b.HoleType[:0], b.HoleSize[:0], b.HoleData[:0]
	clear(b.AttrValues)
	b.AttrValues = b.AttrValues[:0]
	clear(b.Types)
	b.Types = b.Types[:0]
	if w.attrIndex == nil {
		w.attrIndex = make(map[*byte]uint32)
	}
	clear(w.attrIndex)
	if b.Ledger != nil {
		l := b.Ledger
		l.Keys, l.Key, l.Number, l.Kind = l.Keys[:0], l.Key[:0], l.Number[:0], l.Kind[:0]
		clear(l.BeginId)
		l.BeginId, l.BeginUnixNano = l.BeginId[:0], l.BeginUnixNano[:0]
		clear(w.keys)
		b.Ledger = nil
	}
}

// The kinds of a ledger step on the wire (LedgerSteps.kind).
const (
	stepBegin     uint32 = iota
	stepSucceeded        // a Done: the call succeeded
	stepFailed           // a Done: the call failed
)

// addStep adds a step of a followed key's send.
func (w *callColumns) addStep(s *ledgerStep) {
	l := &w.ledger
	w.batch.Ledger = l
	k, ok := w.keys[s.key]
	if !ok {
		if w.keys == nil {
			w.keys = make(map[string]uint32)
		}
		k = uint32(len(l.Keys))
		l.Keys = append(l.Keys, s.key)
		w.keys[s.key] = k
	}
	l.Key = append(l.Key, k)
	l.Number = append(l.Number, s.Number)
	switch {
	case !s.Done:
		l.Kind = append(l.Kind, stepBegin)
		l.BeginId = append(l.BeginId, []byte(s.ID))
		l.BeginUnixNano = append(l.BeginUnixNano, s.at)
	case s.OK:
		l.Kind = append(l.Kind, stepSucceeded)
	default:
		l.Kind = append(l.Kind, stepFailed)
	}
}

// set returns the number of a call's body_contains in the batch, adding
// it the first time; 0 for none.
func (w *callColumns) set(strs []string) uint32 {
	if len(strs) == 0 {
		return 0
	}
	key := setKey{unsafe.SliceData(strs), len(strs)}
	if n, ok := w.sets[key]; ok {
		return n
	}
	b := &w.batch
	b.BodyContainsSize = append(b.BodyContainsSize, uint32(len(strs)))
	b.BodyContains = append(b.BodyContains, strs...)
	n := uint32(len(b.BodyContainsSize))
	if w.sets == nil {
		w.sets = make(map[setKey]uint32)
	}
	w.sets[key] = n
	return n
}

// add adds a call to the batch: its columns, and its request as it
// travels.
func (w *callColumns) add(p *pendingCall) {
	b := &w.batch
	before := len(b.CallId) // the calls before this one
	b.CallId = append(b.CallId, p.id)
	b.Vu = append(b.Vu, p.vu)
	b.Iteration = append(b.Iteration, p.iteration)
	b.PlannedUnixNano = append(b.PlannedUnixNano, p.planned)
	b.KeepBody = append(b.KeepBody, p.keepBody)
	b.Ending = append(b.Ending, p.scenario)
	// The columns added after version 2 start at the first call that
	// needs them, so a batch whose calls need none carries none.
	b.KeepHeaders = sparse(b.KeepHeaders, before, p.keepHeaders)
	b.MaxBody = sparse(b.MaxBody, before, p.maxBody)
	b.BodyContainsSet = sparse(b.BodyContainsSet, before, w.set(p.bodyContains))
	b.Prepared = sparse(b.Prepared, before, p.prepared)
	b.ByAttribute = sparse(b.ByAttribute, before, p.byAttr)
	b.Template = sparse(b.Template, before, p.template)
	w.addRequest(p)
}

// sparse appends v, the value of the call after the first before, to a
// column that starts at the first call of the batch whose value is not
// the zero value: the calls before that one get zeros then, and a column
// that no call needs stays empty.
func sparse[T comparable](column []T, before int, v T) []T {
	var zero T
	if v == zero && len(column) == 0 {
		return column
	}
	for len(column) < before {
		column = append(column, zero)
	}
	return append(column, v)
}

// addRequest adds a call's request as it travels: the holes' values of a
// template, nothing for a prepared request, the attributes' values, or the
// whole value. A value already in the batch (the same encoding, as the
// encoders keep it) is sent once.
func (w *callColumns) addRequest(p *pendingCall) {
	b := &w.batch
	switch {
	case p.template != 0:
		b.Request = append(b.Request, 0)
		w.addTemplated(p)
	case p.prepared != 0:
		b.Request = append(b.Request, 0)
	case p.byAttr:
		b.Request = append(b.Request, 0)
		for _, a := range p.attrs {
			key := unsafe.SliceData(a.enc)
			i, ok := w.attrIndex[key]
			if !ok || len(b.AttrValues[i]) != len(a.enc) {
				i = uint32(len(b.AttrValues))
				b.AttrValues = append(b.AttrValues, a.enc)
				w.attrIndex[key] = i
			}
			b.AttrValue = append(b.AttrValue, i)
			b.AttrType = append(b.AttrType, a.ty)
		}
	default:
		key := unsafe.SliceData(p.request)
		i, ok := w.index[key]
		if !ok || len(b.Requests[i]) != len(p.request) {
			i = uint32(len(b.Requests))
			b.Requests = append(b.Requests, p.request)
			w.index[key] = i
		}
		b.Request = append(b.Request, i)
	}
}

// receive hands samples to their pending calls and completes the calls the
// plugin reports done.
func (c *client) receive() {
	defer c.wg.Done()
	for {
		b, err := c.stream.Recv()
		if err != nil {
			if c.streamCtx.Err() == nil {
				if err == io.EOF {
					c.fail("closed the call stream", nil)
				} else {
					c.fail("exited: "+rpcErr(err).Error(), err)
				}
			}
			return
		}
		c.received.Add(1)
		if len(b.Follow) > 0 {
			c.follow(b.Follow)
		}
		if len(b.Gauges) > 0 {
			// The batch is the receiver's own, so its gauges can be kept.
			c.gaugesMu.Lock()
			c.gauges = b.Gauges
			c.gaugesMu.Unlock()
		}
		if len(b.CallId) == 0 && len(b.Done) == 0 {
			continue // a heartbeat
		}
		if err := checkSampleBatch(b); err != nil {
			c.fail("sent a malformed sample batch: "+err.Error(), err)
			return
		}
		c.deliver(b)
	}
}

// deliver hands a checked batch's samples to their calls, wakes the Do of
// each call that goes on, and completes the calls that end.
func (c *client) deliver(b *proto.SampleBatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range b.Done {
		if p := c.pending[id]; p != nil {
			p.finishing = true
		}
	}
	touched := c.touched[:0]
	var r sampleReader
	for i, id := range b.CallId {
		p := c.pending[id]
		if p == nil {
			continue // given up after a cancel
		}
		if !p.finishing && !p.touched {
			p.touched = true
			touched = append(touched, p)
		}
		p.samples = append(p.samples, r.read(b, i))
	}
	// Before the calls that end are completed: once done is sent, the
	// Do may hand its pendingCall back to the pool.
	for _, p := range touched {
		p.touched = false
		select {
		case p.more <- struct{}{}:
		default:
		}
	}
	clear(touched)
	c.touched = touched[:0]
	for _, id := range b.Done {
		if p := c.pending[id]; p != nil {
			delete(c.pending, id)
			p.done <- struct{}{}
		}
	}
}

// sampleReader reads a checked SampleBatch's samples in order: the
// columns every sample has, and the sparse ones (bodies, messages,
// headers, found flags) that name the samples they belong to.
type sampleReader struct {
	body    int // the next of b.BodySample
	message int // the next of b.MessageSample
	headers headerReader
	found   foundReader
}

// read returns sample i of b. The calls come in order of i.
func (r *sampleReader) read(b *proto.SampleBatch, i int) protocols.Sample {
	sample := protocols.Sample{
		Metric:        b.Names[b.Metric[i]],
		Value:         time.Duration(b.ValueNanos[i]),
		Status:        int(b.Status[i]),
		BytesSent:     b.BytesSent[i],
		BytesReceived: b.BytesReceived[i],
	}
	if t := b.TimeUnixNano[i]; t != 0 {
		sample.Time = time.Unix(0, t)
	}
	if e := b.Error[i]; e != 0 {
		sample.Error = protocols.ErrorKind(b.Names[e-1])
	}
	for r.body < len(b.BodySample) && int(b.BodySample[r.body]) < i {
		r.body++
	}
	if r.body < len(b.BodySample) && int(b.BodySample[r.body]) == i {
		sample.Body = b.Bodies[r.body]
		if len(b.BodySize) > 0 {
			sample.BodySize = b.BodySize[r.body]
		}
	}
	if len(b.FoundSample) > 0 {
		sample.BodyFound = r.found.next(b, i)
	}
	if b.Headers != nil {
		sample.Headers = r.headers.next(b.Headers, i)
	}
	for r.message < len(b.MessageSample) && int(b.MessageSample[r.message]) < i {
		r.message++
	}
	if r.message < len(b.MessageSample) && int(b.MessageSample[r.message]) == i && sample.Error != protocols.ErrNone {
		sample.Message = b.Messages[r.message]
	}
	return sample
}

// foundReader walks a checked SampleBatch's found flags in sample order.
type foundReader struct {
	sample int // the next of b.FoundSample
	flag   int // the first flag of that sample's
}

// next returns the found flags of the batch's i-th sample, a slice of the
// batch's own column, or nil when it has none. Samples are asked for in
// order.
func (f *foundReader) next(b *proto.SampleBatch, i int) []bool {
	for f.sample < len(b.FoundSample) && int(b.FoundSample[f.sample]) < i {
		f.flag += int(b.FoundSize[f.sample])
		f.sample++
	}
	if f.sample == len(b.FoundSample) || int(b.FoundSample[f.sample]) != i {
		return nil
	}
	n := int(b.FoundSize[f.sample])
	return b.Found[f.flag : f.flag+n : f.flag+n]
}

// headerReader walks a checked SampleBatch's headers in sample order.
type headerReader struct {
	sample int // the next of h.Sample
	line   int // the first line of that sample's headers
}

// next returns the headers of the batch's i-th sample, or nil when it has
// none. Samples are asked for in order. A name's values are a slice of the
// batch's own column when its lines are adjacent, as the SDK sends them,
// so a sample costs one map; the batch is the receiver's own, as its
// bodies are.
func (h *headerReader) next(b *proto.SampleHeaders, i int) map[string][]string {
	for h.sample < len(b.Sample) && int(b.Sample[h.sample]) < i {
		h.line += int(b.Lines[h.sample])
		h.sample++
	}
	if h.sample == len(b.Sample) || int(b.Sample[h.sample]) != i {
		return nil
	}
	n := int(b.Lines[h.sample])
	names, values := b.Name[h.line:h.line+n], b.Value[h.line:h.line+n]
	m := make(map[string][]string, n)
	for j := 0; j < n; {
		k := j + 1
		for k < n && names[k] == names[j] {
			k++
		}
		if have, ok := m[names[j]]; ok {
			// The name again, further on: its first run's capacity ends
			// with it, so this copies rather than overwrite a neighbour.
			m[names[j]] = append(have, values[j:k]...)
		} else {
			m[names[j]] = values[j:k:k]
		}
		j = k
	}
	return m
}

// checkSampleBatch checks that b's columns agree, so a broken plugin
// fails the run rather than the host.
func checkSampleBatch(b *proto.SampleBatch) error {
	n := len(b.CallId)
	for _, l := range []int{len(b.Metric), len(b.TimeUnixNano), len(b.ValueNanos), len(b.Status), len(b.Error), len(b.BytesSent), len(b.BytesReceived)} {
		if l != n {
			return fmt.Errorf("columns of %d and %d samples", n, l)
		}
	}
	for i := range n {
		if int(b.Metric[i]) >= len(b.Names) || int(b.Error[i]) > len(b.Names) {
			return fmt.Errorf("sample %d names string %d of %d", i, max(b.Metric[i], b.Error[i]), len(b.Names))
		}
	}
	if len(b.BodySample) != len(b.Bodies) {
		return fmt.Errorf("%d bodies for %d body samples", len(b.Bodies), len(b.BodySample))
	}
	for i, s := range b.BodySample {
		if int(s) >= n || (i > 0 && s <= b.BodySample[i-1]) {
			return fmt.Errorf("body sample %d is out of order or range", s)
		}
	}
	if len(b.BodySize) != 0 && len(b.BodySize) != len(b.Bodies) {
		return fmt.Errorf("%d body sizes for %d bodies", len(b.BodySize), len(b.Bodies))
	}
	if len(b.FoundSample) != len(b.FoundSize) {
		return fmt.Errorf("%d found samples with %d counts", len(b.FoundSample), len(b.FoundSize))
	}
	flags := 0
	for i, s := range b.FoundSample {
		if int(s) >= n || (i > 0 && s <= b.FoundSample[i-1]) {
			return fmt.Errorf("found sample %d is out of order or range", s)
		}
		flags += int(b.FoundSize[i])
	}
	if flags != len(b.Found) {
		return fmt.Errorf("%d found flags counted, %d sent", flags, len(b.Found))
	}
	if h := b.Headers; h != nil {
		if len(h.Sample) != len(h.Lines) || len(h.Name) != len(h.Value) {
			return fmt.Errorf("%d header samples with %d counts, %d header names with %d values",
				len(h.Sample), len(h.Lines), len(h.Name), len(h.Value))
		}
		lines := 0
		for i, s := range h.Sample {
			if int(s) >= n || (i > 0 && s <= h.Sample[i-1]) {
				return fmt.Errorf("header sample %d is out of order or range", s)
			}
			lines += int(h.Lines[i])
		}
		if lines != len(h.Name) {
			return fmt.Errorf("%d header lines counted, %d sent", lines, len(h.Name))
		}
	}
	if len(b.MessageSample) != len(b.Messages) {
		return fmt.Errorf("%d messages for %d message samples", len(b.Messages), len(b.MessageSample))
	}
	for i, s := range b.MessageSample {
		if int(s) >= n || (i > 0 && s <= b.MessageSample[i-1]) {
			return fmt.Errorf("message sample %d is out of order or range", s)
		}
	}
	return nil
}

// watch declares the plugin hung when it sends nothing, not even a
// heartbeat, for HangTimeout while calls are pending. Idle time does not
// count, so a plugin that sent nothing while nothing was asked is fine.
func (c *client) watch() {
	defer c.wg.Done()
	timeout := c.r.opts.HangTimeout
	tick := time.NewTicker(max(timeout/10, time.Millisecond))
	defer tick.Stop()
	lastSeen := time.Now()
	lastCount := c.received.Load()
	for {
		select {
		case <-c.streamCtx.Done():
			return
		case now := <-tick.C:
			count := c.received.Load()
			c.mu.Lock()
			inFlight := len(c.pending)
			c.mu.Unlock()
			if count != lastCount || inFlight == 0 {
				lastSeen, lastCount = now, count
				continue
			}
			if now.Sub(lastSeen) >= timeout {
				c.fail(fmt.Sprintf("%s: no message for %s with %d calls in flight", hangPrefix, timeout, inFlight), nil)
				return
			}
		}
	}
}

// withNulls adds a null for each attribute of the object type ty that the
// object val lacks, so that a caller may leave out the attributes a value
// does not set, as protocols.Attr lets an in-process protocol read them.
// Anything else is returned as is, for the encoder to judge.
func withNulls(val cty.Value, ty cty.Type) cty.Value {
	if !ty.IsObjectType() || val.IsNull() || !val.IsKnown() || !val.Type().IsObjectType() {
		return val
	}
	attrs := val.AsValueMap()
	if attrs == nil {
		attrs = make(map[string]cty.Value, len(ty.AttributeTypes()))
	}
	added := false
	for name, at := range ty.AttributeTypes() {
		if _, ok := attrs[name]; !ok {
			attrs[name] = cty.NullVal(at)
			added = true
		}
	}
	if !added {
		return val
	}
	return cty.ObjectVal(attrs)
}

// nullIfNil turns the zero cty.Value, which a caller may pass for a
// request without attributes, into a null of the schema's type.
func nullIfNil(v cty.Value, ty cty.Type) cty.Value {
	if v.Type() == cty.NilType {
		return cty.NullVal(ty)
	}
	return v
}

// maxYields bounds how long gather keeps collecting.
const maxYields = 16

// gather lets the goroutines that are ready to queue more do so before a
// batch is sent, and keeps yielding for as long as the queue grows: a busy
// stream sends big batches, a quiet one sends at once, and no timer is
// involved. size reports the queue's length.
func gather(size func() int) {
	n := size()
	for range maxYields {
		runtime.Gosched()
		m := size()
		if m == n {
			return
		}
		n = m
	}
}
