package amqp

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hload/hload/internal/servicetest"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

const publishConsumeTest = `
target "broker" {
  protocol = "amqp"
  url      = "%[1]s"
  channels = 256
  queues   = [{ name = "%[2]s", durable = true }]
}

scenario "publish" {
  executor          = "constant-arrival-rate"
  rate              = %[3]d
  duration          = "%[4]s"
  pre_allocated_vus = 50
  max_vus           = 5000
  request "send" {
    kind        = "publish"
    routing_key = "%[2]s"
    body        = "m-${vu.id}-${vu.iteration}"
    persistent  = true
    confirm     = true
  }
}

scenario "consume" {
  executor     = "iterations"
  vus          = 1
  iterations   = 1
  max_duration = "3m"
  request "receive" {
    kind     = "consume"
    queue    = "%[2]s"
    prefetch = 500
    messages = %[5]d
    duration = "60s"
  }
}
`

// TestPublishConfirmConsumeExact publishes 20,000 persistent messages with
// confirms at 2,000/s while another scenario consumes them, on a real
// RabbitMQ: published == confirmed == consumed, exactly, and each message
// body consumed is one that was confirmed.
func TestPublishConfirmConsumeExact(t *testing.T) {
	url := brokerURL(t)
	if testing.Short() {
		t.Skip("slow: 10 s of load against a real broker")
	}
	const rate, total = 2000, 20000
	r, base := newRecorder()
	protocoltest.Run(t, base, func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		r.reset()
		queue := testQueue(t, url)
		start := time.Now()
		sum := runTest(t, fmt.Sprintf(publishConsumeTest, url, queue, rate, "10s", total), 4*time.Minute, path, r.wrap(p))
		t.Logf("run took %s", time.Since(start).Round(time.Millisecond))

		send := figures(t, sum, "publish", "send")
		recv := figures(t, sum, "consume", "receive")
		if d := sum.Scenarios["publish"].DroppedIterations; d != 0 {
			t.Errorf("dropped iterations = %d; the generator could not keep %d/s", d, rate)
		}
		published := send.Count
		confirmed := sum.Metrics[MetricConfirmed].Count
		consumed := sum.Metrics[MetricConsumed].Count
		t.Logf("published=%d confirmed=%d consumed=%d publish errors=%v status=%v", published, confirmed, consumed, send.ErrorsByKind, send.Status)
		t.Logf("publish latency to confirm: p50=%.2fms p99=%.2fms max=%.2fms", send.Latency.P50, send.Latency.P99, send.Latency.Max)
		e2e := sum.Metrics[MetricConsumed]
		t.Logf("end-to-end latency (publish to consume): p50=%.2fms p99=%.2fms max=%.2fms", e2e.P50, e2e.P99, e2e.Max)

		if published != total || confirmed != total || consumed != total {
			t.Errorf("published=%d confirmed=%d consumed=%d; want all %d", published, confirmed, consumed, total)
		}
		if send.Errors != 0 || send.Status["200"] != total {
			t.Errorf("publish errors=%d status=%v; want none and %d 200s", send.Errors, send.Status, total)
		}
		if recv.Count != 1 || recv.Errors != 0 {
			t.Errorf("consume calls=%d errors=%v; want one that reached its count", recv.Count, recv.ErrorsByKind)
		}
		if n := sum.Metrics[MetricConsumedUntimed].Count; n != 0 {
			t.Errorf("%d consumed messages had no %s header", n, HeaderSentAt)
		}
		if e2e.P50 <= 0 || e2e.P99 < e2e.P50 {
			t.Errorf("end-to-end p50=%v p99=%v; want 0 < p50 <= p99", e2e.P50, e2e.P99)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.confirmed) != total || len(r.consumed) != total {
			t.Errorf("distinct bodies: confirmed=%d consumed=%d; want %d each", len(r.confirmed), len(r.consumed), total)
		}
		for body := range r.consumed {
			if _, ok := r.confirmed[body]; !ok {
				t.Errorf("consumed %q, which was never confirmed", body)
				break
			}
		}
		if n := queueDepth(t, url, queue); n != 0 {
			t.Errorf("%d messages left in the queue; want 0", n)
		}
	})
}

const restartTest = `
target "broker" {
  protocol       = "amqp"
  url            = "%[1]s"
  channels       = 64
  reconnect_wait = "60s"
  queues         = [{ name = "%[2]s", durable = true }]
}

scenario "publish" {
  executor          = "constant-arrival-rate"
  rate              = 200
  duration          = "45s"
  pre_allocated_vus = 20
  max_vus           = 300
  request "send" {
    kind        = "publish"
    routing_key = "%[2]s"
    body        = "m-${vu.id}-${vu.iteration}"
    persistent  = true
    timeout     = "20s"
  }
}

scenario "consume" {
  executor = "constant-vus"
  vus      = 2
  duration = "55s"
  request "receive" {
    kind     = "consume"
    queue    = "%[2]s"
    prefetch = 100
    duration = "2s"
  }
}
`

