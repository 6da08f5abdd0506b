package wire

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// heartbeatEvery is how long the plugin's sender stays silent before it
// sends an empty heartbeat batch, so the host can tell idle from hung. It is
// well below the host's default hang timeout of 10 s.
const heartbeatEvery = time.Second

// gaugeEvery is how often a client's gauges (protocols.Gauger) go to the
// host: well within the host's 1 s snapshot interval, and an idle stream
// still reports them, as the sender's idle timer fires this often then.
const gaugeEvery = 250 * time.Millisecond

// server is the plugin's end of the wire: it serves impl over gRPC.
type server struct {
	proto.UnimplementedProtocolServer

	impl        protocols.Protocol
	describe    *proto.DescribeResponse
	describeErr error
	targetType  cty.Type
	requestType cty.Type
	// The schemas' defaults, filled in here, on the plugin's side, so that
	// every host, an older one too, gives the protocol the same values,
	// and its validators see them at `hload validate`.
	targetDefaults, requestDefaults defaults
	heartbeat                       time.Duration
	// version is the wire version agreed on: at 2 the server answers as a
	// plugin built before version 3 does (no Prepare, no attribute
	// columns), so that a test plays one with the current code.
	version int

	// stall makes every Run sender stop sending, heartbeats included, so a
	// test can play a hung plugin.
	stall atomic.Bool

	// listen makes the listener of a direct connection (the Direct RPC):
	// listenDirect, or a Harness's in-memory one; nil plays a plugin built
	// before Direct.
	listen func() (directListener, error)

	mu      sync.Mutex
	nextID  uint64
	clients map[uint64]*opened
	directs map[net.Conn]struct{} // the direct connections being served
}

// opened is an opened client with its mirror of the run's ledger and the
// requests the host prepared on it.
type opened struct {
	client protocols.Client
	mirror *mirror

	mu         sync.Mutex
	prepared   map[uint32]preparedRequest
	lastHandle uint32
	// templates are the shapes the host sent (the Template RPC), by
	// handle, made into their templates.
	templates    map[uint32]*pluginTemplate
	lastTemplate uint32
}

// preparedRequest is a request the host sent once (the Prepare RPC),
// decoded, with what the protocol's client made of it (protocols.Preparer;
// nil when it is none or refused).
type preparedRequest struct {
	request  cty.Value
	prepared any
}

func (o *opened) preparedRequest(h uint32) (preparedRequest, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.prepared[h]
	return p, ok
}

func newServer(impl protocols.Protocol, version int) *server {
	info := impl.Describe()
	s := &server{
		impl:        impl,
		targetType:  hcldec.ImpliedType(info.TargetSpec),
		requestType: hcldec.ImpliedType(info.RequestSpec),
		heartbeat:   heartbeatEvery,
		version:     version,
		listen:      listenDirect,
		clients:     make(map[uint64]*opened),
		directs:     make(map[net.Conn]struct{}),
	}
	// Encoded once: a schema the wire cannot carry is the plugin author's
	// bug, reported by Describe to whoever starts the plugin.
	target, err := schemaToProto(info.TargetSpec, info.TargetDocs)
	if err != nil {
		s.describeErr = fmt.Errorf("target schema: %w", err)
		return s
	}
	request, err := schemaToProto(info.RequestSpec, info.RequestDocs)
	if err != nil {
		s.describeErr = fmt.Errorf("request schema: %w", err)
		return s
	}
	s.targetDefaults = newDefaults(info.TargetSpec, info.TargetDocs)
	s.requestDefaults = newDefaults(info.RequestSpec, info.RequestDocs)
	_, validatesTarget := impl.(protocols.TargetValidator)
	_, validatesRequest := impl.(protocols.RequestValidator)
	s.describe = &proto.DescribeResponse{
		Name:             info.Name,
		Version:          info.Version,
		SdkVersion:       SDKVersion,
		TargetSchema:     target,
		RequestSchema:    request,
		Metrics:          info.Metrics,
		Gauges:           info.Gauges,
		ValidatesTarget:  validatesTarget,
		ValidatesRequest: validatesRequest,
	}
	return s
}

func (s *server) Describe(context.Context, *proto.DescribeRequest) (*proto.DescribeResponse, error) {
	if s.describeErr != nil {
		return nil, status.Error(codes.FailedPrecondition, s.describeErr.Error())
	}
	return s.describe, nil
}

