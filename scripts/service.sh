# shellcheck shell=bash
# service.sh is sourced by hload's service scripts that run programs of
# their own in a folder $DIR that their start made (scripts/influxd.sh,
# scripts/k8s.sh):
#
#   . "$(dirname "$0")/service.sh"
#   svc_launch influxd "$BIN" -config "$DIR/influxdb.conf"
#   svc_pid influxd       # prints the PID while that program runs
#   svc_halt influxd 10   # SIGTERM, then SIGKILL after 10 s
#
# Each program NAME runs in a session of its own (setsid: a test's Ctrl-C
# does not take it down half way; stop ends it), its output in
# $DIR/NAME.log, its PID in $DIR/NAME.pid, and its environment marked
# HLOAD_SERVICE=$DIR. A program counts as this folder's only while the
# process with the recorded PID carries that mark: a PID can be reused by
# another program once ours has exited, and a zombie's environment is
# empty. The caller defines log(). Every step is bounded in time.

# svc_pid NAME prints the PID of the program NAME this folder's start
# launched, while it runs.
svc_pid() {
	local p
	p=$(cat "$DIR/$1.pid" 2>/dev/null || true)
	if [ -n "$p" ] && grep -qzxF "HLOAD_SERVICE=$DIR" "/proc/$p/environ" 2>/dev/null; then
		echo "$p"
		return 0
	fi
	return 1
}

# svc_launch NAME PROGRAM ARGS... starts PROGRAM and records its PID. The
# shell writes its own PID and then becomes the program, so the PID is the
# program's whether or not setsid has to fork.
svc_launch() {
	local name=$1
	shift
	rm -f "$DIR/$name.pid"
	setsid env "HLOAD_SERVICE=$DIR" sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$DIR/$name.pid" \
		"$@" >>"$DIR/$name.log" 2>&1 </dev/null &
	for _ in $(seq 1 50); do
		[ -s "$DIR/$name.pid" ] && return 0
		sleep 0.1
	done
	log "$name did not start"
	return 1
}

# svc_halt NAME SECONDS stops the program NAME: SIGTERM, then SIGKILL
# after SECONDS.
svc_halt() {
	local p
	if ! p=$(svc_pid "$1"); then
		rm -f "$DIR/$1.pid"
		return 0
	fi
	kill -TERM "$p" 2>/dev/null || true
	for _ in $(seq 1 $(($2 * 5))); do
		if ! kill -0 "$p" 2>/dev/null; then
			rm -f "$DIR/$1.pid"
			return 0
		fi
		sleep 0.2
	done
	log "$1 $p ignored SIGTERM for $2s; killing it"
	kill -KILL "$p" 2>/dev/null || true
	rm -f "$DIR/$1.pid"
}
