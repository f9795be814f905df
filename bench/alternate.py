#!/usr/bin/env python3
"""Times two commands alternately (A, B, A, B, …) so that a machine whose
load drifts affects both alike; prints mean, median and user CPU per run.
Usage: alternate.py RUNS 'COMMAND A' 'COMMAND B'"""
import resource, shlex, statistics, subprocess, sys, time

runs, commands = int(sys.argv[1]), sys.argv[2:]
walls = {c: [] for c in commands}
users = {c: [] for c in commands}
for _ in range(runs):
    for command in commands:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        start = time.perf_counter()
        subprocess.run(shlex.split(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        walls[command].append(time.perf_counter() - start)
        users[command].append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before)
for command in commands:
    w, u = walls[command], users[command]
    print(f"{command}: wall mean {statistics.mean(w)*1000:.1f} ms, median {statistics.median(w)*1000:.1f} ms; user mean {statistics.mean(u)*1000:.1f} ms")
