#!/usr/bin/env bash
# Ensures a pinned S3-compatible server (versitygw, serving a directory as buckets and objects)
# is available, building it from Go module sources into a per-user cache keyed by version. Tests
# start it as a real S3 server for the object store and the Pulumi state backend.
#
# Prints the binary's path as the last line on stdout; everything else goes to stderr.
#
# Usage: NIMBUS_VERSITYGW="$(scripts/s3server.sh | tail -n1)"
set -euo pipefail

VERSITYGW_MOD=github.com/versity/versitygw
VERSITYGW_VERSION=v1.8.0

log() { printf 's3server: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Static binary, no C toolchain needed; an explicit setting from the caller wins.
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The build happens outside any module; a workspace the caller happens to use must not leak in.
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root/versitygw"
root=$(cd "$root" && pwd -P)
bin=$root/versitygw/$VERSITYGW_VERSION/versitygw

server_ok() { [[ -x $1 ]] && [[ $("$1" --version 2>/dev/null) == *"Version  : $VERSITYGW_VERSION"* ]]; }

if server_ok "$bin"; then
	log "$bin is cached"
	printf '%s\n' "$bin"
	exit 0
fi

# Serialise concurrent runs so the build happens once; the second run waits and then finds the
# binary in place.
exec 9>"$root/versitygw/.lock"
if ! flock -n 9; then
	log "waiting for another run to finish building"
	flock 9
fi

if ! server_ok "$bin"; then
	# Only the lock holder builds, so any leftover build directory is from an interrupted run.
	rm -rf "$root"/versitygw/.build.*
	# Inside the cache so the final mv stays on one filesystem and is atomic: a killed build
	# leaves no half-written binary behind.
	work=$(mktemp -d "$root/versitygw/.build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM

	start=$SECONDS
	log "building versitygw $VERSITYGW_VERSION"
	GOBIN=$work GOFLAGS= go install -trimpath \
		-ldflags "-s -w -X main.Version=$VERSITYGW_VERSION" \
		"$VERSITYGW_MOD/cmd/versitygw@$VERSITYGW_VERSION" >&2
	server_ok "$work/versitygw" || die "built versitygw does not report $VERSITYGW_VERSION"
	mkdir -p "$(dirname "$bin")"
	mv -f "$work/versitygw" "$bin"
	log "built in $((SECONDS - start))s"
fi

printf '%s\n' "$bin"
