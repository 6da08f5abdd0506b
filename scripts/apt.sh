# shellcheck shell=bash
# apt.sh is sourced by hload's scripts that need a Debian package:
#
#   . "$(dirname "$0")/apt.sh"
#   apt_install rabbitmq-server:/usr/lib/rabbitmq/bin/rabbitmq-server
#   apt_install wrk hey                 # each checked with command -v
#
# Each argument is PACKAGE or PACKAGE:FILE. A package counts as installed
# when FILE is executable, or, without one, when its name is a command.
# apt_install installs the missing ones with apt-get (so it needs root, and
# says so otherwise), and returns at once when none is missing.
#
# - One lock for every apt-get of hload's scripts (/tmp/hload-apt.lock):
#   dpkg allows one at a time, and two test runs may both find a package
#   missing. The check is made again under the lock, for the run that
#   waited while another installed it.
# - Debian's maintainer scripts would start a system service (the system
#   broker, the system Redis) through invoke-rc.d: a policy-rc.d that
#   answers 101 forbids that. One is put in place only for the install when
#   the machine has none, and removed after. Should a service have started
#   anyway (systemd with its own policy), it is stopped: the servers the
#   tests use are the scripts' own, on their own ports.
# - Package lists missing, or naming files the mirror no longer has, are
#   refreshed once and the install tried again.
# Every step is bounded in time. apt's output goes to stderr: stdout is
# kept for the exports the scripts print for eval.

apt_missing() {
	local arg pkg file
	for arg in "$@"; do
		pkg=${arg%%:*}
		file=
		[ "$arg" != "$pkg" ] && file=${arg#*:}
		if [ -n "$file" ]; then
			[ -x "$file" ] || echo "$pkg"
		else
			command -v "$pkg" >/dev/null 2>&1 || echo "$pkg"
		fi
	done
}

apt_install() {
	local args=("$@") missing
	missing=$(apt_missing "$@")
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "apt.sh: $(echo $missing) not installed, and installing needs root: apt-get install -y $(echo $missing)" >&2
		return 1
	fi
	local lock=/tmp/hload-apt.lock
	exec 9>>"$lock"
	if ! flock -w 900 9; then
		echo "apt.sh: waited 900s for another install to finish ($lock)" >&2
		exec 9>&-
		return 1
	fi
	missing=$(apt_missing "$@")
	if [ -z "$missing" ]; then # installed by the run that held the lock
		exec 9>&-
		return 0
	fi
	# shellcheck disable=SC2086 # one word per package
	set -- $missing
	local policy=/usr/sbin/policy-rc.d ours= rc=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		ours=1
	fi
	echo "apt.sh: installing $* (apt-get)" >&2
	if ! apt-cache show "$@" >/dev/null 2>&1; then
		timeout 300 apt-get update >&2 || true
	fi
	if ! DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y --no-install-recommends "$@" >&2; then
		timeout 300 apt-get update >&2 || true
		DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y --no-install-recommends "$@" >&2 || rc=$?
	fi
	if [ -n "$ours" ]; then
		rm -f "$policy"
	fi
	local pkg
	for pkg in "$@"; do
		if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$pkg" 2>/dev/null; then
			systemctl stop "$pkg" >&2 || true
		fi
	done
	exec 9>&-
	if [ "$rc" != 0 ]; then
		echo "apt.sh: apt-get install $* failed (exit $rc)" >&2
		return "$rc"
	fi
	missing=$(apt_missing "${args[@]}")
	if [ -n "$missing" ]; then
		echo "apt.sh: $(echo $missing) still missing after apt-get install" >&2
		return 1
	fi
}
