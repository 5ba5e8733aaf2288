#!/usr/bin/env bash
# Keeps Go's build cache from filling the disk. Go trims entries unused for five days, once a
# day; a machine that runs the whole suite many times a day grows it by tens of gigabytes in
# that time, and a full disk fails every test. When less than 20 GiB is free, entries unused
# for a day go: a miss rebuilds them.
set -euo pipefail
cache=$(go env GOCACHE)
[ -d "$cache" ] || exit 0
free_kib=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
if [ "$free_kib" -lt $((20 * 1024 * 1024)) ]; then
	echo "trim-go-cache: $((free_kib / 1024 / 1024)) GiB free; removing build cache entries unused for a day"
	find "$cache" -type f -mtime +0 -delete
fi
