package servicetest

import (
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	cases := []struct {
		require, ci string
		want        bool
	}{
		{"", "", false},
		{"", "true", true},
		{"", "1", false},
		{"1", "", true},
		{"yes", "", true},
		{"0", "", false},
		{"false", "", false},
		{"0", "true", false}, // an explicit 0 wins: a developer may run CI's environment by hand
	}
	for _, c := range cases {
		env := map[string]string{RequireVariable: c.require, "CI": c.ci}
		if got := Required(func(k string) string { return env[k] }); got != c.want {
			t.Errorf("%s=%q CI=%q: required %v, want %v", RequireVariable, c.require, c.ci, got, c.want)
		}
	}
}

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = args[0].(string) }
func (r *recorder) Skip(args ...any)  { r.skip = args[0].(string) }

// TestMissingSaysHowToStart: a missing service fails where services are
// required and skips elsewhere, and both messages name the service, what
// is missing and the command that starts it.
func TestMissingSaysHowToStart(t *testing.T) {
	for _, required := range []string{"1", "0"} {
		t.Run(RequireVariable+"="+required, func(t *testing.T) {
			t.Setenv(RequireVariable, required)
			t.Setenv("HLOAD_TEST_UNSET_ADDR", "")
			var r recorder
			if got := RabbitMQ.Env(&r, "HLOAD_TEST_UNSET_ADDR"); got != "" {
				t.Fatalf("Env returned %q for an unset variable", got)
			}
			msg, other := r.fatal, r.skip
			if required == "0" {
				msg, other = r.skip, r.fatal
			}
			if other != "" || msg == "" {
				t.Fatalf("fatal %q, skip %q", r.fatal, r.skip)
			}
			for _, want := range []string{"RabbitMQ is missing: HLOAD_TEST_UNSET_ADDR is not set", `eval "$(scripts/rabbitmq.sh start)"`, "scripts/test.sh"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
		})
	}
}

func TestFile(t *testing.T) {
	t.Setenv(RequireVariable, "1")
	var r recorder
	Chromium.File(&r, "/nonexistent/chromium")
	if !strings.HasPrefix(r.fatal, "Chromium is missing: /nonexistent/chromium is not there. Start it with scripts/chromium.sh") {
		t.Errorf("fatal %q", r.fatal)
	}
	r = recorder{}
	if got := Chromium.File(&r, "servicetest.go"); got != "servicetest.go" || r.fatal != "" || r.skip != "" {
		t.Errorf("a file that is there: %q, fatal %q, skip %q", got, r.fatal, r.skip)
	}
}
