"""orth_job_log analytics benchmark: `stats` over a generated job-log of >= 10 million rows, one local process vs
--engine spark on local[2], in one run.

    python bench/bench_orth.py [--rows 10000000] [--parts 8] [--out bench/out/orth]

Generates (once, cached under --out) an export directory of PARTS Parquet part files (pyarrow, vectorised) plus
its orth_job_registry: three weeks of triggers over 40 executors and 25 handlers, every status, lost jobs. Then
measures, on a warm page cache:
  local   what `wqtool stats` does: the engine's reader -> checks -> tally over every row (one process)
  spark   session start-up (local[2]) — the fixed cost —, then the format's fleet (stats: a Python task per part,
          duplicates and analytics in Spark SQL), excluding and including the fixed cost
and prints rows/s, the ratio spark/local, and whether the analytics and digests are identical. Not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
AS_OF = "2026-01-30T12:30:00Z"


def generate(out: str, rows: int, parts: int) -> str:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wqtool.engine.orth_joblog.writer import parquet_table
    from wqtool.formats.orth_joblog import REGISTRY_COLUMN_NAMES
    d = os.path.join(out, f"export-{rows}x{parts}")
    stamp = os.path.join(d, ".ready")
    if os.path.exists(stamp):
        return d
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    addrs = [f"http://10.0.{i // 10}.{i % 10}:9999/" for i in range(40)]
    handlers = [f"handler{i:02d}" for i in range(25)]
    end = 1769776200 - 60          # just before as-of (naive UTC seconds)
    start = end - 21 * 86400
    per = rows // parts
    for p in range(parts):
        n = per if p < parts - 1 else rows - per * (parts - 1)
        ids = np.arange(p * per + 1, p * per + 1 + n, dtype=np.int64)
        rng = np.random.default_rng(p)
        trig = start + ((ids - 1) * (end - start) // rows).astype(np.int64)
        r = rng.random(n)
        tc = np.where(r < 0.02, 500, np.where(r < 0.021, 0, 200)).astype(np.int32)
        hc = np.where(tc != 200, 0, np.where(r < 0.9, 200, np.where(r < 0.95, 500, np.where(r < 0.97, 502, 0))))
        hc = np.where(trig > end - 600, np.where(r < 0.5, 0, hc), hc).astype(np.int32)
        lat = (rng.exponential(20.0, n)).astype(np.int64)
        ht = np.where(hc != 0, trig + lat, 0)
        addr = np.array(addrs, dtype=object)[(ids * 7) % 40]
        hand = np.array(handlers, dtype=object)[(ids * 3) % 25]
        ts = pa.timestamp("s")
        cols = {
            "id": pa.array(ids), "job_group": pa.array((ids % 5 + 1).astype(np.int32)),
            "job_id": pa.array((ids % 300 + 1).astype(np.int32)),
            "executor_address": pa.array(np.where(tc == 500, None, addr).tolist(), pa.string()),
            "executor_handler": pa.array(hand.tolist(), pa.string()),
            "executor_param": pa.nulls(n, pa.string()), "executor_sharding_param": pa.nulls(n, pa.string()),
            "executor_fail_retry_count": pa.array(np.zeros(n, np.int32)),
            "trigger_time": pa.array(trig, pa.int64()).cast(ts),
            "schedule_time": pa.array(trig, pa.int64()).cast(ts),
            "trigger_code": pa.array(tc), "trigger_msg": pa.nulls(n, pa.string()),
            "handle_time": pa.array(ht, pa.int64(), mask=(hc == 0)).cast(ts),
            "handle_code": pa.array(hc), "handle_msg": pa.array(np.where(hc == 500, "boom", None).tolist(),
                                                                 pa.string()),
            "alarm_status": pa.array(np.where((hc == 500) | (hc == 502) | (tc == 500), 2, 0).astype(np.int8)),
        }
        pq.write_table(pa.table(cols), os.path.join(d, f"part-{p:05d}.parquet"), compression="snappy")
    reg = [{"id": i + 1, "registry_group": "EXECUTOR", "registry_key": "app", "registry_value": a,
            "update_time": "2026-01-30 12:29:50"} for i, a in enumerate(addrs[:36])]
    pq.write_table(parquet_table(reg, REGISTRY_COLUMN_NAMES), os.path.join(d, "orth_job_registry.parquet"))
    open(stamp, "w").close()
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "orth"))
    a = ap.parse_args()
    from wqtool.commands._options import parse_time
    from wqtool.engine.format import Options, resolve
    from wqtool.engine.stats import RecordStats
    t0 = time.perf_counter()
    d = generate(a.out, a.rows, a.parts)
    print(f"data: {d} ({sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6:.1f} MB, "
          f"{a.rows} rows in {a.parts} parts; ready in {time.perf_counter() - t0:.1f} s); load {os.getloadavg()}")
    opts = Options(parse_time(AS_OF, "--as-of"))
    logs = resolve([d], "orth-joblog", opts)
    log = logs[0]
    t = time.perf_counter()
    run, st = log.fmt.run(log.data, opts, limit=0), RecordStats()
    rec_cls, facts = log.fmt.record_cls, log.fmt.facts
    for ev in run.events():
        if ev.__class__ is rec_cls:
            st.add(facts(ev))
    local_s = time.perf_counter() - t
    lview = log.fmt.state_view(run.report.state)
    print(f"local: {local_s:.1f} s, {a.rows / local_s / 1e3:.0f} k rows/s; digest {lview.digest()[:16]}")
    from wqtool.spark.fleet import fleet_stats
    from wqtool.spark.session import build_session
    t = time.perf_counter()
    spark = build_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"})
    fixed = time.perf_counter() - t
    t = time.perf_counter()
    per, _ = fleet_stats(spark, logs, opts)
    spark_s = time.perf_counter() - t
    sview = log.fmt.state_view(per[0][0].state)
    same = sview.analytics() == lview.analytics() and sview.digest() == lview.digest() and \
        dict(per[0][0].counts) == dict(run.report.counts)
    print(f"spark local[2]: session {fixed:.1f} s; stats {spark_s:.1f} s, {a.rows / spark_s / 1e3:.0f} k rows/s")
    print(f"ratio spark/local: {local_s / spark_s:.2f}x once started, {local_s / (spark_s + fixed):.2f}x including "
          f"start-up; analytics, counts and digest identical: {same}")
    spark.stop()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
