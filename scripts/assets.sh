#!/usr/bin/env bash
# Vendors the pinned front-end assets (htmx, its SSE extension, Monaco) from
# node_modules into static/vendor so the server can serve them offline.
#
# Reruns are cheap: npm ci only runs when node_modules is missing or older
# than package-lock.json, and the copy is skipped when static/vendor/.stamp
# already records the current package-lock.json (and this script).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly lock=package-lock.json
readonly vendor=static/vendor
readonly stamp=$vendor/.stamp

die() {
	printf 'assets: %s\n' "$*" >&2
	exit 1
}

hash_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$@" | awk '{print $1}'
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$@" | awk '{print $1}'
	else
		die "need sha256sum or shasum to fingerprint $lock"
	fi
}

[[ -f $lock ]] || die "$lock not found; run from a checkout of the repository"

# The stamp covers the lock file and this script, so changing either the
# pinned versions or the list of copied files triggers a fresh copy.
want="$(hash_of "$lock" "${BASH_SOURCE[0]}" | tr '\n' ' ')"

if [[ -f $stamp && "$(<"$stamp")" == "$want" &&
	-f $vendor/htmx.min.js && -f $vendor/sse.js &&
	-f $vendor/monaco/vs/loader.js ]]; then
	echo "assets: $vendor is up to date"
	exit 0
fi

# node_modules/.package-lock.json is written by npm on every install, so it
# tells us whether node_modules matches the committed lock file.
if [[ ! -f node_modules/.package-lock.json || $lock -nt node_modules/.package-lock.json ]]; then
	command -v npm >/dev/null 2>&1 ||
		die "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm)"
	echo "assets: installing pinned packages (npm ci)"
	npm ci --no-audit --no-fund
fi

src_htmx=node_modules/htmx.org/dist/htmx.min.js
src_sse=node_modules/htmx-ext-sse/dist/sse.js
src_monaco=node_modules/monaco-editor/min/vs
for f in "$src_htmx" "$src_sse" "$src_monaco/loader.js"; do
	[[ -e $f ]] || die "$f missing after npm ci; is $lock intact?"
done

# Build into a temporary directory next to the target and swap it in, so an
# interrupted run never leaves a half-populated static/vendor behind.
tmp="$(mktemp -d static/.vendor.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

cp "$src_htmx" "$tmp/htmx.min.js"
cp "$src_sse" "$tmp/sse.js"
mkdir -p "$tmp/monaco"
cp -R "$src_monaco" "$tmp/monaco/vs"
find "$tmp/monaco" -name '*.map' -type f -delete

mkdir -p "$tmp/licenses"
cp node_modules/htmx.org/LICENSE "$tmp/licenses/htmx.org.txt"
cp node_modules/htmx-ext-sse/LICENSE "$tmp/licenses/htmx-ext-sse.txt"
cp node_modules/monaco-editor/LICENSE "$tmp/licenses/monaco-editor.txt"
cp node_modules/monaco-editor/ThirdPartyNotices.txt "$tmp/licenses/monaco-editor-third-party.txt"

# The committed README keeps the folder in git, so that go:embed finds it before assets exist.
if [[ -f $vendor/README.md ]]; then cp "$vendor/README.md" "$tmp/README.md"; fi
printf '%s' "$want" >"$tmp/.stamp"
chmod 755 "$tmp"

rm -rf "$vendor"
mv "$tmp" "$vendor"
trap - EXIT

echo "assets: vendored into $vendor ($(du -sh "$vendor" | awk '{print $1}'))"
