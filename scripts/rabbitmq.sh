#!/usr/bin/env bash
# Runs a real RabbitMQ on loopback for the AMQP protocol's tests.
#
#   eval "$(scripts/rabbitmq.sh start)"   # installs it when missing, starts it, prints exports
#   go test ./protocols/amqp/...
#   scripts/rabbitmq.sh stop              # stops it (keeps its data for the next start)
#
#   scripts/rabbitmq.sh restart           # stop, then start on the same data and ports
#   scripts/rabbitmq.sh status            # exit 0 when it answers the AMQP handshake
#   scripts/rabbitmq.sh clean             # stop, then remove its folder
#
# The broker is Debian's rabbitmq-server, run as its own node (hload@localhost)
# under the rabbitmq user, not the system service: its config, data, logs and
# Erlang cookie live in one folder this script creates ($STATE, owned by
# rabbitmq). Only what the tests need listens, all on 127.0.0.1: AMQP on
# $AMQP_PORT, Erlang distribution on $AMQP_PORT+20000 and epmd on
# $EPMD_PORT (not the default 4369, so a system epmd is left alone). No plugin
# is enabled, so there is no management listener.
#
# Every step is bounded in time. start is idempotent: a broker that already
# answers is reused. Nothing of ours is left running after stop.
set -euo pipefail

AMQP_PORT="${HLOAD_RABBITMQ_PORT:-5682}"
DIST_PORT="$((AMQP_PORT + 20000))"
EPMD_PORT="${HLOAD_RABBITMQ_EPMD_PORT:-4379}"
NODE="hload@localhost"
STATE="${HLOAD_RABBITMQ_STATE:-${TMPDIR:-/tmp}/hload-rabbitmq-$AMQP_PORT}"
URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/"
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl

log() { echo "rabbitmq.sh: $*" >&2; }

# install installs Debian's rabbitmq-server when it is missing. Debian's
# maintainer scripts would start the system broker through invoke-rc.d; a
# policy-rc.d that answers 101 forbids that. One is put in place only for
# the install when the machine has none.
install() {
	if [ -x "$SERVER" ]; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		log "rabbitmq-server is not installed and installing it needs root"
		exit 1
	fi
	local policy=/usr/sbin/policy-rc.d ours=
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		ours=1
	fi
	log "installing rabbitmq-server (apt-get)"
	if ! apt-cache show rabbitmq-server >/dev/null 2>&1; then
		timeout 300 apt-get update >&2
	fi
	if ! DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends rabbitmq-server >&2; then
		# Package lists that name files the mirror no longer has: refresh
		# them once and try again.
		timeout 300 apt-get update >&2
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends rabbitmq-server >&2
	fi
	if [ -n "$ours" ]; then
		rm -f "$policy"
	fi
	# Should a system broker have started anyway (a machine with systemd
	# and its own policy), stop it: our node must be the only one we test.
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet rabbitmq-server 2>/dev/null; then
		systemctl stop rabbitmq-server >&2 || true
	fi
}

# env_vars are the variables both the server and rabbitmqctl need to find
# this node, its cookie and its epmd.
env_vars() {
	echo "HOME=$STATE/home"
	echo "ERL_EPMD_ADDRESS=127.0.0.1"
	echo "ERL_EPMD_PORT=$EPMD_PORT"
	echo "RABBITMQ_NODENAME=$NODE"
	echo "RABBITMQ_USE_LONGNAME=false"
	echo "RABBITMQ_CONF_ENV_FILE=$STATE/rabbitmq-env.conf"
	echo "RABBITMQ_CTL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
}

as_rabbitmq() {
	local vars=()
	mapfile -t vars < <(env_vars)
	runuser -u rabbitmq -- env "${vars[@]}" "$@"
}

write_config() {
	mkdir -p "$STATE/home" "$STATE/mnesia" "$STATE/log"
	if [ ! -s "$STATE/home/.erlang.cookie" ]; then
		# Our own cookie, so rabbitmqctl talks to this node only.
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STATE/home/.erlang.cookie"
	fi
	cat >"$STATE/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
listeners.ssl = none
loopback_users.guest = true
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = info
EOF
	echo '[].' >"$STATE/enabled_plugins"
	cat >"$STATE/rabbitmq-env.conf" <<EOF
NODENAME=$NODE
NODE_IP_ADDRESS=127.0.0.1
NODE_PORT=$AMQP_PORT
DIST_PORT=$DIST_PORT
CONFIG_FILE=$STATE/rabbitmq.conf
MNESIA_BASE=$STATE/mnesia
LOG_BASE=$STATE/log
ENABLED_PLUGINS_FILE=$STATE/enabled_plugins
PID_FILE=$STATE/rabbitmq.pid
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
EOF
	chown -R rabbitmq:rabbitmq "$STATE"
	chmod 700 "$STATE/home"
	chmod 400 "$STATE/home/.erlang.cookie"
}

