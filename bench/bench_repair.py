#!/usr/bin/env python3
"""workq repair (and clean) benchmark: plan and apply throughput and peak memory against a read floor, same run.

    python bench/bench_repair.py [--records 800000] [--keep]

Generates ~100 MB of valid workq log (``engine.workq.sample.generate``: 800 k records, job bodies up to 380 bytes,
64 MiB segments) under bench/out/workq-repair/, damages a copy the way logs break — a torn tail in the newest
segment and three single-bit flips in older segments — and runs each measurement in a fresh subprocess (a small
runner reports ``getrusage(RUSAGE_CHILDREN).ru_maxrss``, the peak RSS of that one measurement):

* floor          read every segment in 16 MiB chunks + CRC-32C over every byte
* repair plan    ``repair_plan(salvage=True)``: read, resynchronise past the damage, replay twice (before / after)
* repair apply   plan + ``apply``: the repaired log written beside the old one (unchanged segments hard-linked),
                 re-verified (replayed, digest compared), quarantine written, directory swap (fsync on)
* clean plan     ``clean_plan`` on the intact log (replay, find the records without effect)

Prints one table: seconds, MB/s of input, time and peak RSS as ratios to the floor.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from wqtool.exitcodes import CODES
OUT = os.path.join(ROOT, "bench", "out", "workq-repair")


def damage(d: str) -> None:
    segs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    newest = os.path.join(d, segs[-1])
    with open(newest, "r+b") as f:          # a torn tail: half of a record appended
        f.seek(0, 2)
        f.write(b"\x01" + bytes(30))
    first = os.path.join(d, segs[0])
    size = os.path.getsize(first)
    with open(first, "r+b") as f:            # three bit flips in the oldest segment
        for frac in (0.25, 0.5, 0.75):
            pos = int(size * frac)
            f.seek(pos)
            b = f.read(1)
            f.seek(pos)
            f.write(bytes([b[0] ^ 0x10]))


def measure(kind: str, d: str, as_of_ns: int) -> dict:
    from wqtool.engine.workq import clean, repair
    from wqtool.engine.workq.reader import discover
    t0 = time.perf_counter()
    nbytes = 0
    extra: dict = {}
    if kind == "floor":
        nbytes = harness.crc_floor(d, suffix=".log")
    elif kind.startswith("repair"):
        plan = repair.repair_plan(discover([d])[0], as_of_ns, salvage=True)
        nbytes = sum(s.size for s in plan.segments)
        extra.update(cut_bytes=sum(c.length for c in plan.cuts), cuts=len(plan.cuts))
        if kind == "repair-apply":
            res = plan.apply(stale_lock_hold=0)
            extra.update(quarantine=len(res.quarantine))
    else:
        plan = clean.clean_plan(discover([d])[0], as_of_ns)
        nbytes = sum(s.size for s in plan.segments)
        extra.update(reclaim_mb=round(plan.report_doc(CODES.of)["reclaimed"]["bytes"] / 1e6, 1))
    return {"kind": kind, "seconds": time.perf_counter() - t0, "bytes": nbytes, **extra}


def run_one(kind: str, d: str, as_of_ns: int) -> dict:
    """In a runner process: the measurement in a child, its peak RSS from RUSAGE_CHILDREN."""
    return harness.measured_child(__file__, "--measure", kind, "--dir", d, "--as-of-ns", str(as_of_ns))


def main() -> int:
    ap = argparse.ArgumentParser(description="workq repair / clean throughput and memory vs a read floor")
    ap.add_argument("--records", type=int, default=800_000)
    ap.add_argument("--keep", action="store_true", help="keep the generated log for the next run")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--runner", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--as-of-ns", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.dir, args.as_of_ns)))
        return 0
    if args.runner:
        print(json.dumps(run_one(args.runner, args.dir, args.as_of_ns)))
        return 0
    from wqtool.engine.workq.sample import T0_NS, SampleSpec, generate
    gen = os.path.join(OUT, f"gen-{args.records}")
    t0 = time.perf_counter()
    if not (args.keep and os.path.exists(os.path.join(gen, "000000001.log"))):
        shutil.rmtree(gen, ignore_errors=True)
        size = generate(gen, SampleSpec(records=args.records, payload_max=380, segment_size=64 << 20, seed=7))
        print(f"generated {size / 1e6:.1f} MB, {args.records} records in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    as_of_ns = T0_NS + 3600 * 1_000_000_000
    rows = []
    for kind in ("floor", "repair-plan", "repair-apply", "clean-plan"):
        work = os.path.join(OUT, "work", "log")
        shutil.rmtree(os.path.dirname(work), ignore_errors=True)
        os.makedirs(os.path.dirname(work))
        shutil.copytree(gen, work)
        if kind.startswith("repair"):
            damage(work)
        p = subprocess.run([sys.executable, __file__, "--runner", kind, "--dir", work, "--as-of-ns", str(as_of_ns)],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(p.stdout))
    shutil.rmtree(os.path.join(OUT, "work"), ignore_errors=True)
    floor = rows[0]
    total = floor["bytes"]
    load = os.getloadavg()[0]
    print(f"input: {total / 1e6:.1f} MB in {len(os.listdir(gen))} segment(s); load average {load:.2f}; 2 cores")
    print(f"{'measure':<13} {'seconds':>8} {'MB/s':>8} {'x floor':>8} {'peak RSS':>9}  notes")
    for r in rows:
        notes = " ".join(f"{k}={v}" for k, v in r.items() if k not in ("kind", "seconds", "bytes", "maxrss_kib"))
        print(f"{r['kind']:<13} {r['seconds']:>8.2f} {total / 1e6 / r['seconds']:>8.1f} "
              f"{r['seconds'] / floor['seconds']:>8.1f} {r['maxrss_kib'] / 1024:>7.0f}MB  {notes}")
    if not args.keep:
        shutil.rmtree(gen, ignore_errors=True)
    print(f"total {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
