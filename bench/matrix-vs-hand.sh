#!/usr/bin/env bash
# bench/matrix-vs-hand.sh - a 2,000-member matrix against the same 2,000 tasks
# written out by hand: validate, dry run and run (issue 23 item 3).
#
#   bench/matrix-vs-hand.sh [FLOWRUN]     default: .build/release/flowrun
#
# Needs hyperfine and GNU time. Work files go to ${TMPDIR:-/tmp}/flowrun-matrix-bench.
set -euo pipefail
flowrun=$(realpath "${1:-.build/release/flowrun}")
work=${TMPDIR:-/tmp}/flowrun-matrix-bench
mkdir -p "$work" && cd "$work"
python3 - <<'PY'
a = [f"a{i}" for i in range(40)]
b = [f"b{i}" for i in range(50)]
open("matrix.yaml", "w").write(
    "max_parallel: 8\ngroups:\n  g:\n    matrix:\n"
    f"      a: [{', '.join(a)}]\n      b: [{', '.join(b)}]\n"
    "    task:\n      run: echo ${{ item.a }} ${{ item.b }}\n")
lines = ["max_parallel: 8", "groups:", "  g:", "    tasks:"]
lines += [f"      g-{x}-{y}:\n        run: echo {x} {y}" for x in a for y in b]
open("hand.yaml", "w").write("\n".join(lines) + "\n")
PY
hyperfine -N -w 3 -r 30 "$flowrun validate matrix.yaml" "$flowrun validate hand.yaml"
hyperfine -N -w 3 -r 30 "$flowrun matrix.yaml --dry-run" "$flowrun hand.yaml --dry-run"
hyperfine -w 1 -r 6 --prepare 'rm -rf rec' "$flowrun matrix.yaml --log-dir rec --output plain" "$flowrun hand.yaml --log-dir rec --output plain"
for f in matrix hand; do
  for mode in "validate $f.yaml" "$f.yaml --dry-run"; do
    /usr/bin/time -f "$mode: max RSS %M KB" "$flowrun" $mode >/dev/null
  done
  rm -rf rec
  /usr/bin/time -f "run $f: %e s wall, max RSS %M KB" "$flowrun" $f.yaml --log-dir rec --output plain >/dev/null
done
