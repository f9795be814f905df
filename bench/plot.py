#!/usr/bin/env python3
"""PNG plots from a bench result directory.

usage: plot.py RESULT_DIR IMAGE_DIR        (needs matplotlib: pip install matplotlib)

Writes into IMAGE_DIR:
  bench-scale-time.png    flowrun's own benchmarks: wall time against N
                          (log-log, with a slope-1 guide) and µs per task
                          against N (flat = linear)
  bench-scale-memory.png  peak RSS and peak thread count against N
  bench-spawn.png         run: "true" tasks, flowrun against the C floor at P=2/P=8
  bench-peers.png         peers.sh: × C floor per workload for every tool
  bench-peers-scale.png   peers.sh, P=8: wall time and peak RSS at N=2000
                          (flat-2000-8) and N=20000 (the mem run) per tool
Plots whose data are missing are skipped.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdata as bd  # noqa: E402

STYLE = {"flat": "o-", "chain": "s-", "fanout": "^-", "limited": "D-"}
FLOWRUN_COLOR = "#d62728"
OTHER_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#98df8a"]


def label(v):
    """10 -> '10', 2000 -> '2k', 100000 -> '100k', 0.5 -> '0.5'."""
    return "%gk" % (v / 1000) if v >= 1000 else "%g" % v


def plain(ax, axis="y"):
    """Plain numbers on a log axis (10, 20, 2k, 100k rather than 10^1)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    minor = "235" if axis == "y" else "25"
    a.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: label(v)))
    a.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: label(v) if ("%g" % v)[0] in minor else ""))


