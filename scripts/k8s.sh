#!/usr/bin/env bash
# Runs a real Kubernetes control plane on loopback for deploy/kubernetes's
# tests: etcd, kube-apiserver and kube-controller-manager (with the Job and
# ServiceAccount controllers), a control plane of its own for each start,
# so that two runs on one machine never share one. There is no kubelet and
# no container runtime: Pods stay Pending unless something plays the
# node's part (the tests' stand-in, internal/k8stest).
#
#   eval "$(scripts/k8s.sh start)"   # builds once, starts a new control plane, prints exports
#   kubectl --kubeconfig "$KUBECONFIG" get ns    # or "$HLOAD_KUBECTL" where kubectl is missing
#   go test ./deploy/kubernetes/...
#   scripts/k8s.sh stop              # stops it and removes its folder
#   scripts/k8s.sh build             # only builds (or finds) the binaries
#
# The binaries are built from the Go module proxy, once per machine, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/hload/bin/k8s-$VERSION, from the module in
# scripts/k8s (its go.mod pins Kubernetes and etcd; go.sum holds their sums).
# The version is set with -ldflags -X as Kubernetes' own build does, or
# kubectl cannot parse the server's version.
#
# start makes a folder with mktemp ($DIR) for the certificates (a CA of its
# own, the API server's serving certificate for 127.0.0.1, the service
# account key, made with openssl), a static admin token, the kubeconfig,
# etcd's data and the logs. It picks three free ports on 127.0.0.1 with
# scripts/freeport (etcd's client and peer ports, the API server's) and
# starts the three programs on them, each checked for readiness in turn;
# when a port was taken between the pick and the bind, it tries again on
# new ports. It returns once the default namespace's ServiceAccount exists,
# so Pods can be created at once.
#
# stop acts on the folder that follows it, or else on $HLOAD_K8S_DIR, which
# start exports. It ends the programs start launched, by the PIDs it
# recorded, once each process's environment shows this folder's mark
# (HLOAD_SERVICE=$DIR): the controller manager first, then the API server,
# then etcd. (Stopped while the controller manager still runs, the API
# server was seen to hang on SIGTERM for minutes.) It removes $DIR only when
# it holds the mark file start wrote there. Every step is bounded in time.
set -euo pipefail

VERSION=v1.37.2
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hload"
BIN="$CACHE/bin/k8s-$VERSION"
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MARK=.hload-k8s
PROGRAMS=(etcd kube-apiserver kube-controller-manager kubectl)
# shellcheck source=service.sh
. "$(dirname "$SELF")/service.sh"

log() { echo "k8s.sh: $*" >&2; }

build() {
	local p missing=
	for p in "${PROGRAMS[@]}"; do [ -x "$BIN/$p" ] || missing=1; done
	[ -n "$missing" ] || return 0
	mkdir -p "$CACHE/bin"
	# Two runs may both find them missing: one builds, the other waits.
	exec 9>>"$CACHE/k8s.lock"
	if ! flock -w 2400 9; then
		log "waited 2400s for another build of Kubernetes ($CACHE/k8s.lock)"
		exit 1
	fi
	missing=
	for p in "${PROGRAMS[@]}"; do [ -x "$BIN/$p" ] || missing=1; done
	if [ -n "$missing" ]; then
		log "building etcd and Kubernetes $VERSION into $BIN (once per machine; takes about 15 minutes cold)"
		local tmp start ldflags v=k8s.io/component-base/version c=k8s.io/client-go/pkg/version
		tmp=$(mktemp -d "$CACHE/bin/.k8s-build.XXXXXXXXXX")
		start=$(date +%s)
		ldflags="-s -w"
		for pkg in "$v" "$c"; do
			ldflags+=" -X $pkg.gitVersion=$VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
			ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
		done
		# One go build for the four: they share most of their packages.
		# etcd's main package is its server module's root.
		if ! (cd "$ROOT/scripts/k8s" && GOFLAGS="-buildvcs=false -mod=readonly" timeout 2400 \
			go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
			go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl) >&2; then
			rm -rf "$tmp"
			log "the build failed"
			exit 1
		fi
		# go build names a /v3 path's program after the element before it.
		mv "$tmp/server" "$tmp/etcd"
		chmod 755 "$tmp"
		rm -rf "$BIN"
		mv "$tmp" "$BIN"
		log "built in $(($(date +%s) - start))s"
	fi
	exec 9>&-
}

use_dir() {
	DIR="${1:-${HLOAD_K8S_DIR:-}}"
	if [ -z "$DIR" ]; then
		log "which control plane? give the folder start made (HLOAD_K8S_DIR), as in: $0 stop /tmp/hload-k8s.XXXXXXXXXX"
		exit 2
	fi
	DIR="$(cd "$DIR" 2>/dev/null && pwd)" || { log "no folder $1"; exit 1; }
	if [ ! -f "$DIR/$MARK" ]; then
		log "$DIR was not made by $0 start (no $MARK in it); leaving it alone"
		exit 1
	fi
}

halt_all() {
	svc_halt kube-controller-manager 20
	svc_halt kube-apiserver 20
	svc_halt etcd 20
}

