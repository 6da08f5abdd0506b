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

echo "== go test (race detector, short)"
# -short skips only the slow end-to-end runs, which the next step runs in full.
go test -race -short -count=1 -timeout 15m ./...

echo "== go test (full, with timing-sensitive end-to-end runs)"
# -p 1: one package at a time, so a timing test (latency against a 50 ms
# server, ramp tracking) never shares the two cores with another package's
# load test.
go test -p 1 -count=1 -timeout 30m ./...

echo "== fuzz the config loader briefly"
go test ./config -run '^$' -fuzz FuzzParse -fuzztime 20s -fuzzminimizetime 2s

echo "== benchmarks compile and run once"
go test -run '^$' -bench . -benchtime 1x ./... > /dev/null
