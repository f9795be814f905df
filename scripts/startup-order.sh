#!/usr/bin/env bash
# Writes scripts/startup-order.txt: the functions flowrun runs in its everyday
# commands, in the order the linker should lay them out, one `.text.NAME`
# section a line (gold's --section-ordering-file, which install.sh passes).
#
#   scripts/startup-order.sh BINARY     # a release build of this tree
#
# Why: a no-op run executed code on 820 different 4 KiB pages spread over
# 13 MB of .text, and each 64 KiB window of it the process touched first was
# a page fault (121 a run). Built with one section a function and this list,
# flowrun's own functions that a no-op run executes lie in 19 windows, not 58;
# a no-op run takes 353 page faults, not 404 (docs/BENCHMARKS.md, "Start-up
# functions laid out together").
#
# The list comes from valgrind's callgrind over --version, validate, list,
# completion of task names, --dry-run, a no-op run of workflows/c-project and
# a small run that starts tasks: every function each executed, in the order
# first seen. A list gone stale costs nothing but the gain: a name the linker
# does not find is skipped, and a function missing from it is laid out as
# before. Regenerate it when start-up code moves (a release build, then this).
set -euo pipefail
binary=${1:?usage: scripts/startup-order.sh BINARY}
case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
cd "$(dirname "$0")/.."
repo=$PWD
for tool in valgrind objcopy python3 cc make; do
  command -v "$tool" >/dev/null || { echo "startup-order.sh: needs $tool" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 Swift writes; the symbols are all it needs.
objcopy --strip-debug "$binary" "$work/flowrun"
cp -R workflows/c-project "$work/c-project"
cat > "$work/chain.yaml" <<'YAML'
name: chain
tasks:
  first: {run: "true"}
  second: {needs: [first], run: "true"}
  third: {needs: [second], run: "echo done"}
YAML

# --demangle=no: the linker knows a C++ function's section by its mangled
# name (.text._ZN5swift…); demangled (`swift::…()`), the runtime's functions
# in the list matched none and were laid out as if unlisted.
profile() {  # profile NAME ARGS...: callgrind over one command in the c-project folder
  local name=$1; shift
  (cd "$work/c-project" && valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.%p.out" \
    "$work/flowrun" "$@" >/dev/null 2>"$work/$name.log") || { echo "startup-order.sh: $name failed:" >&2; cat "$work/$name.log" >&2; exit 1; }
}
(cd "$work/c-project" && ./generate.sh >/dev/null && "$work/flowrun" --output plain >/dev/null)
# The no-op run of a steady state: stamps kept once settled (2 s), then the
# state's snapshot written by a run of a settled state folder.
for round in 1 2; do
  sleep 2.1
  (cd "$work/c-project" && "$work/flowrun" --output plain >/dev/null)
done
profile version --version
profile validate validate flowrun.yaml
profile list list flowrun.yaml
profile completion ---completion run -- --only 4 6 flowrun run flowrun.yaml --only cc
profile dry-run --dry-run --output plain
profile no-op --output plain
profile chain "$work/chain.yaml" --output plain   # the engine is a forked child: a file of its own

python3 - "$work" "$repo/scripts/startup-order.txt" <<'PY'
import glob, os, re, sys
work, out = sys.argv[1], sys.argv[2]
order, seen = [], set()
for name in ["version", "validate", "list", "completion", "dry-run", "no-op", "chain"]:
    for path in sorted(glob.glob(os.path.join(work, name + ".*.out")), key=os.path.getmtime):
        names = {}
        for line in open(path, errors="replace"):
            m = re.match(r"c?fn=\((\d+)\)(?: (\S+))?$", line.strip())
            if not m:
                continue
            if m.group(2):
                names[m.group(1)] = m.group(2)
            symbol = names.get(m.group(1), "").split("'")[0]  # callgrind marks recursion as NAME'2
            if symbol and not symbol.startswith("0x") and symbol not in seen:
                seen.add(symbol)
                order.append(symbol)
with open(out, "w") as f:
    f.writelines(".text." + symbol + "\n" for symbol in order)
print(f"startup-order.sh: {len(order)} functions in {out}")
PY
