#!/usr/bin/env python3
"""Start-up (issue 20 item 9): the median of ``--runs`` runs of each command, as a ratio to ``python -c pass``
from the same venv measured in the same run (interleaved, so machine load hits every row alike).

    python bench/bench_startup.py [--runs 10]

Rows: ``python -c pass`` (the floor), ``wqtool --version`` (goal: at most 4x the floor), ``wqtool verify`` of
a small workq log (fixtures/workq/sample-clean, 59 records; goal: at most 8x), and ``wqtool dump -n 1`` of the
same log (no goal: shown for comparison). Exit status 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG = os.path.join(ROOT, "fixtures", "workq", "sample-clean", "log")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    py = sys.executable
    wq = os.path.join(os.path.dirname(py), "wqtool")
    rows = [("python -c pass", [py, "-c", "pass"], None),
            ("wqtool --version", [wq, "--version"], 4.0),
            ("wqtool verify (59 records)", [wq, "verify", "-q", "--as-of", "last", LOG], 8.0),
            ("wqtool dump -n 1", [wq, "dump", "-n", "1", LOG], None)]
    times: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for _ in range(args.runs):
        for name, argv, _ in rows:
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=ROOT)
            times[name].append(time.perf_counter() - t0)
    floor = statistics.median(times["python -c pass"])
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'command':<30} {'median s':>9} {'ratio':>7}  goal")
    missed = []
    for name, _, goal in rows:
        m = statistics.median(times[name])
        ratio = m / floor
        ok = "" if goal is None else (f"<= {goal:g}x " + ("ok" if ratio <= goal else "MISSED"))
        if goal is not None and ratio > goal:
            missed.append(name)
        print(f"{name:<30} {m:>9.4f} {ratio:>6.1f}x  {ok}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
