#!/usr/bin/env bash
# Times the front end (load → validate → plan → render) on large generated
# workflows, to catch what libFuzzer cannot: work that grows faster than the
# file. libFuzzer runs with -max_len=4096, where a quadratic loop still takes
# microseconds; flowrun accepts files up to 16 MiB.
#
#   Fuzz/scale.sh [N] [LIMIT_SECONDS]     N entries per case (default 4000), limit default 2
#
# Builds the ordinary replay tool in release mode ($FUZZ_CHECK_SCRATCH,
# default .build-fuzzcheck), writes one file per case to
# $FUZZ_CHECK_SCRATCH/scale/, and prints the seconds each takes. A case over
# the limit is marked SLOW; the script exits 1 if any case is. Run it with
# two sizes (e.g. 2000 and 8000): a linear case takes about 4 times longer,
# a quadratic one about 16 times.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-4000}
LIMIT=${2:-2}
SCRATCH=${FUZZ_CHECK_SCRATCH:-.build-fuzzcheck}
OUT="$SCRATCH/scale"
export SWIFT_BACKTRACE=enable=no

swift build --scratch-path "$SCRATCH" -c release --product flowrun-fuzz >&2
REPLAY="$(swift build --scratch-path "$SCRATCH" -c release --show-bin-path)/flowrun-fuzz"
mkdir -p "$OUT"

# Each case: NAME, then an awk program that prints the file (n is N).
generate() {
    awk -v n="$N" "BEGIN { $2 }" >"$OUT/$1-$N.yaml"
}
generate chain 'print "tasks:\n  t0: { run: x }"; for (i = 1; i < n; i++) printf "  t%d: { run: x, needs: [t%d] }\n", i, i - 1'
generate cycle 'print "tasks:"; for (i = 0; i < n; i++) printf "  t%d: { run: x, needs: [t%d] }\n", i, (i + 1) % n'
generate wide-needs 'print "tasks:"; s = ""; for (i = 0; i < n; i++) { printf "  t%d: { run: x }\n", i; s = s (i ? ", " : "") "t" i }; print "  all: { run: x, needs: [" s "] }"'
generate many-expressions 'print "vars: { v: x }\ntasks:\n  a:\n    run: |"; for (i = 0; i < n; i++) print "      echo ${{ vars.v }}"'
generate long-line 'printf "vars: { x: y }\ntasks:\n  a: { run: \""; for (i = 0; i < n; i++) printf "${{ vars.x }}"; print "\" }"'
generate unknown-needs 'print "tasks:"; for (i = 0; i < n; i++) printf "  t%d: { run: x, needs: [zz%d] }\n", i, i'
generate chain-reads-first 'print "tasks:\n  t0: { run: x }"; for (i = 1; i < n; i++) printf "  t%d: { run: \"echo ${{ tasks.t0.stdout }}\", needs: [t%d] }\n", i, i - 1'
generate many-semaphores 's = ""; for (i = 0; i < n; i++) s = s (i ? ", " : "") "s" i ": 1"; print "semaphores: {" s "}\ntasks:"; for (i = 0; i < n; i++) printf "  t%d: { run: x, semaphores: [s%d] }\n", i, i'
generate many-finally 'print "tasks:\n  a: { run: x }\nfinally:"; for (i = 0; i < n; i++) printf "  f%d: { run: x }\n", i'
generate many-joins 'print "tasks:\n  a: { run: x }\njoins:"; for (i = 0; i < n; i++) printf "  j%d: { wait: [a] }\n", i'
generate many-groups 'print "groups:"; for (i = 0; i < n; i++) printf "  g%d: { tasks: { m%d: { run: x } } }\n", i, i'
generate unknown-keys 'print "tasks:\n  a: { run: x }"; for (i = 0; i < n; i++) printf "zz%d: 1\n", i'

slow=0
printf '%-24s %10s %8s\n' case bytes seconds
for file in "$OUT"/*-"$N".yaml; do
    name=$(basename "$file" "-$N.yaml")
    start=$(date +%s.%N)
    if timeout 120 "$REPLAY" "$file" >/dev/null 2>&1; then result=ok; else result="exit $?"; fi
    seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
    mark=""
    if [[ "$result" != ok ]]; then mark="  $result"; slow=1; fi
    if awk -v t="$seconds" -v l="$LIMIT" 'BEGIN { exit !(t > l) }'; then mark="$mark  SLOW"; slow=1; fi
    printf '%-24s %10s %8s%s\n' "$name" "$(wc -c <"$file")" "$seconds" "$mark"
done
exit "$slow"