// Validate checks a target or a request with the protocol's validator,
// when it has one. A validator that panics is the author's bug; it is
// reported as the value's error rather than taking the plugin down.
func (s *server) Validate(_ context.Context, req *proto.ValidateRequest) (resp *proto.ValidateResponse, err error) {
	ty, defs := s.targetType, s.targetDefaults
	if req.Kind == proto.ValidateRequest_REQUEST {
		ty, defs = s.requestType, s.requestDefaults
	}
	val, err := decodeValue(req.ValueMsgpack, ty)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the value: %v", err)
	}
	val = defs.apply(val)
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "hload plugin: Validate panicked: %v\n%s", p, debug.Stack())
			resp, err = &proto.ValidateResponse{Checked: true, Error: fmt.Sprintf("the plugin's validator panicked: %v", p)}, nil
		}
	}()
	var attr string
	switch req.Kind {
	case proto.ValidateRequest_TARGET:
		v, ok := s.impl.(protocols.TargetValidator)
		if !ok {
			return &proto.ValidateResponse{}, nil
		}
		attr, err = v.ValidateTarget(val)
	case proto.ValidateRequest_REQUEST:
		v, ok := s.impl.(protocols.RequestValidator)
		if !ok {
			return &proto.ValidateResponse{}, nil
		}
		attr, err = v.ValidateRequest(val)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown kind %d", req.Kind)
	}
	resp = &proto.ValidateResponse{Checked: true}
	if err != nil {
		resp.Error, resp.Attribute = err.Error(), attr
	}
	return resp, nil
}

func (s *server) Open(ctx context.Context, req *proto.OpenRequest) (*proto.OpenResponse, error) {
	target, err := decodeValue(req.TargetMsgpack, s.targetType)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the target: %v", err)
	}
	target = s.targetDefaults.apply(target)
	// Each client has a mirror of its own: the keys it watches are asked
	// for on its Run stream.
	m := newMirror()
	client, err := s.impl.Open(delivery.WithLedger(ctx, m.ledger), target)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.clients[id] = &opened{client: client, mirror: m, prepared: make(map[uint32]preparedRequest)}
	s.mu.Unlock()
	bs, ok := client.(protocols.BodySearcher)
	return &proto.OpenResponse{ClientId: id, SearchesBody: ok && bs.SearchesBody()}, nil
}

// Prepare keeps a request the host will refer to by a handle, and has the
// protocol's client prepare it when it can, as the core has an in-process
// client do. The protocol's refusal is not the host's error: the calls
// then go without what it prepared, and Do reports the fault per call as
// it would have in-process.
func (s *server) Prepare(_ context.Context, req *proto.PrepareRequest) (*proto.PrepareResponse, error) {
	o, err := s.openedClient(req.ClientId, 3, "Prepare")
	if err != nil {
		return nil, err
	}
	val, err := decodeValue(req.RequestMsgpack, s.requestType)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the request: %v", err)
	}
	p := preparedRequest{request: s.requestDefaults.apply(val)}
	if preparer, ok := o.client.(protocols.Preparer); ok {
		p.prepared = prepare(preparer, p.request)
	}
	o.mu.Lock()
	o.lastHandle++
	h := o.lastHandle
	o.prepared[h] = p
	o.mu.Unlock()
	return &proto.PrepareResponse{Handle: h}, nil
}

// prepare calls the protocol's Prepare; an error or a panic leaves the
// request unprepared.
func prepare(p protocols.Preparer, request cty.Value) (prepared any) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "hload plugin: Prepare panicked: %v\n%s", r, debug.Stack())
			prepared = nil
		}
	}()
	prepared, err := p.Prepare(request)
	if err != nil {
		return nil
	}
	return prepared
}

// openedClient is the open client id names, for a method the wire has had
// since version since: a plugin built for an earlier version answers as
// one built before the method was.
func (s *server) openedClient(id uint64, since int, method string) (*opened, error) {
	if s.version < since {
		return nil, status.Errorf(codes.Unimplemented, "method %s not implemented", method)
	}
	s.mu.Lock()
	o, ok := s.clients[id]
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no client %d", id)
	}
	return o, nil
}

func (s *server) CloseClient(_ context.Context, req *proto.CloseRequest) (*proto.CloseResponse, error) {
	s.mu.Lock()
	o, ok := s.clients[req.ClientId]
	delete(s.clients, req.ClientId)
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no client %d", req.ClientId)
	}
	if err := o.client.Close(); err != nil {
		return &proto.CloseResponse{Error: err.Error()}, nil
	}
	return &proto.CloseResponse{}, nil
}

// closeAll closes the clients the host left open, when the harness stops.
func (s *server) closeAll() {
	s.mu.Lock()
	clients := s.clients
	s.clients = make(map[uint64]*opened)
	s.mu.Unlock()
	for _, o := range clients {
		o.client.Close()
	}
}

// Direct opens a direct connection for a Run stream (within version 4):
// it listens for one connection, and serves the stream on it as Run does
// once the connection has sent the token it returns.
func (s *server) Direct(context.Context, *proto.DirectRequest) (*proto.DirectResponse, error) {
	if s.version < 4 || s.listen == nil {
		return nil, status.Errorf(codes.Unimplemented, "method Direct not implemented")
	}
	lis, err := s.listen()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "listening for a direct connection: %v", err)
	}
	token := newToken()
	go func() {
		conn, err := acceptDirect(lis, token)
		if err != nil {
			return // the host falls back to Run, or has gone
		}
		s.mu.Lock()
		s.directs[conn] = struct{}{}
		s.mu.Unlock()
		s.serveRun(directSamples{newFrames(conn)})
		conn.Close()
		s.mu.Lock()
		delete(s.directs, conn)
		s.mu.Unlock()
	}()
	addr := lis.Addr()
	return &proto.DirectResponse{Network: addr.Network(), Address: addr.String(), Token: token}, nil
}

