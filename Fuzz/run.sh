#!/usr/bin/env bash
# Fuzzes flowrun's front end (load → validate → plan → render) with libFuzzer.
#
#   Fuzz/run.sh [SECONDS] [LIBFUZZER_FLAG...]   build, then fuzz for SECONDS (default 600)
#   Fuzz/run.sh build                           only build the fuzzer
#   Fuzz/run.sh minimize CRASH_FILE [RUNS]      shrink a crash to CRASH_FILE.min
#
# The fuzzer works on a copy of Fuzz/corpus under $FUZZ_WORK (default
# .build-fuzz/run): the corpus it grows there is never committed. Crash,
# timeout and out-of-memory inputs land in $FUZZ_WORK/artifacts/.
# Replay one without the fuzzer:
#   swift build --product flowrun-fuzz && .build/debug/flowrun-fuzz -v FILE
#
# Environment: FUZZ_SCRATCH (SwiftPM scratch path, default .build-fuzz),
# FUZZ_WORK (working folder), FUZZ_MAX_LEN (default 4096), FUZZ_KEEP_GOING=1
# (fork mode: record crashes, timeouts and OOMs and keep fuzzing instead of
# stopping at the first one, for when a known crash is not fixed yet).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${FUZZ_SCRATCH:-.build-fuzz}
WORK=${FUZZ_WORK:-$SCRATCH/run}
MAX_LEN=${FUZZ_MAX_LEN:-4096}

# A Swift crash must not wait for the backtracer (it would hang the fuzzer);
# ASan prints the stack instead, symbolised by the toolchain's llvm-symbolizer.
export SWIFT_BACKTRACE=enable=no
SWIFTC=$(command -v swiftc || true)
if [[ -n "$SWIFTC" && -x "$(dirname "$(readlink -f "$SWIFTC")")/llvm-symbolizer" ]]; then
    export ASAN_SYMBOLIZER_PATH="$(dirname "$(readlink -f "$SWIFTC")")/llvm-symbolizer"
fi

# `--sanitize=fuzzer` makes SwiftPM link libFuzzer; the -Xswiftc flag adds
# ASan (two --sanitize flags silently drop one). -DFUZZING compiles in
# LLVMFuzzerTestOneInput and leaves out Replay's @main (libFuzzer has main).
BUILD_FLAGS=(--scratch-path "$SCRATCH" --product flowrun-fuzz
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)

build() {
    echo "== building the fuzzer in $SCRATCH" >&2
    # ld.gold warns about every ASan-internal symbol; those lines are noise.
    swift build "${BUILD_FLAGS[@]}" 2>&1 | grep -v "Cannot export local symbol" >&2
    FUZZER="$(swift build "${BUILD_FLAGS[@]}" --show-bin-path)/flowrun-fuzz"
    [[ -x "$FUZZER" ]] || { echo "no fuzzer at $FUZZER" >&2; exit 1; }
}

case "${1:-}" in
build)
    build
    echo "$FUZZER"
    exit 0
    ;;
minimize)
    CRASH=${2:?usage: Fuzz/run.sh minimize CRASH_FILE [RUNS]}
    build
    "$FUZZER" -minimize_crash=1 -runs="${3:-20000}" -timeout=2 -rss_limit_mb=1024 \
        -exact_artifact_path="$CRASH.min" "$CRASH" 2>&1 | tail -n 5
    echo "== minimised input: $CRASH.min ($(wc -c <"$CRASH.min") bytes)"
    exit 0
    ;;
esac

DURATION=${1:-600}
shift || true
build

mkdir -p "$WORK/corpus" "$WORK/artifacts"
cp Fuzz/corpus/* "$WORK/corpus/"
LOG="$WORK/fuzz-$(date +%Y%m%d-%H%M%S).log"
echo "== fuzzing for ${DURATION}s; corpus $WORK/corpus, log $LOG" >&2

MODE=()
if [[ "${FUZZ_KEEP_GOING:-0}" == 1 ]]; then
    MODE=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi

status=0
"$FUZZER" "$WORK/corpus" "${MODE[@]}" \
    -dict=Fuzz/workflow.dict \
    -max_total_time="$DURATION" \
    -max_len="$MAX_LEN" \
    -timeout=2 \
    -rss_limit_mb=1024 \
    -artifact_prefix="$WORK/artifacts/" \
    -print_final_stats=1 \
    "$@" 2>&1 | tee "$LOG" || status=$?

echo
echo "== log: $LOG"
echo "== corpus: $WORK/corpus ($(ls "$WORK/corpus" | wc -l) inputs)"
if compgen -G "$WORK/artifacts/*" >/dev/null; then
    echo "== crash / timeout / oom inputs in $WORK/artifacts/:"
    ls -l "$WORK/artifacts/"
    echo "== replay one: .build/debug/flowrun-fuzz -v FILE   (after: swift build --product flowrun-fuzz)"
else
    echo "== no crash, timeout or oom inputs in $WORK/artifacts/"
fi
exit "$status"
