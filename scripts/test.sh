#!/usr/bin/env bash
# Runs the whole test suite, as README.md and .ci/run say. Every install step
# the tests need belongs in this script, so a fresh clone passes with only Go.
# Two runs may go at once on one machine: the services each starts are its
# own.
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -mod=readonly"

echo "== installs and services: RabbitMQ, InfluxDB 1.8.3, Redis and Kubernetes on loopback, this run's own"
# Real brokers and databases for the AMQP and InfluxDB tests, as users run
# them. The scripts install or build what is missing (rabbitmq-server from
# Debian; influxd with go install, cached in ~/.cache/hload), and each start
# runs a server of its own: free ports on 127.0.0.1 (scripts/freeport), a
# mktemp folder for its data, and for RabbitMQ a node name and an epmd of
# its own. So two runs of this script on one machine never share or stop
# each other's. Started side by side, because the first build of influxd
# takes a while. On any exit this run stops what it started, by the folders
# its starts printed, and nothing else.
services=$(mktemp -d "${TMPDIR:-/tmp}/hload-test.XXXXXXXXXX")
rabbitmq= influxd= k8s= rabbitmq_dir= influxd_dir=
stop_services() {
	# A start still running (this run was interrupted) ends on SIGTERM,
	# stopping what it launched; a background job ignores SIGINT.
	for job in $rabbitmq $influxd $k8s; do
		kill -TERM "$job" 2>/dev/null || true
		wait "$job" 2>/dev/null || true
	done
	if [ -z "$influxd_dir" ]; then influxd_dir=$(sed -n 's/^export HLOAD_INFLUXD_DIR=//p' "$services/influxd.env" 2>/dev/null || true); fi
	if [ -z "$rabbitmq_dir" ]; then rabbitmq_dir=$(sed -n 's/^export HLOAD_RABBITMQ_DIR=//p' "$services/rabbitmq.env" 2>/dev/null || true); fi
	if [ -n "$influxd_dir" ]; then scripts/influxd.sh stop "$influxd_dir" || true; fi
	if [ -n "$rabbitmq_dir" ]; then scripts/rabbitmq.sh stop "$rabbitmq_dir" || true; fi
	redis_dir=$(sed -n 's/^export HLOAD_REDIS_DIR=//p' "$services/redis.env" 2>/dev/null || true); if [ -n "$redis_dir" ]; then scripts/redis.sh stop "$redis_dir" || true; fi
	k8s_dir=$(sed -n 's/^export HLOAD_K8S_DIR=//p' "$services/k8s.env" 2>/dev/null || true); if [ -n "$k8s_dir" ]; then scripts/k8s.sh stop "$k8s_dir" || true; fi
	rm -rf "$services"
}
trap stop_services EXIT
trap 'exit 130' INT TERM
scripts/chromium.sh # installs Debian's chromium when missing, for the HTML report's browser test
scripts/nginx.sh install # Debian's nginx, which the access-log importer's test starts in front of its demo shop
# scripts/peers.sh installs the bench harness's peers when missing (wrk and
# hey from Debian; vegeta with go install, cached in ~/.cache/hload/bin)
# and prints the PATH export.
peers_env=$(scripts/peers.sh)
eval "$peers_env"
# The browser tests keep their screenshots here, to look at after a run.
export HLOAD_ARTIFACTS="${HLOAD_ARTIFACTS:-$PWD/test-artifacts}"
mkdir -p "$HLOAD_ARTIFACTS"
scripts/rabbitmq.sh start >"$services/rabbitmq.env" &
rabbitmq=$!
scripts/influxd.sh start >"$services/influxd.env" &
influxd=$!
# A Kubernetes control plane for deploy/kubernetes: its first build takes
# about 15 minutes, cached after in ~/.cache/hload/bin like influxd.
scripts/k8s.sh start >"$services/k8s.env" &
k8s=$!
rabbitmq_ok=1 influxd_ok=1 k8s_ok=1
wait "$rabbitmq" || rabbitmq_ok=
wait "$influxd" || influxd_ok=
wait "$k8s" || k8s_ok=
rabbitmq= influxd= k8s=
rabbitmq_dir=$(sed -n 's/^export HLOAD_RABBITMQ_DIR=//p' "$services/rabbitmq.env")
influxd_dir=$(sed -n 's/^export HLOAD_INFLUXD_DIR=//p' "$services/influxd.env")
[ -n "$rabbitmq_ok" ] || { echo "RabbitMQ did not start"; exit 1; }
[ -n "$influxd_ok" ] || { echo "InfluxDB did not start"; exit 1; }
[ -n "$k8s_ok" ] || { echo "Kubernetes did not start"; exit 1; }
. "$services/rabbitmq.env"
. "$services/influxd.env"
. "$services/k8s.env"
scripts/redis.sh start >"$services/redis.env" || { echo "Redis did not start"; exit 1; }; . "$services/redis.env" # for the Redis example plugin's test
# The AMQP and InfluxDB tests fail, instead of skipping, when a service they
# need is missing or does not answer: a broken export above must not turn
# them into silent skips.
export HLOAD_REQUIRE_SERVICES=1

echo "== versions tested against"
# A failure can then be matched to the release that caused it.
scripts/versions.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== bench harness: hload against wrk, hey and vegeta, a short smoke run"
# The run fails on a tool that is missing or fails, or on output whose
# figures cannot be read; it never fails on speed, whose ratios it only prints.
go run ./bench -duration 1s -rounds 1 -require-all

echo "== go test (race detector, short)"
# -short skips only the slow end-to-end runs, which the next step runs in full.
go test -race -short -count=1 -timeout 15m ./...

echo "== go test (full, with timing-sensitive end-to-end runs)"
# -p 1: one package at a time, so a timing test (latency against a 50 ms
# server, ramp tracking) never shares the two cores with another package's
# load test.
go test -p 1 -count=1 -timeout 30m ./...

echo "== fuzz the config loader briefly"
# A count, not a duration: with -fuzztime 20s, Go's fuzzing coordinator
# can fail a busy run with a bare "context deadline exceeded" at the
# deadline, having found nothing. 300000 inputs took 15 s here with another build running.
go test ./config -run '^$' -fuzz FuzzParse -fuzztime 300000x -fuzzminimizetime 2s -timeout 5m

echo "== benchmarks compile and run once"
# The figures are not read here; a failure's or a hang's output is shown.
bench_log=$(mktemp)
if ! go test -run '^$' -bench . -benchtime 1x ./... > "$bench_log" 2>&1; then
	grep -v -E '^(Benchmark|goos:|goarch:|pkg:|cpu:|PASS$|ok )' "$bench_log" >&2 || true
	rm -f "$bench_log"
	exit 1
fi
rm -f "$bench_log"
