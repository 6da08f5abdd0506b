#!/usr/bin/env bash
# Runs the whole test suite, as README.md and .ci/run say. Every install step
# the tests need belongs in this script, so a fresh clone passes with only Go.
set -euo pipefail
cd "$(dirname "$0")/.."

export GOFLAGS="${GOFLAGS:-} -mod=readonly"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== bench harness: hload against wrk, hey and vegeta, a short smoke run"
# scripts/peers.sh installs the peers when missing (wrk and hey from Debian;
# vegeta with go install, cached in ~/.cache/hload/bin) and prints the PATH
# export. The run fails on a tool that is missing or fails, or on output whose
# figures cannot be read; it never fails on speed, whose ratios it only prints.
peers_env=$(scripts/peers.sh)
eval "$peers_env"
go run ./bench -duration 2s -rounds 1 -require-all

echo "== services: RabbitMQ and InfluxDB 1.8.3 on loopback"
# Real brokers and databases for the AMQP and InfluxDB tests, as users run
# them. The scripts install or build what is missing (rabbitmq-server from
# Debian; influxd with go install, cached in ~/.cache/hload), bind to
# 127.0.0.1 only, and print the exports the tests read. Started side by side,
# because the first build of influxd takes a while; stopped on any exit.
services=$(mktemp -d)
stop_services() {
	scripts/influxd.sh stop >/dev/null 2>&1 || true
	scripts/rabbitmq.sh stop >/dev/null 2>&1 || true
	rm -rf "$services"
}
trap stop_services EXIT
scripts/rabbitmq.sh start >"$services/rabbitmq.env" &
rabbitmq=$!
scripts/influxd.sh start >"$services/influxd.env" &
influxd=$!
wait "$rabbitmq" || { echo "RabbitMQ did not start"; exit 1; }
wait "$influxd" || { echo "InfluxDB did not start"; exit 1; }
. "$services/rabbitmq.env"
. "$services/influxd.env"

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
go test -run '^$' -bench . -benchtime 1x ./... > /dev/null
