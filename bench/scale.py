#!/usr/bin/env python3
"""Scale: long fan-outs in flowrun, and the same list through xargs and GNU parallel.

usage: scale.py --flowrun BIN [--out DIR] [--work DIR] [--sizes 10000,100000,1000000]
                [--true-size 100000] [--jobs 8] [--runs 1] [--no-peers]

Two tables, written to OUT/scale.md and OUT/scale.json:

1. A fan-out of N `sleep: 0s` members (no process: the engine's and the
   record's cost per member) fed by a task's stdout (`seq 1 N`), max_parallel
   8, for each N of --sizes: wall time, peak RSS, and the run record's size
   (events.jsonl, summary.json, the whole folder: bytes written and blocks on
   disk, and its file count). Memory should stay flat and time grow linearly.
2. N = --true-size members of `run: "true"` at P = --jobs against
   `xargs -P JOBS -n 1 true` and `parallel -j JOBS true` on the same list
   (one `true` per item): wall time and peak RSS of each.

What the figures depend on is printed beside them (`describe_setup`), so
that two machines' tables can be compared: the CPU (model, MHz, cores, a
hypervisor), the binary's build (release or debug, Swift's runtime linked
statically or not), the file system the run records were written to, and
a calibration run of the C floor (`bench/runner-floor.c`: flowrun's
per-task system work without its engine, `--floor-size` tasks at P=2)
next to flowrun's. The figures are noisy on a shared machine: compare
against the calibration from the same minutes, not across days.

Peak RSS is ru_maxrss of the waited-for process tree's largest process
(wait4), the figure GNU time's %M prints: for flowrun that is its engine,
for xargs and parallel their own process (their children are `true`).
Every run starts in a fresh folder under WORK (deleted afterwards).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def run_measured(argv, cwd, stdin_path=None):
    """Run argv in cwd; return (wall seconds, peak RSS in KB, exit code, user CPU seconds)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if stdin_path:
        stdin.close()
    return wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status), usage.ru_utime


def record_size(folder):
    """Bytes, 1 KiB blocks on disk and files of a run record, and its two big files."""
    apparent = blocks = files = 0
    for root, _, names in os.walk(folder):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            apparent += info.st_size
            blocks += info.st_blocks * 512 // 1024
            files += 1

    def size(name):
        path = os.path.join(folder, name)
        return os.path.getsize(path) if os.path.exists(path) else 0

    return {"bytes": apparent, "disk_kb": blocks, "files": files,
            "events_bytes": size("events.jsonl"), "summary_bytes": size("summary.json")}


def cpu_description():
    """`Model name, N cores, MHz now, hypervisor` from /proc/cpuinfo."""
    model, mhz, cores, virtual = "unknown", [], 0, False
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name":
                model, cores = value, cores + 1
            elif key == "cpu MHz":
                mhz.append(float(value))
            elif key == "flags" and " hypervisor" in " " + value:
                virtual = True
    speed = " at %.0f MHz now" % (sum(mhz) / len(mhz)) if mhz else ""
    return "%s, %d cores%s%s" % (model, cores, speed, ", virtual machine" if virtual else "")


def build_description(binary):
    """release or debug (by the SwiftPM folder it was built in, or BUILD_KIND), and how Swift's runtime is linked."""
    kind = os.environ.get("BUILD_KIND")
    if not kind:
        parts = os.path.realpath(binary).split(os.sep)
        kind = "release" if "release" in parts else "debug" if "debug" in parts else "unknown (set BUILD_KIND)"
    try:
        libraries = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
        linked = "Swift runtime dynamic" if "libswiftCore" in libraries else "Swift runtime static (--static-swift-stdlib)"
    except OSError:
        linked = "linking unknown (no ldd)"
    return "%s build, %s" % (kind, linked)


def filesystem_description(folder):
    """The file system holding `folder`: type and mount point, from /proc/mounts."""
    folder = os.path.realpath(folder)
    best = ("", "unknown", "")
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 4:
                continue
            mount = fields[1].replace("\\040", " ")
            inside = folder == mount or folder.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) >= len(best[0]):
                best = (mount, fields[2], fields[3])
    return "%s on %s (%s)" % (best[1], best[0] or "?", best[2])


