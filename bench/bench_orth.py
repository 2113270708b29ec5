"""orth_job_log analytics benchmark: `stats` over a generated job-log of >= 10 million rows, one local process vs
--engine spark on local[2], in one run.

    python bench/bench_orth.py [--rows 10000000] [--parts 8] [--out bench/out/orth] [--reference-rows 200000]
                               [--no-spark]

Generates (once, cached under --out) an export directory of PARTS Parquet part files (pyarrow, vectorised) plus
its orth_job_registry: three weeks of triggers over 40 executors and 25 handlers, every status, lost jobs. Then
measures, on a warm page cache:
  floor     pyarrow decodes every part (all columns), in a child process: the least any reader does
  local     `wqtool stats -o json` in a child process (the columnar fast path), its wall time and peak RSS
  spark     session start-up (local[2]) and worker warm-up — the fixed cost —, then the format's fleet (stats: a
            Python task per part replays it on the same fast path; ids unique across parts, so the driver adds
            the tasks' summaries up), excluding and including the fixed cost;
            peak RSS of the whole process tree (driver, JVM, Python workers), sampled every 0.25 s
  reference `wqtool stats` with WQTOOL_PURE_PYTHON=1 (the per-row reference path) and without, on a separate
            REFERENCE-ROWS export: the fast path's speed-up
and prints rows/s, the ratio spark/local, whether Spark's stats output is byte-identical to local's, and the
load average around each measure (the machine's 2 cores are shared). Not a test.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
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


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


#: A small process that runs the measured one as its child and reports that child's peak RSS: a child forked
#: straight from this (larger) process would start with this one's RSS as its high-water mark.
RUNNER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
          "print('maxrss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
          "sys.exit(r.returncode)")


def measured(argv: list[str], env=None) -> dict:
    """``argv`` in a child of a small runner: wall seconds, the child's peak RSS, its stdout, exit code."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = load()
        t = time.perf_counter()
        code = subprocess.run([sys.executable, "-c", RUNNER, *argv], stdout=out, stderr=err, env=env,
                              cwd=ROOT).returncode
        secs = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        text, errs = out.read().decode(), err.read().decode().splitlines()
    rss = next((int(x.split()[1]) for x in reversed(errs) if x.startswith("maxrss_kib ")), 0)
    return {"seconds": secs, "rss_mib": rss / 1024, "out": text, "exit": code, "load": f"{before} -> {load()}",
            "stderr": "\n".join(x for x in errs if not x.startswith("maxrss_kib "))}


def run_stats(d: str, *, pure: bool = False) -> dict:
    """`wqtool stats -o json` (WQTOOL_PURE_PYTHON=1 with ``pure``)."""
    env = dict(os.environ)
    env.pop("WQTOOL_PURE_PYTHON", None)
    if pure:
        env["WQTOOL_PURE_PYTHON"] = "1"
    return measured([sys.executable, "-m", "wqtool", "stats", "-o", "json", "--as-of", AS_OF, "--format",
                     "orth-joblog", d], env)


FLOOR = ("import os, sys, pyarrow.parquet as pq\n"
         "for n in sorted(os.listdir(sys.argv[1])):\n"
         "    if n.startswith('part-'):\n"
         "        pq.read_table(os.path.join(sys.argv[1], n))\n")


def floor(d: str) -> dict:
    """pyarrow decodes every part, all columns, in a child process (its memory stays there)."""
    return measured([sys.executable, "-c", FLOOR, d])


class TreeRss:
    """Peak RSS (MiB) of this process and all its descendants (the JVM, its Python workers), sampled."""

    def __init__(self, every: float = 0.25):
        self.every, self.peak, self._stop = every, 0.0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    def _run(self):
        me = os.getpid()
        while not self._stop.is_set():
            parent, rss = {}, {}
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
                    with open(f"/proc/{pid}/statm") as f:
                        rss[int(pid)] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
                except (OSError, ValueError, IndexError):
                    continue
            tree, grew = {me}, True
            while grew:
                grew = False
                for pid, pp in parent.items():
                    if pp in tree and pid not in tree:
                        tree.add(pid)
                        grew = True
            self.peak = max(self.peak, sum(rss.get(p, 0) for p in tree) / 2**20)
            self._stop.wait(self.every)


