#!/usr/bin/env bash
# alternate.sh - the same workflow through several flowrun binaries, in
# turn, round after round (so a machine whose speed drifts moves them all
# together), then each binary's median and fastest wall time.
#
#   bench/alternate.sh WORKFLOW ROUNDS BINARY...
#
# Each run: `BINARY WORKFLOW --output plain > /dev/null` in the workflow's
# folder, its record removed first. Times come from /usr/bin/time.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d' >&2
  exit 2
fi
workflow=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rounds=$2
shift 2
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
cd "$(dirname "$workflow")"
for round in $(seq "$rounds"); do
  position=0
  for binary in "$@"; do
    rm -rf .flowrun
    /usr/bin/time -f "%e %U %M" -a -o "$results/$position" "$binary" "$workflow" --output plain > /dev/null
    position=$((position + 1))
  done
done
position=0
for binary in "$@"; do
  sort -n "$results/$position" | awk -v name="$binary" '
    { wall[NR] = $1; user[NR] = $2; rss[NR] = $3 }
    END { printf "%s: median %.2f s, fastest %.2f s (user %.2f s), peak RSS %.1f MB, %d runs\n",
          name, wall[int((NR + 1) / 2)], wall[1], user[1], rss[1] / 1024, NR }'
  position=$((position + 1))
done
