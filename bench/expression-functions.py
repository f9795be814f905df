#!/usr/bin/env python3
"""validate and --dry-run of a 2,000-task file whose expressions call
functions and read a computed var, against the same file with the calls
replaced by operators over the same operands and literals and the var plain
(issue 35: within 10 %).

    bench/expression-functions.py [FLOWRUN] [RUNS]
    bench/expression-functions.py --instructions [FLOWRUN]

Writes both files to a temporary folder, times each command RUNS times
(default 15, after one warm-up) and prints the medians, the least CPU
time of each, and the ratios.

--instructions counts instead the instructions each command executes,
once, under valgrind's callgrind (a copy of the binary without its debug
sections, which valgrind cannot read): the same on a quiet machine and a
loaded one, where CPU times move by 10-20 % from one minute to the next."""
import os, re, resource, shutil, statistics, subprocess, sys, tempfile, time

TASKS = 2000
instructions = "--instructions" in sys.argv[1:]
arguments = [a for a in sys.argv[1:] if a != "--instructions"]
flowrun = arguments[0] if len(arguments) > 0 else ".build/release/flowrun"
runs = int(arguments[1]) if len(arguments) > 1 else 15


def workflow(functions):
    # With functions, `commit` is a computed var (`{sh: …}`, a task of its own
    # that every task reading it waits for); without, a plain value.
    commit = '{ sh: "echo 0123abc" }' if functions else "0123abc"
    lines = ['vars: { version: "1.2.3", ref: refs/heads/main, suites: "unit,lint", commit: ' + commit + ' }', "tasks:"]
    for n in range(TASKS):
        needs = f"\n    needs: [t{n - 1}]" if n % 10 else ""
        if functions:
            run = ("echo ${{ format('v{0}-{1}-{2}', vars.version, host.arch, " + str(n) + ") }} ${{ vars.commit }} "
                   "${{ startsWith(vars.ref, 'refs/tags/') && 'release' || 'debug' }} "
                   "${{ join(split(vars.suites, ','), ' ') }}")
            cond = "${{ contains(vars.suites, 'unit') && !endsWith(vars.ref, 'x') }}"
        else:
            # The same operands and literals, joined by operators instead of calls.
            run = ("echo ${{ vars.version == 'v{0}-{1}-{2}' || vars.ref == " + str(n) + " }} ${{ vars.commit }} "
                   "${{ vars.ref == 'refs/tags/' && 'release' || 'debug' }} "
                   "${{ vars.suites == ',' || vars.ref == ' ' }}")
            cond = "${{ vars.suites != 'unit' && !(vars.ref == 'x') }}"
        lines.append(f"  t{n}:{needs}\n    if: {cond}\n    run: {run}")
    return "\n".join(lines) + "\n"


def measure(arguments):
    """Wall and CPU (user + system) seconds of one run: CPU time is what a
    loaded machine (six builds on two cores) inflates least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(arguments, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def medians(pair):
    """The two commands alternated run by run, so a drifting load hits both alike."""
    for arguments in pair.values():
        measure(arguments)
    samples = {kind: [] for kind in pair}
    for _ in range(runs):
        for kind, arguments in pair.items():
            samples[kind].append(measure(arguments))
    # The median, and the least CPU time: the run a neighbour's burst did not reach.
    return {kind: (statistics.median(s[0] for s in runs_), statistics.median(s[1] for s in runs_), min(s[1] for s in runs_))
            for kind, runs_ in samples.items()}


def count(arguments, folder):
    """Instructions executed by one run, as callgrind counts them."""
    result = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(folder, "callgrind.out")] + arguments,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", result.stderr).group(1))


def counted(flowrun, paths, folder):
    for tool in ("valgrind", "objcopy"):
        if shutil.which(tool) is None:
            sys.exit(f"--instructions needs {tool} (apt-get install {'valgrind' if tool == 'valgrind' else 'binutils'})")
    binary = os.path.join(folder, "flowrun")
    subprocess.run(["objcopy", "--strip-debug", flowrun, binary], check=True)
    for command in (["validate"], ["--dry-run"], ["--dry-run", "--output", "json"]):
        plain, functions = (count([binary] + (["validate", paths[kind]] if command == ["validate"] else [paths[kind]] + command), folder)
                            for kind in ("plain", "functions"))
        print(f"{' '.join(command):24} instructions: plain {plain / 1e6:7.1f} M, functions {functions / 1e6:7.1f} M ({functions / plain:.3f})")


with tempfile.TemporaryDirectory() as folder:
    paths = {}
    for kind in ("plain", "functions"):
        paths[kind] = os.path.join(folder, kind + ".yaml")
        with open(paths[kind], "w") as f:
            f.write(workflow(kind == "functions"))
    if instructions:
        counted(flowrun, paths, folder)
        sys.exit(0)
    for command in (["validate"], ["--dry-run"], ["--dry-run", "--output", "json"]):
        results = medians({kind: [flowrun] + (["validate", path] if command == ["validate"] else [path] + command)
                           for kind, path in paths.items()})
        wall = results["functions"][0] / results["plain"][0]
        cpu = results["functions"][1] / results["plain"][1]
        print(f"{' '.join(command):24} wall: plain {results['plain'][0] * 1000:6.0f} ms, functions {results['functions'][0] * 1000:6.0f} ms ({wall:.2f})"
              f"   cpu: plain {results['plain'][1] * 1000:6.0f} ms, functions {results['functions'][1] * 1000:6.0f} ms ({cpu:.2f})"
              f"   least cpu: {results['plain'][2] * 1000:4.0f} → {results['functions'][2] * 1000:4.0f} ms ({results['functions'][2] / results['plain'][2]:.2f})")
