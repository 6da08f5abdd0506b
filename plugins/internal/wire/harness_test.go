package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// fake is an in-test protocol whose Do is the test's function.
type fake struct {
	do func(ctx context.Context, call protocols.Call, emit func(protocols.Sample))

	mu      sync.Mutex
	targets []cty.Value
	ledgers []*delivery.Ledger // what each Open's context carried
	closed  int
}

var fakeInfo = protocols.Info{
	Name:    "fake",
	Version: "1.2.3",
	TargetSpec: hcldec.ObjectSpec{
		"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
		"options": &hcldec.AttrSpec{Name: "options", Type: cty.Map(cty.String)},
	},
	RequestSpec: hcldec.ObjectSpec{
		"path":    &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"headers": &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"json":    &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
	},
}

func (f *fake) Describe() protocols.Info { return fakeInfo }

func (f *fake) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets = append(f.targets, target)
	f.ledgers = append(f.ledgers, delivery.LedgerFrom(ctx))
	return fakeClient{f}, nil
}

type fakeClient struct{ f *fake }

func (c fakeClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.f.do(ctx, call, emit)
}

func (c fakeClient) Close() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.closed++
	return nil
}

var testTarget = cty.ObjectVal(map[string]cty.Value{
	"address": cty.StringVal("127.0.0.1:6379"),
	"options": cty.MapVal(map[string]cty.Value{"db": cty.StringVal("2")}),
})

func request(path string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"path":    cty.StringVal(path),
		"headers": cty.NullVal(cty.Map(cty.String)),
		"json":    cty.NullVal(cty.DynamicPseudoType),
	})
}

// okSample is what a trivial protocol emits.
func okSample(emit func(protocols.Sample)) {
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: 200})
}

// open starts a harness around do and opens a client on it; both close at
// the end of the test.
func open(t testing.TB, opts RemoteOptions, do func(context.Context, protocols.Call, func(protocols.Sample))) (*Harness, protocols.Client, *fake) {
	t.Helper()
	f := &fake{do: do}
	h, err := newHarness(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	c, err := h.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return h, c, f
}

// collect runs one Do and returns its samples, copying bodies, which are
// valid only during emit.
func collect(ctx context.Context, c protocols.Client, call protocols.Call) []protocols.Sample {
	var got []protocols.Sample
	c.Do(ctx, call, func(s protocols.Sample) {
		if s.Body != nil {
			s.Body = append([]byte(nil), s.Body...)
		}
		got = append(got, s)
	})
	return got
}

func TestHarnessDescribe(t *testing.T) {
	h, err := newHarness(&fake{}, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	info := h.Describe()
	if info.Name != "fake" || info.Version != "1.2.3" || h.SDKVersion() != SDKVersion {
		t.Errorf("got %q %q sdk %q", info.Name, info.Version, h.SDKVersion())
	}
	if !hcldec.ImpliedType(info.TargetSpec).Equals(hcldec.ImpliedType(fakeInfo.TargetSpec)) ||
		!hcldec.ImpliedType(info.RequestSpec).Equals(hcldec.ImpliedType(fakeInfo.RequestSpec)) {
		t.Errorf("schemas changed: %#v", info)
	}
	if !info.TargetSpec["address"].(*hcldec.AttrSpec).Required {
		t.Error("address lost Required")
	}
}

func TestHarnessValues(t *testing.T) {
	var got protocols.Call
	_, c, f := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		got = call
		okSample(emit)
	})
	if len(f.targets) != 1 || !f.targets[0].RawEquals(testTarget) {
		t.Errorf("target: got %#v", f.targets)
	}
	planned := time.Unix(1700000000, 123456789)
	req := cty.ObjectVal(map[string]cty.Value{
		"path":    cty.StringVal("/posts/7"),
		"headers": cty.MapVal(map[string]cty.Value{"Accept": cty.StringVal("application/json")}),
		"json": cty.ObjectVal(map[string]cty.Value{
			"email": cty.StringVal("a@b.c"),
			"n":     cty.NumberIntVal(3),
		}),
	})
	want := protocols.Call{VU: 7, Iteration: 42, Planned: planned, Request: req, KeepBody: true}
	collect(context.Background(), c, want)
	if got.VU != 7 || got.Iteration != 42 || !got.Planned.Equal(planned) || !got.KeepBody {
		t.Errorf("call: got %+v", got)
	}
	if !got.Request.RawEquals(req) {
		t.Errorf("request: got %#v, want %#v", got.Request, req)
	}

	// A zero Planned and a missing Request stay zero and null.
	collect(context.Background(), c, protocols.Call{VU: 1})
	if !got.Planned.IsZero() || !got.Request.IsNull() || got.KeepBody {
		t.Errorf("zero call: got %+v", got)
	}
}