// closeDirects closes the direct connections, as the end of the process
// would: a Harness's stop.
func (s *server) closeDirects() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for conn := range s.directs {
		conn.Close()
	}
}

func (s *server) Run(stream proto.Protocol_RunServer) error {
	return s.serveRun(stream)
}

// serveRun serves one Run stream, over gRPC or a direct connection.
func (s *server) serveRun(stream sampleStream) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	s.mu.Lock()
	o, ok := s.clients[first.ClientId]
	s.mu.Unlock()
	if !ok {
		return status.Errorf(codes.NotFound, "no client %d: Open it first", first.ClientId)
	}
	// Not derived from stream.Context(): its long chain of gRPC values is
	// walked by every call's WithCancel and cancel. Recv fails when the
	// stream ends, and then this is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &run{
		s:      s,
		stream: stream,
		opened: o,
		client: o.client,
		mirror: o.mirror,
		// Calls carry the mirror too, as calls in-process carry the run's
		// ledger. A value over Background: deriving a call's cancel from
		// it registers nothing.
		callBase:  delivery.WithLedger(context.Background(), o.mirror.ledger),
		ctx:       ctx,
		calls:     make(map[uint64]*callState),
		requests:  make(map[string]cty.Value),
		prepared:  make(map[uint32]preparedRequest),
		templates: make(map[uint32]*pluginTemplate),
		attrs:     newAttrDecoder(s.requestType),
		endings:   make(map[uint32]*scenarioEnding),
		vus:       make(map[vuKey]*vuContext),
		jobs:      make(chan job),
		wake:      make(chan struct{}, 1),
		senderQ:   make(chan struct{}),
	}
	go r.send()
	o.mirror.attach(r)
	defer o.mirror.detach(r)
	r.handle(first)
	for {
		b, err := stream.Recv()
		if err != nil {
			break
		}
		r.handle(b)
	}
	// The host closed the stream or went away: cancel what still runs.
	// Calls that finish later emit into a buffer nobody sends.
	cancel()
	for _, vc := range r.vus {
		vc.cancel()
	}
	<-r.senderQ
	return nil
}

// run is one Run stream: the calls of one client in flight, and the
// samples waiting to go back.
type run struct {
	s        *server
	stream   sampleStream
	opened   *opened
	client   protocols.Client
	mirror   *mirror
	callBase context.Context // what every call's context derives from
	ctx      context.Context
	// sends are the host's sends replayed into the mirror, waiting for
	// their Done; Run's goroutine only.
	sends map[sendRef]delivery.Pending

	mu       sync.Mutex
	calls    map[uint64]*callState      // in flight, by call id
	requests map[string]cty.Value       // decoded requests by their msgpack; Run's goroutine only
	prepared map[uint32]preparedRequest // the client's, as this stream met them; Run's goroutine only
	// templates are the client's, as this stream met them, and holeSlab
	// what is left of the slab the calls' holes are taken from; Run's
	// goroutine only.
	templates map[uint32]*pluginTemplate
	holeSlab  []cty.Value
	attrs     *attrDecoder               // Run's goroutine only
	endings   map[uint32]*scenarioEnding // by the host's number; Run's goroutine only
	vus       map[vuKey]*vuContext       // Run's goroutine only
	jobs      chan job                   // unbuffered: taken only by an idle worker
	samples   []wireSample               // waiting to be sent
	done      []uint64                   // finished, waiting to be sent
	follows   []string                   // keys to ask the host for, waiting to be sent

	wake    chan struct{} // something is pending; capacity 1 so wakes coalesce
	senderQ chan struct{} // closed when the sender has stopped
}

func (r *run) handle(b *proto.CallBatch) {
	// The host's ledger steps before the calls: the host took them before
	// it sent the batch.
	r.replay(b)
	// Calls before cancels: a cancel may name a call of the same batch.
	v3 := r.s.version >= 3
	if !v3 {
		// A plugin of version 2 knows none of these: the host that speaks
		// it never sends them.
		b.Prepared, b.ByAttribute, b.AttrValue, b.AttrType, b.AttrValues, b.Types = nil, nil, nil, nil, nil, nil
	}
	if r.s.version < 4 {
		// Nor does one of version 3 know the templates.
		b.Template, b.HoleCount, b.HoleType, b.HoleSize, b.HoleData = nil, nil, nil, nil, nil
	}
	if err := checkCallBatch(b, len(r.attrs.schema.names)); err != nil {
		for _, id := range b.CallId {
			r.fail(id, "malformed call batch: "+err.Error())
		}
	} else {
		r.startCalls(b)
	}
	// After the calls: an ending may close in the batch that sends its
	// first call.
	for _, n := range b.Ended {
		r.scenarioEnding(n).close()
	}
	r.cancelCalls(b.Cancel)
}

