#!/usr/bin/env python3
"""The damaged path (issue 18): verify, repair and pack as ratios to a read + CRC floor measured in the same run.

    python bench/bench_damage.py [--quick] [--repeat 3] [--only verify,repair-plan] [--root DIR] [--json FILE]

The log is the issue-14 shape (bench/shapes.py: 146-149 MB, 3 segments, 1.24 M records, 657 k live jobs at
as-of), and a damaged copy of it with 4 bytes flipped in the middle of the middle segment. Every measure is the
``wqtool`` command line in a fresh process (wall time, CPU time and peak RSS from wait4), paired with a floor run
made right before it (``harness.FLOOR_SCRIPT``: 1 MiB reads + CRC-32C of the same bytes); the figure is the median
over ``--repeat`` pairs. The commands that change files (``--apply``) run on a fresh copy each time (the copy is
not timed).

  verify            verify -q of the intact log        verify-damaged: the same on the damaged copy
  repair-plan       repair --salvage (plan only) of the damaged copy
  repair-apply      repair --apply --salvage of a fresh damaged copy (write, re-verify, quarantine, swap)
  repair-apply-healthy  the same command on a fresh intact copy (a plan with nothing to cut: nothing installed)
  pack-plan         pack (plan only) of the intact log
  pack-plan-damaged pack --salvage (plan only) of the damaged copy
  pack-apply        pack --apply of a fresh intact copy

Goals (issue 18): verify-damaged <= 1.5x verify; repair-plan <= 30x floor and <= 250 MB peak RSS; repair-apply
<= 50x; pack-plan <= 30x; pack-apply <= 50x. ``--root DIR`` measures another checkout (the numbers before issue 18:
``git archive 65c3d22`` built into bench/out/before-18; ``make bench-damage-before``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
import shapes  # noqa: E402
from harness import loadavg, timed  # noqa: E402

MEASURES = ["verify", "verify-damaged", "repair-plan", "repair-apply", "repair-apply-healthy", "pack-plan",
            "pack-plan-damaged", "pack-apply"]
GOALS = {"repair-plan": 30.0, "repair-apply": 50.0, "repair-apply-healthy": 50.0, "pack-plan": 30.0,
         "pack-apply": 50.0}
RSS_GOALS = {"repair-plan": 250 * 2**20}
#: issue 18's table, measured on main 65c3d22 (the code before it), for the README's side-by-side
BEFORE = {"verify-damaged": "20.4x verify", "repair-plan": "620x, 1,330 MB", "repair-apply": "655x",
          "pack-plan": "93x", "pack-apply": "184x"}


def damaged_copy(src: str, out: str) -> str:
    """``src`` with 4 bytes flipped in the middle of its middle segment (cached beside it)."""
    d = src + "-damaged"
    if os.path.isdir(d):
        return d
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    segs = sorted(n for n in os.listdir(tmp) if n.endswith(".log"))
    mid = os.path.join(tmp, segs[len(segs) // 2])
    at = os.path.getsize(mid) // 2
    with open(mid, "r+b") as f:
        f.seek(at)
        b = f.read(4)
        f.seek(at)
        f.write(bytes(x ^ 0xFF for x in b))
    os.rename(tmp, d)
    return d


def argv_of(name: str, intact: str, damaged: str, work: str) -> list[str]:
    wq = [sys.executable, "-m", "wqtool"]
    a = ["--as-of", shapes.AS_OF]
    return {
        "floor": [sys.executable, "-c", harness.FLOOR_SCRIPT, intact],
        "verify": wq + ["verify", "-q", *a, intact],
        "verify-damaged": wq + ["verify", "-q", *a, damaged],
        "repair-plan": wq + ["repair", "--salvage", *a, damaged],
        "repair-apply": wq + ["repair", "--apply", "--salvage", *a, work],
        "repair-apply-healthy": wq + ["repair", "--apply", "--salvage", *a, work],
        "pack-plan": wq + ["pack", *a, intact],
        "pack-plan-damaged": wq + ["pack", "--salvage", *a, damaged],
        "pack-apply": wq + ["pack", "--apply", *a, work],
    }[name]


def fresh(src: str, work: str) -> None:
    """A writable copy of ``src`` at ``work`` (and nothing an earlier run left beside it)."""
    parent = os.path.dirname(work)
    for n in os.listdir(parent):
        if n.startswith(os.path.basename(work)):
            p = os.path.join(parent, n)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    shutil.copytree(src, work)
    os.sync()       # the copy's dirty pages written back now, not during the timed apply's fsyncs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of the issue-14 log (for iterations)")
    ap.add_argument("--scale", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help=f"comma-separated measures (default: {','.join(MEASURES)})")
    ap.add_argument("--root", default=ROOT, help="the wqtool checkout to measure (default: this one)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    scale = a.scale if a.scale is not None else (0.1 if a.quick else 1.0)
    names = a.only.split(",") if a.only else MEASURES
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, ROOT)
    intact = shapes.ensure(a.out, scale)
    damaged = damaged_copy(intact, a.out)
    work = os.path.join(a.out, "workq-damage-work", "log")
    os.makedirs(os.path.dirname(work), exist_ok=True)
    root = os.path.abspath(a.root)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("WQTOOL_PURE_PYTHON", None)
    kernel = subprocess.run([sys.executable, "-c", "from wqtool.engine.workq import fastreplay as f; print(f.KERNEL)"],
                            capture_output=True, text=True, env=env, cwd=root, check=True).stdout.strip()
    size = sum(os.path.getsize(os.path.join(intact, f)) for f in os.listdir(intact) if f.endswith(".log"))
    load_before = loadavg()
    timed(argv_of("floor", intact, damaged, work), root, env)          # warm the page cache
    timed([sys.executable, "-c", harness.FLOOR_SCRIPT, damaged], root, env)
    rows: dict[str, dict] = {}
    for name in names:
        pairs = []
        for _ in range(a.repeat):
            if "-apply" in name:
                fresh(damaged if name == "repair-apply" else intact, work)
            f = timed(argv_of("floor", intact, damaged, work), root, env)
            m = timed(argv_of(name, intact, damaged, work), root, env)
            pairs.append((f, m))
        rows[name] = {"seconds": statistics.median(m[0] for _, m in pairs),
                      "cpu": statistics.median(m[1] for _, m in pairs),
                      "rss": statistics.median(m[2] for _, m in pairs),
                      "floor": statistics.median(f[0] for f, _ in pairs),
                      "floor_cpu": statistics.median(f[1] for f, _ in pairs),
                      "x_floor": statistics.median(m[0] / f[0] for f, m in pairs),
                      "x_floor_cpu": statistics.median(m[1] / max(f[1], 1e-3) for f, m in pairs),
                      "exit": max(m[3] for _, m in pairs)}
    load_after = loadavg()
    print(f"\nworkq damaged path (issue-14 shape, scale {scale:g}): {size / 1e6:.1f} MB; the damaged copy has 4 bytes "
          f"flipped mid middle segment")
    print(f"wqtool at {root} (kernel: {kernel}); load average {load_before} before, {load_after} after; medians of "
          f"{a.repeat} runs, each paired with a floor run")
    print("x floor: wall time / the paired floor's wall time; cpu x: CPU time / the floor's CPU time (steadier "
          "on a loaded machine)")
    print(f"{'measure':<15} {'seconds':>8} {'cpu s':>7} {'x floor':>8} {'cpu x':>7} {'peak RSS':>10} exit  goal")
    for name in names:
        r = rows[name]
        goal = ""
        if name == "verify-damaged" and "verify" in rows:
            ratio = r["seconds"] / rows["verify"]["seconds"]
            cpu = r["cpu"] / rows["verify"]["cpu"]
            goal = (f"{ratio:.2f}x verify, CPU {cpu:.2f}x (goal <= 1.5x): "
                    f"{'met' if min(ratio, cpu) <= 1.5 else 'NOT met'}")
        elif name in GOALS:
            ok = min(r["x_floor"], r["x_floor_cpu"]) <= GOALS[name] and r["rss"] <= RSS_GOALS.get(name, float("inf"))
            goal = (f"goal <= {GOALS[name]:g}x" + (f", <= {RSS_GOALS[name] >> 20} MB" if name in RSS_GOALS else "")
                    + f": {'met' if ok else 'NOT met'}")
        if name in BEFORE:
            goal += f"  (before: {BEFORE[name]})"
        print(f"{name:<20} {r['seconds']:>8.2f} {r['cpu']:>7.2f} {r['x_floor']:>8.1f} {r['x_floor_cpu']:>7.1f} "
              f"{r['rss'] / 2**20:>7.0f} MB {r['exit']:>4}  {goal}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"scale": scale, "bytes": size, "load": [load_before, load_after], "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
