#!/usr/bin/env bash
# Installs the load tools the benchmark harness (bench/) measures hload
# against, when they are missing:
#
#   scripts/peers.sh                  # installs what is missing, prints the PATH export
#   eval "$(scripts/peers.sh)"        # the same, and puts vegeta on PATH
#   go run ./bench                    # then measures hload against them
#
# wrk and hey are Debian's packages (apt-get, so it needs root once).
# vegeta is built with `go install ...@v12.13.0` into
# ${XDG_CACHE_HOME:-$HOME/.cache}/hload/bin, outside the repo's go.mod, the
# way influxd.sh builds influxd. That version is the one docs/performance.md
# names.
#
# Idempotent: a tool already there is left alone. Every step is bounded in
# time. Logs go to stderr; stdout carries only the export, for eval.
set -euo pipefail

VEGETA_VERSION=v12.13.0
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hload"
BIN="$CACHE/bin"

log() { echo "peers.sh: $*" >&2; }
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"

apt_install wrk hey || exit 1

if [ ! -x "$BIN/vegeta" ]; then
	log "building vegeta $VEGETA_VERSION into $BIN (once per machine)"
	mkdir -p "$BIN"
	# Outside any module, so the repo's go.mod plays no part; -mod=readonly
	# from the caller would refuse to resolve vegeta's own dependencies.
	(cd "$CACHE" && GOFLAGS=-buildvcs=false GOBIN="$BIN" timeout 600 go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION") >&2
fi
[ -x "$BIN/vegeta" ] || { log "vegeta was not built into $BIN"; exit 1; }

log "wrk: $(command -v wrk), hey: $(command -v hey), vegeta: $BIN/vegeta"
echo "export PATH=\"$BIN:\$PATH\""
