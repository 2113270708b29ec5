#!/usr/bin/env python3
"""Orth executor-side files: verify throughput of ``orth-executor-logs`` and ``orth-callbacks`` on a generated
logPath, against a floor (reading every byte of the same files) measured in the same run.

    python bench/bench_orth_files.py [--jobs 8000] [--retry-files 2000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine import format as registry  # noqa: E402
from wqtool.engine.format import Options  # noqa: E402
from wqtool.engine.javacodec.gson import Entry  # noqa: E402
from tests.writers.orth_callbacks import write_retry_file  # noqa: E402
from tests.writers.orth_executor_logs import ExecutorLogWriter  # noqa: E402

T = 1769740800000
TRACE = "java.lang.IllegalStateException: bad input\n" + "".join(
    f"\tat com.example.Step{i}.run(Step{i}.java:{i * 7})\n" for i in range(20))


def generate(lp: str, jobs: int, retry_files: int) -> None:
    w = ExecutorLogWriter(lp)
    for lid in range(1, jobs + 1):
        ms = T + (lid % 5) * 86_400_000
        w.start(lid, ms, ms + 1000, f"param-{lid}")
        for k in range(5):
            w.line(lid, ms, ms + 1000 + k, f"step {k} of job {lid}: processed {k * 100} rows", cls="com.example.H",
                   method="execute", src_line=40 + k)
        if lid % 10 == 0:
            w.error(lid, ms, ms + 3000, TRACE)
        else:
            w.finish(lid, ms, ms + 3000, 200)
        w.callback(lid, ms, ms + 4000, "success" if lid % 50 else "failed")
    for i in range(retry_files):
        write_retry_file(lp, [Entry(i * 3 + k, T + i, 500, f"failed <br> job {i} & \u4e2d") for k in range(3)])


def floor(paths: list[str]) -> float:
    t = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            f.read()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=8000)
    ap.add_argument("--retry-files", type=int, default=2000)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-orth-")
    try:
        lp = os.path.join(tmp, "logpath")
        t = time.perf_counter()
        generate(lp, a.jobs, a.retry_files)
        print(f"generated {a.jobs} job logs and {a.retry_files} retry files in {time.perf_counter() - t:.1f} s")
        opts = Options(T * 1_000_000)
        for name in ("orth-executor-logs", "orth-callbacks"):
            fmt = registry.get(name)
            (log,) = fmt.discover([lp], opts)
            files = fmt.files(log)
            size = sum(os.path.getsize(p) for p in files)
            fl = floor(files)
            t = time.perf_counter()
            rep = fmt.passes.run_log(log, opts, limit=0)
            el = time.perf_counter() - t
            print(f"{name}: verify + replay {len(files)} files, {size / 1e6:.1f} MB, {rep.records} records in "
                  f"{el:.2f} s: {size / 1e6 / el:.1f} MB/s, {rep.records / el:,.0f} records/s, "
                  f"{len(files) / el:,.0f} files/s (floor: read {size / 1e6 / fl:.0f} MB/s, 1/{el / fl:.0f})")
    finally:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
