#!/usr/bin/env bash
# Ensures the pinned Pulumi Kubernetes provider (pulumi-resource-kubernetes) is built from Go
# module sources into the tool cache, keyed by version, and linked into the directory given as
# $1 (the Pulumi toolchain directory, where the CLI finds plugins beside itself).
#
# Prints the directory as the last line on stdout; everything else goes to stderr.
#
# With --background, a missing provider is built by a detached process that writes its progress
# to pulumi-resource-kubernetes.build.log in that directory (the system page shows it), and the
# script returns at once: Nimbus serves meanwhile, and only Kubernetes landing zones wait.
#
# Usage: scripts/kubernetes-provider.sh [--background] "$(scripts/pulumi-toolchain.sh | tail -n1)"
set -euo pipefail

background=
if [[ ${1-} == --background ]]; then
	background=1
	shift
fi

PROVIDER_MOD=github.com/pulumi/pulumi-kubernetes/provider/v4
# The module proxy serves the provider at this commit only; it follows release v4.25.
PROVIDER_VERSION=v4.0.0-20260115033456-f47bc2d6f199

log() { printf 'kubernetes-provider: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

(($# == 1)) || die "usage: $0 <directory to link the plugin into>"
mkdir -p "$1"
target=$(cd "$1" && pwd -P)

export CGO_ENABLED="${CGO_ENABLED:-0}"
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root/pulumi-resource-kubernetes"
root=$(cd "$root" && pwd -P)
bin=$root/pulumi-resource-kubernetes/$PROVIDER_VERSION/bin/pulumi-resource-kubernetes

# A provider plugin speaks gRPC on a port it prints; asked for nothing it refuses to start, but
# a binary that cannot run at all fails before that.
plugin_ok() { [[ -x $1 ]] && "$1" --help >/dev/null 2>&1; }

if [[ -n $background ]] && ! plugin_ok "$bin"; then
	buildlog=$target/pulumi-resource-kubernetes.build.log
	log "building in the background; progress in $buildlog"
	setsid nohup "${BASH_SOURCE[0]}" "$target" >/dev/null 2>>"$buildlog" </dev/null &
	printf '%s\n' "$target"
	exit 0
fi

if ! plugin_ok "$bin"; then
	# Serialise concurrent runs so the slow build happens once.
	exec 9>"$root/pulumi-resource-kubernetes/.lock"
	if ! flock -n 9; then
		log "waiting for another run to finish building"
		flock 9
	fi
fi

if ! plugin_ok "$bin"; then
	rm -rf "$root"/pulumi-resource-kubernetes/.build.*
	work=$(mktemp -d "$root/pulumi-resource-kubernetes/.build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM
	start=$SECONDS

	log "resolving $PROVIDER_MOD@$PROVIDER_VERSION"
	json=$(go mod download -json "$PROVIDER_MOD@$PROVIDER_VERSION") || die "go mod download failed"
	src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json" | head -n1)
	[[ -d $src ]] || die "cannot find the sources of $PROVIDER_MOD@$PROVIDER_VERSION"

	# The plugin embeds its schema and terraform mapping from files its release build copies
	# beside main.go, which the module does not ship; its go.mod points the SDK at a sibling
	# directory the module does not hold either, where the required published SDK serves. A
	# writable copy of the module gets both.
	cp -R "$src" "$work/provider"
	chmod -R u+w "$work/provider"
	(
		cd "$work/provider"
		cmd=cmd/pulumi-resource-kubernetes
		cp "$cmd/schema.json" "$cmd/schema-embed.json"
		cp "$cmd/terraform-mapping.json" "$cmd/terraform-mapping-embed.json"
		go mod edit -dropreplace github.com/pulumi/pulumi-kubernetes/sdk/v4
		log "building pulumi-resource-kubernetes (takes several minutes the first time)"
		GOFLAGS=-mod=mod go build -trimpath \
			-ldflags "-s -w -X $PROVIDER_MOD/pkg/version.Version=${PROVIDER_VERSION#v}" \
			-o "$work/pulumi-resource-kubernetes" "./$cmd" >&2
	)
	plugin_ok "$work/pulumi-resource-kubernetes" || die "built pulumi-resource-kubernetes does not run"
	mkdir -p "$(dirname "$bin")"
	mv -f "$work/pulumi-resource-kubernetes" "$bin"
	log "built in $((SECONDS - start))s"
fi

# Linked, not copied, so the cache keeps the one binary; replaced atomically.
ln -sfn "$bin" "$target/pulumi-resource-kubernetes.$$.tmp"
mv -Tf "$target/pulumi-resource-kubernetes.$$.tmp" "$target/pulumi-resource-kubernetes"
printf '%s\n' "$target"