// startCalls starts each call of a checked batch, with its request
// decoded as it travelled; a call whose request cannot be decoded fails.
func (r *run) startCalls(b *proto.CallBatch) {
	r.attrs.addTypes(b.Types)
	attr := 0 // the first attribute entry of the next call by attribute
	var holes holeReader
	sets := bodyContainsSets(b)
	for i, id := range b.CallId {
		call := batchCall(b, i, sets)
		if err := r.decodeCallRequest(b, i, &attr, &holes, &call); err != nil {
			r.fail(id, fmt.Sprintf("decoding the request: %v", err))
			continue
		}
		r.start(id, call, b.Ending[i])
	}
}

// batchCall returns call i of b, without its request. sets are the
// batch's body_contains sets.
func batchCall(b *proto.CallBatch, i int, sets [][]string) protocols.Call {
	call := protocols.Call{VU: b.Vu[i], Iteration: b.Iteration[i], KeepBody: b.KeepBody[i]}
	// Empty when no call of the batch asks, or from a host built
	// before the column.
	call.KeepHeaders = len(b.KeepHeaders) > 0 && b.KeepHeaders[i]
	if len(b.MaxBody) > 0 {
		call.MaxBody = b.MaxBody[i]
	}
	if len(b.BodyContainsSet) > 0 && b.BodyContainsSet[i] != 0 {
		call.BodyContains = sets[b.BodyContainsSet[i]-1]
	}
	if t := b.PlannedUnixNano[i]; t != 0 {
		call.Planned = time.Unix(0, t)
	}
	return call
}

// decodeCallRequest sets the request of call i of b as it travelled: a
// template's holes, a prepared request, the attributes from attr on, or
// the whole value.
func (r *run) decodeCallRequest(b *proto.CallBatch, i int, attr *int, holes *holeReader, call *protocols.Call) error {
	var err error
	switch {
	case len(b.Template) > 0 && b.Template[i] != 0:
		err = r.templated(b, b.Template[i], holes, call)
	case len(b.Prepared) > 0 && b.Prepared[i] != 0:
		err = r.preparedRequest(b.Prepared[i], call)
	case len(b.ByAttribute) > 0 && b.ByAttribute[i]:
		n := len(r.attrs.schema.names)
		call.Request, err = r.attrs.decode(b.AttrValues, b.AttrValue[*attr:*attr+n], b.AttrType[*attr:*attr+n])
		call.Request = r.s.requestDefaults.apply(call.Request)
		*attr += n
	default:
		// Decoded here rather than on the call's goroutine: the decoder
		// recurses deeply, which would grow every fresh goroutine's
		// stack, and the cache needs no lock on the one receiving
		// goroutine.
		call.Request, err = r.decodeRequest(b.Requests[b.Request[i]])
	}
	return err
}

