#!/usr/bin/env bash
# bench/run.sh - every flowrun benchmark, the peer comparison, tables and plots.
#
#   bench/run.sh            full run (about 20 min on 2 cores): result in
#                           bench/results/<stamp>/, plots in docs/images/bench-*.png
#   bench/run.sh --quick    small N, 1 run, tiny peer run (~2 min): checks the
#                           scripts; plots go to the result directory, not docs/
#   bench/run.sh --no-peers / --peers-only   skip / only the peers.sh part
#
# Environment:
#   FLOWRUN=path      the binary to measure; default: build it with
#                     `swift build -c release --static-swift-stdlib --product flowrun`
#                     (the release build README.md names)
#                     and use that build's bin path
#   PEERS_SH=path     the shared harness (default ../shared/bench/peers.sh,
#                     next to the clone); INSTALL=1 runs `peers.sh --install` first.
#                     Without it, run.sh measures flowrun alone: no peer
#                     comparison and no C floor (its spawn-limit.c is there)
#   OUT=dir           result directory (default bench/results/<stamp>)
#   WORK=dir          generated workflows, peer work files, run records
#                     (default ${TMPDIR:-/tmp}/flowrun-bench); large, not kept
#   RUNS=3            timed runs per flowrun workflow (median reported)
#   PEER_ROUNDS=5     peers.sh ROUNDS
#   SIZES, SPAWN_SIZES, SPAWN_PS, VALIDATE_SIZES   comma lists for gen-workflows.py
#   IMAGES=dir        where plots go (default docs/images, or OUT/images with --quick)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
QUICK=0 OWN=1 PEERS=1
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --no-peers) PEERS=0 ;;
    --peers-only) OWN=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "usage: $0 [--quick] [--no-peers|--peers-only]" >&2; exit 2 ;;
  esac
done

STAMP=$(date +%Y%m%d-%H%M%S)
SUFFIX=""; [ $QUICK = 0 ] || SUFFIX=-quick
OUT=${OUT:-$HERE/results/$STAMP$SUFFIX}
WORK=${WORK:-${TMPDIR:-/tmp}/flowrun-bench}
PEERS_SH=${PEERS_SH:-$ROOT/../shared/bench/peers.sh}
if [ $QUICK = 1 ]; then
  RUNS=${RUNS:-1}; PEER_ROUNDS=${PEER_ROUNDS:-1}
  SIZES=${SIZES:-100,1000,5000}; SPAWN_SIZES=${SPAWN_SIZES:-100,500}; SPAWN_PS=${SPAWN_PS:-2,8}
  VALIDATE_SIZES=${VALIDATE_SIZES:-1000,10000}
  IMAGES=${IMAGES:-$OUT/images}
  PEER_ENV=(N=200 CHAIN_N=50 DIAMOND_N=100 MEM_N=2000 MEM_TIMEOUT=60)
else
  RUNS=${RUNS:-3}; PEER_ROUNDS=${PEER_ROUNDS:-5}
  SIZES=${SIZES:-1000,10000,100000}; SPAWN_SIZES=${SPAWN_SIZES:-2000,20000}; SPAWN_PS=${SPAWN_PS:-2,8}
  VALIDATE_SIZES=${VALIDATE_SIZES:-1000,10000,100000}
  IMAGES=${IMAGES:-$ROOT/docs/images}
  PEER_ENV=()
fi
LOGS=$WORK/logs

# The peer harness and the C floor live outside this repository; without them
# flowrun's own benchmarks still run.
HARNESS=""
if [ -f "$PEERS_SH" ]; then
  HARNESS=$(dirname "$PEERS_SH")
elif [ $OWN = 0 ]; then
  echo "run.sh: --peers-only, but there is no peer harness at $PEERS_SH (set PEERS_SH)" >&2; exit 1
else
  echo "run.sh: no peer harness at $PEERS_SH (set PEERS_SH): measuring flowrun alone, without the peer comparison and the C floor" >&2
  PEERS=0
fi

say() { echo "== $*" >&2; }

# ------------------------------------------------------------ the binary
if [ -z "${FLOWRUN:-}" ]; then
  say "building: swift build -c release --static-swift-stdlib --product flowrun"
  (cd "$ROOT" && swift build -c release --static-swift-stdlib --product flowrun >&2)
  FLOWRUN=$(cd "$ROOT" && swift build -c release --show-bin-path)/flowrun
  BUILD_NOTE="swift build -c release --static-swift-stdlib --product flowrun (SwiftPM release defaults: -O, whole-module; the Swift runtime linked in)"
else
  BUILD_NOTE="given as FLOWRUN (the default is swift build -c release --static-swift-stdlib --product flowrun)"
