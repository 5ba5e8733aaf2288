#!/usr/bin/env bash
# Ensures the pinned etcd, kube-apiserver and kube-controller-manager are built from Go module
# sources into the tool cache, keyed by version: the control plane that tests and
# `go tool task kube` run on loopback (see e2e/kubeplane).
#
# Prints, as the last line on stdout, the directory holding them. Everything else goes to
# stderr.
set -euo pipefail

KUBERNETES_VERSION=v1.37.2
# The published twin of each staging module of that release.
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.6.16

ETCD_MOD=go.etcd.io/etcd/server/v3

log() { printf 'kube-apiserver: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Releases are built without cgo; so are these, which keeps them static.
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The builds happen in throwaway modules; a workspace the caller happens to use must not leak
# into them.
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root/kubernetes"
root=$(cd "$root" && pwd -P)
dir=$root/kubernetes/$KUBERNETES_VERSION+etcd-$ETCD_VERSION/bin

# The output is read whole before it is compared: grep -q stopping early would fail the pipeline.
kube_ok() { [[ -x $1 ]] && [[ $("$1" --version 2>/dev/null) == "Kubernetes $KUBERNETES_VERSION" ]]; }
apiserver_ok() { kube_ok "$1/kube-apiserver" && kube_ok "$1/kube-controller-manager"; }
etcd_ok() { [[ -x $1 ]] && [[ $("$1" --version 2>/dev/null) == *$'etcd Version: '"${ETCD_VERSION#v}"$'\n'* ]]; }

if apiserver_ok "$dir" && etcd_ok "$dir/etcd"; then
	log "$dir is cached"
	printf '%s\n' "$dir"
	exit 0
fi

# Serialise concurrent runs so the slow builds happen once; the second run waits and then finds
# the binaries in place.
exec 9>"$root/kubernetes/.lock"
if ! flock -n 9; then
	log "waiting for another run to finish building"
	flock 9
fi

# Only the lock holder builds, so any leftover build directory is from an interrupted run.
rm -rf "$root"/kubernetes/.build.*
# Inside the cache so the final mv stays on one filesystem and is atomic: a killed build leaves
# no half-written binary behind.
work=$(mktemp -d "$root/kubernetes/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir"

mod_info() { # <module@version> <field>: download the module and print one field of its metadata
	local json
	json=$(go mod download -json "$1") || die "go mod download $1 failed"
	sed -n "s/^[[:space:]]*\"$2\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$json" | head -n1
}

build_etcd() {
	local mod=$work/etcd
	mkdir -p "$mod"
	(
		cd "$mod"
		# etcd's own main package sits in its root module, which the proxy does not serve apart
		# from the server; the server's etcdmain is that main's body.
		cat >go.mod <<-EOF
			module nimbus.local/etcd

			go 1.26

			require $ETCD_MOD $ETCD_VERSION
		EOF
		cat >main.go <<-'EOF'
			package main

			import (
				"os"

				"go.etcd.io/etcd/server/v3/etcdmain"
			)

			func main() { etcdmain.Main(os.Args) }
		EOF
		log "resolving $ETCD_MOD@$ETCD_VERSION"
		go mod tidy >&2
		log "building etcd"
		go build -trimpath -ldflags "-s -w" -o etcd . >&2
	)
	etcd_ok "$mod/etcd" || die "built etcd does not report $ETCD_VERSION"
	mv -f "$mod/etcd" "$dir/etcd"
}

build_apiserver() {
	local mod=$work/kube-apiserver gomod godir
	mkdir -p "$mod"
	gomod=$(mod_info "k8s.io/kubernetes@$KUBERNETES_VERSION" GoMod)
	[[ -f $gomod ]] || die "cannot find go.mod of k8s.io/kubernetes@$KUBERNETES_VERSION"
	godir=$(go mod edit -print "$gomod" | awk '$1 == "go" { print $2; exit }')
	# k8s.io/kubernetes points each staging module at its own tree (./staging/src/k8s.io/…),
	# which a module download does not hold; each is published on its own under the same
	# release as v0.x, and the wrapper takes those.
	local -a edits
	mapfile -t edits < <(go mod edit -print "$gomod" | awk -v v="$STAGING_VERSION" '
		$2 == "=>" && $3 ~ /^\.\/staging\// { print "-replace=" $1 "=" $1 "@" v }')
	((${#edits[@]})) || die "found no staging modules in k8s.io/kubernetes's go.mod"
	(
		cd "$mod"
		cat >go.mod <<-EOF
			module nimbus.local/kube-apiserver

			go ${godir:-1.25}

			require k8s.io/kubernetes $KUBERNETES_VERSION

			tool k8s.io/kubernetes/cmd/kube-apiserver
			tool k8s.io/kubernetes/cmd/kube-controller-manager
		EOF
		go mod edit "${edits[@]}"
		log "resolving k8s.io/kubernetes@$KUBERNETES_VERSION with ${#edits[@]} staging modules at $STAGING_VERSION"
		go mod tidy >&2
		log "building kube-apiserver and kube-controller-manager (takes several minutes the first time)"
		mkdir bin
		go build -trimpath \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION" \
			-o bin/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager >&2
	)
	apiserver_ok "$mod/bin" || die "built kube-apiserver or kube-controller-manager does not report $KUBERNETES_VERSION"
	mv -f "$mod/bin/kube-apiserver" "$mod/bin/kube-controller-manager" "$dir/"
}

timed() { # <label> <command...>
	local start=$SECONDS
	"${@:2}"
	log "$1 done in $((SECONDS - start))s"
}

etcd_ok "$dir/etcd" || timed "etcd build" build_etcd
apiserver_ok "$dir" || timed "kube-apiserver build" build_apiserver

printf '%s\n' "$dir"
