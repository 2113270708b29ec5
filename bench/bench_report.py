"""The pictures (issue 30 item 2): ``report --out``, ``stats --chart`` and ``stats --timeline`` against plain
``verify -q --as-of T`` in the same run:

    python bench/bench_report.py [--quick] [--repeat 3] [--reference] [--out bench/out]

On the issue-14 log spread over 24 hours (``shapes.ensure(day=True)``: ~100 MB at scale 0.7; ``--quick``: 0.07) and
on a copy with 4 bytes flipped in its middle segment (``bench_workq.damaged_copy``), each command in a fresh
process; the figure is the median over ``--repeat`` interleaved pairs of (command CPU time / ``verify -q --as-of T``
CPU time, measured right before it), and its peak RSS over verify's, with the load average at the start and the
end. The series are binned in the kernel's one pass (kernel/series.c); ``--reference`` adds a row for the
reference pass they replaced (``WQTOOL_PURE_PYTHON=1``: the reader + replay in Python, one call per record; slow).
Goals (issue 30): each <= 3x verify's CPU, peak RSS <= 1.5x verify's. The same rows on a 50 MB Kestrel journal
(``bench_kestrel.generate``; ``--quick``: 5 MB) and its damaged copy (``bench_kestrel.damaged_copy``), whose series
the Kestrel kernel bins in its one pass (kestrel/_kernel.c feeding engine/_series.h). The bytecode caches are
written first (``compileall``), as an installed package has them.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import shapes  # noqa: E402
from bench_workq import damaged_copy  # noqa: E402

CPU_GOAL, RSS_GOAL = 3.0, 1.5
KESTREL_AS_OF = "2011-03-20T00:00:00Z"      # a day after bench_kestrel's T


def rows(log: str, tmp: str, reference: bool,
         as_of: str = shapes.DAY_AS_OF) -> list[tuple[str, list[str], dict | None]]:
    page = os.path.join(tmp, "page.html")
    out = [("report --out F", ["report", "-q", "--as-of", as_of, log, "--out", page], None),
           ("stats --chart F", ["stats", "--as-of", as_of, "--chart", page, log], None),
           ("stats --timeline", ["stats", "--timeline", "--as-of", as_of, log], None),
           ("stats (the kernel's pass, no series)", ["stats", "--as-of", as_of, log], None)]
    if reference:
        out.append(("report --out F (reference pass)", out[0][1], {**os.environ, "WQTOOL_PURE_PYTHON": "1"}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a tenth of the log")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also the reference pass (once: it is slow)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--format", choices=("workq", "kestrel"), help="only this format's rows (default: both)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cases = []
    if a.format in (None, "workq"):
        log = shapes.ensure(a.out, 0.07 if a.quick else 0.7, day=True)
        cases += [("workq, healthy", log, shapes.DAY_AS_OF), ("workq, damaged", damaged_copy(log), shapes.DAY_AS_OF)]
    if a.format in (None, "kestrel"):
        import bench_kestrel
        journal = os.path.join(a.out, f"kestrel-{5 if a.quick else 50}mb")
        if not os.path.isdir(journal):
            bench_kestrel.generate(journal, 5 if a.quick else 50)
        cases += [("kestrel, healthy", journal, KESTREL_AS_OF),
                  ("kestrel, damaged", bench_kestrel.damaged_copy(journal), KESTREL_AS_OF)]
    exe = os.path.join(os.path.dirname(sys.executable), "wqtool")
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(os.path.dirname(HERE), "wqtool")],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"load at start {harness.loadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, d, as_of in cases:
            size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))
            base = ["verify", "-q", "--as-of", as_of, d]
            print(f"  {label} ({size / 1e6:.0f} MB): CPU time and peak RSS / verify -q --as-of T's (median of "
                  f"{a.repeat} interleaved pairs)")
            for name, argv, env in rows(d, tmp, a.reference, as_of):
                ratios, pairs, rss, vrss = [], [], 0, 0
                for _ in range(1 if env is not None else a.repeat):
                    _, vcpu, vr, _ = harness.timed([exe, *base])
                    page = argv[argv.index("--out") + 1] if "--out" in argv else \
                        argv[argv.index("--chart") + 1] if "--chart" in argv else None
                    if page is not None and os.path.exists(page):
                        os.unlink(page)                 # report and --chart never overwrite
                    _, cpu, r, code = harness.timed([exe, *argv], env=env)
                    ratios.append(cpu / vcpu)
                    pairs.append((vcpu, cpu))
                    rss, vrss = max(rss, r), max(vrss, vr)
                med = statistics.median(ratios)
                v, c = pairs[ratios.index(med)] if med in ratios else pairs[0]
                goal = "" if env is not None or name.startswith("stats (") else \
                    f"  goal <= x{CPU_GOAL:g} CPU, x{RSS_GOAL:g} RSS: " + \
                    ("met" if med <= CPU_GOAL and rss <= RSS_GOAL * vrss else "NOT met")
                print(f"    {name:<38} x{med:5.2f} CPU (verify {v:5.2f} s, this {c:5.2f} s); RSS x{rss / vrss:4.2f} "
                      f"({rss / 2**20:4.0f} MiB); exit {code}{goal}")
    print(f"load at end {harness.loadavg()}")


if __name__ == "__main__":
    main()
