#!/usr/bin/env bash
# Installs Debian's chromium when /usr/bin/chromium is missing, for the HTML
# report's browser test (sinks/html), which opens a report headless from
# file:// with the network off. Idempotent: it prints nothing when chromium is
# there, and apt's output on stderr otherwise.
#
#   scripts/chromium.sh
#
# It needs root, to install the package.
set -euo pipefail

BIN=/usr/bin/chromium
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"
apt_install "chromium:$BIN"
