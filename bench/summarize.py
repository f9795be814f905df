#!/usr/bin/env python3
"""Markdown tables from a bench result directory (stdout).

usage: summarize.py RESULT_DIR

Reads what run.sh left in RESULT_DIR (machine.txt, flowrun.json, peers/) and
prints: the machine, the issue's targets against what was measured, flowrun's
own scale tables with a least-squares line per family (is it linear?), and
the peer comparison (ratios to the C floor measured in the same rounds).
docs/BENCHMARKS.md is written from this output.
"""
import os
import sys

import benchdata as bd

SH_FLOOR = "c-floor-sh"


def f3(x):
    return "-" if x is None else ("%.3f" % x if x < 10 else "%.2f" % x)


def f1(x):
    return "-" if x is None else "%.1f" % x


def f0(x):
    return "-" if x is None else "%.0f" % x


def ratio(x):
    return "-" if x is None else "%.2f×" % x


def verdict(ok):
    return "—" if ok is None else ("**met**" if ok else "**missed**")


def find(peers, shape, p=None):
    """The peers.sh workload of this shape (and P), or None."""
    for name, w in peers.items():
        if not name.startswith("mem-") and w["shape"] == shape and (p is None or w["p"] == p):
            return name, w
    return None, None


def targets(own, peers):
    """(target, measured, met) rows. The issue's targets are for flat N=2000,
    chain-200 and diamond-1000; a run with other sizes (--quick) says which."""
    rows = []
    fl = "flowrun"
    for p in (2, 8):
        name, w = find(peers, "flat", p)
        st = w and w["tools"].get(fl)
        x = st and st.get("x_floor")
        rows.append(("flat N=2000, P=%d: ≤ 1.05× c-floor-sh%s" % (p, " (measured: %s)" % name if name and name != "flat-2000-%d" % p else ""),
                     "%s (%s µs/task over floor)" % (ratio(x), f0(st.get("over_us"))) if x else "not measured",
                     None if x is None else x <= 1.05))
    name, w = find(peers, "chain")
    st = w and w["tools"].get(fl)
    o = st and st.get("over_us")
    rows.append(("chain-200: ≤ 50 µs per step above the floor%s" % (" (measured: %s)" % name if name and name != "chain-200" else ""),
                 "%s µs/step (%s)" % (f0(o), ratio(st.get("x_floor"))) if o is not None else "not measured",
                 None if o is None else o <= 50))
    for p in (2, 8):
        name, w = find(peers, "diamond", p)
        st = w and w["tools"].get(fl)
        x = st and st.get("x_floor")
        rows.append(("diamond-1000, P=%d: ≤ 1.10×%s" % (p, " (measured: %s)" % name if name and name != "diamond-1000-%d" % p else ""),
                     ratio(x) if x else "not measured", None if x is None else x <= 1.10))
    mem = next((v for k, v in peers.items() if k.startswith("mem-")), None)
    w = mem and mem["tools"].get(fl)
    r = w and w.get("rss_mb")
    rows.append(("peak RSS at %s tasks (peers' mem run): ≤ 40 MB" % (mem["n"] if mem else "20,000"),
                 "%s MB" % f1(r) if r else "not measured", None if r is None else r <= 40))
    for e in own:
        if e["family"] == "spawn" and e["tasks"] >= 20000:
            rows.append(("peak RSS, spawn-flat %d tasks P=%d: ≤ 40 MB" % (e["tasks"], e["p"]),
                         "%s MB" % f1(e["rss_mb"]), e["rss_mb"] <= 40))
    big = [e for e in own if e["family"] == "sched" and e["n"] >= 100000]
    if big:
        ok = all(e["ok"] for e in big)
        rows.append(("100,000 tasks run to the end, no structural limit",
                     ", ".join("%s %s" % (e["shape"], "ok" if e["ok"] else "FAILED") for e in big), ok))
    for e in big:
        rows.append(("100,000 `sleep: 0` tasks in < 2 s (%s)" % e["shape"], "%s s" % f3(e["wall"]),
                     e["wall"] < 2 and e["ok"]))
    for e in own:
        if e["family"] == "validate" and e["n"] >= 100000:
            rows.append(("`flowrun validate`, 100,000-task file (%s) < 2 s" % e["shape"], "%s s" % f3(e["wall"]),
                         e["wall"] < 2 and e["ok"]))
    return rows


