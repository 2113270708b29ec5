"""`wqtool report` and `stats --timeline` on the issue-14 log (146 MB, 1.24 M records; ``--quick``: a tenth), each
in a fresh process: wall time, its ratio to the read + CRC floor measured in the same run, and peak RSS, beside
`stats` (the kernel's pass) and the reference pass without series (`dump --stats`, the same reader and replay):

    python bench/bench_report.py [--quick] [--out bench/out]

The series pass is the reference reader + replay (the replayed state as Python objects) plus the series: its cost
over `dump --stats` is what the series add; its peak RSS is the reference replay's (the series are a few hundred
bins).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import shapes  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a tenth of the log")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = shapes.ensure(a.out, 0.1 if a.quick else 1.0)
    exe = os.path.join(os.path.dirname(sys.executable), "wqtool")
    size = sum(os.path.getsize(os.path.join(log, n)) for n in os.listdir(log))
    floor, _, _, _ = harness.timed([sys.executable, "-c", harness.FLOOR_SCRIPT, log])
    print(f"{log}: {size / 1e6:.0f} MB; load {harness.loadavg()}; floor (read + CRC-32C) {floor:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("stats (kernel)", ["stats", "--as-of", shapes.AS_OF, log]),
                ("dump --stats (reference pass)", ["dump", "--stats", "--as-of", shapes.AS_OF, log]),
                ("stats --timeline (series pass)", ["stats", "--timeline", "--as-of", shapes.AS_OF, log]),
                ("report --out (series pass + page)", ["report", "--as-of", shapes.AS_OF, log, "--out",
                                                       os.path.join(tmp, "r.html")])]
        for label, argv in runs:
            wall, cpu, rss, code = harness.timed([exe, *argv])
            print(f"  {label:<36} {wall:7.2f} s  x{wall / floor:6.1f} floor  peak RSS {rss / 2**20:6.0f} MiB"
                  f"  exit {code}")


if __name__ == "__main__":
    main()