def spark_stats(d: str) -> dict:
    from wqtool.commands._options import parse_time
    from wqtool.engine.format import Options, resolve
    from wqtool.render.stats import stats_doc, write_stats
    from wqtool.spark.fleet import fleet_stats
    from wqtool.spark.session import build_session, warm_up
    opts = Options(parse_time(AS_OF, "--as-of"))
    logs = resolve([d], "orth-joblog", opts)
    before = load()
    with TreeRss() as rss:
        t = time.perf_counter()
        spark = build_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"})
        warm_up(spark)
        fixed = time.perf_counter() - t
        t = time.perf_counter()
        per, jobs = fleet_stats(spark, logs, opts)
        secs = time.perf_counter() - t
        after = load()
        spark.stop()
    views = [log.fmt.state_view(r.state, log.data) for log, (r, _, _) in zip(logs, per)]
    buf = io.StringIO()
    write_stats(buf, stats_doc([(r, v, st, n) for v, (r, st, n) in zip(views, per)], jobs), "json")
    return {"seconds": secs, "fixed": fixed, "rss_mib": rss.peak, "out": buf.getvalue(), "load": f"{before} -> {after}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "orth"))
    ap.add_argument("--reference-rows", type=int, default=200_000, help="0: skip the reference comparison")
    ap.add_argument("--no-spark", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    t0 = time.perf_counter()
    d = generate(a.out, a.rows, a.parts)
    mb = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 1e6
    print(f"data: {d} ({mb:.1f} MB, {a.rows:,} rows in {a.parts} Parquet parts; ready in "
          f"{time.perf_counter() - t0:.1f} s); {os.cpu_count()} CPUs, load {load()}", flush=True)
    fl = floor(d)
    print(f"floor (pyarrow decodes every part): {fl['seconds']:.1f} s, {a.rows / fl['seconds'] / 1e3:,.0f} k rows/s",
          flush=True)
    rows = [("floor: pyarrow reads the parts", fl["seconds"], fl["rss_mib"], fl["load"], "process start included")]
    local = run_stats(d)
    if local["exit"] not in (0, 1, 2):
        print(f"local stats failed: exit {local['exit']}\n{local['stderr']}", file=sys.stderr)
        return 1
    rows.append(("local (1 process)", local["seconds"], local["rss_mib"], local["load"], "wqtool stats, a child"))
    print(f"local: {local['seconds']:.1f} s, {a.rows / local['seconds'] / 1e3:,.0f} k rows/s, peak RSS "
          f"{local['rss_mib']:,.0f} MiB; load {local['load']}", flush=True)
    same = None
    if not a.no_spark:
        sp = spark_stats(d)
        same = sp["out"] == local["out"]
        rows.append(("spark local[2], once started", sp["seconds"], sp["rss_mib"], sp["load"],
                     f"session start-up {sp['fixed']:.1f} s"))
        rows.append(("spark local[2], with start-up", sp["seconds"] + sp["fixed"], sp["rss_mib"], sp["load"], ""))
        print(f"spark local[2]: session {sp['fixed']:.1f} s; stats {sp['seconds']:.1f} s, "
              f"{a.rows / sp['seconds'] / 1e3:,.0f} k rows/s; peak RSS (driver + JVM + workers) "
              f"{sp['rss_mib']:,.0f} MiB; load {sp['load']}", flush=True)
    ref = None
    if a.reference_rows:
        dr = generate(a.out, a.reference_rows, 1)
        fast, pure = run_stats(dr), run_stats(dr, pure=True)
        ref = (a.reference_rows, fast, pure, json.loads(fast["out"]) == json.loads(pure["out"]))
    print()
    print(f"{'measure':<32} {'rows':>12} {'seconds':>9} {'k rows/s':>9} {'peak RSS':>10}  load (1/5/15 min)  notes")
    for name, secs, rss, ld, note in rows:
        print(f"{name:<32} {a.rows:>12,} {secs:>9.1f} {a.rows / secs / 1e3:>9,.0f} {rss:>7,.0f}MiB  {ld}  {note}")
    if ref is not None:
        n, fast, pure, eq = ref
        for name, r in (("reference (WQTOOL_PURE_PYTHON=1)", pure), ("local fast path", fast)):
            print(f"{name:<32} {n:>12,} {r['seconds']:>9.1f} {n / r['seconds'] / 1e3:>9,.1f} "
                  f"{r['rss_mib']:>7,.0f}MiB  {r['load']}")
        print(f"fast path / reference on {n:,} rows: {pure['seconds'] / fast['seconds']:.1f}x (start-up included); "
              f"outputs identical: {eq}")
    if not a.no_spark:
        print(f"ratio spark/local (local seconds / spark seconds): {rows[1][1] / rows[2][1]:.2f}x once started, "
              f"{rows[1][1] / rows[3][1]:.2f}x including start-up; stats output byte-identical: {same}")
    return 0 if same in (None, True) and (ref is None or ref[3]) else 1


if __name__ == "__main__":
    sys.exit(main())
