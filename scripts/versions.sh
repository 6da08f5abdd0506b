#!/usr/bin/env bash
# Prints the version of each program the tests run against, one line each,
# so that a failure can be matched to the release that caused it (a
# Chromium security release once changed what its DevTools accepts):
#
#   scripts/versions.sh
#
# scripts/test.sh runs it once its installs are done. A program that is
# not there is printed as "not installed"; this script never fails.
set -uo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hload"

# pkg prints a Debian package's installed version.
pkg() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }

# first prints the first line a command writes on stdout, or "not
# installed". (Debian's chromium wrapper writes a shell warning on stderr.)
first() {
	command -v "$1" >/dev/null 2>&1 || { echo "not installed"; return; }
	"$@" 2>/dev/null | head -n 1
}

# module prints the main module's version a Go binary was built from: the
# cached builds of influxd and vegeta carry no version of their own.
module() {
	[ -x "$1" ] || { echo "not installed"; return; }
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $2, $3; exit }'
}

influxd=$CACHE/bin/influxd
k8s=$(ls -d "$CACHE"/bin/k8s-* 2>/dev/null | tail -n 1)
vegeta=$(command -v vegeta || echo "$CACHE/bin/vegeta")

printf '%-14s %s\n' \
	go "$(go version)" \
	chromium "$(first chromium --version) (package $(pkg chromium))" \
	rabbitmq "$(pkg rabbitmq-server) (erlang $(pkg erlang-base))" \
	influxd "$(module "$influxd")" \
	redis-server "$(first redis-server --version)" \
	nginx "$(pkg nginx)" \
	wrk "$(pkg wrk)" \
	hey "$(pkg hey)" \
	vegeta "$(module "$vegeta")" \
	kubernetes "$(first "$k8s/kube-apiserver" --version) (etcd $(first "$k8s/etcd" --version | awk '{ print $NF }'))"