// cancelCalls cancels the calls the host gave up.
func (r *run) cancelCalls(ids []uint64) {
	for _, id := range ids {
		// The cancel func is read under the lock: once unlocked, the call
		// may finish and its state go back to the pool.
		var cancel context.CancelFunc
		r.mu.Lock()
		if cs := r.calls[id]; cs != nil {
			cancel = cs.vu.cancel
		}
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

// preparedRequest sets a call's request and what the protocol prepared of
// it from the handle the host sent it with.
func (r *run) preparedRequest(h uint32, call *protocols.Call) error {
	p, ok := r.prepared[h]
	if !ok {
		if p, ok = r.opened.preparedRequest(h); !ok {
			return fmt.Errorf("no prepared request %d", h)
		}
		r.prepared[h] = p
	}
	call.Request, call.Prepared = p.request, p.prepared
	return nil
}

// bodyContainsSets returns the sets of substrings of a checked batch, in
// order: slices of its own column, which outlives its calls.
func bodyContainsSets(b *proto.CallBatch) [][]string {
	if len(b.BodyContainsSize) == 0 {
		return nil
	}
	sets := make([][]string, len(b.BodyContainsSize))
	at := 0
	for i, n := range b.BodyContainsSize {
		sets[i] = b.BodyContains[at : at+int(n) : at+int(n)]
		at += int(n)
	}
	return sets
}

// checkCallBatch checks that b's columns agree, so a broken host fails its
// calls rather than the plugin. attrs is the number of the request
// schema's attributes.
func checkCallBatch(b *proto.CallBatch, attrs int) error {
	n := len(b.CallId)
	for _, l := range []int{len(b.Vu), len(b.Iteration), len(b.PlannedUnixNano), len(b.KeepBody), len(b.Request), len(b.Ending)} {
		if l != n {
			return fmt.Errorf("columns of %d and %d calls", n, l)
		}
	}
	if len(b.KeepHeaders) != 0 && len(b.KeepHeaders) != n {
		return fmt.Errorf("keep_headers for %d of %d calls", len(b.KeepHeaders), n)
	}
	if len(b.Prepared) != 0 && len(b.Prepared) != n {
		return fmt.Errorf("prepared for %d of %d calls", len(b.Prepared), n)
	}
	if len(b.ByAttribute) != 0 && len(b.ByAttribute) != n {
		return fmt.Errorf("by_attribute for %d of %d calls", len(b.ByAttribute), n)
	}
	if len(b.MaxBody) != 0 && len(b.MaxBody) != n {
		return fmt.Errorf("max_body for %d of %d calls", len(b.MaxBody), n)
	}
	if len(b.BodyContainsSet) != 0 && len(b.BodyContainsSet) != n {
		return fmt.Errorf("body_contains_set for %d of %d calls", len(b.BodyContainsSet), n)
	}
	strs := 0
	for _, size := range b.BodyContainsSize {
		strs += int(size)
	}
	if strs != len(b.BodyContains) {
		return fmt.Errorf("%d body_contains counted, %d sent", strs, len(b.BodyContains))
	}
	for _, set := range b.BodyContainsSet {
		if int(set) > len(b.BodyContainsSize) {
			return fmt.Errorf("body_contains set %d of %d", set, len(b.BodyContainsSize))
		}
	}
	if err := checkHoles(b); err != nil {
		return err
	}
	byAttr := 0
	for i, req := range b.Request {
		switch {
		case len(b.Template) > 0 && b.Template[i] != 0:
		case len(b.Prepared) > 0 && b.Prepared[i] != 0:
		case len(b.ByAttribute) > 0 && b.ByAttribute[i]:
			byAttr++
		case int(req) >= len(b.Requests):
			return fmt.Errorf("call %d names request %d of %d", b.CallId[i], req, len(b.Requests))
		}
	}
	if len(b.AttrValue) != byAttr*attrs || len(b.AttrType) != len(b.AttrValue) {
		return fmt.Errorf("%d attribute values and %d types for %d calls of %d attributes", len(b.AttrValue), len(b.AttrType), byAttr, attrs)
	}
	for _, v := range b.AttrValue {
		if int(v) >= len(b.AttrValues) {
			return fmt.Errorf("attribute value %d of %d", v, len(b.AttrValues))
		}
	}
	return nil
}

// wireSample is one emitted sample waiting for the sender. Its Body, when
// kept, is its own copy; its Headers are nil, and headers holds a copy of
// them, when kept, as name and value pairs.
type wireSample struct {
	call uint64
	protocols.Sample
	headers []string
}

// callState is one call in flight and its emit; pooled with its bound
// emit func so a call costs no closure allocation. Its samples stay with
// it until it finishes, so a short call's go in one critical section; a
// long call's (an SSE subscription, an AMQP consumer) are swept to the
// sender as it runs on.
type callState struct {
	r           *run
	id          uint64
	keepBody    bool
	keepHeaders bool
	sawRequest  bool // emit's goroutine only
	vu          *vuContext
	emitFn      func(protocols.Sample)
	seen        bool // by a sweep: the next one takes the samples; under r.mu

	mu      sync.Mutex   // emit against a sweep
	samples []wireSample // emitted, not yet handed to the sender
}

// vuContext is the context of one VU's calls, kept from call to call
// until one of them is cancelled. A VU has one call in flight at a time, so
// cancelling the VU's context cancels just that call; and a context per
// call, with the children map net/http's own contexts add to it, showed
// in the profile.
type vuContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// vuKey names a VU's context: a VU number is a scenario's own, and the
// scenario's ending is part of the context.
type vuKey struct {
	vu     uint64
	ending uint32
}

// sweepEvery is how often the sender takes the samples of the calls that
// were already running at the previous sweep. A call that runs longer
// than that shows its samples in the interval they happen, and loses at
// most this much of them if the plugin dies; one that ends sooner sends
// them all at its end.
const sweepEvery = 100 * time.Millisecond

var callStates = sync.Pool{New: func() any {
	cs := new(callState)
	cs.emitFn = cs.emit
	return cs
}}

// scenarioEnding is the plugin's side of a scenario's ending: the channel
// its calls' contexts carry (protocols.Ending), closed when the host says.
type scenarioEnding struct {
	ch     chan struct{}
	closed bool
	// base is the context its calls derive from: callBase carrying ch, made
	// once rather than a value context per call.
	base context.Context
}

func (e *scenarioEnding) close() {
	if !e.closed {
		e.closed = true
		close(e.ch)
	}
}

// scenarioEnding returns the ending numbered n by the host, new or known.
// Run's goroutine only.
func (r *run) scenarioEnding(n uint32) *scenarioEnding {
	e := r.endings[n]
	if e == nil {
		e = &scenarioEnding{ch: make(chan struct{})}
		e.base = protocols.WithEnding(r.callBase, e.ch)
		r.endings[n] = e
	}
	return e
}

// start runs one call, its request decoded, with the number of its
// scenario's ending (0 for none).
func (r *run) start(id uint64, call protocols.Call, ending uint32) {
	r.mu.Lock()
	if _, dup := r.calls[id]; dup {
		r.mu.Unlock()
		// Reported rather than run: the host could not tell the two apart.
		r.fail(id, fmt.Sprintf("call id %d is already in flight", id))
		return
	}
	r.mu.Unlock()
	cs := callStates.Get().(*callState)
	cs.r, cs.id, cs.keepBody, cs.sawRequest, cs.seen = r, id, call.KeepBody, false, false
	cs.keepHeaders = call.KeepHeaders
	// Derived from callBase, which never ends, not from r.ctx: deriving
	// from r.ctx registers every call with the run's context and removes
	// it again, under its lock, which showed in the profile. Run cancels
	// the calls left when it ends.
	key := vuKey{call.VU, ending}
	vu := r.vus[key]
	if vu == nil || vu.ctx.Err() != nil {
		base := r.callBase
		if ending != 0 {
			base = r.scenarioEnding(ending).base
		}
		vu = &vuContext{}
		vu.ctx, vu.cancel = context.WithCancel(base)
		r.vus[key] = vu
	}
	cs.vu = vu
	ctx := vu.ctx
	r.mu.Lock()
	r.calls[id] = cs
	r.mu.Unlock()
	// A call is one VU's request and may block for its whole timeout, so
	// each runs on its own goroutine: an idle worker's when there is one,
	// because a fresh goroutine pays for growing its stack on every call.
	j := job{ctx: ctx, cs: cs, call: call}
	select {
	case r.jobs <- j:
	default:
		go r.work(j)
	}
}

// job is one call for a worker.
type job struct {
	ctx  context.Context
	cs   *callState
	call protocols.Call
}

// work runs j, then the calls handed to it, until the run ends. Workers
// are not retired when idle: there are never more than the most calls in
// flight at once, which is the VUs the host ran at its peak, and an idle
// timer reset on every call cost more than the parked goroutines.
func (r *run) work(j job) {
	for {
		r.do(j.ctx, j.cs, j.call)
		select {
		case j = <-r.jobs:
		case <-r.ctx.Done():
			return
		}
	}
}

// requestCacheSize bounds the decoded requests a run keeps. Requests often
// repeat byte for byte (a constant path), and decoding is the plugin's
// largest cost per call.
const requestCacheSize = 1024

// decodeRequest decodes a request through the run's cache. cty values are
// immutable, so calls may share one.
func (r *run) decodeRequest(b []byte) (cty.Value, error) {
	if v, ok := r.requests[string(b)]; ok {
		return v, nil
	}
	v, err := decodeValue(b, r.s.requestType)
	if err != nil {
		return cty.NilVal, err
	}
	v = r.s.requestDefaults.apply(v) // cached with its defaults
	if len(r.requests) >= requestCacheSize {
		clear(r.requests) // varying requests: start over rather than track age
	}
	r.requests[string(b)] = v
	return v, nil
}

func (r *run) do(ctx context.Context, cs *callState, call protocols.Call) {
	defer func() {
		if p := recover(); p != nil {
			// A panicking protocol costs one call, not the plugin and
			// every VU behind it. The whole stack goes to stderr, which
			// hload shows; the call's sample says where, for hload's
			// warning.
			stack := debug.Stack()
			fmt.Fprintf(os.Stderr, "hload plugin: Do panicked: %v\n%s", p, stack)
			if !cs.sawRequest {
				cs.emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrPanic, Message: panicMessage(p, stack)})
			} else {
				// After its request sample: the call panicked all the same,
				// and hload warns of it only by that sample.
				cs.panicked(panicMessage(p, stack))
			}
		}
		if !cs.sawRequest {
			// The contract is one request sample per call; the host counts
			// requests by it, so a call must never vanish.
			cs.emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrProtocol})
		}
		r.finish(cs)
		cs.r, cs.vu = nil, nil
		callStates.Put(cs)
	}()
	r.client.Do(ctx, call, cs.emitFn)
}