// TestBrokerRestartMidRun restarts the broker 5 s into a run. The run goes
// on, the failures are counted by kind, and every message confirmed, before
// or after the restart, is consumed by the run: none is lost. Publishing
// lasts 45 s because a restart on a fresh CI machine took 26 s: the run must
// outlast it to confirm messages after it.
func TestBrokerRestartMidRun(t *testing.T) {
	url := brokerURL(t)
	ctl := servicetest.RabbitMQ.Env(t, "HLOAD_RABBITMQ_CTL") // to restart the broker
	if testing.Short() {
		t.Skip("slow: restarts a real broker during a 55 s run")
	}
	r, base := newRecorder()
	protocoltest.Run(t, base, func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		r.reset()
		queue := testQueue(t, url)

		var restartAt, restartDone time.Time
		restarted := make(chan error, 1)
		// A path that fails before the restart waits for it to end, so the
		// broker is not restarted in the middle of the next path.
		finished := make(chan struct{})
		t.Cleanup(func() { <-finished })
		go func() {
			defer close(finished)
			time.Sleep(5 * time.Second)
			restartAt = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, ctl, "restart").CombinedOutput()
			restartDone = time.Now()
			if err != nil {
				err = fmt.Errorf("%s restart: %v\n%s", ctl, err, out)
			}
			restarted <- err
		}()
		sum := runTest(t, fmt.Sprintf(restartTest, url, queue), 4*time.Minute, path, r.wrap(p))
		if err := <-restarted; err != nil {
			t.Fatal(err)
		}
		t.Logf("broker restart took %s", restartDone.Sub(restartAt).Round(time.Millisecond))

		send := figures(t, sum, "publish", "send")
		recv := figures(t, sum, "consume", "receive")
		t.Logf("publish: count=%d errors=%d by kind=%v status=%v dropped=%d", send.Count, send.Errors, send.ErrorsByKind, send.Status, sum.Scenarios["publish"].DroppedIterations)
		t.Logf("consume: calls=%d errors=%d by kind=%v status=%v", recv.Count, recv.Errors, recv.ErrorsByKind, recv.Status)
		for _, m := range []string{MetricConfirmed, MetricConsumed, MetricRedelivered, MetricConnectionLost, MetricReconnected} {
			f := sum.Metrics[m]
			t.Logf("%s: count=%d p50=%.1fms max=%.1fms", m, f.Count, f.P50, f.Max)
		}

		if sum.Metrics[MetricConnectionLost].Count < 1 || sum.Metrics[MetricReconnected].Count < 1 {
			t.Errorf("connection lost %d times, reconnected %d times; want at least once each",
				sum.Metrics[MetricConnectionLost].Count, sum.Metrics[MetricReconnected].Count)
		}
		if send.Errors+recv.Errors == 0 {
			t.Error("no call failed across a broker restart; the failures were not counted")
		}
		for _, f := range []struct {
			name  string
			kinds map[string]int64
		}{{"publish", send.ErrorsByKind}, {"consume", recv.ErrorsByKind}} {
			for k := range f.kinds {
				switch k {
				case string(ErrConnectionLost), string(ErrNotConnected), "interrupted":
				default:
					t.Errorf("%s failed with kind %q; want only connection_lost or not_connected", f.name, k)
				}
			}
		}

		r.mu.Lock()
		defer r.mu.Unlock()
		var before, after int
		var lost []string
		for body, at := range r.confirmed {
			if at.Before(restartAt) {
				before++
			} else if at.After(restartDone) {
				after++
			}
			if r.consumed[body] == 0 {
				lost = append(lost, body)
			}
		}
		t.Logf("confirmed: %d before the restart, %d after it, %d in all; consumed %d distinct", before, after, len(r.confirmed), len(r.consumed))
		if before == 0 || after == 0 {
			t.Errorf("confirmed %d before and %d after the restart (which took %s of the 45 s of publishing); want some of each, or the test shows nothing",
				before, after, restartDone.Sub(restartAt).Round(time.Millisecond))
		}
		if len(lost) > 0 {
			sort.Strings(lost)
			left := drain(t, url, queue)
			t.Errorf("%d confirmed messages were not consumed during the run (first: %s); %d of them are still in the queue",
				len(lost), strings.Join(lost[:min(5, len(lost))], ", "), countIn(lost, left))
		}
	})
}

// drain takes every message left in queue, for the report of a failure.
func drain(t *testing.T, url, queue string) map[string]bool {
	t.Helper()
	left := map[string]bool{}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Logf("drain: %v", err)
		return left
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return left
	}
	for range 1_000_000 {
		d, ok, err := ch.Get(queue, true)
		if err != nil || !ok {
			break
		}
		left[string(d.Body)] = true
	}
	return left
}

func countIn(list []string, set map[string]bool) int {
	n := 0
	for _, s := range list {
		if set[s] {
			n++
		}
	}
	return n
}
