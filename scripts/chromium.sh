#!/usr/bin/env bash
# Installs Debian's chromium when /usr/bin/chromium is missing, for the HTML
# report's browser test (sinks/html), which opens a report headless from
# file:// with the network off. Idempotent and quiet: it prints nothing when
# chromium is there, and only apt's errors otherwise.
#
#   scripts/chromium.sh
#
# It needs root, to install the package.
set -euo pipefail

BIN=/usr/bin/chromium
# The lock every apt-get of hload's scripts takes: dpkg allows one at a
# time, and two test runs may both find the package missing.
APT_LOCK=/tmp/hload-apt.lock

[ -x "$BIN" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "chromium.sh: $BIN is missing and installing it needs root" >&2
	exit 1
fi
exec 9>>"$APT_LOCK"
flock -w 900 9 || { echo "chromium.sh: waited 900s for another install ($APT_LOCK)" >&2; exit 1; }
[ -x "$BIN" ] && exit 0 # installed by the run that held the lock
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show chromium >/dev/null 2>&1; then
	timeout 300 apt-get update -qq >/dev/null
fi
if ! timeout 900 apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
	# Package lists that name files the mirror no longer has: refresh them
	# once and try again.
	timeout 300 apt-get update -qq >/dev/null
	timeout 900 apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[ -x "$BIN" ] || { echo "chromium.sh: chromium did not install at $BIN" >&2; exit 1; }