// emit keeps one sample of the call until the call finishes.
func (cs *callState) emit(s protocols.Sample) {
	if s.Metric == protocols.MetricRequest {
		cs.sawRequest = true
	}
	if cs.keepBody && len(s.Body) > 0 {
		// Copied: Body is valid only during emit.
		s.Body = append([]byte(nil), s.Body...)
	} else {
		s.Body, s.BodySize = nil, 0
	}
	if s.BodyFound != nil {
		s.BodyFound = append([]bool(nil), s.BodyFound...) // as Body
	}
	var headers []string
	if cs.keepHeaders && s.Headers != nil {
		// Copied too, as pairs: the map is valid only during emit. An
		// empty set stays a set, apart from none.
		headers = flattenHeaders(s.Headers)
	}
	s.Headers = nil
	cs.mu.Lock()
	cs.samples = append(cs.samples, wireSample{call: cs.id, Sample: s, headers: headers})
	cs.mu.Unlock()
}

// panicked marks the call's request sample, emitted before Do panicked, as
// failed of kind panic with msg, whatever it said: the panic is a bug of
// the protocol, which hload's warning names. A sample a sweep already
// handed to the sender (a call that ran on for a while after emitting it)
// is gone, and the panic is then on the plugin's stderr only.
func (cs *callState) panicked(msg string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i := len(cs.samples) - 1; i >= 0; i-- {
		if s := &cs.samples[i].Sample; s.Metric == protocols.MetricRequest {
			s.Error, s.Message = protocols.ErrPanic, msg
			return
		}
	}
}

