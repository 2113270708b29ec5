#!/usr/bin/env python3
"""Start-up (issue 20 item 9): the median of ``--runs`` runs of each command, as a ratio to ``python -c pass``
from the same venv measured in the same run (interleaved, so machine load hits every row alike).

    python bench/bench_startup.py [--runs 10] [--bytecode cached|none|both]

Rows: ``python -c pass`` (the floor), ``wqtool --version`` (goal: at most 4x the floor), ``wqtool verify`` of
a small workq log (fixtures/workq/sample-clean, 59 records; goal: at most 8x), and ``wqtool dump -n 1`` of the
same log (no goal: shown for comparison). Exit status 1 when a goal is missed with bytecode caches.

CPU: user + system time of each run (``RUSAGE_CHILDREN``), steadier than wall time on a shared machine; the
goals are on wall time. Bytecode: ``cached`` is an installed package's case (pip compiles every module at install): every module's
bytecode is written once into a fresh ``PYTHONPYCACHEPREFIX`` by a first run, then read; ``none`` compiles every
module at every start (``PYTHONDONTWRITEBYTECODE=1`` over an empty prefix: no cache of wqtool, its dependencies or
the non-frozen standard library is read), the worst case, e.g. a source checkout in an environment that sets
``PYTHONDONTWRITEBYTECODE``. The floor is measured the same way in each.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG = os.path.join(ROOT, "fixtures", "workq", "sample-clean", "log")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(rows, runs: int, env: dict) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU (user + system) seconds of every run of every row."""
    wall: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for _ in range(runs):
        for name, argv, _ in rows:
            c0, t0 = _cpu(), time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=ROOT, env=env)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu() - c0)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bytecode", choices=("cached", "none", "both"), default="both")
    args = ap.parse_args()
    py = sys.executable
    wq = os.path.join(os.path.dirname(py), "wqtool")
    rows = [("python -c pass", [py, "-c", "pass"], None),
            ("wqtool --version", [wq, "--version"], 4.0),
            ("wqtool verify (59 records)", [wq, "verify", "-q", "--as-of", "last", LOG], 8.0),
            ("wqtool dump -n 1", [wq, "dump", "-n", "1", LOG], None)]
    missed = []
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for mode in ("cached", "none") if args.bytecode == "both" else (args.bytecode,):
        with tempfile.TemporaryDirectory(prefix="wqtool-pycache-") as prefix:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = prefix
            if mode == "cached":
                measure(rows, 1, env)       # writes every module's bytecode into the prefix
            else:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            times, cpu = measure(rows, args.runs, env)
        floor = statistics.median(times["python -c pass"])
        cpu_floor = statistics.median(cpu["python -c pass"])
        print(f"\nbytecode {mode}:")
        print(f"{'command':<30} {'median s':>9} {'ratio':>7}  {'CPU s':>7} {'CPU x':>6}  goal (wall)")
        for name, _, goal in rows:
            m = statistics.median(times[name])
            c = statistics.median(cpu[name])
            ratio = m / floor
            ok = "" if goal is None else (f"<= {goal:g}x " + ("ok" if ratio <= goal else "MISSED"))
            if goal is not None and ratio > goal and mode == "cached":
                missed.append(name)
            print(f"{name:<30} {m:>9.4f} {ratio:>6.1f}x  {c:>7.4f} {c / cpu_floor:>5.1f}x  {ok}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