# pid prints the broker's Erlang VM process id when it runs.
pid() {
	local p
	if [ -f "$STATE/rabbitmq.pid" ]; then
		p=$(cat "$STATE/rabbitmq.pid" 2>/dev/null || true)
		if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	fi
	return 1
}

# answers succeeds when the port speaks AMQP: a protocol header gets the
# first byte of a connection.start frame (type 1) back.
answers() {
	local b
	b=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$AMQP_PORT && printf 'AMQP\\x00\\x00\\x09\\x01' >&3 && head -c 1 <&3" 2>/dev/null | od -An -tu1 | tr -d ' ') || return 1
	[ "$b" = 1 ]
}

# wait_up waits up to 120 s for the broker to answer.
wait_up() {
	for _ in $(seq 1 240); do
		if answers; then return 0; fi
		if [ -f "$STATE/runner.pid" ] && ! kill -0 "$(cat "$STATE/runner.pid")" 2>/dev/null && ! pid >/dev/null; then
			log "the broker exited; last lines of $STATE/log/startup.log:"
			tail -n 30 "$STATE/log/startup.log" >&2 || true
			return 1
		fi
		sleep 0.5
	done
	log "the broker did not answer on 127.0.0.1:$AMQP_PORT within 120s; see $STATE/log"
	return 1
}

launch() {
	if answers; then
		return 0
	fi
	write_config
	touch "$STATE/log/startup.log"
	chown rabbitmq:rabbitmq "$STATE/log/startup.log"
	# setsid: the broker is not in the caller's process group, so a test's
	# Ctrl-C does not take it down half way; stop ends it.
	setsid runuser -u rabbitmq -- env $(env_vars | grep -v CTL_ERL_ARGS) "$SERVER" \
		>>"$STATE/log/startup.log" 2>&1 </dev/null &
	echo $! >"$STATE/runner.pid"
	wait_up
}

# wait_gone waits up to $1 seconds for process $2 to exit.
wait_gone() {
	local i
	for i in $(seq 1 $(($1 * 5))); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}

# halt stops the broker and our epmd, keeping the data.
halt() {
	local p runner=
	if [ -f "$STATE/runner.pid" ]; then
		runner=$(cat "$STATE/runner.pid")
	fi
	if p=$(pid); then
		# shutdown waits for the node to stop; bounded in case it hangs.
		as_rabbitmq timeout 60 "$CTL" -n "$NODE" shutdown >&2 2>&1 || true
		if ! wait_gone 30 "$p"; then
			log "the broker ($p) did not stop; sending SIGTERM"
			kill -TERM "$p" 2>/dev/null || true
			if ! wait_gone 15 "$p"; then
				kill -KILL "$p" 2>/dev/null || true
				wait_gone 5 "$p" || true
			fi
		fi
	fi
	if [ -n "$runner" ] && kill -0 "$runner" 2>/dev/null; then
		kill -TERM "$runner" 2>/dev/null || true
		wait_gone 10 "$runner" || kill -KILL "$runner" 2>/dev/null || true
	fi
	rm -f "$STATE/runner.pid" "$STATE/rabbitmq.pid"
	# epmd outlives the node; ours listens on our port only.
	if ERL_EPMD_PORT=$EPMD_PORT timeout 5 epmd -names >/dev/null 2>&1; then
		ERL_EPMD_PORT=$EPMD_PORT timeout 5 epmd -kill >/dev/null 2>&1 || true
	fi
}

exports() {
	echo "export HLOAD_RABBITMQ_URL=$URL"
	echo "export HLOAD_RABBITMQ_CTL=$SELF"
}

case "${1:-}" in
start)
	install
	launch
	exports
	;;
stop)
	halt
	;;
restart)
	halt
	launch
	;;
status)
	answers
	;;
clean)
	halt
	rm -rf "$STATE"
	;;
*)
	echo "usage: $0 start|stop|restart|status|clean" >&2
	exit 2
	;;
esac