// flattenHeaders returns h as name and value pairs, a name's values
// adjacent and in order, in one allocation.
func flattenHeaders(h map[string][]string) []string {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	out := make([]string, 0, 2*n)
	for name, vs := range h {
		for _, v := range vs {
			out = append(out, name, v)
		}
	}
	return out
}

// fail reports a call that could not be run.
func (r *run) fail(id uint64, why string) {
	fmt.Fprintf(os.Stderr, "hload plugin: call %d: %s\n", id, why)
	// Not finish: a duplicate id names a call still in flight, whose
	// cancel must stay in r.calls.
	r.mu.Lock()
	r.samples = append(r.samples, wireSample{call: id, Sample: protocols.Sample{
		Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrProtocol,
	}})
	r.done = append(r.done, id)
	r.mu.Unlock()
	r.signal()
}

// finish hands the call's samples and its end to the sender, in one
// critical section per call.
func (r *run) finish(cs *callState) {
	r.mu.Lock()
	delete(r.calls, cs.id)
	// Under r.mu, which a sweep holds: no lock of cs's own is needed.
	r.samples = append(r.samples, cs.samples...)
	r.done = append(r.done, cs.id)
	r.mu.Unlock()
	clear(cs.samples) // drops the bodies
	cs.samples = cs.samples[:0]
	r.signal()
}

func (r *run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// send is the stream's only sender. It sends whatever is pending as one
// batch as soon as there is anything, so a lightly loaded run waits for no
// timer, and what accumulates during a Send goes in the next batch.
func (r *run) send() {
	defer close(r.senderQ)
	var o outbox
	o.gauger, _ = r.client.(protocols.Gauger)
	quiet := r.s.heartbeat // how long the sender may stay silent
	if o.gauger != nil {
		quiet = min(quiet, gaugeEvery)
	}
	idle := time.NewTimer(quiet)
	defer idle.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	for {
		heartbeat := false
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		case <-idle.C:
			heartbeat = true
		case <-sweep.C:
			r.sweep()
		}
		gather(func() int {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.done)
		})
		if !r.take(&o) && !heartbeat {
			continue
		}
		if !r.awaitStall() {
			return
		}
		if err := r.sendOut(&o); err != nil {
			return // the stream is gone; Run's Recv sees it too
		}
		// Since Go 1.23, Reset also discards a fire that nobody received.
		idle.Reset(quiet)
	}
}

// outbox is the sender's: what it takes from the emitters to send, in
// buffers it swaps with theirs, and the columns it sends them in.
type outbox struct {
	w          sampleColumns
	samples    []wireSample
	done       []uint64
	follows    []string
	gauger     protocols.Gauger // the client's, or nil
	gaugesSent time.Time
}

// take swaps o's buffers with the emitters', so that they append to the
// spare ones during Send, and says whether there is anything to send.
func (r *run) take(o *outbox) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.samples, r.samples = r.samples, o.samples[:0]
	o.done, r.done = r.done, o.done[:0]
	o.follows, r.follows = r.follows, o.follows[:0]
	return len(o.samples) > 0 || len(o.done) > 0 || len(o.follows) > 0
}

