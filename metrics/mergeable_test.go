package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// splitRun records the same samples into one aggregator, and spread over
// n aggregators as n segments would, each flushed over a few intervals.
func splitRun(t *testing.T, n int, samples []Sample) (whole *Aggregator, parts []*Aggregator) {
	t.Helper()
	whole = NewAggregator()
	for range n {
		a := NewAggregator()
		a.KeepPoints(8)
		parts = append(parts, a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, smp := range samples {
		p := parts[rng.IntN(n)]
		whole.Series("s", "r").Record(smp)
		p.Series("s", "r").Record(smp)
		if smp.Metric == MetricRequest {
			whole.Series("s", "r").RecordChecks(1, i%3)
			p.Series("s", "r").RecordChecks(1, i%3)
		}
		if i%100 == 99 { // 50 calls and their ttfb
			for _, p := range parts {
				p.Flush(t0, t0.Add(time.Second))
				p.EndPoint(t0, t0.Add(time.Second), PointLevels{}, false)
			}
		}
	}
	whole.Flush(t0, t0.Add(time.Second))
	for _, p := range parts {
		p.Flush(t0, t0.Add(time.Second))
		p.EndPoint(t0, t0.Add(time.Second), PointLevels{}, true)
	}
	return whole, parts
}

// mixedSamples are request samples with spread latencies, several
// statuses, built-in and plugin error kinds, and a protocol metric.
func mixedSamples(n int) []Sample {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []ErrorKind{"", "", "", ErrTimeout, "redis_moved"}
	statuses := []int{200, 200, 404, 503, 0, 1000}
	var out []Sample
	for range n {
		d := time.Duration(rng.ExpFloat64()*5e6) + 100*time.Microsecond
		out = append(out, req(d, statuses[rng.IntN(len(statuses))], kinds[rng.IntN(len(kinds))], int64(rng.IntN(200)), int64(rng.IntN(5000))))
		out = append(out, Sample{Metric: "ttfb", Value: d / 2})
	}
	return out
}

// mergedFrom folds the parts' totals into a new aggregator, through JSON,
// as hload merge does with the files.
func mergedFrom(t *testing.T, parts []*Aggregator) *Aggregator {
	t.Helper()
	m := NewAggregator()
	for _, p := range parts {
		reqs, flows, _, _, err := p.MergeData(t0)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(reqs)
		if err != nil {
			t.Fatal(err)
		}
		var back []SeriesData
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if err := m.AddTotals(back, flows); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestMergedTotalsEqualOneAggregator: the totals of four segments, merged,
// are those of one aggregator that saw every sample: every counter, and
// every latency figure, percentiles included, exactly.
func TestMergedTotalsEqualOneAggregator(t *testing.T) {
	whole, parts := splitRun(t, 4, mixedSamples(2000))
	m := mergedFrom(t, parts)
	want, wantMetrics := whole.Totals("", "", 10*time.Second)
	got, gotMetrics := m.Totals("", "", 10*time.Second)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged totals\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(gotMetrics, wantMetrics) {
		t.Errorf("merged metrics\n got %+v\nwant %+v", gotMetrics, wantMetrics)
	}
	if want.Count != 2000 || want.Checks.Passed != 2000 {
		t.Fatalf("the reference saw %d calls, %d checks passed; want 2000 of each", want.Count, want.Checks.Passed)
	}
	for _, q := range []float64{50, 75, 95, 99, 99.9} {
		if g, w := m.Quantile("s", "r", "latency", q), whole.Quantile("s", "r", "latency", q); g != w {
			t.Errorf("p%v: merged %v ms, one aggregator %v ms", q, g, w)
		}
	}
}

// TestMergedHistogramEqualsOneHistogram: merging the segments' encoded
// histograms gives the histogram of all the values, bucket for bucket.
func TestMergedHistogramEqualsOneHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all := newHistogram()
	merged := newHistogram()
	for range 3 {
		part := newHistogram()
		for range 1000 {
			v := int64(rng.ExpFloat64()*20000) + 1
			all.RecordValue(v)
			part.RecordValue(v)
		}
		enc, err := EncodeHistogram(part)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeHistogram(enc)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(back)
	}
	if !merged.Equals(all) {
		t.Errorf("merged histogram differs from the histogram of all values: p50 %d/%d, p99 %d/%d, count %d/%d",
			merged.ValueAtQuantile(50), all.ValueAtQuantile(50), merged.ValueAtQuantile(99), all.ValueAtQuantile(99),
			merged.TotalCount(), all.TotalCount())
	}
}

// TestPointsAddUpToTotals: a segment's points, merged pairwise as the run
// grows, hold every call once: their counts add up to the totals, and the
// histograms' counts too.
func TestPointsAddUpToTotals(t *testing.T) {
	_, parts := splitRun(t, 1, mixedSamples(1000))
	reqs, _, points, merged, err := parts[0].MergeData(t0)
	if err != nil {
		t.Fatal(err)
	}
	// 21 intervals (20 of 50 calls and the final one) in at most 8 points.
	if len(points) > 8 || merged < 4 {
		t.Errorf("%d points of %d intervals each; want at most 8, of 4 or more", len(points), merged)
	}
	var count, intervals, latencies int64
	for _, p := range points {
		intervals += int64(p.Intervals)
		for _, d := range p.Requests {
			count += d.Count
			h, err := hdr.DecodePacked([]byte(d.Latency))
			if err != nil {
				t.Fatal(err)
			}
			latencies += h.TotalCount()
		}
	}
	if count != reqs[0].Count || latencies != reqs[0].Count || intervals != 21 {
		t.Errorf("points hold %d calls, %d latencies, %d intervals; want %d, %d, 21", count, latencies, intervals, reqs[0].Count, reqs[0].Count)
	}
}

// TestCountersAdd: every counter of SeriesData adds into the merged
// figures: statuses inside and outside the array, built-in and other
// error kinds, bytes, checks.
func TestCountersAdd(t *testing.T) {
	a := SeriesData{Scenario: "s", Name: "r", Count: 5, Errors: 3, BytesSent: 10, BytesReceived: 100,
		Status: map[string]int64{"200": 2, "1000": 3}, ErrorsByKind: map[string]int64{"timeout": 1, "redis_moved": 2},
		ChecksPassed: 4, ChecksFailed: 1}
	b := SeriesData{Scenario: "s", Name: "r", Count: 7, Errors: 1, BytesSent: 20, BytesReceived: 200,
		Status: map[string]int64{"200": 6, "503": 1}, ErrorsByKind: map[string]int64{"redis_moved": 1},
		ChecksPassed: 6, ChecksFailed: 2}
	m := NewAggregator()
	if err := m.AddTotals([]SeriesData{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := m.Totals("s", "r", 2*time.Second)
	want := RequestFigures{Count: 12, Errors: 4, ErrorRate: 4.0 / 12, RPS: 6, BytesSent: 30, BytesReceived: 300,
		Status: map[string]int64{"200": 8, "503": 1, "1000": 3}, ErrorsByKind: map[string]int64{"timeout": 1, "redis_moved": 3},
		Checks: ChecksFigures{Passed: 10, Failed: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("added counters\n got %+v\nwant %+v", got, want)
	}
	if err := m.AddTotals([]SeriesData{{Scenario: "s", Name: "r", Status: map[string]int64{"OK": 1}}}, nil); err == nil {
		t.Error("a status that is not a number was accepted")
	}
}

// TestMergeableSizeOfLongRun measures the mergeable section of a 1-hour
// run at 1 s intervals with 50 requests of 20 calls/s each, with a ttfb
// per call: 56 points of 64 intervals (what MergePoints leaves of 3,600
// intervals), each point's histograms holding 1,280 calls per request. It
// keeps the export's size in check: the section must stay a few MB.
func TestMergeableSizeOfLongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("records 3.6 million calls")
	}
	const requests, points, perPoint = 50, 56, 1280
	a := NewAggregator()
	a.KeepPoints(MergePoints)
	rng := rand.New(rand.NewPCG(7, 8))
	series := make([]*Series, requests)
	for i := range series {
		series[i] = a.Series("s", fmt.Sprintf("request-%02d", i))
	}
	at := t0
	for range points {
		for _, s := range series {
			for range perPoint {
				d := time.Duration(math.Exp(rng.NormFloat64()*0.6+math.Log(20e3))) * time.Microsecond
				s.Record(req(d, 200, "", 300, 2000))
				s.Record(Sample{Metric: "ttfb", Value: d * 9 / 10})
			}
		}
		// One flush per point: the points hold what 64 intervals would.
		a.Flush(at, at.Add(64*time.Second))
		a.EndPoint(at, at.Add(64*time.Second), PointLevels{VUs: map[string]int{"s": 100}}, false)
		at = at.Add(64 * time.Second)
	}
	reqs, flows, pts, merged, err := a.MergeData(t0)
	if err != nil {
		t.Fatal(err)
	}
	m := Mergeable{Format: MergeFormat, Test: "sha256:x", Segment: "1/1", IntervalS: 1, Merged: merged,
		Points: pts, Requests: reqs, Flows: flows}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var pointsSize, totalsSize int
	for _, p := range pts {
		b, _ := json.Marshal(p)
		pointsSize += len(b)
	}
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		totalsSize += len(b)
	}
	t.Logf("mergeable section of a 1-hour run with %d requests: %.2f MB indented (%d points: %.2f MB compact; run totals: %.0f KB compact)",
		requests, float64(len(data))/1e6, len(pts), float64(pointsSize)/1e6, float64(totalsSize)/1e3)
	if len(pts) != points {
		t.Errorf("%d points kept; want %d", len(pts), points)
	}
	if len(data) > 6<<20 {
		t.Errorf("the mergeable section of a 1-hour run takes %.1f MB", float64(len(data))/1e6)
	}
}

// BenchmarkFlushKeepingPoints is BenchmarkFlush with the points kept for
// the mergeable section, as every run keeps them: the cost of one
// interval's point, beside the Flush it follows.
func BenchmarkFlushKeepingPoints(b *testing.B) {
	a := NewAggregator()
	a.KeepPoints(MergePoints)
	s := a.Series("sc", "rq")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x := uint64(1)
		for range 10000 {
			s.Record(benchSample(&x))
		}
		b.StartTimer()
		a.Flush(t0, t0.Add(time.Second))
		a.EndPoint(t0, t0.Add(time.Second), PointLevels{}, false)
	}
}
