#!/bin/sh
# watch-bench.sh FLOWRUN — `flowrun watch` on a 10,000-file tree (issue 36):
# how long setting up the watches takes (the first to the last
# inotify_add_watch, by strace), the engine's CPU while idle (10 s after the
# first run), and its RSS then. Needs strace.
set -eu
flowrun=$(readlink -f "$1")
dir=$(mktemp -d /tmp/watch-bench.XXXXXX)
cd "$dir"
python3 - <<'PY'
import os
for d in range(100):
    os.makedirs(f"src/d{d:02d}/sub", exist_ok=True)
    for f in range(100):
        sub = "sub/" if f % 2 else ""
        open(f"src/d{d:02d}/{sub}f{f:03d}.c", "w").write(f"int f{d}_{f};\n")
PY
cat > flowrun.yaml <<'YAML'
tasks:
  compile:
    sources: ["src/**/*.c"]
    run: echo compiled
YAML
strace -f -tt -e trace=inotify_add_watch -o strace.txt "$flowrun" watch --output plain > out.txt 2>&1 &
tracer=$!
# The first run's end: the watches are set up before it starts.
until grep -q "run      finished" out.txt 2>/dev/null; do sleep 0.1; done
# strace → the supervisor (the pid a shell would know) → the engine, its first child.
supervisor=$(pgrep -P "$tracer" | head -1)
engine=$(pgrep -P "$supervisor" | head -1)
first=$(grep inotify_add_watch strace.txt | head -1 | awk '{print $2}')
last=$(grep inotify_add_watch strace.txt | tail -1 | awk '{print $2}')
watches=$(grep -c "inotify_add_watch(.*= [0-9]" strace.txt)
ticks() { awk '{print $14 + $15}' /proc/"$engine"/stat; }
before=$(ticks); sleep 10; after=$(ticks)
hz=$(getconf CLK_TCK)
echo "files: $(find src -type f | wc -l), watches: $watches, set up from $first to $last"
echo "idle CPU over 10 s: $(( (after - before) * 100 / hz )) ticks of 1/100 s = $(echo "scale=2; ($after - $before) * 100 / $hz / 10" | bc)%"
echo "engine RSS: $(grep VmRSS /proc/"$engine"/status)"
kill -TERM "$supervisor"
wait "$tracer" || true
rm -rf "$dir"