// awaitStall waits while a test holds the sender stalled; false when the
// run ended meanwhile.
func (r *run) awaitStall() bool {
	for r.s.stall.Load() {
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// sendOut sends what o took, with the client's gauges when they are due.
// What piled up while the sender could not send (many streams' events, a
// slow host) may exceed what gRPC accepts in one message, so it goes in
// batches of at most maxBatchBytes. The done calls go in the last: a
// call's samples must reach the host before its end.
func (r *run) sendOut(o *outbox) error {
	// Send has marshalled them, or failed: drop the bodies.
	defer clear(o.samples)
	b := &o.w.batch
	for next := 0; ; {
		o.w.reset()
		size := 0
		for next < len(o.samples) && size < maxBatchBytes {
			s := &o.samples[next]
			size += sampleBytes + len(s.Body) + len(s.Message) + headerBytes(s.headers)
			o.w.add(s)
			next++
		}
		last := next == len(o.samples)
		b.Done, b.Follow, b.Gauges, b.Heartbeat = nil, nil, b.Gauges[:0], false
		if last {
			b.Done, b.Follow = o.done, o.follows
			b.Heartbeat = len(o.samples) == 0 && len(o.done) == 0 && len(o.follows) == 0
			if now := time.Now(); o.gauger != nil && now.Sub(o.gaugesSent) >= gaugeEvery {
				o.gaugesSent = now
				o.gauger.Gauges(func(name string, v int64) {
					b.Gauges = append(b.Gauges, &proto.Gauge{Name: name, Value: v})
				})
			}
		}
		if err := r.stream.Send(b); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// maxBatchBytes bounds a SampleBatch's size, well below gRPC's default
// limit of 4 MiB on a received message, and sampleBytes is what a sample
// without a body takes at most in it (eight varint columns).
const (
	maxBatchBytes = 1 << 20
	sampleBytes   = 80
)

// headerBytes is what a sample's kept headers take in a SampleBatch at
// most: their strings, and a few bytes of framing each.
func headerBytes(pairs []string) int {
	if pairs == nil {
		return 0
	}
	n := 8
	for _, s := range pairs {
		n += len(s) + 4
	}
	return n
}

// sweep hands the sender the samples of the calls that were in flight at
// the previous sweep already.
func (r *run) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cs := range r.calls {
		if !cs.seen {
			cs.seen = true
			continue
		}
		cs.mu.Lock()
		r.samples = append(r.samples, cs.samples...)
		clear(cs.samples)
		cs.samples = cs.samples[:0]
		cs.mu.Unlock()
	}
}

// sampleColumns builds a SampleBatch, column by column, reusing its slices
// from one batch to the next.
type sampleColumns struct {
	batch proto.SampleBatch
	// headers holds the kept headers, when a batch has any.
	headers proto.SampleHeaders
}

func (w *sampleColumns) reset() {
	b := &w.batch
	b.CallId, b.Metric, b.TimeUnixNano, b.ValueNanos = b.CallId[:0], b.Metric[:0], b.TimeUnixNano[:0], b.ValueNanos[:0]
	b.Status, b.Error, b.BytesSent, b.BytesReceived = b.Status[:0], b.Error[:0], b.BytesSent[:0], b.BytesReceived[:0]
	b.Names, b.BodySample = b.Names[:0], b.BodySample[:0]
	clear(b.Bodies)
	b.Bodies, b.BodySize = b.Bodies[:0], b.BodySize[:0]
	b.FoundSample, b.FoundSize, b.Found = b.FoundSample[:0], b.FoundSize[:0], b.Found[:0]
	b.MessageSample = b.MessageSample[:0]
	clear(b.Messages)
	b.Messages = b.Messages[:0]
	if b.Headers != nil {
		h := b.Headers
		h.Sample, h.Lines = h.Sample[:0], h.Lines[:0]
		clear(h.Name)
		clear(h.Value)
		h.Name, h.Value = h.Name[:0], h.Value[:0]
		b.Headers = nil
	}
}

func (w *sampleColumns) add(s *wireSample) {
	b := &w.batch
	b.CallId = append(b.CallId, s.call)
	b.Metric = append(b.Metric, w.name(s.Metric))
	b.TimeUnixNano = append(b.TimeUnixNano, unixNano(s.Time))
	b.ValueNanos = append(b.ValueNanos, int64(s.Value))
	b.Status = append(b.Status, int32(s.Status))
	var e uint32
	if s.Error != protocols.ErrNone {
		e = w.name(string(s.Error)) + 1
	}
	b.Error = append(b.Error, e)
	b.BytesSent = append(b.BytesSent, s.BytesSent)
	b.BytesReceived = append(b.BytesReceived, s.BytesReceived)
	if s.Body != nil {
		b.BodySample = append(b.BodySample, uint32(len(b.CallId)-1))
		b.Bodies = append(b.Bodies, s.Body)
		// The sizes start, as a column of the call batch does, at the
		// first body whose size says more than its length.
		if s.BodySize != 0 || len(b.BodySize) > 0 {
			for len(b.BodySize) < len(b.Bodies)-1 {
				b.BodySize = append(b.BodySize, int64(len(b.Bodies[len(b.BodySize)])))
			}
			b.BodySize = append(b.BodySize, s.BodySize)
		}
	}
	if s.BodyFound != nil {
		b.FoundSample = append(b.FoundSample, uint32(len(b.CallId)-1))
		b.FoundSize = append(b.FoundSize, uint32(len(s.BodyFound)))
		b.Found = append(b.Found, s.BodyFound...)
	}
	if s.headers != nil {
		h := &w.headers
		b.Headers = h
		h.Sample = append(h.Sample, uint32(len(b.CallId)-1))
		h.Lines = append(h.Lines, uint32(len(s.headers)/2))
		for i := 0; i < len(s.headers); i += 2 {
			h.Name = append(h.Name, s.headers[i])
			h.Value = append(h.Value, s.headers[i+1])
		}
	}
	if s.Message != "" && s.Error != protocols.ErrNone {
		// A message says why a call failed, so one without an error is dropped, as the
		// contract has it.
		b.MessageSample = append(b.MessageSample, uint32(len(b.CallId)-1))
		b.Messages = append(b.Messages, s.Message)
	}
}

// name returns the index of a metric name or error kind in the batch's
// names. A batch holds a handful, so a scan beats a map.
func (w *sampleColumns) name(n string) uint32 {
	for i, have := range w.batch.Names {
		if have == n {
			return uint32(i)
		}
	}
	w.batch.Names = append(w.batch.Names, n)
	return uint32(len(w.batch.Names) - 1)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
