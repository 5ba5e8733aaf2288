#!/usr/bin/env bash
# Ensures a pinned SMTP server with an API to read what arrived (mailpit) is available, building
# it from Go module sources into a per-user cache keyed by version. Tests start it as a real mail
# server for the notifications' mails.
#
# Prints the binary's path as the last line on stdout; everything else goes to stderr.
#
# Usage: NIMBUS_MAILPIT="$(scripts/mailserver.sh | tail -n1)"
set -euo pipefail

MAILPIT_MOD=github.com/axllent/mailpit
MAILPIT_VERSION=v1.33.1

log() { printf 'mailserver: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Static binary, no C toolchain needed; an explicit setting from the caller wins.
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The build happens outside any module; a workspace the caller happens to use must not leak in.
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root/mailpit"
root=$(cd "$root" && pwd -P)
bin=$root/mailpit/$MAILPIT_VERSION/mailpit

server_ok() { [[ -x $1 ]] && [[ $("$1" version --no-release-check 2>/dev/null) == *"$MAILPIT_VERSION"* ]]; }

if server_ok "$bin"; then
	log "$bin is cached"
	printf '%s\n' "$bin"
	exit 0
fi

# Serialise concurrent runs so the build happens once; the second run waits and then finds the
# binary in place.
exec 9>"$root/mailpit/.lock"
if ! flock -n 9; then
	log "waiting for another run to finish building"
	flock 9
fi

if ! server_ok "$bin"; then
	# Only the lock holder builds, so any leftover build directory is from an interrupted run.
	rm -rf "$root"/mailpit/.build.*
	# Inside the cache so the final mv stays on one filesystem and is atomic: a killed build
	# leaves no half-written binary behind.
	work=$(mktemp -d "$root/mailpit/.build.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	trap 'exit 130' INT TERM

	start=$SECONDS
	log "building mailpit $MAILPIT_VERSION"
	GOBIN=$work GOFLAGS= go install -trimpath \
		-ldflags "-s -w -X $MAILPIT_MOD/config.Version=$MAILPIT_VERSION" \
		"$MAILPIT_MOD@$MAILPIT_VERSION" >&2
	server_ok "$work/mailpit" || die "built mailpit does not report $MAILPIT_VERSION"
	mkdir -p "$(dirname "$bin")"
	mv -f "$work/mailpit" "$bin"
	log "built in $((SECONDS - start))s"
fi

printf '%s\n' "$bin"