def main():
    res = sys.argv[1]
    own = bd.own(res)
    peers = bd.peers(res)
    p = print

    p("## Machine and binary\n")
    for k, v in bd.machine(res):
        p("- **%s**: %s" % (k, v))
    p("")

    p("## Targets (issue 6)\n")
    p("| target | measured | |")
    p("|---|---|---|")
    for t, m, ok in targets(own, peers):
        p("| %s | %s | %s |" % (t, m, verdict(ok)))
    p("")

    def family_table(fam, title, extra):
        rows = [e for e in own if e["family"] == fam]
        if not rows:
            return
        p("### %s\n" % title)
        p("| workflow | tasks | median wall s | min–max s | tasks/s | µs/task | CPU s | peak RSS MB | peak threads | runs | exit |")
        p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for e in rows:
            p("| %s | %d | %s | %s–%s | %s | %s | %s | %s | %s | %d | %s |" % (
                e["name"], e["tasks"], f3(e["wall"]), f3(e["wall_min"]), f3(e["wall_max"]), f0(e["tasks_per_s"]),
                f1(e["per_task_us"]), f3(e["cpu"]), f1(e["rss_mb"]), e["threads"] if e["threads"] else "-",
                len(e["runs"]), "ok" if e["ok"] else "FAILED"))
        p("")
        shapes = []
        for e in rows:
            key = (e["shape"], e["p"]) if fam == "spawn" else (e["shape"],)
            if key not in shapes:
                shapes.append(key)
        p("Least-squares line through the points, wall = a + b·N (linear if R² ≈ 1 and b stays put):\n")
        p("| shape | points | a (ms) | b (µs/task) | R² | RSS slope (KB/task) |")
        p("|---|---:|---:|---:|---:|---:|")
        for key in shapes:
            pts = [e for e in rows if ((e["shape"], e["p"]) if fam == "spawn" else (e["shape"],)) == key and e["ok"]]
            fit = bd.linear_fit([e["tasks"] for e in pts], [e["wall"] for e in pts])
            mfit = bd.linear_fit([e["tasks"] for e in pts], [e["rss_mb"] * 1024 for e in pts])
            name = key[0] + (" P=%d" % key[1] if len(key) > 1 else "")
            if fit:
                p("| %s | %d | %.1f | %.1f | %.4f | %s |" % (name, len(pts), fit[0] * 1e3, fit[1] * 1e6, fit[2],
                                                           "%.2f" % mfit[1] if mfit else "-"))
            else:
                p("| %s | %d | - | - | - | - |" % (name, len(pts)))
        p("")
        if extra:
            extra(rows)

    def spawn_extra(rows):
        p("Against the C floor (`spawn-limit -s -g flat N P`: posix_spawn of `/bin/sh -c true`, P at once), "
          "runs paired and alternated:\n")
        p("| workflow | flowrun median s | floor median s | × floor (paired median) | µs/task over floor |")
        p("|---|---:|---:|---:|---:|")
        for e in rows:
            p("| %s | %s | %s | %s | %s |" % (e["name"], f3(e["wall"]), f3(e["floor"]), ratio(e["x_floor"]),
                                              f0(e["over_us"])))
        p("")

    if own:
        p("## flowrun's own benchmarks\n")
        family_table("sched", "Scheduling without processes (`sleep: 0`)", None)
        family_table("spawn", "Spawning (`run: \"true\"`)", spawn_extra)
        family_table("validate", "Validation (`flowrun validate FILE`)", None)

    if peers:
        info = bd.peers_info(res)
        p("## Peer comparison (../shared/bench/peers.sh)\n")
        if info.get("rounds"):
            p("Median of %s rounds after a warm-up; `× floor` and `µs/task over floor` are paired per round "
              "against the C floor of the same round, then the median (floor: `c-floor-sh` for tools that "
              "go through a shell, flowrun included; `c-floor` for tools that exec).\n" % info["rounds"])
        order = {"flat": 0, "chain": 1, "diamond": 2}
        names = sorted(peers, key=lambda k: (k.startswith("mem-"), order.get(peers[k]["shape"], 3),
                                             peers[k]["n"], peers[k]["p"]))
        for name in names:
            w = peers[name]
            mem = name.startswith("mem-")
            p("### %s (%s, %d tasks, P=%d%s)\n" % (name, w["shape"], w["ntasks"], w["p"],
                                                   ", one /usr/bin/time -v run each" if mem else ""))
            p("| tool | spawns | median wall s | × floor | µs/task over floor | peak RSS MB | |")
            p("|---|---|---:|---:|---:|---:|---|")
            for lab, st in w["tools"].items():
                bold = "**" if lab == "flowrun" else ""
                note = "" if st.get("ok") else (("timed out" if st.get("rss_exit") == 124 else "exit %s" % st.get("rss_exit"))
                                                if mem else "%s failed" % st.get("fails"))
                over = None
                if mem and st.get("ok") and st.get("wall") and st.get("floor") and w["tools"].get(st["floor"], {}).get("wall"):
                    over = (st["wall"] - w["tools"][st["floor"]]["wall"]) / w["ntasks"] * 1e6
                elif not mem:
                    over = st.get("over_us")
                p("| %s%s%s | %s | %s | %s | %s | %s | %s |" % (bold, lab, bold, st["spawns"], f3(st.get("wall")),
                                                           ratio(st.get("x_floor")), f0(over), f1(st.get("rss_mb")), note))
            p("")
        p("The harness's own report (every tool, min–max, CPU, load averages, exact commands) is "
          "`peers/report.md` in the result directory.\n")

    if own:
        p("## Exact commands (flowrun's own benchmarks)\n")
        for e in own:
            line = "- %s: `%s`" % (e["name"], " ".join(e["argv"]))
            if e.get("floor_argv"):
                line += "; floor: `%s`" % " ".join(e["floor_argv"])
            p(line)
        p("")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