fi
FLOWRUN=$(cd "$(dirname "$FLOWRUN")" && pwd)/$(basename "$FLOWRUN")
[ -x "$FLOWRUN" ] || { echo "run.sh: no flowrun binary at $FLOWRUN" >&2; exit 1; }

mkdir -p "$OUT" "$WORK"
rm -rf "$WORK/workflows" "$LOGS"

# ------------------------------------------------------------ the machine
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "mode: $([ $QUICK = 1 ] && echo quick || echo full) (RUNS=$RUNS, PEER_ROUNDS=$PEER_ROUNDS)"
  echo "cores: $(nproc)"
  echo "cpu: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
  echo "memory: $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel: $(uname -sr)"
  echo "swift: $(swift --version 2>&1 | head -1)"
  echo "flowrun: $FLOWRUN ($("$FLOWRUN" --version 2>/dev/null || echo '?'))"
  echo "build: $BUILD_NOTE"
  dirty=$(cd "$ROOT" && { git diff HEAD -- Sources; git ls-files --others --exclude-standard Sources | xargs -r cat; } 2>/dev/null | sha1sum | cut -c1-8)
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && [ -z "$(git status --porcelain -- Sources 2>/dev/null)" ] || echo " + uncommitted changes in Sources/ (hash $dirty)")"
  echo "binary mtime: $(date -u -r "$FLOWRUN" +%Y-%m-%dT%H:%MZ)"
  echo "python: $(python3 --version 2>&1)"
  echo "hyperfine: $(hyperfine --version 2>/dev/null || echo missing)"
  echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

# ------------------------------------------------------------ flowrun's own
if [ $OWN = 1 ]; then
  say "generating workflows into $WORK/workflows (each checked with flowrun validate)"
  python3 "$HERE/gen-workflows.py" --sizes "$SIZES" --spawn-sizes "$SPAWN_SIZES" --spawn-ps "$SPAWN_PS" \
    --validate-sizes "$VALIDATE_SIZES" --check "$FLOWRUN" "$WORK/workflows"
  FLOOR=()
  if [ -n "$HARNESS" ] && [ -f "$HARNESS/spawn-limit.c" ]; then
    cc -O2 -o "$WORK/spawn-limit" "$HARNESS/spawn-limit.c"
    FLOOR=(--floor "$WORK/spawn-limit")
  fi
  say "measuring flowrun ($RUNS timed runs each)"
  python3 "$HERE/measure.py" --flowrun "$FLOWRUN" --manifest "$WORK/workflows/manifest.json" \
    --out "$OUT" ${FLOOR[@]+"${FLOOR[@]}"} --runs "$RUNS" --log-dir "$LOGS"
  rm -rf "$LOGS"
fi

# ------------------------------------------------------------ peers
if [ $PEERS = 1 ]; then
  [ "${INSTALL:-0}" = 1 ] && "$PEERS_SH" --install
  CMD="$FLOWRUN {yaml} --output plain --log-dir $LOGS"
  say "peers.sh --check (every tool runs every task once, in order, within P)"
  env CHECK_OUT="$WORK/peers-check" FLOWRUN_CMD="$CMD" "$PEERS_SH" --check 2>&1 | tee "$OUT/peers-check.txt" | tail -1 >&2
  rm -rf "$LOGS"
  say "peers.sh (ROUNDS=$PEER_ROUNDS${PEER_ENV[*]:+ ${PEER_ENV[*]}})"
  rm -rf "$WORK/peers"
  env "${PEER_ENV[@]}" ROUNDS="$PEER_ROUNDS" OUT="$WORK/peers" FLOWRUN_CMD="$CMD" "$PEERS_SH" 2>&1 | tee "$OUT/peers.log" >&2
  rm -rf "$LOGS"
  mkdir -p "$OUT/peers"
  cp -r "$WORK/peers/"{info.tsv,meta.tsv,report.md,raw,rss,load} "$OUT/peers/"
  { echo; echo "Generated work directories (not kept): $WORK/peers/work"; } >> "$OUT/peers/report.md"
fi

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"

# ------------------------------------------------------------ tables, plots
python3 "$HERE/summarize.py" "$OUT" > "$OUT/summary.md"
if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 "$HERE/plot.py" "$OUT" "$IMAGES"
else
  echo "run.sh: matplotlib missing (pip install matplotlib): no plots" >&2
fi
[ $QUICK = 1 ] || ln -sfn "$(basename "$OUT")" "$HERE/results/latest"
say "tables: $OUT/summary.md   plots: $IMAGES/bench-*.png"
