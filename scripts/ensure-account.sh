#!/usr/bin/env bash
# Creates the unprivileged account engine processes run as when Nimbus runs as root
# (nimbus-engine, or the account named as $1), when it is missing. Running as any other user,
# Nimbus runs the engine as itself, and there is nothing to do.
set -euo pipefail

name=${1:-nimbus-engine}
[[ $(id -u) -eq 0 ]] || exit 0
id -u "$name" >/dev/null 2>&1 && exit 0
echo "ensure-account: creating the system account $name for engine processes" >&2
useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group "$name"
