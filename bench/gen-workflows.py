#!/usr/bin/env python3
"""Write flowrun's own benchmark workflows (and a manifest) into a directory.

usage: gen-workflows.py [--sizes 1000,10000,100000] [--spawn-sizes 2000,20000]
                        [--spawn-ps 2,8] [--validate-sizes 1000,10000,100000]
                        [--check FLOWRUN] OUT_DIR

Families (every task is named t<i> unless it is a fan-out member):

  sched-flat-N      N `sleep: 0` tasks, independent, max_parallel 8
  sched-chain-N     N `sleep: 0` tasks, each needing the previous one
  sched-fanout-N    N/1000 stages; stage i is a group fanning out 1000
                    `sleep: 0` members (`foreach: {range: [1, 1000]}`), a join
                    waits for the group, and the next stage's group needs
                    that join: fan-out / fan-in, N/1000 times in a row
  sched-limited-N   two fan-out groups of N/2 `sleep: 0` members each, group
                    `concurrency` 2 and 4, every member also taking a slot of
                    the named semaphore `pool` (capacity 3), max_parallel 8:
                    all three kinds of limit bind during the run
  spawn-flat-N-pP   N `run: "true"` tasks, independent, max_parallel P (the
                    same file as ../shared/bench/gen.py's flat workload)
  validate-flat-N   N independent `run:` tasks (for `flowrun validate`)
  validate-chain-N  N `run:` tasks, each needing the previous one and reading
                    its exit code in an expression (needs, cycle and
                    transitive-needs checks all have work to do)

`sleep: 0` starts no process, so the sched-* files measure flowrun's
scheduler, limits, reporter and run record alone.

OUT_DIR/manifest.json lists every file: {file, family, shape, n, p, tasks,
mode} with mode "run" or "validate". With --check FLOWRUN, every file is
passed to `FLOWRUN validate` and the script fails if any is rejected.
"""
import argparse
import json
import os
import subprocess
import sys


def sched_flat(n):
    out = ["# sched-flat: %d independent sleep: 0 tasks" % n, "max_parallel: 8", "tasks:"]
    out += ["  t%d: {sleep: 0}" % i for i in range(1, n + 1)]
    return out


def sched_chain(n):
    out = ["# sched-chain: %d sleep: 0 tasks, each needing the previous one" % n,
           "max_parallel: 8", "tasks:", "  t1: {sleep: 0}"]
    out += ["  t%d: {sleep: 0, needs: [t%d]}" % (i, i - 1) for i in range(2, n + 1)]
    return out


def sched_fanout(n, width=1000):
    width = min(width, n)
    stages = max(1, n // width)
    out = ["# sched-fanout: %d stages of a %d-wide fan-out group and a join" % (stages, width),
           "max_parallel: 8", "groups:"]
    for s in range(1, stages + 1):
        out.append("  g%d:" % s)
        if s > 1:
            out.append("    needs: [j%d]" % (s - 1))
        out.append("    foreach: {range: [1, %d]}" % width)
        out.append("    task: {sleep: 0}")
    out.append("joins:")
    for s in range(1, stages + 1):
        out.append("  j%d: {wait: [g%d]}" % (s, s))
    return out, stages * width


def sched_limited(n):
    half = max(1, n // 2)
    out = ["# sched-limited: two fan-outs of %d, group concurrency 2 and 4," % half,
           "# every member also holding a slot of the semaphore pool (capacity 3)",
           "max_parallel: 8", "semaphores: {pool: 3}", "groups:"]
    for g, conc in (("a", 2), ("b", 4)):
        out += ["  %s:" % g, "    concurrency: %d" % conc,
                "    foreach: {range: [1, %d]}" % half,
                "    task: {sleep: 0, semaphores: [pool]}"]
    return out, 2 * half


def spawn_flat(n, p):
    out = ["max_parallel: %d" % p, "tasks:"]
    out += ['  t%d: {run: "true"}' % i for i in range(1, n + 1)]
    return out


def validate_flat(n):
    out = ["# validate-flat: %d independent run: tasks" % n, "max_parallel: 8", "tasks:"]
    out += ['  t%d: {run: "echo %d", timeout: 30s}' % (i, i) for i in range(1, n + 1)]
    return out


def validate_chain(n):
    out = ["# validate-chain: %d run: tasks, each needing the previous one and reading it" % n,
           "max_parallel: 8", "tasks:", '  t1: {run: "echo 1"}']
    out += ['  t%d: {run: "echo ${{ tasks.t%d.exit_code }}", needs: [t%d]}' % (i, i - 1, i - 1)
            for i in range(2, n + 1)]
    return out


def ints(s):
    return [int(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--spawn-sizes", default="2000,20000")
    ap.add_argument("--spawn-ps", default="2,8")
    ap.add_argument("--validate-sizes", default="1000,10000,100000")
    ap.add_argument("--check", metavar="FLOWRUN", help="validate every file with this binary")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    manifest = []

    def emit(name, family, shape, n, p, tasks, mode, lines):
        path = os.path.join(a.out, name + ".yaml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        manifest.append({"name": name, "file": os.path.abspath(path), "family": family, "shape": shape,
                         "n": n, "p": p, "tasks": tasks, "mode": mode})

    for n in ints(a.sizes):
        emit("sched-flat-%d" % n, "sched", "flat", n, 8, n, "run", sched_flat(n))
        emit("sched-chain-%d" % n, "sched", "chain", n, 8, n, "run", sched_chain(n))
        lines, t = sched_fanout(n)
        emit("sched-fanout-%d" % n, "sched", "fanout", n, 8, t, "run", lines)
        lines, t = sched_limited(n)
        emit("sched-limited-%d" % n, "sched", "limited", n, 8, t, "run", lines)
    for n in ints(a.spawn_sizes):
        for p in ints(a.spawn_ps):
            emit("spawn-flat-%d-p%d" % (n, p), "spawn", "flat", n, p, n, "run", spawn_flat(n, p))
    for n in ints(a.validate_sizes):
        emit("validate-flat-%d" % n, "validate", "flat", n, 8, n, "validate", validate_flat(n))
        emit("validate-chain-%d" % n, "validate", "chain", n, 8, n, "validate", validate_chain(n))

    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)

    if a.check:
        bad = 0
        for m in manifest:
            r = subprocess.run([a.check, "validate", m["file"]], capture_output=True, text=True)
            msg = (r.stdout + r.stderr).strip().splitlines()
            print("  %-24s %s" % (m["name"], msg[-1] if msg else "rc=%d" % r.returncode), file=sys.stderr)
            if r.returncode != 0:
                bad += 1
                print("\n".join(msg[:10]), file=sys.stderr)
        if bad:
            sys.exit("gen-workflows.py: %d file(s) rejected by %s validate" % (bad, a.check))
    print("%d workflows in %s" % (len(manifest), a.out), file=sys.stderr)


if __name__ == "__main__":
    main()
