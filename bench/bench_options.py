"""The options an operator reaches for first, against plain ``verify --as-of T`` in the same run (issue 30):

    python bench/bench_options.py [--quick] [--repeat 3] [--out bench/out]

With the package's bytecode compiled (as installed), on the issue-14 log spread over 24 hours (``shapes.ensure(day=True)``: ~100 MB at scale 0.7; ``--quick``: 0.07)
and on a copy with 4 bytes flipped in its middle segment (``bench_workq.damaged_copy``), each command in a fresh
process; the figure is the median over ``--repeat`` interleaved pairs of (command CPU time / ``verify -q --as-of T``
CPU time, measured right before it), with the load average at the start and the end. Goals (CPU vs verify):
``verify -q --as-of last`` and ``... --metrics-file F`` <= 1.3x; ``dump -n 1 --from-offset`` (near the end of the last
segment) <= 0.5x; ``dump --job UUID`` and ``dump -n 10 --type fail`` <= 2x. The same rows on a 50 MB Kestrel journal
(``bench_kestrel.generate``; its filters are opcodes) and its damaged copy (``bench_kestrel.damaged_copy``).
"""
from __future__ import annotations

import argparse
import json
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

GOALS = {"verify -q --as-of last": 1.3, "verify -q --as-of last --metrics-file F": 1.3,
         "dump -n 1 --from-offset (end)": 0.5, "dump --job UUID": 2.0, "dump -n 10 --type fail": 2.0,
         "dump --type save-xid (all)": 2.0, "dump -n 10 --type confirm-remove": 2.0}


def _first_job(exe: str, log: str) -> str:
    out = subprocess.run([exe, "dump", "-n", "1", "-o", "jsonl", log], capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[0])["job_id"]


def rows(exe: str, log: str, tmp: str) -> list[tuple[str, list[str]]]:
    last = sorted(n for n in os.listdir(log) if n.endswith(".log"))[-1]
    near_end = os.path.getsize(os.path.join(log, last)) - 4096
    return [("verify -q --as-of last", ["verify", "-q", "--as-of", "last", log]),
            ("verify -q --as-of last --metrics-file F", ["verify", "-q", "--as-of", "last", "--metrics-file",
                                                         os.path.join(tmp, "m.prom"), log]),
            ("dump -n 1 --from-offset (end)", ["dump", "-n", "1", "--as-of", shapes.DAY_AS_OF, "--from-offset",
                                               f"{last}@0x{near_end:x}", log]),
            ("dump --job UUID", ["dump", "--as-of", shapes.DAY_AS_OF, "--job", _first_job(exe, log), log]),
            ("dump -n 10 --type fail", ["dump", "-n", "10", "--as-of", shapes.DAY_AS_OF, "--type", "fail", log])]


def kestrel_rows(journal: str, tmp: str) -> list[tuple[str, list[str]]]:
    near_end = os.path.getsize(os.path.join(journal, "q")) - 4096
    return [("verify -q --as-of last", ["verify", "-q", "--as-of", "last", journal]),
            ("verify -q --as-of last --metrics-file F", ["verify", "-q", "--as-of", "last", "--metrics-file",
                                                         os.path.join(tmp, "k.prom"), journal]),
            ("dump -n 1 --from-offset (end)", ["dump", "-n", "1", "--from-offset", f"q@0x{near_end:x}", journal]),
            ("dump --type save-xid (all)", ["dump", "--type", "save-xid", journal]),
            ("dump -n 10 --type confirm-remove", ["dump", "-n", "10", "--type", "confirm-remove", journal])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = shapes.ensure(a.out, 0.07 if a.quick else 0.7, day=True)
    exe = os.path.join(os.path.dirname(sys.executable), "wqtool")
    # as an installed package has them: the bytecode caches (PYTHONDONTWRITEBYTECODE=1 would have every run compile
    # every module it imports, ~0.1-0.25 s of CPU that verify and dump do not spend alike)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(os.path.dirname(HERE), "wqtool")],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"load at start {harness.loadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        import bench_kestrel
        journal = os.path.join(a.out, f"kestrel-{5 if a.quick else 50}mb")
        if not os.path.isdir(journal):
            bench_kestrel.generate(journal, 5 if a.quick else 50)
        kestrel_as_of = "2011-03-20T00:00:00Z"
        cases = [("workq, healthy", log, shapes.DAY_AS_OF, rows(exe, log, tmp)),
                 ("workq, damaged", damaged_copy(log), shapes.DAY_AS_OF, None),
                 ("kestrel, healthy", journal, kestrel_as_of, kestrel_rows(journal, tmp)),
                 ("kestrel, damaged", bench_kestrel.damaged_copy(journal), kestrel_as_of, None)]
        for label, d, as_of, made in cases:
            base = ["verify", "-q", "--as-of", as_of, d]
            print(f"  {label} ({sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)) / 1e6:.0f} MB): "
                  f"CPU time / verify -q --as-of T (median of {a.repeat} interleaved pairs)")
            for name, argv in made or (rows(exe, d, tmp) if d.startswith(log) else kestrel_rows(d, tmp)):
                ratios, cpus, rss = [], [], 0
                for _ in range(a.repeat):
                    _, vcpu, _, _ = harness.timed([exe, *base])
                    _, cpu, r, code = harness.timed([exe, *argv])
                    ratios.append(cpu / vcpu)
                    cpus.append((vcpu, cpu))
                    rss = max(rss, r)
                med = statistics.median(ratios)
                v, c = cpus[ratios.index(med)] if med in ratios else cpus[0]
                goal = GOALS[name]
                print(f"    {name:<42} x{med:5.2f} (verify {v:5.2f} s, this {c:5.2f} s CPU; RSS {rss / 2**20:4.0f} MiB;"
                      f" exit {code})  goal <= x{goal}: {'met' if med <= goal else 'NOT met'}")
    print(f"load at end {harness.loadavg()}")


if __name__ == "__main__":
    main()
