#!/usr/bin/env bash
# Prints how long bin/nimbus takes to become ready on a fresh data directory (initdb included)
# and on a warm one, and how much memory it holds when idle.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=bin/nimbus
[[ -x $bin ]] || { echo "measure-start: build $bin first (go tool task build)" >&2; exit 1; }
dir=$(mktemp -d /tmp/nimbus-measure.XXXXXX)
port=${MEASURE_PORT:-18080}
pid=""
cleanup() {
	[[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start_until_ready sets elapsed to the milliseconds from exec to /readyz answering 200.
start_until_ready() {
	local t0
	t0=$(now_ms)
	NIMBUS_ADMIN_PASSWORD="measure-start-password" "$bin" serve --addr "127.0.0.1:$port" --data-dir "$dir" \
		>"$dir/out.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 600); do
		if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then
			elapsed=$(( $(now_ms) - t0 ))
			return
		fi
		sleep 0.02
	done
	echo "measure-start: nimbus did not become ready; its log:" >&2
	cat "$dir/out.log" >&2
	exit 1
}

stop() {
	kill -TERM "$pid"
	wait "$pid" || true
	pid=""
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# status_kib prints one field of /proc/<pid>/status, in KiB.
status_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# Pages of the binary are most of nimbus's RSS, and how many of them a start maps depends on how
# the page cache holds the file: one just written by the linker maps several MiB more than one
# read from disk, and the figure drifts as the cache ages. Starting from a binary out of the
# cache, as after a reboot or a deploy, gives the same figure run after run. (Pages a fresh build
# has not yet written back cannot be dropped: sync them first.)
sync "$bin"
dd if="$bin" iflag=nocache count=0 status=none
start_until_ready
cold=$elapsed
stop
start_until_ready
warm=$elapsed
sleep 5
nimbus_rss=$(rss_kib "$pid")
nimbus_anon=$(status_kib "$pid" RssAnon)
nimbus_file=$(status_kib "$pid" RssFile)
pg_rss=0
postmaster=$(head -n1 "$dir/postgres/pgdata/postmaster.pid" 2>/dev/null || true)
for p in $postmaster $( [[ -n $postmaster ]] && pgrep -P "$postmaster" || true); do
	pg_rss=$(( pg_rss + $(rss_kib "$p" || echo 0) ))
done
stop

printf 'cold start (initdb, migrations, first admin) to /readyz: %d ms\n' "$cold"
printf 'warm start to /readyz:                                  %d ms\n' "$warm"
printf 'idle RSS: nimbus %d MiB, its postgres processes %d MiB (sum, shared pages counted per process)\n' \
	$(( nimbus_rss / 1024 )) $(( pg_rss / 1024 ))
printf '          nimbus: %d MiB its own memory (anonymous), %d MiB pages of its binary (file)\n' \
	$(( nimbus_anon / 1024 )) $(( nimbus_file / 1024 ))
