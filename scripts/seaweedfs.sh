#!/usr/bin/env bash
# Ensures a pinned SeaweedFS server binary (`weed`) is available, building it from Go module
# sources into a per-user cache keyed by version. Tests start it as a real S3-compatible
# server for the object store and the Pulumi state backend.
#
# Prints the binary's path as the last line on stdout; everything else goes to stderr.
#
# Usage: NIMBUS_WEED="$(scripts/seaweedfs.sh | tail -n1)"
set -euo pipefail

SEAWEEDFS_MOD=github.com/seaweedfs/seaweedfs
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6

log() { printf 'seaweedfs: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Static binary, no C toolchain needed; an explicit setting from the caller wins.
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The build happens in a throwaway module; a workspace the caller happens to use must not
# leak into it.
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root/seaweedfs"
root=$(cd "$root" && pwd -P)
bin=$root/seaweedfs/$SEAWEEDFS_VERSION/weed

weed_ok() { [[ -x $1 ]] && "$1" version >/dev/null 2>&1; }

if weed_ok "$bin"; then
	log "$bin is cached"
	printf '%s\n' "$bin"
	exit 0
fi

# Serialise concurrent runs so the slow build happens once; the second run waits and then
# finds the binary in place.
exec 9>"$root/seaweedfs/.lock"
if ! flock -n 9; then
	log "waiting for another run to finish building"
	flock 9
fi

if ! weed_ok "$bin"; then
	# Only the lock holder builds, so any leftover build directory is from an interrupted run.
	rm -rf "$root"/seaweedfs/.build.*
	# Inside the cache so the final mv stays on one filesystem and is atomic: a killed build
	# leaves no half-written binary behind.
	work=$(mktemp -d "$root/seaweedfs/.build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM

	start=$SECONDS
	(
		cd "$work"
		# `go install weed@version` refuses the module because its go.mod has a replace
		# directive; a wrapper main module that requires it and restates that one works.
		cat >go.mod <<-EOF
			module nimbus.local/seaweedfs

			go 1.25

			require $SEAWEEDFS_MOD $SEAWEEDFS_VERSION

			replace github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0

			tool $SEAWEEDFS_MOD/weed
		EOF
		log "resolving $SEAWEEDFS_MOD@$SEAWEEDFS_VERSION"
		go mod tidy >&2
		log "building weed (takes a few minutes the first time)"
		go build -trimpath -ldflags "-s -w" -o weed "$SEAWEEDFS_MOD/weed" >&2
	)
	weed_ok "$work/weed" || die "built weed does not run"
	mkdir -p "$(dirname "$bin")"
	mv -f "$work/weed" "$bin"
	log "built in $((SECONDS - start))s"
fi

printf '%s\n' "$bin"
