#!/usr/bin/env bash
# Runs a real Redis on loopback for the Redis example plugin's test, a
# server of its own for each start, so that two runs on one machine never
# share one.
#
#   eval "$(scripts/redis.sh start)"   # installs it when missing, starts a new server, prints exports
#   go test ./examples/plugins/redis/...
#   scripts/redis.sh stop              # stops that server and removes its folder
#
# start makes a folder in /tmp with mktemp ($DIR), picks a free port on
# 127.0.0.1 with scripts/freeport, and starts Debian's redis-server there
# bound to 127.0.0.1 only, without persistence, its files in $DIR. stop
# acts on the folder that follows it, or else on $HLOAD_REDIS_DIR, which
# start exports: it ends the server whose PID start wrote in $DIR/redis.pid,
# once /proc shows that PID is still redis-server on this folder's port,
# and removes $DIR only when it holds the mark file start wrote there.
# (Not a mark in the environment, as rabbitmq.sh uses: redis-server writes
# its process title over its environment, so /proc/PID/environ loses it.) Every step is bounded
# in time. Installing the package needs root.
set -euo pipefail

SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER=/usr/bin/redis-server
MARK=.hload-redis
# shellcheck source=apt.sh
. "$(dirname "$SELF")/apt.sh"

log() { echo "redis.sh: $*" >&2; }

# install installs Debian's redis-server when it is missing, without
# starting the system's server (scripts/apt.sh).
install() {
	apt_install "redis-server:$SERVER" || exit 1
}

use_dir() {
	DIR="${1:-${HLOAD_REDIS_DIR:-}}"
	if [ -z "$DIR" ]; then
		log "which server? give the folder start made (HLOAD_REDIS_DIR)"
		exit 2
	fi
	DIR="$(cd "$DIR" 2>/dev/null && pwd)" || { log "no folder $1"; exit 1; }
	if [ ! -f "$DIR/$MARK" ]; then
		log "$DIR was not made by $0 start (no $MARK in it); leaving it alone"
		exit 1
	fi
}

# ours prints the PID in $DIR/redis.pid when that process is still our
# server: redis-server, its title naming our port.
ours() {
	local p port
	p=$(cat "$DIR/redis.pid" 2>/dev/null || true)
	port=$(cat "$DIR/port" 2>/dev/null || true)
	[ -n "$p" ] && [ -n "$port" ] || return 0
	if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$SERVER")" ] &&
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "127.0.0.1:$port"; then
		echo "$p"
	fi
}

# halt ends what start launched: SIGTERM, then SIGKILL after 10 s.
halt() {
	local p i
	p=$(ours)
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for p in $p; do
		for i in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$p" 2>/dev/null || true
	done
}

# answers succeeds when the port answers PING with +PONG.
answers() {
	local r
	r=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf 'PING\r\n' >&3 && head -c 5 <&3" 2>/dev/null) || return 1
	[ "$r" = "+PONG" ]
}

launch() {
	PORT=$(cd "$ROOT" && timeout 120 go run ./scripts/freeport 1)
	echo "$PORT" >"$DIR/port"
	# The shell writes its own PID and then becomes redis-server, so the
	# PID is the server's whether or not setsid has to fork.
	setsid sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$DIR/redis.pid" "$SERVER" --bind 127.0.0.1 --port "$PORT" \
		--save '' --appendonly no --dir "$DIR" --daemonize no \
		>>"$DIR/redis.log" 2>&1 </dev/null &
	local pid=$! i
	for i in $(seq 1 100); do
		if answers; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	log "redis-server did not answer on 127.0.0.1:$PORT; $DIR/redis.log says:"
	tail -n 5 "$DIR/redis.log" >&2 || true
	halt
	return 1
}

start() {
	install
	DIR="$(mktemp -d /tmp/hload-redis.XXXXXXXXXX)"
	echo "made by $SELF start" >"$DIR/$MARK"
	STARTED=
	trap '[ -n "$STARTED" ] || { halt; rm -rf "$DIR"; }' EXIT
	trap 'exit 130' INT TERM
	local attempt
	for attempt in 1 2 3; do
		if launch; then
			STARTED=1
			break
		fi
		log "attempt $attempt failed (a port taken since it was picked?); trying again"
	done
	if [ -z "$STARTED" ]; then
		log "redis-server did not start in 3 attempts"
		exit 1
	fi
	log "redis-server answers at 127.0.0.1:$PORT (folder $DIR)"
	echo "export HLOAD_REDIS_ADDR=127.0.0.1:$PORT"
	echo "export HLOAD_REDIS_DIR=$DIR"
}

CMD="${1:-}"
case "$CMD" in
start) start ;;
stop)
	use_dir "${2:-}"
	halt
	rm -rf "$DIR"
	;;
*)
	echo "usage: $0 start | stop [FOLDER]" >&2
	exit 2
	;;
esac