# ready NAME SECONDS CHECK... waits until CHECK succeeds while NAME runs.
ready() {
	local name=$1 seconds=$2
	shift 2
	for _ in $(seq 1 $((seconds * 5))); do
		if ! svc_pid "$name" >/dev/null; then
			log "$name exited; last lines of $DIR/$name.log:"
			tail -n 20 "$DIR/$name.log" >&2 || true
			return 1
		fi
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	log "$name was not ready within ${seconds}s; last lines of $DIR/$name.log:"
	tail -n 20 "$DIR/$name.log" >&2 || true
	return 1
}

kubectl_() { timeout 10 "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }

certificates() {
	local c="$DIR/pki"
	mkdir -p "$c"
	(
		cd "$c"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=hload-test-ca"
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile san.ext
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) >>"$DIR/openssl.log" 2>&1 || { log "openssl failed; see $DIR/openssl.log"; return 1; }
	# A static token for the admin, in the group RBAC lets do anything.
	TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	echo "$TOKEN,hload-admin,hload-admin,system:masters" >"$DIR/tokens.csv"
	chmod 600 "$DIR/tokens.csv"
}

write_kubeconfig() {
	cat >"$DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hload-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: hload-admin
  user:
    token: $TOKEN
contexts:
- name: hload-test
  context:
    cluster: hload-test
    user: hload-admin
    namespace: default
current-context: hload-test
EOF
	chmod 600 "$DIR/kubeconfig"
}

pick_ports() {
	local ports
	mapfile -t ports < <(cd "$ROOT" && timeout 120 go run ./scripts/freeport 3)
	if [ ${#ports[@]} != 3 ]; then
		log "scripts/freeport did not print 3 ports"
		return 1
	fi
	ETCD_PORT=${ports[0]} PEER_PORT=${ports[1]} API_PORT=${ports[2]}
}

etcd_healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
api_ready() { kubectl_ get --raw /readyz; }
# The serviceaccount controller makes it; Pods are refused without it.
default_sa() { kubectl_ get serviceaccount default -n default; }

launch_all() {
	rm -rf "$DIR/etcd"
	# No fsync: the data lives as long as the test run, and fsync on a
	# shared disk makes every write wait.
	svc_launch etcd "$BIN/etcd" --name hload-test --data-dir "$DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
		--initial-cluster "hload-test=http://127.0.0.1:$PEER_PORT" --unsafe-no-fsync --log-level warn || return 1
	ready etcd 30 etcd_healthy || return 1
	# --endpoint-reconciler-type=none: the default reconciler refuses a
	# loopback advertise address. Priority and fairness off: one client.
	svc_launch kube-apiserver "$BIN/kube-apiserver" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" --endpoint-reconciler-type none \
		--tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
		--client-ca-file "$DIR/pki/ca.crt" --token-auth-file "$DIR/tokens.csv" --authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$DIR/pki/sa.pub" \
		--service-account-signing-key-file "$DIR/pki/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
		--enable-priority-and-fairness=false --cert-dir "$DIR/pki" || return 1
	ready kube-apiserver 120 api_ready || return 1
	# Only the controllers the Job needs. No serving port: nothing reads it,
	# and its default (10257) would be shared by two runs.
	svc_launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$DIR/kubeconfig" --controllers job,serviceaccount \
		--leader-elect=false --secure-port 0 --use-service-account-credentials=false || return 1
	ready kube-controller-manager 60 default_sa
}

exports() {
	echo "export KUBECONFIG=$DIR/kubeconfig"
	echo "export HLOAD_K8S_DIR=$DIR"
	echo "export HLOAD_KUBECTL=$BIN/kubectl"
}

start() {
	command -v curl >/dev/null || { log "curl is needed"; exit 1; }
	command -v openssl >/dev/null || { log "openssl is needed"; exit 1; }
	build
	DIR="$(mktemp -d "${TMPDIR:-/tmp}/hload-k8s.XXXXXXXXXX")"
	echo "made by $SELF start" >"$DIR/$MARK"
	# Whatever ends this start before the control plane is ready (a
	# failure, the caller's Ctrl-C), stop what it launched and remove its
	# folder.
	STARTED=
	trap '[ -n "$STARTED" ] || { halt_all; rm -rf "$DIR"; }' EXIT
	trap 'exit 130' INT TERM
	certificates
	local attempt began
	began=$(($(date +%s%N) / 1000000))
	for attempt in 1 2 3; do
		pick_ports
		write_kubeconfig
		if launch_all; then
			STARTED=1
			break
		fi
		log "attempt $attempt failed (a port taken since it was picked?); trying again on new ports"
		halt_all
	done
	if [ -z "$STARTED" ]; then
		log "the control plane did not start in 3 attempts"
		exit 1
	fi
	log "Kubernetes $VERSION ready at https://127.0.0.1:$API_PORT in $(($(date +%s%N) / 1000000 - began)) ms (folder $DIR)"
	exports
}

CMD="${1:-}"
case "$CMD" in
build) build ;;
start) start ;;
stop)
	use_dir "${2:-}"
	halt_all
	rm -rf "$DIR"
	;;
*)
	echo "usage: $0 build | start | stop [FOLDER]" >&2
	exit 2
	;;
esac
