// Package servicetest holds the one rule for tests that need a real
// service (RabbitMQ, InfluxDB, Redis, Chromium, nginx, Kubernetes): when the service is
// missing, such a test fails where services are required, and skips,
// saying how to start the service, where they are not. scripts/test.sh
// starts every service and requires them, so in CI a missing service is a
// failure, never a skip. It is imported by tests only.
package servicetest

import (
	"os"
	"testing"
)

// Service is a server or program the tests need, and how a developer gets
// it for a test run alone.
type Service struct {
	// Name is what the messages call it.
	Name string
	// Start is the command that starts or installs it.
	Start string
}

// The services hload's tests use. scripts/test.sh runs each Start.
var (
	RabbitMQ = Service{"RabbitMQ", `eval "$(scripts/rabbitmq.sh start)"`}
	InfluxDB = Service{"InfluxDB", `eval "$(scripts/influxd.sh start)"`}
	Redis    = Service{"Redis", `eval "$(scripts/redis.sh start)"`}
	Chromium = Service{"Chromium", `scripts/chromium.sh`}
	// Kubernetes is a control plane of its own (etcd, kube-apiserver,
	// kube-controller-manager) built from the Go module proxy.
	Kubernetes = Service{"Kubernetes", `eval "$(scripts/k8s.sh start)"`}
	// Nginx is installed only: its test starts one in front of the demo
	// shop it started, with scripts/nginx.sh start ADDR.
	Nginx = Service{"nginx", `scripts/nginx.sh install`}
)

// RequireVariable is the environment variable that says whether a missing
// service fails a test.
const RequireVariable = "HLOAD_REQUIRE_SERVICES"

// Required reports whether a missing service fails a test rather than
// skipping it, from the environment getenv reads: HLOAD_REQUIRE_SERVICES
// set to anything but "0" or "false" requires services, "0" or "false"
// does not, and when it is unset, CI=true requires them.
func Required(getenv func(string) string) bool {
	switch v := getenv(RequireVariable); v {
	case "":
		return getenv("CI") == "true"
	case "0", "false":
		return false
	default:
		return true
	}
}

// Missing ends t because what the service needs is missing (what says
// which part: "HLOAD_RABBITMQ_URL is not set"): a failure when services
// are required, else a skip. Both say how to start the service, in one
// message shape for every service.
func (s Service) Missing(t testing.TB, what string) {
	t.Helper()
	msg := s.Name + " is missing: " + what + ". Start it with " + s.Start + ", or run scripts/test.sh, which starts every service"
	if Required(os.Getenv) {
		why := RequireVariable + " is " + quoted(os.Getenv(RequireVariable))
		if os.Getenv(RequireVariable) == "" {
			why = "CI is \"true\""
		}
		t.Fatal(msg + " (" + why + ", so this is a failure)")
	} else {
		t.Skip(msg + " (" + RequireVariable + " is " + quoted(os.Getenv(RequireVariable)) + ", so this test skips)")
	}
}

// Env returns the environment variable name, which the service's start
// exports, or ends t through Missing when it is unset.
func (s Service) Env(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		s.Missing(t, name+" is not set")
	}
	return v
}

// File returns path when it is there, or ends t through Missing.
func (s Service) File(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		s.Missing(t, path+" is not there")
	}
	return path
}

func quoted(v string) string {
	if v == "" {
		return "unset"
	}
	return `"` + v + `"`
}
