#!/usr/bin/env bash
# Runs a real InfluxDB 1.8 on loopback for the InfluxDB sink's tests, a
# server of its own for each start, so that two runs on one machine never
# share one.
#
#   eval "$(scripts/influxd.sh start)"   # builds influxd once, starts a new server, prints exports
#   go test ./sinks/influxdb/...
#   scripts/influxd.sh stop              # stops that server and removes its folder
#
#   "$HLOAD_INFLUXD_CTL" restart-stop    # stops the server but keeps its data and ports
#   "$HLOAD_INFLUXD_CTL" restart-start   # starts it again on the same data and ports
#   "$HLOAD_INFLUXD_CTL" status          # exit 0 when it answers /ping
#   "$HLOAD_INFLUXD_CTL" env             # prints the exports again
#
# Every command but start acts on the server whose folder follows the
# command (scripts/influxd.sh stop /tmp/hload-influxd.Xy12...), or else on
# $HLOAD_INFLUXD_DIR, which start exports. $HLOAD_INFLUXD_CTL is a
# two-line script in that folder that names it, for the outage test.
#
# influxd is built from source with `go install ...@v1.8.3`, once per
# machine, into ${XDG_CACHE_HOME:-$HOME/.cache}/hload/bin. 1.8 serves the v2
# write API (/api/v2/write, bucket "db" or "db/rp", org ignored, token
# "user:password" or empty with auth off) and, with flux-enabled, the v2
# query API, so the sink and the Grafana dashboard's Flux queries both run
# against it.
#
# start makes a folder with mktemp ($DIR) for the config, the data, meta and
# WAL folders and the log, picks two free ports on 127.0.0.1 with
# scripts/freeport (HTTP, and the RPC bind-address used by backups), and
# starts influxd on them. It checks that the server answering is the one it
# started (its /debug/vars names our config file), and when a port was taken
# between the pick and the bind, it tries again on new ports. stop ends
# exactly the process start launched, by the PID it recorded, once that
# process's environment shows this folder's mark (HLOAD_SERVICE=$DIR); it
# removes $DIR only when it holds the mark file start wrote there. Every
# step is bounded in time.
set -euo pipefail

VERSION=v1.8.3
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hload"
BIN="$CACHE/bin/influxd"
DB="${HLOAD_INFLUX_DB:-hload}"
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MARK=.hload-influxd
# shellcheck source=service.sh
. "$(dirname "$SELF")/service.sh"

log() { echo "influxd.sh: $*" >&2; }

build() {
	if [ -x "$BIN" ]; then
		return
	fi
	mkdir -p "$CACHE/bin"
	# Two runs may both find it missing: one builds, the other waits.
	exec 9>>"$CACHE/influxd.lock"
	if ! flock -w 1500 9; then
		log "waited 1500s for another build of influxd ($CACHE/influxd.lock)"
		exit 1
	fi
	if [ ! -x "$BIN" ]; then
		log "building influxd $VERSION into $CACHE/bin (once per machine; takes minutes)"
		# Outside any module, so the repo's go.mod plays no part; -mod=readonly
		# from the caller would refuse to resolve the build's own dependencies.
		(cd "$CACHE" && GOFLAGS=-buildvcs=false GOBIN="$CACHE/bin" timeout 1500 go install "github.com/influxdata/influxdb/cmd/influxd@$VERSION") >&2
	fi
	exec 9>&-
}

# use_dir sets DIR and the server's settings from the folder given, or from
# $HLOAD_INFLUXD_DIR, and checks that start made it.
use_dir() {
	DIR="${1:-${HLOAD_INFLUXD_DIR:-}}"
	if [ -z "$DIR" ]; then
		log "which server? give the folder start made (HLOAD_INFLUXD_DIR), as in: $0 ${CMD} /tmp/hload-influxd.XXXXXXXXXX"
		exit 2
	fi
	DIR="$(cd "$DIR" 2>/dev/null && pwd)" || { log "no folder $1"; exit 1; }
	if [ ! -f "$DIR/$MARK" ] || [ ! -f "$DIR/instance.env" ]; then
		log "$DIR was not made by $0 start (no $MARK and instance.env in it); leaving it alone"
		exit 1
	fi
	# shellcheck source=/dev/null
	. "$DIR/instance.env"
	URL="http://127.0.0.1:$HTTP_PORT"
}

