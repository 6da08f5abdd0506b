#!/usr/bin/env bash
# Runs a real nginx on loopback, in front of a server the caller gives, for
# the access-log importer's test (hload import access-log), a server of its
# own for each start, so that two runs on one machine never share one.
#
#   scripts/nginx.sh install                          # installs Debian's nginx when missing
#   eval "$(scripts/nginx.sh start 127.0.0.1:8080)"   # a new nginx proxying to that address
#   ... send it requests; its access log is $HLOAD_NGINX_LOG ...
#   scripts/nginx.sh stop                             # stops that nginx and removes its folder
#
# The demo shop's address is only known inside the test that starts it, so
# the test runs start with its address, and stop with the folder start
# printed; scripts/test.sh only installs.
#
# start makes a folder in /tmp with mktemp ($DIR), picks a free port on
# 127.0.0.1 with scripts/freeport, and starts nginx there in the foreground
# (daemon off) with a config of its own, $DIR/nginx.conf: bound to
# 127.0.0.1 only, every path it writes (pid, error log, temp files) in
# $DIR, and two access logs of every request: $DIR/access.log in nginx's
# predefined combined format, as most sites log, and $DIR/access.json.log,
# JSON lines with $request_time. It prints the exports HLOAD_NGINX_URL,
# HLOAD_NGINX_DIR, HLOAD_NGINX_LOG and HLOAD_NGINX_JSON_LOG. stop acts on
# the folder that follows it, or else on $HLOAD_NGINX_DIR: it ends the
# master whose PID start wrote in $DIR/nginx.pid, once /proc shows that PID
# is still nginx started with this folder's config, and removes $DIR only
# when it holds the mark file start wrote there. Every step is bounded in
# time. Installing the package needs root.
set -euo pipefail

SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER=/usr/sbin/nginx
MARK=.hload-nginx
# shellcheck source=apt.sh
. "$(dirname "$SELF")/apt.sh"

log() { echo "nginx.sh: $*" >&2; }

# install installs Debian's nginx when it is missing, without starting the
# system's server (scripts/apt.sh forbids invoke-rc.d to start it).
install() {
	apt_install "nginx:$SERVER" || exit 1
}

use_dir() {
	DIR="${1:-${HLOAD_NGINX_DIR:-}}"
	if [ -z "$DIR" ]; then
		log "which server? give the folder start made (HLOAD_NGINX_DIR)"
		exit 2
	fi
	DIR="$(cd "$DIR" 2>/dev/null && pwd)" || { log "no folder $1"; exit 1; }
	if [ ! -f "$DIR/$MARK" ]; then
		log "$DIR was not made by $0 start (no $MARK in it); leaving it alone"
		exit 1
	fi
}

# ours prints the PID in $DIR/nginx.pid when that process is still our
# master: nginx, its command line naming our config.
ours() {
	local p
	p=$(cat "$DIR/nginx.pid" 2>/dev/null || true)
	[ -n "$p" ] || return 0
	if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$SERVER")" ] &&
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$DIR/nginx.conf"; then
		echo "$p"
	fi
}

# halt ends what start launched: SIGTERM (nginx's fast shutdown, which
# ends its workers too), then SIGKILL after 10 s.
halt() {
	local p i
	p=$(ours)
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for i in $(seq 1 50); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -KILL "$p" 2>/dev/null || true
}

# answers succeeds when the port answers an HTTP request with a status line.
answers() {
	local r
	r=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf 'GET /nginx-health HTTP/1.0\r\n\r\n' >&3 && head -c 12 <&3" 2>/dev/null) || return 1
	[ "$r" = "HTTP/1.1 204" ]
}

config() {
	cat <<EOF
# Written by $SELF start: a server of its own, every file in $DIR.
daemon off;
master_process on;
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events {
	worker_connections 1024;
}
http {
	access_log off;
	log_format json_lines escape=json '{"time":"\$time_iso8601","method":"\$request_method","uri":"\$request_uri","status":\$status,"request_time":\$request_time,"bytes":\$body_bytes_sent}';
	client_body_temp_path $DIR/client_body;
	proxy_temp_path $DIR/proxy;
	fastcgi_temp_path $DIR/fastcgi;
	uwsgi_temp_path $DIR/uwsgi;
	scgi_temp_path $DIR/scgi;
	upstream upstream {
		server $UPSTREAM;
		keepalive 32;
	}
	server {
		listen 127.0.0.1:$PORT;
		# The readiness probe, not logged, so the logs hold only the
		# caller's requests.
		location = /nginx-health {
			return 204;
		}
		location / {
			access_log $DIR/access.log combined;
			access_log $DIR/access.json.log json_lines;
			proxy_pass http://upstream;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$host;
		}
	}
}
EOF
}

launch() {
	PORT=$(cd "$ROOT" && timeout 120 go run ./scripts/freeport 1)
	config >"$DIR/nginx.conf"
	# -e: nginx opens its error log before it reads the config, in
	# /var/log/nginx unless told otherwise.
	setsid "$SERVER" -p "$DIR" -e "$DIR/error.log" -c "$DIR/nginx.conf" \
		>>"$DIR/nginx.out" 2>&1 </dev/null &
	local pid=$! i
	for i in $(seq 1 100); do
		if answers; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	log "nginx did not answer on 127.0.0.1:$PORT; $DIR/error.log says:"
	tail -n 5 "$DIR/error.log" >&2 || true
	halt
	return 1
}

start() {
	UPSTREAM="${1:-}"
	if ! [[ "$UPSTREAM" =~ ^[A-Za-z0-9.:-]+:[0-9]+$ ]]; then
		log "start needs the upstream's HOST:PORT, such as 127.0.0.1:8080, got \"$UPSTREAM\""
		exit 2
	fi
	install
	DIR="$(mktemp -d /tmp/hload-nginx.XXXXXXXXXX)"
	# nginx's workers run as nobody when it starts as root: they must be
	# able to reach the temp folders the master makes here.
	chmod 755 "$DIR"
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
		log "nginx did not start in 3 attempts"
		exit 1
	fi
	log "nginx answers at 127.0.0.1:$PORT, proxying to $UPSTREAM (folder $DIR)"
	echo "export HLOAD_NGINX_URL=http://127.0.0.1:$PORT"
	echo "export HLOAD_NGINX_DIR=$DIR"
	echo "export HLOAD_NGINX_LOG=$DIR/access.log"
	echo "export HLOAD_NGINX_JSON_LOG=$DIR/access.json.log"
}

CMD="${1:-}"
case "$CMD" in
install) install ;;
start) start "${2:-}" ;;
stop)
	use_dir "${2:-}"
	halt
	rm -rf "$DIR"
	;;
*)
	echo "usage: $0 install | start UPSTREAM_HOST:PORT | stop [FOLDER]" >&2
	exit 2
	;;
esac
