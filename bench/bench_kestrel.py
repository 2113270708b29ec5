#!/usr/bin/env python3
"""Kestrel journal benchmark: verify / replay / pack throughput against a read floor measured in the same run.

    python bench/bench_kestrel.py [--size-mb 100] [--keep]

Generates a ~100 MB journal set with the engine's writer under bench/out/kestrel/ (a rotated file and the live
file; items of 32..224 bytes; transactions, continues and removes keeping a bounded live state), then runs each
measurement in its own subprocess so that peak RSS (``resource.getrusage``) is per measurement:

* floor   read the files in 16 MiB chunks + CRC-32C (google_crc32c) over every byte
* read    framing + decode only (``JournalReader.events()``)
* verify  reader + replay state machine (``run_log``; what ``wqtool verify --format kestrel`` does)
* replay  ``run_log`` + the canonical state digest (``wqtool replay``)
* pack    ``pack_plan`` + ``plan.write`` (replay, write the rewrite to a new file, re-read and compare digests)
* verify-damaged  verify of a copy whose rotated file has one record's opcode overwritten (0xff) in its middle
          (issue 18: the fast path reads through damage; goal <= 1.5x verify of the intact set)

Prints one table: seconds, MB/s, records/s, ratio to the floor (time / floor time), peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
OUT = os.path.join(ROOT, "bench", "out", "kestrel")
T = 1_300_000_000_000
AS_OF_NS = (T + 86_400_000) * 1_000_000


def generate(d: str, size_mb: int) -> tuple[int, int]:
    from wqtool.engine.kestrel.writer import JournalWriter
    rng = random.Random(20110313)
    target = size_mb * 1_000_000
    blobs = [bytes(rng.getrandbits(8) for _ in range(256)) for _ in range(64)]
    records = 0
    os.makedirs(d, exist_ok=True)
    live = 0
    open_x: list[int] = []
    xid = 0
    files = [os.path.join(d, "q.1300000000000"), os.path.join(d, "q")]
    for i, path in enumerate(files):
        with JournalWriter(path) as w:
            limit = target * (i + 1) // len(files)
            written_before = sum(os.path.getsize(f) for f in files[:i])
            while written_before + w.size < limit:
                r = rng.random()
                if live < 2_000 or r < 0.45:
                    n = rng.randint(32, 224)
                    w.add(blobs[rng.randrange(64)][:n], T + records, 0 if r < 0.3 else T + 3_600_000 * rng.randint(1, 48))
                    live += 1
                elif r < 0.65:
                    w.remove()
                    live -= 1
                elif r < 0.85 and len(open_x) < 64:
                    xid += 1
                    w.remove_tentative(xid)
                    open_x.append(xid)
                    live -= 1
                elif open_x:
                    x = open_x.pop(rng.randrange(len(open_x)))
                    q = rng.random()
                    if q < 0.7:
                        w.confirm_remove(x)
                    elif q < 0.9:
                        w.unremove(x)
                        live += 1
                    else:
                        w.continue_(x, blobs[0][:48], T + records)
                        live += 1
                else:
                    w.remove()
                    live -= 1
                records += 1
    return sum(os.path.getsize(f) for f in files), records


def damaged_copy(d: str) -> str:
    """``d`` with the opcode of the first record past the middle of its rotated file overwritten with 0xff (the
    live file hard-linked): damage the reader names (KQ-BAD-OPCODE) and reads past."""
    from wqtool.engine.kestrel.fastpath import decode_fields
    out = d + "-damaged"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name in os.listdir(d):
        if name == "q":
            os.link(os.path.join(d, name), os.path.join(out, name))
            continue
        data = bytearray(open(os.path.join(d, name), "rb").read())
        pos, half = 0, len(data) // 2
        while pos < half:
            pos = decode_fields(data, pos, len(data))[-1]
        data[pos] = 0xFF
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return out


def measure(kind: str, d: str) -> dict:
    from wqtool.engine.kestrel.reader import JournalReader, discover
    from wqtool.engine.kestrel.pack import pack_plan
    from wqtool.engine.kestrel.verify import run_log
    from wqtool.exitcodes import CODES
    t0 = time.perf_counter()
    records = 0
    nbytes = 0
    extra = {}
    if kind == "floor":
        nbytes = harness.crc_floor(d)
    else:
        fs = discover([d], queue="q")[0]
        if kind == "read":
            rd = JournalReader(fs)
            for _ in rd.events():
                pass
            records, nbytes = rd.records, rd.bytes
        elif kind in ("verify", "replay", "verify-damaged"):
            r = run_log(fs, AS_OF_NS, limit=100)
            records, nbytes = r.records, r.bytes
            extra["exit"] = CODES.of(r.verdict)
            extra["items"] = r.state.items
            if kind == "replay":
                extra["digest"] = r.state.digest()[:16]
        elif kind == "pack":
            out = os.path.join(os.path.dirname(d), "packed")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            plan = pack_plan(fs, AS_OF_NS)
            res = plan.write(out, fsync=False)
            records, nbytes = plan.records_before, plan.bytes_before
            extra.update(bytes_after=res.bytes, records_after=res.records)
            shutil.rmtree(out)
    secs = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"kind": kind, "seconds": secs, "records": records, "bytes": nbytes, "maxrss_kib": rss, **extra}


def main() -> int:
    ap = argparse.ArgumentParser(description="Kestrel verify/replay/pack throughput vs a read floor")
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--keep", action="store_true", help="keep the generated journal for the next run")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.dir)))
        return 0
    d = os.path.join(OUT, f"gen-{args.size_mb}mb")
    t0 = time.perf_counter()
    if not (args.keep and os.path.exists(os.path.join(d, "q"))):
        shutil.rmtree(d, ignore_errors=True)
        size, recs = generate(d, args.size_mb)
        print(f"generated {size / 1e6:.1f} MB, {recs} records in {time.perf_counter() - t0:.1f}s ({d})",
              file=sys.stderr)
    dd = damaged_copy(d)
    rows = []
    for kind in ("floor", "read", "verify", "replay", "pack", "verify-damaged"):
        # warm the page cache for the floor too: every measurement runs on a warm cache
        p = subprocess.run([sys.executable, __file__, "--measure", kind, "--dir", dd if "damaged" in kind else d],
                           capture_output=True, text=True, check=True)
        rows.append(json.loads(p.stdout))
    floor = rows[0]["seconds"]
    total_bytes = rows[0]["bytes"]
    print(f"load average {harness.loadavg()}")
    print(f"{'measure':<14} {'seconds':>8} {'MB/s':>8} {'records/s':>11} {'x floor':>8} {'peak RSS':>9}  notes")
    for r in rows:
        mbs = total_bytes / 1e6 / r["seconds"]
        rps = f"{r['records'] / r['seconds']:,.0f}" if r["records"] else "-"
        notes = " ".join(f"{k}={v}" for k, v in r.items()
                         if k not in ("kind", "seconds", "records", "bytes", "maxrss_kib"))
        print(f"{r['kind']:<14} {r['seconds']:>8.2f} {mbs:>8.1f} {rps:>11} {r['seconds'] / floor:>8.1f} "
              f"{r['maxrss_kib'] / 1024:>7.0f}MB  {notes}")
    by = {r["kind"]: r for r in rows}
    q = by["verify-damaged"]["seconds"] / by["verify"]["seconds"]
    print(f"  {'PASS' if q <= 1.5 else 'MISS'}  verify of the damaged copy {q:.2f}x verify of the intact set "
          "(issue 18 goal <= 1.5x)")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(dd, ignore_errors=True)
    print(f"total {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
