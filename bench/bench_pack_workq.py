#!/usr/bin/env python3
"""workq pack benchmark: pack_plan + plan.write throughput and peak memory against a read floor, same run.

    python bench/bench_pack_workq.py [--records 800000] [--keep]

Generates ~100 MB of valid workq log (``engine.sample.generate``: 800 k records, job bodies up to 380 bytes,
64 MiB segments) under bench/out/workq-pack/, then runs each measurement in a fresh subprocess (started by a
small runner process, which reports ``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the peak RSS of that one
measurement):

* floor   read every segment in 16 MiB chunks + CRC-32C (google_crc32c) over every byte
* replay  ``run_log(state=True)`` (what pack starts with: verify + replay, live state kept)
* plan    ``pack_plan`` (replay, count the input by kind, locate the live jobs' add records, lay out segments)
* pack    ``pack_plan`` + ``plan.write(out, fsync=False)`` (write the new segments, re-read and compare digests)

Prints one table: seconds, MB/s and records/s of input, time and peak RSS as ratios to the floor, and the
number of live jobs (pack keeps the live state, not the input: memory follows live jobs).
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
OUT = os.path.join(ROOT, "bench", "out", "workq-pack")


def measure(kind: str, d: str, as_of_ns: int) -> dict:
    from wqtool.engine.workq import pack as plans
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    t0 = time.perf_counter()
    records = nbytes = 0
    extra: dict = {}
    if kind == "floor":
        nbytes = harness.crc_floor(d, suffix=".log")
    else:
        log = discover([d])[0]
        if kind == "replay":
            r = run_log(log, as_of_ns, state=True)
            records, nbytes = r.records, r.bytes
            extra["live_jobs"] = len(r.state.jobs)
        else:
            plan = plans.pack_plan(log, as_of_ns, recover=False)
            records, nbytes = plan.records_before, plan.bytes_before
            extra.update(live_jobs=plan.jobs_kept, records_after=plan.records_after,
                         mb_after=round(plan.bytes_after / 1e6, 1))
            if kind == "pack":
                out = os.path.join(os.path.dirname(d), "packed")
                shutil.rmtree(out, ignore_errors=True)
                res = plan.write(out, fsync=False)
                assert res.digest == plan.digest_before
                shutil.rmtree(out)
    return {"kind": kind, "seconds": time.perf_counter() - t0, "records": records, "bytes": nbytes, **extra}


def run_one(kind: str, d: str, as_of_ns: int) -> dict:
    """In a runner process: the measurement in a child, its peak RSS from RUSAGE_CHILDREN."""
    return harness.measured_child(__file__, "--measure", kind, "--dir", d, "--as-of-ns", str(as_of_ns))


def main() -> int:
    ap = argparse.ArgumentParser(description="workq pack throughput and memory vs a read floor")
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
    d = os.path.join(OUT, f"gen-{args.records}")
    t0 = time.perf_counter()
    if not (args.keep and os.path.exists(os.path.join(d, "000000001.log"))):
        shutil.rmtree(d, ignore_errors=True)
        size = generate(d, SampleSpec(records=args.records, payload_max=380, segment_size=64 << 20, seed=7))
        print(f"generated {size / 1e6:.1f} MB, {args.records} records in {time.perf_counter() - t0:.1f}s ({d})",
              file=sys.stderr)
    as_of_ns = T0_NS + 3600 * 1_000_000_000   # an hour after the first record: every TTL is >= 1 h
    rows = []
    for kind in ("floor", "replay", "plan", "pack"):
        p = subprocess.run([sys.executable, __file__, "--runner", kind, "--dir", d, "--as-of-ns", str(as_of_ns)],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(p.stdout))
    floor = rows[0]
    total_bytes = floor["bytes"]
    print(f"input: {total_bytes / 1e6:.1f} MB, {rows[1]['records']:,} records, {rows[1]['live_jobs']:,} live jobs "
          f"at as-of; output {rows[-1]['mb_after']} MB, {rows[-1]['records_after']:,} records")
    print(f"{'measure':<7} {'seconds':>8} {'MB/s':>8} {'records/s':>11} {'x floor':>8} {'peak RSS':>9} "
          f"{'x floor':>8}  notes")
    for r in rows:
        mbs = total_bytes / 1e6 / r["seconds"]
        rps = f"{r['records'] / r['seconds']:,.0f}" if r["records"] else "-"
        notes = " ".join(f"{k}={v}" for k, v in r.items()
                         if k not in ("kind", "seconds", "records", "bytes", "maxrss_kib"))
        print(f"{r['kind']:<7} {r['seconds']:>8.2f} {mbs:>8.1f} {rps:>11} {r['seconds'] / floor['seconds']:>8.1f} "
              f"{r['maxrss_kib'] / 1024:>7.0f}MB {r['maxrss_kib'] / floor['maxrss_kib']:>8.1f}  {notes}")
    pack = rows[-1]
    live = pack["live_jobs"]
    print(f"pack memory over the floor: {(pack['maxrss_kib'] - floor['maxrss_kib']) * 1024 / max(live, 1):,.0f} "
          f"bytes per live job ({live:,} live jobs)")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    print(f"total {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
