package influxdb_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hload/hload/protocols/amqp"
	"github.com/hload/hload/protocols/sse"
)

// TestDashboardNamesEmittedMetrics: every protocol metric a panel of the
// example dashboard selects by name is one the protocols emit. A panel
// once selected amqp_publish, which no protocol emits, and was always
// empty: the sink's tests, whose fake protocol emitted that name, could
// not see it.
func TestDashboardNamesEmittedMetrics(t *testing.T) {
	emitted := map[string]bool{}
	for _, m := range []string{
		amqp.MetricConfirmed, amqp.MetricNacked, amqp.MetricReturned, amqp.MetricConsumed,
		amqp.MetricConsumedUntimed, amqp.MetricRedelivered, amqp.MetricConnectionLost,
		amqp.MetricReconnected, amqp.MetricBlocked,
		sse.MetricConnect, sse.MetricFirstEvent, sse.MetricEventGap, sse.MetricEvents,
		sse.MetricDeliveryLatency, sse.MetricEventsMissed, sse.MetricEventsLate,
		sse.MetricEventsDuplicate, sse.MetricExtractErrors, sse.MetricMalformed, sse.MetricReconnects,
	} {
		emitted[m] = true
	}
	data, err := os.ReadFile("../../examples/grafana/dashboards/hload.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	// r.metric == "name", and r.metric =~ /^prefix_(a|b)$/.
	exact := regexp.MustCompile(`r\.metric == "([a-z0-9_]+)"`)
	alts := regexp.MustCompile(`r\.metric =~ /\^([a-z0-9_]+)\(([a-z0-9_|]+)\)\$/`)
	named := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			var names []string
			for _, m := range exact.FindAllStringSubmatch(q.Query, -1) {
				names = append(names, m[1])
			}
			for _, m := range alts.FindAllStringSubmatch(q.Query, -1) {
				for _, alt := range strings.Split(m[2], "|") {
					names = append(names, m[1]+alt)
				}
			}
			for _, n := range names {
				named++
				if !emitted[n] {
					t.Errorf("panel %q selects metric %q, which no protocol emits", p.Title, n)
				}
			}
		}
	}
	if named < 5 {
		t.Errorf("found %d metric names in the dashboard's queries; the patterns no longer match its queries", named)
	}
	t.Logf("%d metric names in the dashboard's queries, each emitted by a protocol", named)
}