def save(fig, path):
    for ax in fig.axes:
        for axis in ("x", "y"):
            if (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "log" and not ax.get_label() == "ratio":
                plain(ax, axis)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote " + path, file=sys.stderr)


def finish(fig, path, stamp, legends, size=8, minor_grid=()):
    """Legends, grids (minor lines on `minor_grid` axes too) and the stamp, then save."""
    for ax in legends:
        ax.legend(fontsize=size)
    for ax in fig.axes:
        ax.grid(True, which="both" if ax in minor_grid else "major", alpha=0.3)
    fig.suptitle(stamp, fontsize=8, y=0.99)
    save(fig, path)


def series(rows, key):
    out = {}
    for e in rows:
        if e["ok"]:
            out.setdefault(key(e), []).append(e)
    for v in out.values():
        v.sort(key=lambda e: e["tasks"])
    return out


def scale_time(own, path, stamp):
    sched = series([e for e in own if e["family"] == "sched"], lambda e: "sched " + e["shape"])
    val = series([e for e in own if e["family"] == "validate"], lambda e: "validate " + e["shape"])
    if not sched and not val:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name, pts in list(sched.items()) + list(val.items()):
        fmt = STYLE.get(name.split()[1], "o-")
        if name.startswith("validate"):
            fmt = fmt.replace("-", "--")
        xs = [e["tasks"] for e in pts]
        a1.plot(xs, [e["wall"] for e in pts], fmt, label=name)
        a2.plot(xs, [e["per_task_us"] for e in pts], fmt, label=name)
    allpts = [e for v in list(sched.values()) + list(val.values()) for e in v]
    lo = min(e["tasks"] for e in allpts)
    hi = max(e["tasks"] for e in allpts)
    base = min(e["wall"] for e in allpts if e["tasks"] == lo)
    a1.plot([lo, hi], [base, base * hi / lo], ":", color="gray", label="slope 1 (linear)")
    a1.axhline(2.0, color="black", lw=0.8, ls="--")
    a1.text(lo, 2.1, "target: 100k tasks < 2 s", fontsize=8)
    a1.set(xscale="log", yscale="log", xlabel="tasks (N)", ylabel="wall time, s (median)",
           title="flowrun: wall time against N")
    plain(a1)
    a2.set(xscale="log", xlabel="tasks (N)", ylabel="µs per task (wall / N)",
           title="per-task cost (flat line = linear)")
    a2.set_ylim(bottom=0)
    a2.axhline(20, color="black", lw=0.8, ls="--")
    a2.text(lo, 21, "20 µs/task = 100k in 2 s", fontsize=8)
    finish(fig, path, stamp, legends=(a1,), minor_grid=(a1,))


def scale_memory(own, path, stamp):
    rows = [e for e in own if e["family"] in ("sched", "validate", "spawn")]
    s = series(rows, lambda e: "%s %s" % (e["family"], e["shape"]) + (" P=%d" % e["p"] if e["family"] == "spawn" else ""))
    if not s:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name, pts in s.items():
        fam, shape = name.split()[:2]
        fmt = STYLE.get(shape, "o-")
        if fam == "validate":
            fmt = fmt.replace("-", "--")
        if fam == "spawn":
            fmt = "x-" if "P=2" in name else "+-"
        xs = [e["tasks"] for e in pts]
        a1.plot(xs, [e["rss_mb"] for e in pts], fmt, label=name)
        if fam != "validate":
            a2.plot(xs, [e["threads"] or 0 for e in pts], fmt, label=name)
    a1.axhline(40, color="black", lw=0.8, ls="--")
    a1.text(min(e["tasks"] for e in rows), 42, "target: ≤ 40 MB at 20k tasks", fontsize=8)
    a1.set(xscale="log", yscale="log", xlabel="tasks (N)", ylabel="peak RSS, MB",
           title="flowrun: peak RSS against N")
    plain(a1)
    a2.set(xscale="log", xlabel="tasks (N)", ylabel="threads (peak of /proc/PID/status)",
           title="peak thread count against N")
    a2.set_ylim(bottom=0)
    finish(fig, path, stamp, legends=(a1, a2), minor_grid=(a1,))


def spawn(own, path, stamp):
    rows = [e for e in own if e["family"] == "spawn" and e["ok"]]
    if not rows:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for p, mk in ((2, "o"), (8, "s")):
        pts = sorted([e for e in rows if e["p"] == p], key=lambda e: e["tasks"])
        if not pts:
            continue
        xs = [e["tasks"] for e in pts]
        a1.plot(xs, [e["wall"] for e in pts], mk + "-", color=FLOWRUN_COLOR if p == 2 else "#ff7f0e",
                label="flowrun P=%d" % p)
        a1.plot(xs, [e["floor"] for e in pts], mk + "--", color="gray" if p == 2 else "black",
                label="C floor (sh -c true) P=%d" % p)
        a2.plot(xs, [e["x_floor"] for e in pts], mk + "-", label="P=%d" % p)
    a1.set(xscale="log", yscale="log", xlabel="tasks (N)", ylabel="wall time, s (median)",
           title='run: "true" tasks: flowrun and the C floor')
    plain(a1)
    a2.axhline(1.05, color="black", lw=0.8, ls="--")
    a2.text(rows[0]["tasks"], 1.06, "target 1.05×", fontsize=8)
    a2.set(xscale="log", xlabel="tasks (N)", ylabel="× floor (paired median)", title="flowrun / C floor")
    a2.set_ylim(bottom=0.9)
    finish(fig, path, stamp, legends=(a1, a2), minor_grid=(a1,))


def peers_ratio(peers, path, stamp):
    names = [n for n in peers if not n.startswith("mem-")]
    if not names:
        return
    order = {"flat": 0, "chain": 1, "diamond": 2}
    names.sort(key=lambda k: (order.get(peers[k]["shape"], 3), peers[k]["p"]))
    target = {"flat": 1.05, "diamond": 1.10}
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 4.6), sharey=False)
    if len(names) == 1:
        axes = [axes]
    for ax, name in zip(axes, names):
        w = peers[name]
        tools = [(lab, st) for lab, st in w["tools"].items() if not lab.startswith("c-floor") and st.get("x_floor")]
        tools.sort(key=lambda t: t[1]["x_floor"])
        labs = [t[0] for t in tools]
        vals = [t[1]["x_floor"] for t in tools]
        colors = [FLOWRUN_COLOR if lab == "flowrun" else "#1f77b4" for lab in labs]
        ax.barh(labs, vals, color=colors)
        for i, v in enumerate(vals):
            ax.text(v, i, " %.2f" % v, va="center", fontsize=7)
        ax.axvline(1.0, color="black", lw=0.8)
        if w["shape"] in target:
            ax.axvline(target[w["shape"]], color="green", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_label("ratio")
        ticks = [t for t in (0.25, 0.5, 1, 2, 5, 10, 20, 50) if min(vals + [1]) / 1.5 <= t <= max(vals) * 2.5]
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: "%g" % v))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title("%s\n%d tasks, P=%d" % (name, w["ntasks"], w["p"]), fontsize=9)
        ax.set_xlabel("× C floor (paired median)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xlim(right=max(vals) * 2.5 if vals else 10)
    fig.suptitle("peers.sh: wall time relative to the C floor of the same round (lower is better) — " + stamp,
                 fontsize=9)
    save(fig, path)


def peers_scale(peers, path, stamp):
    flats = [w for k, w in peers.items() if not k.startswith("mem-") and w["shape"] == "flat" and w["p"] == 8]
    small = max(flats, key=lambda w: w["n"]) if flats else None
    mem = next((v for k, v in peers.items() if k.startswith("mem-")), None)
    if not small or not mem:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = iter(OTHER_COLORS * 2)
    for lab, st in small["tools"].items():
        big = mem["tools"].get(lab)
        if not big:
            continue
        xs, ts, ms = [small["ntasks"]], [st.get("wall")], [st.get("rss_mb")]
        if big.get("ok"):
            xs.append(mem["ntasks"])
            ts.append(big.get("wall"))
        ms2 = ms + [big.get("rss_mb")] if big.get("rss_mb") else ms
        kw = dict(color=FLOWRUN_COLOR, lw=3, zorder=5) if lab == "flowrun" else dict(lw=1, color=next(colors))
        if lab.startswith("c-floor"):
            kw.update(ls="--", color="black" if lab == "c-floor" else "gray")
        if ts[0] is not None:
            a1.plot(xs, ts, marker="o", label=lab, **kw)
        if ms2[0] is not None:
            a2.plot([small["ntasks"], mem["ntasks"]][:len(ms2)], ms2, marker="o", label=lab + ("" if big.get("ok") else " (did not finish)"), **kw)
    a1.set(xscale="log", yscale="log", xlabel="tasks (N)", ylabel="wall time, s",
           title="flat, P=8: wall time (N=%d median of rounds; N=%d one run)" % (small["ntasks"], mem["ntasks"]))
    a2.axhline(40, color="black", lw=0.8, ls="--")
    a2.set(xscale="log", yscale="log", xlabel="tasks (N)", ylabel="peak RSS, MB (largest process)",
           title="flat, P=8: peak RSS")
    plain(a2)
    plain(a1)
    finish(fig, path, stamp, legends=(a1, a2), size=7, minor_grid=(a1, a2))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    res, img = sys.argv[1], sys.argv[2]
    os.makedirs(img, exist_ok=True)
    m = dict(bd.machine(res))
    stamp = "%s · %s · %s" % (m.get("date", "?"), m.get("cpu", "?"), m.get("cores", "?") + " cores")
    own = bd.own(res)
    peers = bd.peers(res)
    scale_time(own, os.path.join(img, "bench-scale-time.png"), stamp)
    scale_memory(own, os.path.join(img, "bench-scale-memory.png"), stamp)
    spawn(own, os.path.join(img, "bench-spawn.png"), stamp)
    peers_ratio(peers, os.path.join(img, "bench-peers.png"), stamp)
    peers_scale(peers, os.path.join(img, "bench-peers-scale.png"), stamp)


if __name__ == "__main__":
    main()