pick_ports() {
	local ports
	mapfile -t ports < <(cd "$ROOT" && timeout 120 go run ./scripts/freeport 2)
	if [ ${#ports[@]} != 2 ]; then
		log "scripts/freeport did not print 2 ports"
		return 1
	fi
	HTTP_PORT=${ports[0]}
	RPC_PORT=${ports[1]}
	printf 'HTTP_PORT=%s\nRPC_PORT=%s\n' "$HTTP_PORT" "$RPC_PORT" >"$DIR/instance.env"
	URL="http://127.0.0.1:$HTTP_PORT"
}

write_config() {
	mkdir -p "$DIR/data" "$DIR/meta" "$DIR/wal"
	cat >"$DIR/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$RPC_PORT"

[meta]
  dir = "$DIR/meta"

[data]
  dir = "$DIR/data"
  wal-dir = "$DIR/wal"
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

ping() { curl -fsS -o /dev/null --max-time 2 "$URL/ping" 2>/dev/null; }

# ours succeeds when the server at $URL is the one we started: expvar's
# cmdline, at /debug/vars, names our config file.
ours() {
	local vars
	vars=$(curl -fsS --max-time 5 "$URL/debug/vars" 2>/dev/null) || return 1
	[[ "$vars" == *"\"$DIR/influxdb.conf\""* ]]
}

# wait_ping waits up to 60 s for our server to answer /ping. Another
# server on our port would answer too, but ours would then exit, unable to
# bind it.
wait_ping() {
	for _ in $(seq 1 300); do
		if ! svc_pid influxd >/dev/null; then
			log "influxd exited; last lines of $DIR/influxd.log:"
			tail -n 20 "$DIR/influxd.log" >&2 || true
			return 1
		fi
		if ping && ours; then
			return 0
		fi
		sleep 0.2
	done
	log "influxd did not answer $URL/ping within 60s"
	return 1
}

launch() {
	if svc_pid influxd >/dev/null && ping; then
		return 0
	fi
	write_config
	svc_launch influxd "$BIN" -config "$DIR/influxdb.conf" || return 1
	wait_ping
}

# halt stops the server (SIGTERM, then SIGKILL after 10 s), keeping its data.
halt() { svc_halt influxd 10; }

remove_dir() {
	if [ -f "$DIR/$MARK" ]; then
		rm -rf "$DIR"
	fi
}

exports() {
	echo "export HLOAD_INFLUX_URL=$URL"
	echo "export HLOAD_INFLUX_BUCKET=$DB"
	echo "export HLOAD_INFLUX_ORG=hload"
	echo "export HLOAD_INFLUX_TOKEN="
	echo "export HLOAD_INFLUXD_DIR=$DIR"
	echo "export HLOAD_INFLUXD_CTL=$DIR/ctl"
}

start() {
	command -v curl >/dev/null || { log "curl is needed"; exit 1; }
	build
	DIR="$(mktemp -d "${TMPDIR:-/tmp}/hload-influxd.XXXXXXXXXX")"
	echo "made by $SELF start" >"$DIR/$MARK"
	# Whatever ends this start before the server answers (a failure, the
	# caller's Ctrl-C), stop what it launched and remove its folder.
	STARTED=
	trap '[ -n "$STARTED" ] || { halt; remove_dir; }' EXIT
	trap 'exit 130' INT TERM
	local attempt
	for attempt in 1 2 3; do
		pick_ports
		if launch; then
			STARTED=1
			break
		fi
		log "attempt $attempt failed (a port taken since it was picked?); trying again on new ports"
		halt
		rm -rf "$DIR/data" "$DIR/meta" "$DIR/wal"
	done
	if [ -z "$STARTED" ]; then
		log "influxd did not start in 3 attempts"
		exit 1
	fi
	# CREATE DATABASE is idempotent in 1.8.
	curl -fsS -o /dev/null --max-time 10 -XPOST "$URL/query" --data-urlencode "q=CREATE DATABASE \"$DB\""
	printf '#!/bin/sh\n# scripts/influxd.sh for the server in this folder.\nexec %q "$1" %q\n' "$SELF" "$DIR" >"$DIR/ctl"
	chmod 755 "$DIR/ctl"
	log "influxd $VERSION answers at $URL (database $DB, folder $DIR)"
	exports
}

CMD="${1:-}"
case "$CMD" in
start)
	start
	;;
stop)
	use_dir "${2:-}"
	halt
	remove_dir
	;;
restart-stop)
	use_dir "${2:-}"
	halt
	;;
restart-start)
	use_dir "${2:-}"
	launch
	;;
status)
	use_dir "${2:-}"
	ping
	;;
env)
	use_dir "${2:-}"
	exports
	;;
*)
	echo "usage: $0 start | stop|restart-stop|restart-start|status|env [FOLDER]" >&2
	exit 2
	;;
esac
