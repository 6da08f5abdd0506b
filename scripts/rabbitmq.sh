#!/usr/bin/env bash
# Runs a real RabbitMQ on loopback for the AMQP protocol's tests, a node of
# its own for each start, so that two runs on one machine never share one.
#
#   eval "$(scripts/rabbitmq.sh start)"   # installs it when missing, starts a new node, prints exports
#   go test ./protocols/amqp/...
#   scripts/rabbitmq.sh stop              # stops that node and removes its folder
#
#   "$HLOAD_RABBITMQ_CTL" restart         # stops the node, starts it again on the same data and ports
#   "$HLOAD_RABBITMQ_CTL" status          # exit 0 when it answers the AMQP handshake
#
# stop, restart and status act on the node whose folder follows the command
# (scripts/rabbitmq.sh stop /tmp/hload-rabbitmq.Xy12...), or else on
# $HLOAD_RABBITMQ_DIR, which start exports. $HLOAD_RABBITMQ_CTL is a
# two-line script in that folder that names it, for the tests that restart
# the broker.
#
# start makes a folder in /tmp with mktemp ($DIR), picks free ports on 127.0.0.1
# with scripts/freeport (AMQP, Erlang distribution, epmd), starts an epmd of
# its own on its port, and then Debian's rabbitmq-server as the node
# hload-<suffix of $DIR>@localhost under the rabbitmq user: its config,
# data (RABBITMQ_MNESIA_BASE), logs and Erlang cookie are in $DIR/node,
# owned by rabbitmq. Our epmd is the only one our node and rabbitmqctl
# talk to (ERL_EPMD_PORT, and -start_epmd false so the VM never starts one
# itself): the system's epmd on 4369, which every Erlang node on the
# machine may share, is never touched. No plugin is enabled, so there is no
# management listener. When a port was taken between the pick and the
# bind, start stops what it started and tries again on new ports.
#
# stop ends exactly what start started: the node by name (rabbitmqctl
# shutdown), then any process left that carries this folder's mark in its
# environment (HLOAD_SERVICE=$DIR#node or $DIR#epmd, set on everything
# start launches), by PID. It removes $DIR only when it holds the mark
# file start wrote there. Every step is bounded in time.
#
# It needs root: to install the package, and to run the broker as the
# rabbitmq user (runuser).
set -euo pipefail

SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl
MARK=.hload-rabbitmq
# shellcheck source=apt.sh
. "$(dirname "$SELF")/apt.sh"

log() { echo "rabbitmq.sh: $*" >&2; }

# install installs Debian's rabbitmq-server when it is missing, without
# starting the system's broker (scripts/apt.sh).
install() {
	apt_install "rabbitmq-server:$SERVER" || exit 1
}

# use_dir sets DIR and the node's settings from the folder given, or from
# $HLOAD_RABBITMQ_DIR, and checks that start made it.
use_dir() {
	DIR="${1:-${HLOAD_RABBITMQ_DIR:-}}"
	if [ -z "$DIR" ]; then
		log "which node? give the folder start made (HLOAD_RABBITMQ_DIR), as in: $0 ${CMD} /tmp/hload-rabbitmq.XXXXXXXXXX"
		exit 2
	fi
	DIR="$(cd "$DIR" 2>/dev/null && pwd)" || { log "no folder $1"; exit 1; }
	if [ ! -f "$DIR/$MARK" ] || [ ! -f "$DIR/instance.env" ]; then
		log "$DIR was not made by $0 start (no $MARK and instance.env in it); leaving it alone"
		exit 1
	fi
	# shellcheck source=/dev/null
	. "$DIR/instance.env"
	NODE_DIR="$DIR/node"
	URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/"
}

# env_vars are the variables both the server and rabbitmqctl need to find
# this node, its cookie and its epmd, and the mark stop looks for.
env_vars() {
	echo "HLOAD_SERVICE=$DIR#node"
	echo "HOME=$NODE_DIR/home"
	echo "ERL_EPMD_ADDRESS=127.0.0.1"
	echo "ERL_EPMD_PORT=$EPMD_PORT"
	echo "RABBITMQ_NODENAME=$NODE"
	echo "RABBITMQ_USE_LONGNAME=false"
	echo "RABBITMQ_CONF_ENV_FILE=$NODE_DIR/rabbitmq-env.conf"
	# rabbitmqctl is a short-lived Erlang node too: by default it listens
	# on one of 35672-35682, which two runs would share; 0 lets the kernel
	# choose.
	echo "RABBITMQ_CTL_DIST_PORT_MIN=0"
	echo "RABBITMQ_CTL_DIST_PORT_MAX=0"
	echo "RABBITMQ_CTL_ERL_ARGS=-start_epmd false -kernel inet_dist_use_interface {127,0,0,1}"
}

as_rabbitmq() {
	local vars=()
	mapfile -t vars < <(env_vars)
	runuser -u rabbitmq -- env "${vars[@]}" "$@"
}

