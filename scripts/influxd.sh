#!/usr/bin/env bash
# Runs a real InfluxDB 1.8 on loopback for the InfluxDB sink's tests.
#
#   eval "$(scripts/influxd.sh start)"   # builds influxd once, starts it, prints exports
#   go test ./sinks/influxdb/...
#   scripts/influxd.sh stop              # stops it and removes its data
#
#   scripts/influxd.sh restart-stop      # stops the server but keeps its data dir and port
#   scripts/influxd.sh restart-start     # starts it again on the same data dir and port
#   scripts/influxd.sh status            # exit 0 when it answers /ping
#
# influxd is built from source with `go install ...@v1.8.3`, once per machine,
# into ${XDG_CACHE_HOME:-$HOME/.cache}/hload/bin. 1.8 serves the v2 write API
# (/api/v2/write, bucket "db" or "db/rp", org ignored, token "user:password"
# or empty with auth off) and, with flux-enabled, the v2 query API, so the sink
# and the Grafana dashboard's Flux queries both run against it.
#
# Every step is bounded in time. start is idempotent: a server that already
# answers is reused. Nothing is left running after stop.
set -euo pipefail

VERSION=v1.8.3
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hload"
BIN="$CACHE/bin/influxd"
# State lives outside the repo; one server per user and port.
HTTP_PORT="${HLOAD_INFLUXD_PORT:-18086}"
RPC_PORT="$((HTTP_PORT + 1))"
STATE="${HLOAD_INFLUXD_STATE:-${TMPDIR:-/tmp}/hload-influxd-$HTTP_PORT}"
DB="${HLOAD_INFLUX_DB:-hload}"
URL="http://127.0.0.1:$HTTP_PORT"
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

log() { echo "influxd.sh: $*" >&2; }

build() {
	if [ -x "$BIN" ]; then
		return
	fi
	log "building influxd $VERSION into $CACHE/bin (once per machine; takes minutes)"
	mkdir -p "$CACHE/bin"
	# Outside any module, so the repo's go.mod plays no part; -mod=readonly
	# from the caller would refuse to resolve the build's own dependencies.
	(cd "$CACHE" && GOFLAGS=-buildvcs=false GOBIN="$CACHE/bin" go install "github.com/influxdata/influxdb/cmd/influxd@$VERSION") >&2
}

write_config() {
	mkdir -p "$STATE/data" "$STATE/meta" "$STATE/wal"
	cat >"$STATE/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$RPC_PORT"

[meta]
  dir = "$STATE/meta"

[data]
  dir = "$STATE/data"
  wal-dir = "$STATE/wal"
  query-log-enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:$HTTP_PORT"
  auth-enabled = false
  log-enabled = false
  flux-enabled = true

[monitor]
  store-enabled = false

[continuous_queries]
  enabled = false
EOF
}

pid() {
	if [ -f "$STATE/influxd.pid" ]; then
		local p
		p=$(cat "$STATE/influxd.pid")
		if kill -0 "$p" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	fi
	return 1
}

ping() { curl -fsS -o /dev/null --max-time 2 "$URL/ping" 2>/dev/null; }

# wait_ping waits up to 30 s for /ping to answer.
wait_ping() {
	for _ in $(seq 1 150); do
		if ping; then return 0; fi
		if ! pid >/dev/null; then
			log "influxd exited; last lines of $STATE/influxd.log:"
			tail -n 20 "$STATE/influxd.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
	log "influxd did not answer $URL/ping within 30s"
	return 1
}

launch() {
	if pid >/dev/null && ping; then
		return 0
	fi
	write_config
	# setsid: the server is not in the caller's process group, so a test's
	# Ctrl-C does not take it down half way; stop ends it.
	setsid "$BIN" -config "$STATE/influxdb.conf" >>"$STATE/influxd.log" 2>&1 </dev/null &
	echo $! >"$STATE/influxd.pid"
	wait_ping
}

# halt stops the server (SIGTERM, then SIGKILL after 10 s), keeping its data.
halt() {
	local p
	if ! p=$(pid); then
		rm -f "$STATE/influxd.pid"
		return 0
	fi
	kill -TERM "$p" 2>/dev/null || true
	for _ in $(seq 1 50); do
		if ! kill -0 "$p" 2>/dev/null; then
			rm -f "$STATE/influxd.pid"
			return 0
		fi
		sleep 0.2
	done
	log "influxd $p ignored SIGTERM for 10s; killing it"
	kill -KILL "$p" 2>/dev/null || true
	rm -f "$STATE/influxd.pid"
}

exports() {
	echo "export HLOAD_INFLUX_URL=$URL"
	echo "export HLOAD_INFLUX_BUCKET=$DB"
	echo "export HLOAD_INFLUX_ORG=hload"
	echo "export HLOAD_INFLUX_TOKEN="
	echo "export HLOAD_INFLUXD_CTL=$SELF"
}

case "${1:-}" in
start)
	command -v curl >/dev/null || { log "curl is needed"; exit 1; }
	build
	launch
	# CREATE DATABASE is idempotent in 1.8.
	curl -fsS -o /dev/null --max-time 10 -XPOST "$URL/query" --data-urlencode "q=CREATE DATABASE \"$DB\""
	log "influxd $VERSION answers at $URL (database $DB, data in $STATE)"
	exports
	;;
stop)
	halt
	rm -rf "$STATE"
	;;
restart-stop)
	halt
	;;
restart-start)
	[ -f "$STATE/influxdb.conf" ] || { log "no data dir at $STATE; run start first"; exit 1; }
	launch
	;;
status)
	ping
	;;
env)
	exports
	;;
*)
	echo "usage: $0 start|stop|restart-stop|restart-start|status|env" >&2
	exit 2
	;;
esac