// TestHarnessBatchedCallsKeepTheirSamples runs many calls at once, so
// they share batches both ways: each gets back exactly its own samples,
// errors and bodies, though the wire carries them column by column with
// shared string tables.
func TestHarnessBatchedCallsKeepTheirSamples(t *testing.T) {
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		vu := call.VU
		if vu%3 == 0 {
			emit(protocols.Sample{Metric: protocols.MetricConnect, Value: time.Duration(vu)})
		}
		s := protocols.Sample{Metric: protocols.MetricRequest, Time: time.Unix(0, int64(vu)), Value: time.Duration(vu), Status: int(vu)}
		if vu%2 == 0 {
			s.Body = []byte(fmt.Sprint("body ", vu))
		}
		if vu%5 == 0 {
			s.Error = protocols.ErrTimeout
			if vu%10 == 0 {
				// Only some failed samples have a message, so a call's
				// message must not slide onto a neighbour's sample.
				s.Message = fmt.Sprint("vu ", vu, " timed out")
			}
		} else if vu%7 == 0 {
			s.Message = "not a failure" // dropped: a message goes with an error only
		}
		emit(s)
	})
	const vus = 64
	errs := make(chan string, vus)
	var wg sync.WaitGroup
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range uint64(20) {
				got := collect(context.Background(), c, protocols.Call{VU: vu, Iteration: it, Request: request(fmt.Sprint("/", vu%4)), KeepBody: vu%4 == 0})
				want := 1
				if vu%3 == 0 {
					want = 2
				}
				if len(got) != want {
					errs <- fmt.Sprintf("vu %d: %d samples: %+v", vu, len(got), got)
					return
				}
				last := got[len(got)-1]
				var wantBody, wantErr, wantMessage string
				if vu%4 == 0 {
					wantBody = fmt.Sprint("body ", vu)
				}
				if vu%5 == 0 {
					wantErr = string(protocols.ErrTimeout)
				}
				if vu%10 == 0 {
					wantMessage = fmt.Sprint("vu ", vu, " timed out")
				}
				if last.Metric != protocols.MetricRequest || last.Value != time.Duration(vu) || last.Status != int(vu) ||
					last.Time.UnixNano() != int64(vu) || string(last.Body) != wantBody || string(last.Error) != wantErr ||
					last.Message != wantMessage {
					errs <- fmt.Sprintf("vu %d: got %+v", vu, last)
					return
				}
				if want == 2 && (got[0].Metric != protocols.MetricConnect || got[0].Value != time.Duration(vu) || !got[0].Time.IsZero()) {
					errs <- fmt.Sprintf("vu %d: first sample %+v", vu, got[0])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if rc := c.(*client); rc.sent.Load() >= vus*20 {
		t.Errorf("%d batches for %d calls: the calls never shared a batch", rc.sent.Load(), vus*20)
	}
}

// TestHarnessLongCallStreamsItsSamples: a call that runs on (an SSE
// subscription) has its samples emitted on the host while it runs, in
// order, rather than all when it ends.
func TestHarnessLongCallStreamsItsSamples(t *testing.T) {
	_, c, _ := open(t, RemoteOptions{}, func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		for i := range 3 {
			emit(protocols.Sample{Metric: "event", Time: time.Now(), Value: time.Duration(i)})
			time.Sleep(20 * time.Millisecond)
		}
		<-ctx.Done()
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
	})
	var mu sync.Mutex
	var got []protocols.Sample
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		c.Do(ctx, protocols.Call{VU: 1, Request: request("/")}, func(s protocols.Sample) {
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	for deadline := time.Now().Add(5 * time.Second); count() < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-ended:
		t.Fatal("the call ended before it was cancelled")
	default:
	}
	if n := count(); n != 3 {
		t.Fatalf("%d samples emitted while the call ran, want its 3 events", n)
	}
	cancel()
	<-ended
	if len(got) != 4 || got[3].Error != protocols.ErrInterrupted {
		t.Fatalf("got %+v, want 3 events, then the interrupted request", got)
	}
	for i := range 3 {
		if got[i].Metric != "event" || got[i].Value != time.Duration(i) {
			t.Errorf("sample %d = %+v, want event %d", i, got[i], i)
		}
	}
}

// TestHarnessScenarioEndingCrossesTheWire: a call held until its
// scenario ends (protocols.Ending, as an SSE subscription is) ends when the
// host's ending channel closes, and only then; each scenario's ending is
// its own, and a call without one sees none.
func TestHarnessScenarioEndingCrossesTheWire(t *testing.T) {
	_, c, _ := open(t, RemoteOptions{}, func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		ending := protocols.Ending(ctx)
		if ending == nil {
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Status: 204})
			return
		}
		select {
		case <-ending:
			okSample(emit)
		case <-ctx.Done():
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second := make(chan struct{}), make(chan struct{})
	type result struct {
		name string
		s    protocols.Sample
	}
	results := make(chan result, 3)
	do := func(name string, ctx context.Context) {
		go func() {
			var got protocols.Sample
			c.Do(ctx, protocols.Call{VU: 1, Request: request("/")}, func(s protocols.Sample) { got = s })
			results <- result{name, got}
		}()
	}
	do("a", protocols.WithEnding(ctx, first))
	do("b", protocols.WithEnding(ctx, first))
	do("c", protocols.WithEnding(ctx, second))
	if got := collect(ctx, c, protocols.Call{VU: 2, Request: request("/")}); len(got) != 1 || got[0].Status != 204 {
		t.Fatalf("a call without an ending: got %+v, want it to see none", got)
	}
	select {
	case r := <-results:
		t.Fatalf("call %s ended before its scenario did: %+v", r.name, r.s)
	case <-time.After(50 * time.Millisecond):
	}
	close(first)
	for range 2 {
		select {
		case r := <-results:
			if r.name == "c" || r.s.Status != 200 || r.s.Error != "" {
				t.Errorf("call %s: %+v, want a and b to end as successes", r.name, r.s)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the first scenario's calls did not end when it did")
		}
	}
	select {
	case r := <-results:
		t.Fatalf("call %s ended before its scenario did: %+v", r.name, r.s)
	case <-time.After(50 * time.Millisecond):
	}
	close(second)
	select {
	case r := <-results:
		if r.name != "c" || r.s.Status != 200 {
			t.Errorf("call %s: %+v, want c to end as a success", r.name, r.s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second scenario's call did not end when it did")
	}
}

// TestHarnessCancelIsPerCall: cancelling one call ends that call only:
// another VU's call runs on, and the next call of the cancelled VU starts
// afresh. (The plugin keeps a context per VU from call to call.)
func TestHarnessCancelIsPerCall(t *testing.T) {
	release := make(chan struct{})
	_, c, _ := open(t, RemoteOptions{}, func(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
		if call.Iteration > 0 {
			if ctx.Err() != nil {
				emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
				return
			}
			okSample(emit)
			return
		}
		select {
		case <-release:
			okSample(emit)
		case <-ctx.Done():
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
		}
	})
	other := make(chan []protocols.Sample, 1)
	go func() { other <- collect(context.Background(), c, protocols.Call{VU: 2, Request: request("/")}) }()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if got := collect(ctx, c, protocols.Call{VU: 1, Request: request("/")}); len(got) != 1 || got[0].Error != protocols.ErrInterrupted {
		t.Fatalf("the cancelled call: %+v, want interrupted", got)
	}
	if got := collect(context.Background(), c, protocols.Call{VU: 1, Iteration: 1, Request: request("/")}); len(got) != 1 || got[0].Error != "" {
		t.Errorf("the cancelled VU's next call: %+v, want a success", got)
	}
	select {
	case got := <-other:
		t.Fatalf("the other VU's call ended with the cancel: %+v", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if got := <-other; len(got) != 1 || got[0].Error != "" {
		t.Errorf("the other VU's call: %+v, want a success", got)
	}
}

func TestHarnessSamples(t *testing.T) {
	now := time.Unix(1700000000, 987654321)
	body := []byte(`{"ok":true}`)
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		emit(protocols.Sample{Metric: protocols.MetricConnect, Time: now, Value: 3 * time.Millisecond})
		emit(protocols.Sample{Metric: protocols.MetricTTFB, Time: now, Value: 5 * time.Millisecond})
		b := append([]byte(nil), body...)
		emit(protocols.Sample{
			Metric: protocols.MetricRequest, Time: now, Value: 7*time.Millisecond + 13,
			Status: 503, Error: protocols.ErrTimeout, BytesSent: 120, BytesReceived: 4096, Body: b,
		})
		clear(b) // the body is only valid during emit
		emit(protocols.Sample{Metric: "custom"})
	})
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_body=%v", keep), func(t *testing.T) {
			got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/"), KeepBody: keep})
			var wantBody []byte
			if keep {
				wantBody = body
			}
			want := []protocols.Sample{
				{Metric: protocols.MetricConnect, Time: now, Value: 3 * time.Millisecond},
				{Metric: protocols.MetricTTFB, Time: now, Value: 5 * time.Millisecond},
				{Metric: protocols.MetricRequest, Time: now, Value: 7*time.Millisecond + 13,
					Status: 503, Error: protocols.ErrTimeout, BytesSent: 120, BytesReceived: 4096, Body: wantBody},
				{Metric: "custom"},
			}
			if len(got) != len(want) {
				t.Fatalf("got %d samples: %+v", len(got), got)
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Metric != w.Metric || !g.Time.Equal(w.Time) || g.Value != w.Value || g.Status != w.Status ||
					g.Error != w.Error || g.BytesSent != w.BytesSent || g.BytesReceived != w.BytesReceived ||
					string(g.Body) != string(w.Body) || (g.Body == nil) != (w.Body == nil) {
					t.Errorf("sample %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestHarnessConcurrent(t *testing.T) {
	const vus, calls = 16, 500
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		// The samples say which call they belong to, so a mix-up shows.
		path := call.Request.GetAttr("path").AsString()
		emit(protocols.Sample{Metric: "echo:" + path, Value: time.Duration(call.VU)})
		emit(protocols.Sample{Metric: protocols.MetricRequest, Value: time.Duration(call.Iteration), Status: int(call.VU)})
	})
	var wg sync.WaitGroup
	errs := make(chan error, vus)
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := uint64(0); it < calls; it++ {
				path := fmt.Sprintf("/%d/%d", vu, it)
				got := collect(context.Background(), c, protocols.Call{VU: vu, Iteration: it, Request: request(path)})
				if len(got) != 2 || got[0].Metric != "echo:"+path || got[0].Value != time.Duration(vu) ||
					got[1].Metric != protocols.MetricRequest || got[1].Value != time.Duration(it) || got[1].Status != int(vu) {
					errs <- fmt.Errorf("vu %d iteration %d: got %+v", vu, it, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestHarnessCancel(t *testing.T) {
	t.Run("protocol honours the cancel", func(t *testing.T) {
		_, c, _ := open(t, RemoteOptions{}, func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			<-ctx.Done()
			emit(protocols.Sample{Metric: protocols.MetricRequest, Error: protocols.ErrInterrupted, Status: 499})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got := collect(ctx, c, protocols.Call{VU: 1, Request: request("/slow")})
		// The plugin's own sample, not the host's give-up one.
		if len(got) != 1 || got[0].Error != protocols.ErrInterrupted || got[0].Status != 499 {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("protocol ignores the cancel", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		h, c, _ := open(t, RemoteOptions{}, func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			<-release
			okSample(emit)
		})
		h.cancelGrace = 50 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got := collect(ctx, c, protocols.Call{VU: 1, Request: request("/stuck")})
		if len(got) != 1 || got[0].Metric != protocols.MetricRequest || got[0].Error != protocols.ErrInterrupted {
			t.Errorf("got %+v", got)
		}
	})
}

func TestHarnessProtocolFaults(t *testing.T) {
	tests := []struct {
		name string
		do   func(context.Context, protocols.Call, func(protocols.Sample))
		kind protocols.ErrorKind
	}{
		{"panic", func(context.Context, protocols.Call, func(protocols.Sample)) { panic("boom") }, protocols.ErrPanic},
		// The call's request sample was emitted, a success, and then Do
		// panicked: the call is a panic all the same, or hload never
		// warns of it.
		{"panic after the request sample", func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			okSample(emit)
			panic("boom after")
		}, protocols.ErrPanic},
		{"no request sample", func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			emit(protocols.Sample{Metric: protocols.MetricTTFB})
		}, protocols.ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c, _ := open(t, RemoteOptions{}, tt.do)
			for range 2 { // the plugin survives the first
				got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")})
				last := got[len(got)-1]
				if last.Metric != protocols.MetricRequest || last.Error != tt.kind {
					t.Fatalf("got %+v", got)
				}
				if n := requestSamples(got); n != 1 {
					t.Fatalf("%d request samples, want 1: %+v", n, got)
				}
				if tt.kind == protocols.ErrPanic && !strings.HasPrefix(last.Message, "Do panicked: boom") {
					t.Errorf("message %q, want the panic's", last.Message)
				}
			}
			select {
			case err := <-c.(protocols.Failer).Failed():
				t.Errorf("failed: %v", err)
			default:
			}
		})
	}
}

// TestServerMalformedCall speaks the wire directly, as a broken host would.
func TestServerMalformedCall(t *testing.T) {
	h, _, _ := open(t, RemoteOptions{}, func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) })
	pc := proto.NewProtocolClient(h.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := pc.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&proto.CallBatch{ClientId: 999}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil || !strings.Contains(err.Error(), "no client 999") {
		t.Errorf("unknown client: got %v", err)
	}

	b, _ := encodeValue(testTarget, hcldec.ImpliedType(fakeInfo.TargetSpec))
	opened, err := pc.Open(ctx, &proto.OpenRequest{TargetMsgpack: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Open(ctx, &proto.OpenRequest{TargetMsgpack: []byte{0xc1}}); err == nil {
		t.Error("Open took a malformed target")
	}
	stream, err = pc.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = stream.Send(&proto.CallBatch{ClientId: opened.ClientId,
		CallId: []uint64{1, 2}, Vu: []uint64{1, 1}, Iteration: []uint64{0, 1},
		PlannedUnixNano: []int64{0, 0}, KeepBody: []bool{false, false}, Request: []uint32{0, 1}, Ending: []uint32{0, 0},
		Requests: [][]byte{
			{0xc1, 0xff, 0x00},
			{0x93}, // an array for an object, cut short
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Columns that disagree: call 4 has no request.
	err = stream.Send(&proto.CallBatch{
		CallId: []uint64{3, 4}, Vu: []uint64{1, 1}, Iteration: []uint64{2, 3},
		PlannedUnixNano: []int64{0, 0}, KeepBody: []bool{false, false}, Request: []uint32{0, 1}, Ending: []uint32{0, 0},
		Requests: [][]byte{{0x80}},
	})
	if err != nil {
		t.Fatal(err)
	}
	errs := map[uint64]string{}
	done := map[uint64]bool{}
	for len(done) < 4 {
		sb, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range sb.CallId {
			if e := sb.Error[i]; e > 0 {
				errs[id] = sb.Names[e-1]
			}
		}
		for _, id := range sb.Done {
			done[id] = true
		}
	}
	for _, id := range []uint64{1, 2, 3, 4} {
		if errs[id] != string(protocols.ErrProtocol) {
			t.Errorf("call %d: error %q", id, errs[id])
		}
	}
}

// TestServerDuplicateCallID: a second call with the id of one in flight
// fails alone; the first call is neither cancelled nor lost.
func TestServerDuplicateCallID(t *testing.T) {
	release := make(chan struct{})
	h, _, _ := open(t, RemoteOptions{}, func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		select {
		case <-release:
			okSample(emit)
		case <-ctx.Done():
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
		}
	})
	pc := proto.NewProtocolClient(h.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _ := encodeValue(testTarget, hcldec.ImpliedType(fakeInfo.TargetSpec))
	opened, err := pc.Open(ctx, &proto.OpenRequest{TargetMsgpack: b})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := pc.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := encodeValue(request("/a"), hcldec.ImpliedType(fakeInfo.RequestSpec))
	call := func(b *proto.CallBatch) *proto.CallBatch {
		b.CallId, b.Vu, b.Iteration, b.PlannedUnixNano = []uint64{7}, []uint64{1}, []uint64{0}, []int64{0}
		b.KeepBody, b.Request, b.Requests, b.Ending = []bool{false}, []uint32{0}, [][]byte{req}, []uint32{0}
		return b
	}
	if err := stream.Send(call(&proto.CallBatch{ClientId: opened.ClientId})); err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(call(&proto.CallBatch{})); err != nil {
		t.Fatal(err)
	}
	var errs []string
	for dones := 0; dones < 2; {
		sb, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for i := range sb.CallId {
			e := ""
			if k := sb.Error[i]; k > 0 {
				e = sb.Names[k-1]
			}
			errs = append(errs, e)
		}
		for range sb.Done {
			dones++
			if dones == 1 {
				close(release) // the duplicate failed; now let the first end
			}
		}
	}
	if len(errs) != 2 || errs[0] != string(protocols.ErrProtocol) || errs[1] != "" {
		t.Errorf("errors = %q, want the duplicate's %q, then the first call's success", errs, protocols.ErrProtocol)
	}
}

func TestHarnessStreamBreaks(t *testing.T) {
	started := make(chan struct{}, 4)
	ended := make(chan struct{}, 4) // on the plugin's side
	h, c, _ := open(t, RemoteOptions{Name: "mqtt", Stderr: func() []string { return []string{"panic: oops", "goroutine 1"} }},
		func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
		})
	var wg sync.WaitGroup
	results := make(chan []protocols.Sample, 4)
	for vu := uint64(1); vu <= 4; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- collect(context.Background(), c, protocols.Call{VU: vu, Request: request("/")})
		}()
	}
	for range 4 {
		<-started
	}
	h.grpc.Stop() // as if the plugin process died, with its connections
	h.server.closeDirects()

	select {
	case err := <-c.(protocols.Failer).Failed():
		msg := err.Error()
		if !strings.Contains(msg, `plugin "mqtt" exited`) || !strings.Contains(msg, "panic: oops") {
			t.Errorf("error: %s", msg)
		}
		var perr *PluginError
		if !errors.As(err, &perr) || perr.Plugin != "mqtt" || len(perr.Stderr) != 2 {
			t.Errorf("error: %#v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Failed did not fire")
	}
	wg.Wait()
	close(results)
	for got := range results {
		if len(got) != 1 || got[0].Metric != protocols.MetricRequest || got[0].Error != ErrPlugin {
			t.Errorf("pending call: got %+v", got)
		}
	}
	// The plugin cancels the calls it was running when its stream ends.
	for i := range 4 {
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 4 calls still run in the plugin after its stream ended", 4-i)
		}
	}
	got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")})
	if len(got) != 1 || got[0].Error != ErrPlugin {
		t.Errorf("later call: got %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close after failure: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	select {
	case err := <-c.(protocols.Failer).Failed():
		t.Errorf("a second failure: %v", err)
	default:
	}
}

func TestHarnessHang(t *testing.T) {
	h, c, _ := open(t, RemoteOptions{Name: "slowpoke", HangTimeout: 200 * time.Millisecond},
		func(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
			<-ctx.Done()
			okSample(emit)
		})
	h.server.stall.Store(true) // nothing leaves the plugin, not even a heartbeat
	done := make(chan []protocols.Sample)
	go func() { done <- collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")}) }()
	select {
	case err := <-c.(protocols.Failer).Failed():
		want := `plugin "slowpoke" stopped responding: no message for 200ms with 1 calls in flight`
		if err.Error() != want {
			t.Errorf("error: got %q, want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Failed did not fire")
	}
	if got := <-done; len(got) != 1 || got[0].Error != ErrPlugin {
		t.Errorf("pending call: got %+v", got)
	}
}

// TestHarnessHeartbeat: a call slower than the hang timeout is not a hang
// while heartbeats arrive.
func TestHarnessHeartbeat(t *testing.T) {
	f := &fake{do: func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		time.Sleep(300 * time.Millisecond)
		okSample(emit)
	}}
	h, err := newHarness(f, RemoteOptions{HangTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.server.heartbeat = 10 * time.Millisecond // before Open starts a sender
	c, err := h.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")})
	if len(got) != 1 || got[0].Error != protocols.ErrNone {
		t.Errorf("got %+v", got)
	}
	select {
	case err := <-c.(protocols.Failer).Failed():
		t.Errorf("failed: %v", err)
	default:
	}
}

func TestHarnessClose(t *testing.T) {
	h, c, f := open(t, RemoteOptions{}, func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) })
	if got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")}); len(got) != 1 || got[0].Error != "" {
		t.Fatalf("got %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed != 1 {
		t.Errorf("the plugin's client closed %d times", closed)
	}
	got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")})
	if len(got) != 1 || got[0].Error != protocols.ErrInterrupted {
		t.Errorf("Do after Close: got %+v", got)
	}
	select {
	case err := <-c.(protocols.Failer).Failed():
		t.Errorf("failed: %v", err)
	default:
	}
	if err := h.Close(); err != nil {
		t.Error(err)
	}
	if err := h.Close(); err != nil {
		t.Error(err)
	}
}

// gaugeFake's clients hold a level that the test sets, as an SSE client
// holds its open streams.
type gaugeFake struct {
	fake
	level atomic.Int64
}

func (g *gaugeFake) Open(context.Context, cty.Value) (protocols.Client, error) {
	return gaugeClient{g}, nil
}

type gaugeClient struct{ g *gaugeFake }

func (c gaugeClient) Do(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
	okSample(emit)
}
func (c gaugeClient) Close() error { return nil }
func (c gaugeClient) Gauges(report func(string, int64)) {
	report("open_streams", c.g.level.Load())
}

// TestHarnessGauges: a plugin client's gauges reach the host's client
// while no call runs, and follow their changes.
func TestHarnessGauges(t *testing.T) {
	g := &gaugeFake{}
	h, err := newHarness(g, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := h.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gauger, ok := c.(protocols.Gauger)
	if !ok {
		t.Fatal("the host's client is no protocols.Gauger")
	}
	read := func() (int64, bool) {
		var v int64
		seen := false
		gauger.Gauges(func(name string, value int64) {
			if name == "open_streams" {
				v, seen = value, true
			}
		})
		return v, seen
	}
	for _, want := range []int64{7, 3} {
		g.level.Store(want)
		deadline := time.Now().Add(5 * time.Second)
		for {
			if v, ok := read(); ok && v == want {
				break
			}
			if time.Now().After(deadline) {
				v, ok := read()
				t.Fatalf("gauge = %d (reported %v), want %d within 5 s", v, ok, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestHarnessLedgerCrossesTheWire: a subscriber on the plugin's side
// watches a key in the ledger Open's context gave it, and sees the sends
// the host begins and settles in its own ledger afterwards: the failed
// one is not expected, and Settle and Close count the same misses as a
// subscriber in-process, which the same script runs against too. Only
// the isolated path can receive an event before it knows its send; that
// counts as received.
func TestHarnessLedgerCrossesTheWire(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		name := "in-process"
		if isolated {
			name = "isolated"
		}
		t.Run(name, func(t *testing.T) { ledgerScript(t, isolated) })
	}
}

func ledgerScript(t *testing.T, isolated bool) {
	host := delivery.NewLedger()
	watches := make(chan *delivery.Watch)
	release := make(chan struct{})
	f := &fake{}
	// A subscriber: it watches the key its path names, in the ledger of
	// Open's context, hands the watch to the test, and holds until
	// released.
	f.do = func(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
		f.mu.Lock()
		opened := f.ledgers[0]
		f.mu.Unlock()
		if opened == nil || delivery.LedgerFrom(ctx) != opened {
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: "no-ledger"})
			return
		}
		key, _ := protocols.StringAttr(call.Request, "path")
		watches <- opened.Watch(key)
		<-release
		okSample(emit)
	}
	ctx := delivery.WithLedger(context.Background(), host)
	var c protocols.Client
	var err error
	if isolated {
		h, herr := newHarness(f, RemoteOptions{})
		if herr != nil {
			t.Fatal(herr)
		}
		defer h.Close()
		c, err = h.Open(ctx, testTarget)
	} else {
		c, err = f.Open(ctx, testTarget)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if isolated && f.ledgers[0] == host {
		t.Fatal("the plugin's client got the host's ledger itself")
	}

	hostSend := func(id string, ok bool) { host.Begin("k", id).Done(ok) }
	hostSend("before", true) // before the watch: not expected

	results := make(chan []protocols.Sample, 2)
	subscribe := func(key string) *delivery.Watch {
		t.Helper()
		go func() { results <- collect(ctx, c, protocols.Call{VU: 1, Request: request(key)}) }()
		select {
		case w := <-watches:
			return w
		case got := <-results:
			t.Fatalf("the subscriber ended at once: %+v", got)
		case <-time.After(5 * time.Second):
			t.Fatal("the subscriber did not start")
		}
		return nil
	}
	w := subscribe("k")
	probe := subscribe("sync") // never receives: its misses tell what the mirror has
	if isolated {
		waitFollowed(t, c.(*client), "k", "sync")
	}
	// synced waits until the subscribers' ledger has every step the host
	// took so far: the host's steps reach it in order, so once the probe
	// counts the latest sync send missed, the steps before it are there.
	syncs, probeMissed := 0, 0
	synced := func() {
		t.Helper()
		syncs++
		host.Begin("sync", fmt.Sprint(syncs)).Done(true)
		for deadline := time.Now().Add(5 * time.Second); probeMissed < syncs; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the host's sends did not reach the subscriber: the probe counted %d of %d", probeMissed, syncs)
			}
			probeMissed += probe.Settle(time.Now().Add(time.Hour), 0)
		}
	}

	// The event may reach the subscriber before its send reaches the
	// mirror, as an SSE event can beat the host's next batch.
	a := host.Begin("k", "a")
	if got := w.Received([]byte("a")); got != delivery.ReceiptFirst && (!isolated || got != delivery.ReceiptEarly) {
		t.Errorf("Received(a) = %d, want first (or early, isolated)", got)
	}
	a.Done(true)
	hostSend("failed", false) // not received, and not expected
	hostSend("c", true)       // never received: missed
	hostSend("d", true)
	if isolated {
		if got := w.Received([]byte("early")); got != delivery.ReceiptEarly {
			t.Errorf("Received(early) before its send = %d, want early", got)
		}
		hostSend("early", true)
	}
	synced()
	if got := w.Received([]byte("d")); got != delivery.ReceiptFirst {
		t.Errorf("Received(d) = %d, want first", got)
	}
	if got := w.Received([]byte("before")); got != delivery.ReceiptUnknown && (!isolated || got != delivery.ReceiptEarly) {
		t.Errorf("Received(before), sent before the watch, = %d, want unknown (or early, isolated)", got)
	}
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("Settle: missed %d, want 1 (c)", got)
	}
	if got := w.Received([]byte("c")); got != delivery.ReceiptLate {
		t.Errorf("Received(c) after it was counted missed = %d, want late", got)
	}
	hostSend("e", true)              // missed, counted at Close
	inFlight := host.Begin("k", "f") // in flight at Close: not counted
	synced()
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("Close: missed %d, want 1 (e)", got)
	}
	inFlight.Done(true)
	probe.Close(time.Now(), 0)
	close(release)
	for range 2 {
		if got := <-results; len(got) != 1 || got[0].Error != "" {
			t.Errorf("subscriber's samples: %+v", got)
		}
	}

	if !isolated {
		return
	}
	// The stream's end stops the host following: its sends no longer
	// queue for a plugin that is gone.
	rc := c.(*client)
	c.Close()
	hostSend("after", true)
	rc.ledgerMu.Lock()
	follows, steps := len(rc.follows), len(rc.steps)
	rc.ledgerMu.Unlock()
	if follows != 0 || steps != 0 {
		t.Errorf("after Close the host follows %d keys and queued %d steps", follows, steps)
	}
}

// waitFollowed waits until the host's client follows keys in the run's
// ledger for its plugin.
func waitFollowed(t *testing.T, c *client, keys ...string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.ledgerMu.Lock()
		n := 0
		for _, k := range keys {
			if c.follows[k] != nil {
				n++
			}
		}
		c.ledgerMu.Unlock()
		if n == len(keys) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host follows %d of the keys %q", n, keys)
		}
	}
}

// TestHarnessWithoutLedger: with no ledger in the host's Open context, a
// plugin's subscriber still gets a ledger to watch, which expects nothing.
func TestHarnessWithoutLedger(t *testing.T) {
	f := &fake{do: func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) }}
	h, err := newHarness(f, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := h.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := f.ledgers[0].Watch("k")
	w.Received([]byte("x"))
	time.Sleep(20 * time.Millisecond) // the follow request crosses, and is ignored
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 0 {
		t.Errorf("missed %d with no ledger on the host", got)
	}
	if got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")}); len(got) != 1 || got[0].Error != "" {
		t.Errorf("a call after the follow request: %+v", got)
	}
}

// TestCheckLedgerSteps: ledger columns that disagree are refused, so a
// broken host cannot make the plugin index out of range.
func TestCheckLedgerSteps(t *testing.T) {
	good := func() *proto.LedgerSteps {
		return &proto.LedgerSteps{
			Keys: []string{"k"}, Key: []uint32{0, 0}, Number: []uint64{4, 4},
			Kind: []uint32{stepBegin, stepFailed}, BeginId: [][]byte{[]byte("a")}, BeginUnixNano: []int64{1},
		}
	}
	if err := checkLedgerSteps(good()); err != nil {
		t.Fatalf("good steps: %v", err)
	}
	for name, spoil := range map[string]func(l *proto.LedgerSteps){
		"short number column": func(l *proto.LedgerSteps) { l.Number = l.Number[:1] },
		"key out of range":    func(l *proto.LedgerSteps) { l.Key[1] = 1 },
		"unknown kind":        func(l *proto.LedgerSteps) { l.Kind[1] = 7 },
		"id missing":          func(l *proto.LedgerSteps) { l.BeginId = nil },
		"begin too many":      func(l *proto.LedgerSteps) { l.Kind[1] = stepBegin },
	} {
		b := good()
		spoil(b)
		if err := checkLedgerSteps(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestHarnessLargeBatchIsSplit: samples that pile up beyond what gRPC
// takes in one message (4 MiB) reach the host in several batches, in
// order, the call's end last, rather than failing the plugin.
func TestHarnessLargeBatchIsSplit(t *testing.T) {
	const n, size = 100, 64 << 10 // 6.4 MB of bodies
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		body := make([]byte, size)
		for i := range n {
			body[0] = byte(i)
			emit(protocols.Sample{Metric: "event", Time: time.Now(), Value: time.Duration(i), Body: body})
		}
		okSample(emit)
	})
	got := collect(context.Background(), c, protocols.Call{VU: 1, KeepBody: true, Request: request("/")})
	if len(got) != n+1 || got[n].Metric != protocols.MetricRequest || got[n].Error != "" {
		t.Fatalf("%d samples, the last %+v; want %d events, then the request", len(got), got[len(got)-1], n)
	}
	for i := range n {
		if got[i].Value != time.Duration(i) || len(got[i].Body) != size || got[i].Body[0] != byte(i) {
			t.Fatalf("sample %d: value %v, body of %d bytes", i, got[i].Value, len(got[i].Body))
		}
	}
	select {
	case err := <-c.(protocols.Failer).Failed():
		t.Fatalf("the plugin failed: %v", err)
	default:
	}
}

// TestHarnessLedgerBacklogIsSplit: a backlog of ledger steps beyond what
// gRPC takes in one message reaches the plugin over several batches, in
// order, rather than failing the stream.
func TestHarnessLedgerBacklogIsSplit(t *testing.T) {
	host := delivery.NewLedger()
	f := &fake{do: func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) }}
	h, err := newHarness(f, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := h.Open(delivery.WithLedger(context.Background(), host), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := f.ledgers[0].Watch("k")
	rc := c.(*client)
	waitFollowed(t, rc, "k")
	// 6 MB of steps queued at once, as if the sender had been blocked.
	const n = 1500
	id := strings.Repeat("x", 4<<10)
	now := time.Now().UnixNano()
	rc.ledgerMu.Lock()
	for i := range uint64(n) {
		rc.steps = append(rc.steps,
			ledgerStep{key: "k", SendStep: delivery.SendStep{Number: i, ID: fmt.Sprint(i, id)}, at: now},
			ledgerStep{key: "k", SendStep: delivery.SendStep{Number: i, Done: true, OK: true}})
	}
	rc.ledgerMu.Unlock()
	rc.signal()
	missed := 0
	for deadline := time.Now().Add(10 * time.Second); missed < n && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		missed += w.Settle(time.Now().Add(time.Hour), 0)
		select {
		case err := <-rc.Failed():
			t.Fatalf("the stream failed: %v", err)
		default:
		}
	}
	if missed != n {
		t.Fatalf("the plugin's watch settled %d of the %d sends", missed, n)
	}
	if rc.sent.Load() < 6 {
		t.Errorf("%d batches for 6 MB of steps", rc.sent.Load())
	}
}

// requestSamples counts the request samples among got.
func requestSamples(got []protocols.Sample) int {
	n := 0
	for _, s := range got {
		if s.Metric == protocols.MetricRequest {
			n++
		}
	}
	return n
}
