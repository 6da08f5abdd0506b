package wire

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// responseOf is what the test protocol answers VU vu: headers that differ
// per VU, a header sent twice, and for every fifth VU an empty set.
func responseOf(vu uint64) (map[string][]string, []byte) {
	if vu%5 == 0 {
		return map[string][]string{}, []byte(fmt.Sprint("body ", vu))
	}
	return map[string][]string{
		"X-Vu":       {fmt.Sprint(vu)},
		"Set-Cookie": {"session=s" + fmt.Sprint(vu), "csrf=c"},
	}, []byte(fmt.Sprint("body ", vu))
}

// copySample copies what is valid only during emit, as a capture reading
// it would keep it.
func copySample(s protocols.Sample) protocols.Sample {
	if s.Body != nil {
		s.Body = append([]byte{}, s.Body...)
	}
	if s.Headers != nil {
		h := make(map[string][]string, len(s.Headers))
		for k, v := range s.Headers {
			h[k] = slices.Clone(v)
		}
		s.Headers = h
	}
	return s
}

// describe tells no headers apart from an empty set.
func describe(h map[string][]string) string {
	if h == nil {
		return "none"
	}
	return fmt.Sprint(h)
}

// TestHarnessHeadersOnlyWhenAsked runs many calls at once, some asking
// for the body, some for the headers, some for both: the plugin's Do sees
// KeepHeaders as the host's call had it, and each call gets back exactly
// its own headers and body when it asked, and none when it did not,
// although the protocol hands both back every time and reuses its map and
// buffer after emit.
func TestHarnessHeadersOnlyWhenAsked(t *testing.T) {
	var mu sync.Mutex
	saw := map[uint64]bool{} // VU -> KeepHeaders as the plugin saw it
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		mu.Lock()
		saw[call.VU] = call.KeepHeaders
		mu.Unlock()
		h, body := responseOf(call.VU)
		emit(protocols.Sample{Metric: protocols.MetricTTFB, Time: time.Now(), Headers: h})
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Status: 200, Body: body, Headers: h})
		// Both are valid only during emit: the plugin must have copied them.
		for k := range h {
			h[k][0] = "reused"
		}
		clear(h)
		clear(body)
	})
	const vus = 60
	errs := make(chan string, vus)
	var wg sync.WaitGroup
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Go(func() {
			keepBody, keepHeaders := vu%2 == 0, vu%3 == 0
			for it := range uint64(10) {
				var got []protocols.Sample
				c.Do(context.Background(), protocols.Call{VU: vu, Iteration: it, Request: request("/"), KeepBody: keepBody, KeepHeaders: keepHeaders},
					func(s protocols.Sample) { got = append(got, copySample(s)) })
				if len(got) != 2 {
					errs <- fmt.Sprintf("vu %d: %d samples", vu, len(got))
					return
				}
				wantHeaders, wantBody := responseOf(vu)
				if !keepHeaders {
					wantHeaders = nil
				}
				if !keepBody {
					wantBody = nil
				}
				for _, s := range got {
					if (s.Headers == nil) != (wantHeaders == nil) || !maps.EqualFunc(s.Headers, wantHeaders, slices.Equal) {
						errs <- fmt.Sprintf("vu %d (keep_headers %v): %s headers %s, want %s", vu, keepHeaders, s.Metric, describe(s.Headers), describe(wantHeaders))
						return
					}
				}
				if r := got[1]; string(r.Body) != string(wantBody) || (r.Body == nil) != (wantBody == nil) {
					errs <- fmt.Sprintf("vu %d (keep_body %v): body %q, want %q", vu, keepBody, r.Body, wantBody)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for vu, keep := range saw {
		if keep != (vu%3 == 0) {
			t.Errorf("vu %d: the plugin saw KeepHeaders %v", vu, keep)
		}
	}
}

// TestKeepHeadersColumn: a CallBatch carries the keep_headers column only
// when one of its calls asks, and then one entry per call.
func TestKeepHeadersColumn(t *testing.T) {
	var w callColumns
	req := []byte{0x80}
	batch := func(keep ...bool) []bool {
		w.reset()
		for i, k := range keep {
			w.add(&pendingCall{id: uint64(i + 1), request: req, keepHeaders: k})
		}
		return w.batch.KeepHeaders
	}
	for _, tc := range []struct {
		keep []bool
		want []bool
	}{
		{[]bool{false, false, false}, nil},
		{[]bool{true}, []bool{true}},
		{[]bool{false, false, true, false}, []bool{false, false, true, false}},
		{[]bool{false, true, false, true}, []bool{false, true, false, true}},
		{[]bool{false}, nil}, // the last batch's column does not linger
	} {
		if got := batch(tc.keep...); len(got) != len(tc.want) || !slices.Equal(got, tc.want) {
			t.Errorf("calls asking %v: column %v, want %v", tc.keep, got, tc.want)
		}
		if n := len(w.batch.KeepBody); n != len(tc.keep) {
			t.Errorf("calls asking %v: keep_body has %d entries", tc.keep, n)
		}
	}
}

// TestServerKeepHeadersOnTheWire speaks the wire directly: headers go back
// only for the calls whose keep_headers is set, and a batch without the
// column, as a host built before it sends, asks for none. A column that
// does not match the calls fails them.
func TestServerKeepHeadersOnTheWire(t *testing.T) {
	var mu sync.Mutex
	saw := map[uint64]bool{} // iteration -> KeepHeaders
	h, _, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		mu.Lock()
		saw[call.Iteration] = call.KeepHeaders
		mu.Unlock()
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Status: 200,
			Headers: map[string][]string{"Set-Cookie": {"a=1", "b=2"}, "X-Id": {fmt.Sprint(call.Iteration)}}})
	})
	pc := proto.NewProtocolClient(h.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tb, _ := encodeValue(testTarget, hcldec.ImpliedType(fakeInfo.TargetSpec))
	opened, err := pc.Open(ctx, &proto.OpenRequest{TargetMsgpack: tb})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := pc.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := encodeValue(request("/"), hcldec.ImpliedType(fakeInfo.RequestSpec))
	calls := func(first uint64, n int, keep []bool) *proto.CallBatch {
		b := &proto.CallBatch{KeepHeaders: keep, Requests: [][]byte{req}}
		for i := range n {
			id := first + uint64(i)
			b.CallId = append(b.CallId, id)
			b.Vu = append(b.Vu, id) // a VU each, so the calls run at once
			b.Iteration = append(b.Iteration, id)
			b.PlannedUnixNano = append(b.PlannedUnixNano, 0)
			b.KeepBody = append(b.KeepBody, false)
			b.Request = append(b.Request, 0)
			b.Ending = append(b.Ending, 0)
		}
		return b
	}
	first := calls(1, 3, nil) // a host before keep_headers
	first.ClientId = opened.ClientId
	for _, b := range []*proto.CallBatch{
		first,
		calls(4, 3, []bool{false, true, false}),
		calls(7, 2, []bool{true}), // one entry for two calls
	} {
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	headers := map[uint64]string{} // call -> its header lines, as sent
	errs := map[uint64]string{}
	done := map[uint64]bool{}
	empty := 0 // batches with a headers message that holds none
	receive := func(calls int) {
		for len(done) < calls {
			sb, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if err := checkSampleBatch(sb); err != nil {
				t.Fatalf("the plugin sent a batch its host refuses: %v", err)
			}
			h := sb.Headers
			if h == nil {
				h = &proto.SampleHeaders{}
			} else if len(h.Sample) == 0 {
				empty++
			}
			line := 0
			for i, s := range h.Sample {
				var lines []string
				for j := line; j < line+int(h.Lines[i]); j++ {
					lines = append(lines, h.Name[j]+": "+h.Value[j])
				}
				line += int(h.Lines[i])
				slices.Sort(lines)
				headers[sb.CallId[s]] = strings.Join(lines, "; ")
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
	}
	receive(8)
	// A call after call 5's headers went: its batch carries none, not even
	// an empty set of them.
	if err := stream.Send(calls(9, 1, nil)); err != nil {
		t.Fatal(err)
	}
	receive(9)
	if empty != 0 {
		t.Errorf("%d batches carried an empty headers message", empty)
	}
	want := map[uint64]string{5: "Set-Cookie: a=1; Set-Cookie: b=2; X-Id: 5"}
	if !maps.Equal(headers, want) {
		t.Errorf("headers sent back: %v, want only call 5's: %v", headers, want)
	}
	for _, id := range []uint64{1, 2, 3, 4, 5, 6, 9} {
		if errs[id] != "" {
			t.Errorf("call %d failed: %s", id, errs[id])
		}
		if saw[id] != (id == 5) {
			t.Errorf("call %d: the plugin saw KeepHeaders %v", id, saw[id])
		}
	}
	for _, id := range []uint64{7, 8} {
		if errs[id] != string(protocols.ErrProtocol) {
			t.Errorf("call %d of a batch with a short keep_headers: error %q, want %q", id, errs[id], protocols.ErrProtocol)
		}
	}
}

// TestSampleBatchHeaders checks the host's reading of the header columns:
// a name's values stay together and in order, a name that comes back
// further on adds its values without touching its neighbour's, an empty
// set is a set, and columns that disagree are refused.
func TestSampleBatchHeaders(t *testing.T) {
	good := func() *proto.SampleBatch {
		return &proto.SampleBatch{
			CallId: []uint64{1, 1, 2, 3}, Metric: []uint32{0, 0, 0, 0}, TimeUnixNano: make([]int64, 4), ValueNanos: make([]int64, 4),
			Status: make([]int32, 4), Error: make([]uint32, 4), BytesSent: make([]int64, 4), BytesReceived: make([]int64, 4),
			Names: []string{"request"},
			Headers: &proto.SampleHeaders{
				Sample: []uint32{1, 2, 3}, Lines: []uint32{4, 0, 1},
				Name:  []string{"A", "A", "B", "A", "C"},
				Value: []string{"a1", "a2", "b1", "a3", "c1"},
			},
		}
	}
	b := good()
	if err := checkSampleBatch(b); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	var r headerReader
	var got []map[string][]string
	for i := range b.CallId {
		got = append(got, r.next(b.Headers, i))
	}
	if got[0] != nil {
		t.Errorf("sample 0 has headers %v", got[0])
	}
	if want := map[string][]string{"A": {"a1", "a2", "a3"}, "B": {"b1"}}; !maps.EqualFunc(got[1], want, slices.Equal) {
		t.Errorf("sample 1: %v, want %v", got[1], want)
	}
	if got[2] == nil || len(got[2]) != 0 {
		t.Errorf("sample 2: %#v, want an empty set", got[2])
	}
	if want := map[string][]string{"C": {"c1"}}; !maps.EqualFunc(got[3], want, slices.Equal) {
		t.Errorf("sample 3: %v, want %v", got[3], want)
	}
	if b.Headers.Value[2] != "b1" {
		t.Errorf("reading A's third value overwrote B's: %q", b.Headers.Value)
	}
	for name, spoil := range map[string]func(b *proto.SampleBatch){
		"a count missing":      func(b *proto.SampleBatch) { b.Headers.Lines = b.Headers.Lines[:2] },
		"a value missing":      func(b *proto.SampleBatch) { b.Headers.Value = b.Headers.Value[:4] },
		"more lines counted":   func(b *proto.SampleBatch) { b.Headers.Lines[2] = 2 },
		"fewer lines":          func(b *proto.SampleBatch) { b.Headers.Lines[0] = 3 },
		"sample out of range":  func(b *proto.SampleBatch) { b.Headers.Sample[2] = 4 },
		"samples out of order": func(b *proto.SampleBatch) { b.Headers.Sample[1], b.Headers.Sample[2] = 3, 2 },
	} {
		b := good()
		spoil(b)
		if err := checkSampleBatch(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
