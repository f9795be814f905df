#!/usr/bin/env python3
"""Time flowrun on the workflows gen-workflows.py wrote; write JSON and CSV.

usage: measure.py --flowrun BIN --manifest WORK/manifest.json --out RESULTS_DIR
                  [--floor SPAWN_LIMIT] [--runs 3] [--timeout 300]
                  [--sample-ms 1] [--only PREFIX,...] [--log-dir DIR]

Per workflow:
  1. one probe run (also the warm-up: file cache, page cache, binary), with a
     sampler thread reading /proc/PID/status every --sample-ms ms: the peak
     `Threads:` value is the peak thread count; it is not timed;
  2. --runs timed runs, with no sampler: wall time (perf_counter around
     spawn .. wait4), user+sys CPU and peak RSS (ru_maxrss) from wait4's
     rusage, the same figure GNU time's %M prints.
     For spawn-* workflows every run is paired with a run of the C floor
     (../shared/bench/spawn-limit.c, `-s -g flat N P`: posix_spawn of
     `/bin/sh -c true`, which is what flowrun starts per task), the order
     alternating run by run; ratio and per-task overhead are taken per pair,
     then the median.
If the probe takes longer than --long seconds (default 30), only one timed run
is made (the file says so: `runs`).

A `run` workflow is executed as
  BIN FILE --output plain --log-dir DIR     (stdout, stderr -> /dev/null)
and the run record in DIR is deleted after each run (not timed); a
`validate` workflow as `BIN validate FILE`. A non-zero exit is recorded and
reported, not retried.

Writes RESULTS_DIR/flowrun.json (every run) and RESULTS_DIR/flowrun.csv (one
row per workflow, medians).
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time


def run_once(argv, timeout, sample_s=None):
    """Run argv; return dict(wall, user, sys, cpu, rss_kb, exit, threads)."""
    peak = {"threads": 0, "samples": 0}
    stop = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=True)
    sampler = None
    if sample_s:
        path = "/proc/%d/status" % proc.pid

        def sample():
            while not stop.is_set():
                try:
                    with open(path) as f:
                        for line in f:
                            if line.startswith("Threads:"):
                                peak["threads"] = max(peak["threads"], int(line.split()[1]))
                                peak["samples"] += 1
                                break
                except (OSError, ValueError):
                    return
                time.sleep(sample_s)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if sampler:
        sampler.join()
    code = proc.returncode
    res = {"wall": wall, "user": ru.ru_utime, "sys": ru.ru_stime, "cpu": ru.ru_utime + ru.ru_stime,
           "rss_kb": ru.ru_maxrss, "exit": code if code >= 0 else 128 - code,
           "timed_out": wall >= timeout}
    if sample_s:
        res["threads"] = peak["threads"]
        res["thread_samples"] = peak["samples"]
    return res


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def med(xs):
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flowrun", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--floor", help="spawn-limit binary (C floor) for spawn-* workflows")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--long", type=float, default=30)
    ap.add_argument("--sample-ms", type=float, default=1.0)
    ap.add_argument("--only", default="", help="comma-separated name prefixes")
    ap.add_argument("--log-dir", default="/tmp/flowrun-bench-logs")
    a = ap.parse_args()

    flowrun = os.path.abspath(a.flowrun)
    manifest = json.load(open(a.manifest))
    only = [p for p in a.only.split(",") if p]
    if only:
        manifest = [m for m in manifest if any(m["name"].startswith(p) for p in only)]
    os.makedirs(a.out, exist_ok=True)
    results = []

    def flowrun_argv(m):
        if m["mode"] == "validate":
            return [flowrun, "validate", m["file"]]
        return [flowrun, m["file"], "--output", "plain", "--log-dir", a.log_dir]

    def clean():
        shutil.rmtree(a.log_dir, ignore_errors=True)

    for m in manifest:
        argv = flowrun_argv(m)
        entry = dict(m, argv=argv, load_start=loadavg())
        clean()
        probe = run_once(argv, a.timeout, sample_s=a.sample_ms / 1000)
        clean()
        entry["probe"] = probe
        runs = a.runs if probe["wall"] < a.long and not probe["timed_out"] else 1
        floor_argv = None
        if m["family"] == "spawn" and a.floor:
            floor_argv = [os.path.abspath(a.floor), "-s", "-g", "flat", str(m["n"]), str(m["p"])]
            entry["floor_argv"] = floor_argv
        timed, floors = [], []
        for k in range(runs):
            if probe["timed_out"]:
                break
            pair = []
            if floor_argv and k % 2 == 0:
                pair.append("floor")
            pair.append("flowrun")
            if floor_argv and k % 2 == 1:
                pair.append("floor")
            for who in pair:
                if who == "floor":
                    floors.append(run_once(floor_argv, a.timeout))
                else:
                    timed.append(run_once(argv, a.timeout))
                    clean()
        entry["runs"] = timed
        entry["floor_runs"] = floors
        entry["load_end"] = loadavg()
        results.append(entry)

        # one-line progress
        walls = [r["wall"] for r in timed] or [probe["wall"]]
        w = med(walls)
        bad = [r["exit"] for r in timed + [probe] if r["exit"] != 0]
        line = "  %-24s %8.3f s  %9.0f tasks/s  %7.1f MB  %4d threads" % (
            m["name"], w, m["tasks"] / w if w else 0, max(r["rss_kb"] for r in timed + [probe]) / 1024,
            probe.get("threads", 0))
        if floors:
            ratios = [t["wall"] / f["wall"] for t, f in zip(timed, floors)]
            line += "  %.2fx floor" % med(ratios)
        if bad:
            line += "  EXIT %s" % sorted(set(bad))
        if probe["timed_out"]:
            line += "  TIMED OUT after %.0f s" % a.timeout
        print(line, file=sys.stderr, flush=True)

    with open(os.path.join(a.out, "flowrun.json"), "w") as f:
        json.dump({"flowrun": flowrun, "runs": a.runs, "sample_ms": a.sample_ms, "results": results}, f, indent=1)

    cols = ["name", "family", "shape", "n", "p", "tasks", "runs", "median_wall_s", "min_wall_s", "max_wall_s",
            "tasks_per_s", "us_per_task", "median_cpu_s", "peak_rss_mb", "peak_threads",
            "floor_median_wall_s", "x_floor", "us_per_task_over_floor", "exit", "load_start", "load_end"]
    with open(os.path.join(a.out, "flowrun.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for e in results:
            runs = e["runs"] or [e["probe"]]
            walls = [r["wall"] for r in runs]
            mw = med(walls)
            fl = e["floor_runs"]
            pairs = list(zip(runs, fl))
            row = {
                "name": e["name"], "family": e["family"], "shape": e["shape"], "n": e["n"], "p": e["p"],
                "tasks": e["tasks"], "runs": len(e["runs"]),
                "median_wall_s": "%.4f" % mw, "min_wall_s": "%.4f" % min(walls), "max_wall_s": "%.4f" % max(walls),
                "tasks_per_s": "%.0f" % (e["tasks"] / mw), "us_per_task": "%.2f" % (mw / e["tasks"] * 1e6),
                "median_cpu_s": "%.4f" % med([r["cpu"] for r in runs]),
                "peak_rss_mb": "%.1f" % (max(r["rss_kb"] for r in runs + [e["probe"]]) / 1024),
                "peak_threads": e["probe"].get("threads", ""),
                "floor_median_wall_s": "%.4f" % med([r["wall"] for r in fl]) if fl else "",
                "x_floor": "%.3f" % med([t["wall"] / f_["wall"] for t, f_ in pairs]) if pairs else "",
                "us_per_task_over_floor": ("%.1f" % med([(t["wall"] - f_["wall"]) / e["tasks"] * 1e6 for t, f_ in pairs])
                                           if pairs else ""),
                "exit": ",".join(sorted({str(r["exit"]) for r in runs + [e["probe"]]})),
                "load_start": e["load_start"], "load_end": e["load_end"],
            }
            w.writerow([row[c] for c in cols])
    print("wrote %s/flowrun.json, flowrun.csv" % a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
