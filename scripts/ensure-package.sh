#!/usr/bin/env bash
# Installs a system package Nimbus needs when it is missing: postgres (the server binaries
# for the embedded database) or chromium (for the browser tests). Uses apt-get where it can;
# elsewhere it says what to install.
set -euo pipefail

what=${1:?usage: ensure-package.sh postgres|chromium}

have_postgres() {
	command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1 && return 0
	compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null
}
have_chromium() {
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1
}

case $what in
postgres) check=have_postgres pkg=postgresql ;;
chromium) check=have_chromium pkg=chromium ;;
*) echo "ensure-package: unknown package $what" >&2; exit 2 ;;
esac

$check && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-package: $pkg is not installed and this system has no apt-get; install $pkg with your package manager" >&2
	exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "ensure-package: installing $pkg needs root: run apt-get install $pkg as root" >&2; exit 1; }
	sudo=sudo
fi
echo "ensure-package: installing $pkg" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "$pkg" >&2
$check || { echo "ensure-package: $pkg still not found after installing it" >&2; exit 1; }
