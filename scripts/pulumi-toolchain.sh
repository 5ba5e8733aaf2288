#!/usr/bin/env bash
# Ensures a pinned Pulumi CLI and the Pulumi YAML language host are available,
# building them from Go module sources into a per-user cache keyed by version,
# so reruns are instant and no release download is needed.
#
# Prints, as the last line on stdout, one directory to put on PATH that holds
# both (pulumi as a hard link, the YAML host as a symlink). Everything else goes
# to stderr.
#
# Usage: PATH="$(scripts/pulumi-toolchain.sh | tail -n1):$PATH"
set -euo pipefail

PULUMI_VERSION=v3.274.1
PULUMI_YAML_VERSION=v1.25.0

PULUMI_PKG=github.com/pulumi/pulumi/pkg/v3
PULUMI_SDK=github.com/pulumi/pulumi/sdk/v3
PULUMI_YAML_MOD=github.com/pulumi/pulumi-yaml

log() { printf 'pulumi-toolchain: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The version checks below must not stall on, or fail for lack of, the network.
export PULUMI_SKIP_UPDATE_CHECK=true

# Releases are built without cgo; doing the same keeps the binaries static and
# avoids needing a C toolchain. An explicit setting from the caller wins.
export CGO_ENABLED="${CGO_ENABLED:-0}"
# The build happens in a throwaway module; a workspace the caller happens to
# use must not leak into it.
export GOWORK=off

command -v go >/dev/null || die "go is required"
command -v flock >/dev/null || die "flock is required"

pulumi_ok() { # <binary>: true if it runs and reports the pinned version
	local out
	[[ -x $1 ]] || return 1
	out=$("$1" version 2>/dev/null) || return 1
	[[ $out == "$PULUMI_VERSION" ]]
}

yaml_ok() { # <binary>: true if it runs (it has no version flag; -help exits 0)
	[[ -x $1 ]] && "$1" -help >/dev/null 2>&1
}

# Already provided by the environment (for example a previous run's directory
# is on PATH, or a system install of exactly the pin): nothing to do.
if existing=$(command -v pulumi) && command -v pulumi-language-yaml >/dev/null &&
	pulumi_ok "$existing"; then
	dirname "$existing"
	exit 0
fi

root=${NIMBUS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nimbus/tools}
mkdir -p "$root"
root=$(cd "$root" && pwd -P)

pulumi_bin=$root/pulumi/$PULUMI_VERSION/bin/pulumi
yaml_bin=$root/pulumi-language-yaml/$PULUMI_YAML_VERSION/bin/pulumi-language-yaml
toolchain_bin=$root/pulumi-toolchain/$PULUMI_VERSION+yaml-$PULUMI_YAML_VERSION/bin

# Serialise concurrent runs so the (slow) builds happen once; the second run
# waits and then finds the binaries in place.
exec 9>"$root/.lock"
if ! flock -n 9; then
	log "waiting for another run to finish building"
	flock 9
fi

# Only the lock holder builds, so any leftover build directory is from an
# interrupted run.
rm -rf "$root"/.build.*

work=
cleanup() { [[ -z $work ]] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

workdir() {
	# Inside the cache root so the final mv stays on one filesystem and is atomic.
	[[ -n $work ]] || work=$(mktemp -d "$root/.build.XXXXXX")
}

mod_info() { # <module@version> <field>: download the module and print one field of its metadata
	local json
	json=$(go mod download -json "$1") || die "go mod download $1 failed"
	sed -n "s/^[[:space:]]*\"$2\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$json" | head -n1
}

# Turns the replace and exclude directives of a go.mod into `go mod edit` flags.
# Those directives only apply to the main module, so a wrapper must restate
# them to build the same dependency graph. Replacements pointing to a local
# directory refer to sibling modules of the same repository; the wrapper
# requires those at the pinned version instead, so they are dropped.
main_module_directives() { # <go.mod file>
	go mod edit -print "$1" | awk '
		/^(replace|exclude)[[:space:]]*\($/ { block = $1; next }
		block != "" && /^\)/ { block = ""; next }
		{
			kind = block
			line = $0
			if (kind == "") {
				if ($1 != "replace" && $1 != "exclude") next
				kind = $1
				sub(/^[a-z]+[[:space:]]+/, "", line)
			}
			sub(/[[:space:]]*\/\/.*$/, "", line)
			n = split(line, f, /[[:space:]]+/)
			if (f[1] == "") { for (i = 1; i < n; i++) f[i] = f[i + 1]; n-- }
			if (n == 0) next
			if (kind == "exclude") { print "-exclude=" f[1] "@" f[2]; next }
			for (i = 1; i <= n && f[i] != "=>"; i++) ;
			old = f[1]; if (i == 3) old = old "@" f[2]
			new = f[i + 1]
			if (new ~ /^(\.|\/)/) next
			if (i + 2 <= n) new = new "@" f[i + 2]
			print "-replace=" old "=" new
		}'
}

build_pulumi() {
	workdir
	local mod=$work/pulumi-wrapper out=$work/pulumi gomod godir
	mkdir -p "$mod"

	log "resolving $PULUMI_PKG@$PULUMI_VERSION"
	gomod=$(mod_info "$PULUMI_PKG@$PULUMI_VERSION" GoMod)
	[[ -f $gomod ]] || die "cannot find go.mod of $PULUMI_PKG@$PULUMI_VERSION"
	godir=$(go mod edit -print "$gomod" | awk '$1 == "go" { print $2; exit }')

	# pkg/v3 carries replace directives, so `go install pkg@version` refuses it;
	# a throwaway main module that requires it and restates them works.
	local -a edits
	mapfile -t edits < <(main_module_directives "$gomod")
	(
		cd "$mod"
		cat >go.mod <<-EOF
			module nimbus.local/pulumi-toolchain

			go ${godir:-1.24}

			require $PULUMI_PKG $PULUMI_VERSION
			require $PULUMI_SDK $PULUMI_VERSION

			tool $PULUMI_PKG/cmd/pulumi
		EOF
		if ((${#edits[@]})); then
			log "restating directives: ${edits[*]}"
			go mod edit "${edits[@]}"
		fi
		log "resolving dependencies"
		go mod tidy >&2
		log "building pulumi $PULUMI_VERSION (takes a few minutes the first time)"
		go build -trimpath \
			-ldflags "-s -w -X $PULUMI_SDK/go/common/version.Version=$PULUMI_VERSION" \
			-o "$out" "$PULUMI_PKG/cmd/pulumi" >&2
	)
	pulumi_ok "$out" || die "built pulumi does not report $PULUMI_VERSION"
	mkdir -p "$(dirname "$pulumi_bin")"
	mv -f "$out" "$pulumi_bin"
}

build_yaml() {
	workdir
	local gobin=$work/yaml-bin
	mkdir -p "$gobin"
	log "building pulumi-language-yaml $PULUMI_YAML_VERSION"
	GOBIN=$gobin go install -trimpath \
		-ldflags "-s -w -X $PULUMI_YAML_MOD/pkg/version.Version=$PULUMI_YAML_VERSION" \
		"$PULUMI_YAML_MOD/cmd/pulumi-language-yaml@$PULUMI_YAML_VERSION" >&2
	yaml_ok "$gobin/pulumi-language-yaml" || die "built pulumi-language-yaml does not run"
	mkdir -p "$(dirname "$yaml_bin")"
	mv -f "$gobin/pulumi-language-yaml" "$yaml_bin"
}

timed() { # <label> <command...>
	local start=$SECONDS
	"${@:2}"
	log "$1 done in $((SECONDS - start))s"
}

if pulumi_ok "$pulumi_bin"; then
	log "pulumi $PULUMI_VERSION is cached"
else
	timed "pulumi build" build_pulumi
fi

if yaml_ok "$yaml_bin"; then
	log "pulumi-language-yaml $PULUMI_YAML_VERSION is cached"
else
	timed "pulumi-language-yaml build" build_yaml
fi

link() { # <target> <link name>: replace the symlink atomically
	ln -sfn "$1" "$2.tmp"
	mv -Tf "$2.tmp" "$2"
}

# A plain directory of links: other plugins can be linked in beside these.
# pulumi itself is a hard link, not a symlink: it resolves its own path through
# symlinks and expects bundled plugins such as the YAML host next to the real
# file, warning on every run otherwise. A hard link keeps the cached binary
# keyed by version without a copy. Symlink targets are relative so the
# directory stays valid if the cache root is moved.
mkdir -p "$toolchain_bin"
if [[ ! $toolchain_bin/pulumi -ef $pulumi_bin ]]; then
	ln -f "$pulumi_bin" "$toolchain_bin/pulumi.tmp" 2>/dev/null ||
		cp -f "$pulumi_bin" "$toolchain_bin/pulumi.tmp"
	mv -Tf "$toolchain_bin/pulumi.tmp" "$toolchain_bin/pulumi"
fi
link "../../../pulumi-language-yaml/$PULUMI_YAML_VERSION/bin/pulumi-language-yaml" \
	"$toolchain_bin/pulumi-language-yaml"

pulumi_ok "$toolchain_bin/pulumi" || die "$toolchain_bin/pulumi does not report $PULUMI_VERSION"
yaml_ok "$toolchain_bin/pulumi-language-yaml" || die "$toolchain_bin/pulumi-language-yaml does not run"

log "pulumi $PULUMI_VERSION with pulumi-language-yaml $PULUMI_YAML_VERSION ready"
printf '%s\n' "$toolchain_bin"
