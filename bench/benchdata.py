"""Load a bench result directory (measure.py's flowrun.json, peers.sh's files).

Used by summarize.py and plot.py; no third-party imports.

A result directory holds:
  machine.txt          what run.sh recorded about the machine and the binary
  flowrun.json/.csv    measure.py's output (flowrun's own benchmarks)
  peers/               copied from peers.sh's OUT: info.tsv, meta.tsv,
                       raw/<workload>.r<k>.json (hyperfine; r0 = warm-up),
                       rss/<workload>.<label>.txt (/usr/bin/time -v), report.md
"""
import csv
import glob
import json
import os
import re
import statistics


def median(xs):
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------ flowrun's own
def own(resdir):
    """measure.py's results, one dict per workflow with medians added."""
    path = os.path.join(resdir, "flowrun.json")
    if not os.path.exists(path):
        return []
    data = json.load(open(path))
    out = []
    for e in data["results"]:
        runs = e["runs"] or [e["probe"]]
        walls = [r["wall"] for r in runs]
        fl = e.get("floor_runs") or []
        pairs = list(zip(runs, fl))
        d = dict(e)
        d.update(
            wall=median(walls), wall_min=min(walls), wall_max=max(walls),
            cpu=median([r["cpu"] for r in runs]),
            rss_mb=max(r["rss_kb"] for r in runs + [e["probe"]]) / 1024,
            threads=e["probe"].get("threads"),
            ok=all(r["exit"] == 0 and not r.get("timed_out") for r in runs + [e["probe"]]),
            floor=median([r["wall"] for r in fl]) if fl else None,
            x_floor=median([t["wall"] / f["wall"] for t, f in pairs]) if pairs else None,
            over_us=median([(t["wall"] - f["wall"]) / e["tasks"] * 1e6 for t, f in pairs]) if pairs else None,
        )
        d["per_task_us"] = d["wall"] / e["tasks"] * 1e6
        d["tasks_per_s"] = e["tasks"] / d["wall"]
        out.append(d)
    return out


def linear_fit(xs, ys):
    """Least squares y = a + b x; returns (a, b, r2)."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


# ------------------------------------------------------------ peers.sh
def _tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def time_v(path):
    """GNU time -v output -> dict(wall, cpu, rss_kb, exit), or None."""
    if not os.path.exists(path):
        return None
    txt = open(path).read()
    out = {"exit": 0, "wall": None, "cpu": None, "rss_kb": None}
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", txt)
    if m:
        out["rss_kb"] = int(m.group(1))
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", txt)
    if m:
        secs = 0.0
        for part in m.group(1).split(":"):
            secs = secs * 60 + float(part)
        out["wall"] = secs
    u = re.search(r"User time \(seconds\): ([\d.]+)", txt)
    s = re.search(r"System time \(seconds\): ([\d.]+)", txt)
    if u and s:
        out["cpu"] = float(u.group(1)) + float(s.group(1))
    m = re.search(r"Command exited with non-zero status (\d+)", txt)
    if m:
        out["exit"] = int(m.group(1))
    m = re.search(r"Command terminated by signal (\d+)", txt)
    if m:
        out["exit"] = 128 + int(m.group(1))
    return out


def _floor_for(row, labels):
    """The C floor a tool is compared to (the rule of peers.sh's report.py)."""
    if row["tool"] == "c-floor-sh":
        want = "c-floor"
    elif row["spawns"].startswith("sh") or row["spawns"].startswith("$SHELL"):
        want = "c-floor-sh"
    else:
        want = "c-floor"
    if want in labels:
        return want
    return next((x for x in ("c-floor", "c-floor-sh") if x in labels), None)


def peers(resdir):
    """{workload: {"shape", "n", "p", "ntasks", "tools": {label: stats}}} from peers/."""
    pdir = os.path.join(resdir, "peers")
    if not os.path.exists(os.path.join(pdir, "meta.tsv")):
        return {}
    meta = _tsv(os.path.join(pdir, "meta.tsv"))
    out = {}
    for r in meta:
        w = out.setdefault(r["workload"], {"shape": r["shape"], "n": int(r["n"]), "p": int(r["p"]),
                                           "ntasks": int(r["ntasks"]), "rows": [], "tools": {}})
        w["rows"].append(r)
    for name, w in out.items():
        labels = [r["label"] for r in w["rows"]]
        rounds = []
        for path in glob.glob(os.path.join(pdir, "raw", name + ".r*.json")):
            k = int(re.search(r"\.r(\d+)\.json$", path).group(1))
            if k == 0:
                continue
            d = json.load(open(path))
            rounds.append({x["command"]: (x["times"][0], x["user"] + x["system"], x["exit_codes"][0])
                           for x in d["results"]})
        for r in w["rows"]:
            lab = r["label"]
            rss = time_v(os.path.join(pdir, "rss", "%s.%s.txt" % (name, lab))) or {}
            st = {"tool": r["tool"], "spawns": r["spawns"], "cmd": r["cmd"], "rss_mb": None,
                  "rss_exit": rss.get("exit")}
            if rss.get("rss_kb") is not None:
                st["rss_mb"] = rss["rss_kb"] / 1024
            if name.startswith("mem-"):
                fl = _floor_for(r, labels)
                flr = time_v(os.path.join(pdir, "rss", "%s.%s.txt" % (name, fl))) if fl else None
                st.update(wall=rss.get("wall"), cpu=rss.get("cpu"), floor=fl,
                          x_floor=(rss["wall"] / flr["wall"] if rss.get("exit") == 0 and rss.get("wall") and flr
                                   and flr.get("wall") else None),
                          ok=rss.get("exit") == 0)
            else:
                fl = _floor_for(r, labels)
                walls = [x[lab][0] for x in rounds if lab in x]
                ratios = [x[lab][0] / x[fl][0] for x in rounds if fl and lab in x and fl in x]
                overs = [(x[lab][0] - x[fl][0]) / w["ntasks"] * 1e6 for x in rounds if fl and lab in x and fl in x]
                st.update(wall=median(walls), walls=walls, cpu=median([x[lab][1] for x in rounds if lab in x]),
                          floor=fl, x_floor=median(ratios), over_us=median(overs), rounds=len(walls),
                          fails=sum(1 for x in rounds if lab in x and x[lab][2] != 0))
                st["ok"] = st["fails"] == 0 and bool(walls)
            w["tools"][lab] = st
    return out


def peers_info(resdir):
    path = os.path.join(resdir, "peers", "info.tsv")
    return {r["key"]: r["value"] for r in _tsv(path)} if os.path.exists(path) else {}


def machine(resdir):
    """machine.txt as an ordered list of (key, value)."""
    path = os.path.join(resdir, "machine.txt")
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path).read().splitlines():
        if ": " in line:
            k, v = line.split(": ", 1)
            out.append((k, v))
    return out