def floor_calibration(work, size):
    """Wall seconds of `runner-floor SIZE 2` (compiled from bench/), or None without a C compiler."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner-floor.c")
    binary = os.path.join(work, "runner-floor")
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler or subprocess.run([compiler, "-O2", "-o", binary, source]).returncode != 0:
        return None
    folder = fresh(work, "floor")
    wall, _, code, _ = run_measured([binary, str(size), "2"], folder)
    shutil.rmtree(folder, ignore_errors=True)
    return wall if code == 0 else None


def describe_setup(binary, work, floor_size):
    setup = {"cpu": cpu_description(), "build": build_description(binary),
             "record_filesystem": filesystem_description(work), "floor_size": floor_size,
             "floor_seconds": floor_calibration(work, floor_size), "load_at_start": os.getloadavg()}
    return setup


def setup_lines(setup):
    floor = setup["floor_seconds"]
    return ["- CPU: %s" % setup["cpu"],
            "- flowrun: %s" % setup["build"],
            "- run records on: %s" % setup["record_filesystem"],
            "- C floor (`runner-floor %d 2`, `/bin/sh -c true` per task): %s" % (
                setup["floor_size"], "%.3f s (%.0f µs a task)" % (floor, floor / setup["floor_size"] * 1e6) if floor else "not run (no C compiler)"),
            "- load averages at the start: %.2f %.2f %.2f" % tuple(setup["load_at_start"])]


def fan_out_workflow(count, jobs, task):
    return ("name: scale-%d\nmax_parallel: %d\ntasks:\n  list:\n    run: seq 1 %d\n"
            "groups:\n  work:\n    needs: [list]\n    foreach: ${{ tasks.list.stdout }}\n"
            "    task:\n      %s\n") % (count, jobs, count, task)


def fresh(work, name):
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


def flowrun_fan_out(binary, work, count, jobs, task, label):
    folder = fresh(work, label)
    with open(os.path.join(folder, "flow.yaml"), "w") as f:
        f.write(fan_out_workflow(count, jobs, task))
    wall, rss, code, user = run_measured([binary, "flow.yaml", "--output", "plain"], folder)
    runs = os.path.join(folder, ".flowrun", "runs")
    records = [os.path.join(runs, r) for r in os.listdir(runs) if r != "latest"]
    size = record_size(records[0]) if records else {}
    shutil.rmtree(folder, ignore_errors=True)
    return {"tool": "flowrun", "n": count, "wall": wall, "user": user, "rss_kb": rss, "exit": code, "record": size}


def peer(argv, work, count, label):
    folder = fresh(work, label)
    items = os.path.join(folder, "items.txt")
    with open(items, "w") as f:
        f.writelines("%d\n" % i for i in range(1, count + 1))
    wall, rss, code, _ = run_measured(argv, folder, stdin_path=items)
    shutil.rmtree(folder, ignore_errors=True)
    return {"tool": argv[0], "n": count, "wall": wall, "rss_kb": rss, "exit": code}


def best(results):
    """The fastest of several runs of one configuration (its RSS beside it)."""
    return min(results, key=lambda r: r["wall"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flowrun", required=True)
    parser.add_argument("--out", default="bench/results/scale")
    parser.add_argument("--work", default="/tmp/flowrun-scale")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--true-size", type=int, default=100000)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--floor-size", type=int, default=2000)
    args = parser.parse_args()
    binary = os.path.abspath(args.flowrun)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    setup = describe_setup(binary, args.work, args.floor_size)
    print("\n".join(setup_lines(setup)), file=sys.stderr)

    sleep_rows = []
    for count in [int(s) for s in args.sizes.split(",") if s]:
        runs = [flowrun_fan_out(binary, args.work, count, args.jobs, "sleep: 0s", "sleep-%d" % count) for _ in range(args.runs)]
        sleep_rows.append(best(runs))
        print("sleep: 0s x %d: %.2f s (user %.2f s), %.1f MB" % (count, sleep_rows[-1]["wall"], sleep_rows[-1]["user"], sleep_rows[-1]["rss_kb"] / 1024), file=sys.stderr)

    true_rows = []
    if not args.no_peers:
        n, jobs = args.true_size, args.jobs
        for _ in range(args.runs):
            true_rows.append(flowrun_fan_out(binary, args.work, n, jobs, 'run: "true"', "true-flowrun"))
            true_rows.append(peer(["xargs", "-P", str(jobs), "-n", "1", "true"], args.work, n, "true-xargs"))
            if shutil.which("parallel"):
                true_rows.append(peer(["parallel", "-j", str(jobs), "true"], args.work, n, "true-parallel"))
            else:
                print("GNU parallel is not installed: its row is left out", file=sys.stderr)
        by_tool = {}
        for row in true_rows:
            by_tool.setdefault(row["tool"], []).append(row)
        true_rows = [best(rows) for rows in by_tool.values()]

    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump({"sleep": sleep_rows, "true": true_rows, "load": os.getloadavg(), "binary": binary, "setup": setup}, f, indent=1)
    mb = lambda b: "%.1f MB" % (b / 1e6)
    lines = setup_lines(setup) + ["", "| members (`sleep: 0s`, P=%d) | time | user CPU | peak RSS | events.jsonl | summary.json | record (bytes / on disk / files) | exit |" % args.jobs,
             "|---|---|---|---|---|---|---|---|"]
    for r in sleep_rows:
        s = r["record"]
        lines.append("| %d | %.2f s | %.2f s | %.1f MB | %s | %s | %s / %s / %d | %d |" % (
            r["n"], r["wall"], r["user"], r["rss_kb"] / 1024, mb(s.get("events_bytes", 0)), mb(s.get("summary_bytes", 0)),
            mb(s.get("bytes", 0)), mb(s.get("disk_kb", 0) * 1024), s.get("files", 0), r["exit"]))
    if true_rows:
        lines += ["", "| %d × `true`, %d at once | time | peak RSS | exit |" % (args.true_size, args.jobs), "|---|---|---|---|"]
        for r in true_rows:
            lines.append("| %s | %.2f s | %.1f MB | %d |" % (r["tool"], r["wall"], r["rss_kb"] / 1024, r["exit"]))
    lines.append("")
    lines.append("load averages at the end: %.2f %.2f %.2f" % os.getloadavg())
    with open(os.path.join(args.out, "scale.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
