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

# apt_install installs Debian packages, with the same handling as
# rabbitmq.sh: no prompts, and package lists refreshed once when they are
# missing or name files the mirror no longer has.
apt_install() {
	if [ "$(id -u)" != 0 ]; then
		log "$* not installed and installing needs root: apt-get install -y $*"
		exit 1
	fi
	# One lock for every apt-get of hload's scripts (rabbitmq.sh takes it
	# too): dpkg allows one at a time, and two test runs may both find a
	# tool missing.
	exec 9>>/tmp/hload-apt.lock
	if ! flock -w 900 9; then
		log "waited 900s for another install to finish (/tmp/hload-apt.lock)"
		exit 1
	fi
	local still=() t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || still+=("$t")
	done
	if [ ${#still[@]} = 0 ]; then # installed by the run that held the lock
		exec 9>&-
		return
	fi
	set -- "${still[@]}"
	log "installing $* (apt-get)"
	if ! apt-cache show "$@" >/dev/null 2>&1; then
		timeout 300 apt-get update >&2
	fi
	if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends "$@" >&2; then
		timeout 300 apt-get update >&2
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends "$@" >&2
	fi
	exec 9>&-
}

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v hey >/dev/null 2>&1 || missing+=(hey)
if [ ${#missing[@]} -gt 0 ]; then
	apt_install "${missing[@]}"
fi

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
