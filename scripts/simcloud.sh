#!/usr/bin/env bash
# Builds the simulated cloud's Pulumi provider (e2e/simcloud) as pulumi-resource-simcloud
# into the directory given as $1, by default the Pulumi toolchain directory, where the
# Pulumi CLI finds it on PATH beside itself.
#
# Reruns are cheap: the build is skipped while the binary is newer than every file of the
# provider, go.mod and this script.
#
# Prints the directory as the last line on stdout; everything else goes to stderr.
#
# Usage: PATH="$(scripts/simcloud.sh | tail -n1):$PATH"
set -euo pipefail

# Static, as the rest of the toolchain: the engine's sandbox lets it execute its own binaries
# and nothing else, the dynamic loader included.
export CGO_ENABLED=0

log() { printf 'simcloud: %s\n' "$*" >&2; }

# Resolved before changing directory, so a relative argument means what the caller meant.
if (($# > 0)); then
	mkdir -p "$1"
	dir=$(cd "$1" && pwd -P)
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -z ${dir-} ]]; then
	dir=$(scripts/pulumi-toolchain.sh | tail -n1)
fi
bin=$dir/pulumi-resource-simcloud

# go.mod counts because a dependency upgrade changes the binary without touching the sources,
# and this script because it says how the binary is built.
if [[ -x $bin && -z $(find e2e/simcloud go.mod scripts/simcloud.sh -newer "$bin" -print -quit) ]]; then
	log "$bin is up to date"
else
	log "building $bin"
	start=$SECONDS
	# Built beside the target and renamed over it: a running Pulumi may be executing the old
	# binary, which cannot be overwritten in place, and must never start a half-written one.
	tmp=$bin.$$.tmp
	trap 'rm -f "$tmp"' EXIT
	go build -trimpath -o "$tmp" ./e2e/simcloud >&2
	mv -f "$tmp" "$bin"
	log "built in $((SECONDS - start))s"
fi

printf '%s\n' "$dir"
