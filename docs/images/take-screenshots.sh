#!/bin/sh
# Regenerates the screenshots of issue 17 from real runs in tmux:
#   docs/images/join-block.png       a join over a 9-member fan-out and a task, member by member
#   docs/images/narrow-terminal.png  the live view at 50 columns, mid-run, a failure's reason wrapped
#   docs/images/failure-summary.png  the final summary: failures with their last lines, an allowed
#                                    failure, a member a join did not need
#
#   swift build && sh docs/images/take-screenshots.sh [path/to/flowrun]
#
# Needs tmux, python3 with Pillow and fontTools (pip install pillow fonttools).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
flowrun=${1:-$here/../../.build/debug/flowrun}
flowrun=$(cd "$(dirname "$flowrun")" && pwd)/$(basename "$flowrun")
work=$(mktemp -d)
socket=shots-$$
trap 'tmux -L $socket kill-server 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/join.yaml" <<'YAML'
name: mirrors
groups:
  fetch:
    foreach: [eu-west, eu-north, us-east, us-west, asia-east, asia-south, africa, oceania, sa-east]
    task:
      run: |
        region=${{ item }}
        echo "checksum=$(echo $region | sha256sum | cut -c1-12)" >> "$FLOWRUN_OUTPUT"
        echo "fetched index from $region (12 files)"
tasks:
  build:
    run: 'for step in configure compile link; do echo "$step ok"; done; echo "version=1.4.2" >> "$FLOWRUN_OUTPUT"'
joins:
  ready:
    wait: [fetch, build]
YAML

cat > "$work/narrow.yaml" <<'YAML'
name: nightly
max_parallel: 3
tasks:
  fetch-index:
    http: {url: "http://127.0.0.1:9/mirror/index/2026-11-25.json"}
groups:
  sync:
    foreach: {range: [1, 12]}
    task:
      name: sync-shard-${{ item }}
      run: "for p in 20 40 60 80 100; do sleep 0.4; echo ::progress::$p; echo copied $p% of shard ${{ item }}; done"
YAML

cat > "$work/summary.yaml" <<'YAML'
name: ci
tasks:
  build: {run: 'echo compiled 12 files'}
  lint:
    continue_on_error: true
    run: 'echo "style: 3 warnings in src/upload.c" >&2; exit 1'
  unit-tests:
    needs: build
    run: |
      echo "running 40 tests"
      echo "test_parse ... ok"
      echo "FAIL: test_upload (expected 200, got 500)" >&2
      echo "39 passed, 1 failed" >&2
      exit 1
  cache-eu: {run: 'sleep 0.2; echo warm'}
  cache-us: {run: 'sleep 5'}
joins:
  any-cache:
    wait: [cache-eu, cache-us]
    need: any
YAML

# shot NAME COLUMNS ROWS WORKFLOW WAIT-FOR: runs flowrun in a fresh pane and
# captures it (with colours) once the pane shows WAIT-FOR.
shot() {
    socket=shots-$$-$1
    tmux -L $socket -f /dev/null new-session -d -s shot -x "$2" -y "$3" \
        env TERM=xterm-256color NO_COLOR= sh -c "cd '$work' && '$flowrun' '$4' --output tty --log-dir '$work/runs'; printf '\n'; exec sleep 600"
    tries=0
    until tmux -L $socket capture-pane -p -t shot | grep -q "$5"; do
        tries=$((tries + 1)); [ $tries -lt 300 ] || { echo "no '$5' in $1" >&2; exit 1; }
        sleep 0.1
    done
    tmux -L $socket capture-pane -e -p -t shot > "$work/$1.ansi"
    python3 "$here/render-terminal.py" "$work/$1.ansi" "$here/$1.png" --columns "$2"
    tmux -L $socket kill-server 2>/dev/null || true
    echo "wrote $here/$1.png"
}

shot join-block 84 36 join.yaml 'mirrors succeeded in'
shot narrow-terminal 50 20 narrow.yaml ' 60%'
shot failure-summary 72 34 summary.yaml 'ci failed in'
