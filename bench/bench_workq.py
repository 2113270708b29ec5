"""workq benchmark: verify, dump -o jsonl and replay throughput against a floor measured in the same run.

    python bench/bench_workq.py [--records 1200000] [--payload-max 380] [--out bench/out]

Generates (once, cached under --out) a ~150 MB, ~1.2 M-record cmdlog with wqtool's own writer, then measures
each command as a separate process (wall time, peak RSS from wait4) on a warm page cache:
  floor   read every segment + google-crc32c over the same bytes (1 MiB chunks)
  verify  wqtool verify -q
  dump    wqtool dump -o jsonl > /dev/null
  replay  wqtool replay --summary -o json > /dev/null
and prints MB/s, records/s, peak RSS and the ratio of each to the floor. Not a test: numbers go in notes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AS_OF = "2026-11-22T00:00:00Z"

FLOOR = r"""
import os, sys
from google_crc32c import value
d = sys.argv[1]
c = 0
for n in sorted(os.listdir(d)):
    if n.endswith('.log'):
        with open(os.path.join(d, n), 'rb', buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                c ^= value(b)
print(c)
"""


def run(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int, int]:
    """(seconds, peak RSS bytes, exit code) of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    if p.returncode not in (0,):
        print(f"  ! {' '.join(argv[1:4])}… exit {p.returncode}: {err[:300]}", file=sys.stderr)
    return dt, ru.ru_maxrss * 1024, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_200_000)
    ap.add_argument("--payload-max", type=int, default=380)
    ap.add_argument("--segment-size", type=int, default=64 * 1024 * 1024)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per measurement")
    a = ap.parse_args()
    sys.path.insert(0, ROOT)
    from wqtool.engine.workq.sample import SampleSpec, generate

    d = os.path.join(a.out, f"workq-{a.records}-{a.payload_max}-{a.segment_size}")
    if not os.path.isdir(d):
        t = time.perf_counter()
        n = generate(d + ".tmp", SampleSpec(records=a.records, payload_max=a.payload_max,
                                            segment_size=a.segment_size, seed=42))
        os.rename(d + ".tmp", d)
        print(f"generated {a.records} records, {n / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s -> {d}")
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))
    segs = sum(1 for f in os.listdir(d) if f.endswith(".log"))
    py = sys.executable
    wq = [py, "-m", "wqtool"]
    cases = [
        ("floor (read + crc32c)", [py, "-c", FLOOR, d]),
        ("verify", wq + ["verify", "-q", "--as-of", AS_OF, d]),
        ("verify (1 process)", wq + ["verify", "-q", "--as-of", AS_OF, "--workers", "1", d]),
        ("replay --summary", wq + ["replay", "--summary", "-o", "json", "--as-of", AS_OF, d]),
        ("dump -o jsonl", wq + ["dump", "-o", "jsonl", "--as-of", AS_OF, d]),
    ]
    run(cases[0][1])  # warm the page cache
    results = []
    for name, argv in cases:
        reps = 1 if name.startswith("dump") else a.repeat
        best = min((run(argv) for _ in range(reps)), key=lambda r: r[0])
        results.append((name, *best))
    replay_doc = json.loads(subprocess.run(cases[3][1], capture_output=True, text=True, cwd=ROOT).stdout)
    floor = results[0][1]
    print(f"\nworkq cmdlog: {size / 1e6:.1f} MB, {a.records} records, {segs} segment(s), "
          f"{replay_doc['job_count']} live jobs at {AS_OF}; {os.cpu_count()} cores; best of {a.repeat}")
    print(f"{'measure':<24} {'seconds':>8} {'MB/s':>8} {'Mrec/s':>8} {'peak RSS':>10} {'x floor time':>13} exit")
    for name, dt, rss, code in results:
        print(f"{name:<24} {dt:>8.2f} {size / dt / 1e6:>8.1f} {a.records / dt / 1e6:>8.3f} "
              f"{rss / 2**20:>8.0f} MB {dt / floor:>12.1f}x {code}")
    v = next(r for r in results if r[0] == "verify")
    rp = next(r for r in results if r[0] == "replay --summary")
    print(f"\nverify throughput = 1/{v[1] / floor:.1f} of the floor (target >= 1/12); "
          f"replay {size / rp[1] / 1e6:.0f} MB/s (target >= 40), "
          f"{rp[2] / max(1, replay_doc['job_count']) / 1024:.1f} KiB peak RSS per live job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