# pick_ports chooses the node's three ports and records them with its name.
pick_ports() {
	local ports
	mapfile -t ports < <(cd "$ROOT" && timeout 120 go run ./scripts/freeport 3)
	if [ ${#ports[@]} != 3 ]; then
		log "scripts/freeport did not print 3 ports"
		return 1
	fi
	AMQP_PORT=${ports[0]}
	DIST_PORT=${ports[1]}
	EPMD_PORT=${ports[2]}
	cat >"$DIR/instance.env" <<EOF
NODE=$NODE
AMQP_PORT=$AMQP_PORT
DIST_PORT=$DIST_PORT
EPMD_PORT=$EPMD_PORT
EOF
	URL="amqp://guest:guest@127.0.0.1:$AMQP_PORT/"
}

write_config() {
	mkdir -p "$NODE_DIR/home" "$NODE_DIR/mnesia" "$NODE_DIR/log"
	if [ ! -s "$NODE_DIR/home/.erlang.cookie" ]; then
		# A cookie of its own, so rabbitmqctl talks to this node only.
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$NODE_DIR/home/.erlang.cookie"
	fi
	cat >"$NODE_DIR/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
listeners.ssl = none
loopback_users.guest = true
disk_free_limit.absolute = 50MB
log.console = false
log.file.level = info
EOF
	echo '[].' >"$NODE_DIR/enabled_plugins"
	cat >"$NODE_DIR/rabbitmq-env.conf" <<EOF
NODENAME=$NODE
NODE_IP_ADDRESS=127.0.0.1
NODE_PORT=$AMQP_PORT
DIST_PORT=$DIST_PORT
CONFIG_FILE=$NODE_DIR/rabbitmq.conf
MNESIA_BASE=$NODE_DIR/mnesia
LOG_BASE=$NODE_DIR/log
ENABLED_PLUGINS_FILE=$NODE_DIR/enabled_plugins
PID_FILE=$NODE_DIR/rabbitmq.pid
SERVER_ADDITIONAL_ERL_ARGS="-start_epmd false -kernel inet_dist_use_interface {127,0,0,1}"
EOF
	touch "$NODE_DIR/log/startup.log"
	chown -R rabbitmq:rabbitmq "$NODE_DIR"
	chmod 700 "$NODE_DIR" "$NODE_DIR/home"
	chmod 400 "$NODE_DIR/home/.erlang.cookie"
}

# marked prints the PIDs of the processes whose environment carries
# HLOAD_SERVICE=$DIR#$1: what this folder's start launched, and their
# children, and nothing else.
marked() {
	grep -lzxF "HLOAD_SERVICE=$DIR#$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}

# alive succeeds when PID $2 runs and carries the mark $1.
alive() {
	[ -n "$2" ] && grep -qzxF "HLOAD_SERVICE=$DIR#$1" "/proc/$2/environ" 2>/dev/null
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

# end_marked ends the processes marked $1 that are left: SIGTERM, then
# SIGKILL after 10 s.
end_marked() {
	local p
	for p in $(marked "$1"); do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $(marked "$1"); do
		if ! wait_gone 10 "$p"; then
			log "process $p did not stop on SIGTERM; killing it"
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
}

# start_epmd starts our epmd on $EPMD_PORT, when it is not running.
start_epmd() {
	local p
	p=$(cat "$DIR/epmd.pid" 2>/dev/null || true)
	if alive epmd "$p"; then
		return 0
	fi
	# The shell writes its own PID and then becomes epmd, so the PID is
	# epmd's whether or not setsid has to fork.
	setsid env "HLOAD_SERVICE=$DIR#epmd" sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$DIR/epmd.pid" \
		epmd -port "$EPMD_PORT" -address 127.0.0.1 >>"$DIR/epmd.log" 2>&1 </dev/null &
	for _ in $(seq 1 50); do
		p=$(cat "$DIR/epmd.pid" 2>/dev/null || true)
		if alive epmd "$p" && timeout 5 epmd -port "$EPMD_PORT" -names >/dev/null 2>&1; then
			# Still ours a moment later: an epmd that lost the port to
			# another has exited by now.
			sleep 0.2
			if alive epmd "$p"; then
				return 0
			fi
		fi
		sleep 0.1
	done
	log "epmd did not start on 127.0.0.1:$EPMD_PORT; $DIR/epmd.log says:"
	tail -n 5 "$DIR/epmd.log" >&2 || true
	return 1
}

# answers succeeds when the port speaks AMQP: a protocol header gets the
# first byte of a connection.start frame (type 1) back.
answers() {
	local b
	b=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$AMQP_PORT && printf 'AMQP\\x00\\x00\\x09\\x01' >&3 && head -c 1 <&3" 2>/dev/null | od -An -tu1 | tr -d ' ') || return 1
	[ "$b" = 1 ]
}

# listening succeeds when our node's VM holds the listening socket on
# 127.0.0.1:$AMQP_PORT. The port answering is not enough: another program
# could hold it while our node fails to bind it. This asks the kernel, in
# /proc, instead of rabbitmqctl, whose Erlang start takes seconds.
listening() {
	local p inode
	p=$(cat "$NODE_DIR/rabbitmq.pid" 2>/dev/null || true)
	alive node "$p" || return 1
	inode=$(awk -v a="$(printf '0100007F:%04X' "$AMQP_PORT")" '$2 == a && $4 == "0A" { print $10; exit }' /proc/net/tcp)
	[ -n "$inode" ] && [ -n "$(find "/proc/$p/fd" -lname "socket:\[$inode\]" 2>/dev/null)" ]
}

# wait_up waits up to 120 s for our node to answer AMQP on its port.
wait_up() {
	for _ in $(seq 1 240); do
		if answers && listening; then
			return 0
		fi
		if ! kill -0 "$RUNNER" 2>/dev/null && [ -z "$(marked node)" ]; then
			log "the broker exited; last lines of $NODE_DIR/log/startup.log:"
			tail -n 30 "$NODE_DIR/log/startup.log" >&2 || true
			return 1
		fi
		sleep 0.5
	done
	log "the broker did not answer on 127.0.0.1:$AMQP_PORT within 120s; see $NODE_DIR/log"
	return 1
}

launch() {
	start_epmd || return 1
	write_config
	local vars=()
	mapfile -t vars < <(env_vars | grep -v '^RABBITMQ_CTL_')
	# setsid: the broker is not in the caller's process group, so a test's
	# Ctrl-C does not take it down half way; stop ends it.
	setsid runuser -u rabbitmq -- env "${vars[@]}" "$SERVER" \
		>>"$NODE_DIR/log/startup.log" 2>&1 </dev/null &
	RUNNER=$!
	wait_up
}

# halt_node stops the broker, keeping its data and our epmd for a restart.
halt_node() {
	local p
	p=$(cat "$NODE_DIR/rabbitmq.pid" 2>/dev/null || true)
	if alive node "$p"; then
		# shutdown waits for the node to stop; bounded in case it hangs.
		as_rabbitmq timeout 60 "$CTL" -n "$NODE" shutdown >/dev/null 2>&1 || true
		if ! wait_gone 30 "$p"; then
			log "the broker ($p) did not stop within 30s"
		fi
	fi
	# The VM if shutdown failed, and the runner and helpers it leaves.
	end_marked node
	rm -f "$NODE_DIR/rabbitmq.pid"
}

halt() {
	halt_node
	end_marked epmd
	rm -f "$DIR/epmd.pid"
}

remove_dir() {
	if [ -f "$DIR/$MARK" ]; then
		rm -rf "$DIR"
	fi
}

start() {
	install
	local suffix
	# In /tmp, not $TMPDIR: the rabbitmq user must reach the folder, and a
	# user's TMPDIR is often private to them.
	DIR="$(mktemp -d /tmp/hload-rabbitmq.XXXXXXXXXX)"
	echo "made by $SELF start" >"$DIR/$MARK"
	chmod 755 "$DIR"
	suffix="${DIR##*.}"
	NODE="hload-$suffix@localhost"
	NODE_DIR="$DIR/node"
	# Whatever ends this start before the node answers (a failure, the
	# caller's Ctrl-C), stop what it launched and remove its folder.
	STARTED=
	trap '[ -n "$STARTED" ] || { halt; remove_dir; }' EXIT
	trap 'exit 130' INT TERM
	mkdir -p "$NODE_DIR"
	chown rabbitmq:rabbitmq "$NODE_DIR"
	if ! runuser -u rabbitmq -- test -w "$NODE_DIR"; then
		log "the rabbitmq user cannot write to $NODE_DIR"
		exit 1
	fi
	local attempt
	for attempt in 1 2 3; do
		pick_ports
		if launch; then
			STARTED=1
			break
		fi
		log "attempt $attempt failed (a port taken since it was picked?); trying again on new ports"
		halt
		rm -rf "$NODE_DIR/mnesia" "$NODE_DIR/log"
	done
	if [ -z "$STARTED" ]; then
		log "the broker did not start in 3 attempts"
		exit 1
	fi
	printf '#!/bin/sh\n# scripts/rabbitmq.sh for the node in this folder.\nexec %q "$1" %q\n' "$SELF" "$DIR" >"$DIR/ctl"
	chmod 755 "$DIR/ctl"
	log "RabbitMQ node $NODE answers at 127.0.0.1:$AMQP_PORT (epmd on $EPMD_PORT, folder $DIR)"
	echo "export HLOAD_RABBITMQ_URL=$URL"
	echo "export HLOAD_RABBITMQ_DIR=$DIR"
	echo "export HLOAD_RABBITMQ_CTL=$DIR/ctl"
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
restart)
	use_dir "${2:-}"
	halt_node
	launch
	;;
status)
	use_dir "${2:-}"
	answers
	;;
*)
	echo "usage: $0 start | stop|restart|status [FOLDER]" >&2
	exit 2
	;;
esac
