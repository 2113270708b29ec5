"""orth_job_log analytics benchmark: `stats` over a generated job-log of >= 10 million rows, one local process vs
--engine spark on local[2], in one run.

    python bench/bench_orth.py [--rows 10000000] [--parts 8] [--out bench/out/orth] [--reference-rows 200000]
                               [--repeat 3] [--no-spark]

Generates (once, cached under --out) an export directory of PARTS Parquet part files (pyarrow, vectorised) plus
its orth_job_registry: three weeks of triggers over 40 executors and 25 handlers, every status, lost jobs. Then
measures, on a warm page cache:
  floor     pyarrow decodes every part (all columns), in a child process: the least any reader does
  local     `wqtool stats -o json` in a child process (the columnar fast path), its wall time and peak RSS
  headroom  how much faster two processes do two units of pure-Python work than one, right now (2.0 idle)
  spark     session start-up (local[2]) and worker warm-up — the fixed cost —, then the format's fleet (stats: a
            Python task per part replays it on the same fast path; ids unique across parts, so the driver adds
            the tasks' summaries up), excluding and including the fixed cost; peak RSS and CPU seconds of the
            whole process tree (driver, JVM, Python workers), sampled every 0.25 s
REPEAT (local, spark) pairs run back to back (this shared host's speed drifts: each ratio compares two runs made
under the same conditions); the table gives medians.
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
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from harness import headroom   # bench/harness.py (the script's folder is on sys.path)

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
          "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
          "print('maxrss_kib', u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); sys.exit(r.returncode)")


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
    last = next((x.split() for x in reversed(errs) if x.startswith("maxrss_kib ")), ["", "0", "0"])
    return {"seconds": secs, "rss_mib": int(last[1]) / 1024, "cpu": float(last[2]), "out": text, "exit": code,
            "load": f"{before} -> {load()}",
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


def _tree(me: int) -> dict[int, tuple[int, float]]:
    """pid -> (RSS bytes, CPU seconds incl. reaped children) of ``me`` and all its descendants."""
    parent, vals = {}, {}
    tck, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
        parent[int(pid)] = int(rest[1])
        vals[int(pid)] = (rss, sum(int(x) for x in rest[11:15]) / tck)
    tree, grew = {me}, True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return {p: vals[p] for p in tree if p in vals}


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
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(r for r, _ in _tree(os.getpid()).values()) / 2**20)
            self._stop.wait(self.every)


def tree_cpu() -> dict[int, float]:
    return {p: c for p, (_, c) in _tree(os.getpid()).items()}


def spark_stats_json(spark, d: str) -> str:
    """``wqtool stats -o json --engine spark`` of the Orth job-log parts in ``d``, in this process's session: what
    the CLI prints (tests/spark/test_bench_orth.py holds it to the local engine's output)."""
    from wqtool.commands._options import parse_time
    from wqtool.engine.format import Options, resolve
    from wqtool.exitcodes import resolve as resolve_codes
    from wqtool.render.outcome import Resolved
    from wqtool.render.stats import stats_doc, write_stats
    from wqtool.spark.fleet import fleet_stats
    opts = Options(parse_time(AS_OF, "--as-of"))
    logs = resolve([d], "orth-joblog", opts)
    per, jobs = fleet_stats(spark, logs, opts)
    views = [log.fmt.state_view(r.state, log.data) for log, (r, _, _) in zip(logs, per)]
    codes = Resolved(*resolve_codes([r.verdict for r, _, _ in per]))          # the codes the CLI's edge would give
    buf = io.StringIO()
    write_stats(buf, stats_doc([(r, v, st, n) for v, (r, st, n) in zip(views, per)], jobs, codes), "json")
    return buf.getvalue()


class SparkRun:
    """One session (start-up and worker warm-up: the fixed cost), then ``stats(d)`` as often as asked."""

    def __init__(self):
        from wqtool.spark.session import build_session, warm_up
        self.rss = TreeRss().__enter__()
        t = time.perf_counter()
        self.spark = build_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"})
        warm_up(self.spark)
        self.fixed = time.perf_counter() - t

    def stats(self, d: str) -> dict:
        before, cpu0 = load(), tree_cpu()
        t = time.perf_counter()
        out = spark_stats_json(self.spark, d)
        secs = time.perf_counter() - t
        cpu1 = tree_cpu()
        cpu = sum(c - cpu0.get(p, 0.0) for p, c in cpu1.items())
        return {"seconds": secs, "cpu": cpu, "rss_mib": self.rss.peak, "out": out, "load": f"{before} -> {load()}"}

    def stop(self):
        self.spark.stop()
        self.rss.__exit__()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "orth"))
    ap.add_argument("--reference-rows", type=int, default=200_000, help="0: skip the reference comparison")
    ap.add_argument("--repeat", type=int, default=3, help="(local, spark) pairs run back to back; medians")
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
    sp = None if a.no_spark else SparkRun()
    if sp is not None:
        print(f"spark local[2]: session start-up + worker warm-up {sp.fixed:.1f} s", flush=True)
    pairs = []
    for k in range(a.repeat):
        room = headroom(4_000_000)
        local = run_stats(d)
        if local["exit"] not in (0, 1, 2):
            print(f"local stats failed: exit {local['exit']}\n{local['stderr']}", file=sys.stderr)
            return 1
        print(f"[{k + 1}] 2-process headroom x{room:.2f}; local: {local['seconds']:.1f} s "
              f"({local['cpu']:.1f} CPU s), {a.rows / local['seconds'] / 1e3:,.0f} k rows/s, peak RSS "
              f"{local['rss_mib']:,.0f} MiB; load {local['load']}", flush=True)
        remote = sp.stats(d) if sp is not None else None
        if remote is not None:
            print(f"[{k + 1}] spark: {remote['seconds']:.1f} s ({remote['cpu']:.1f} CPU s), "
                  f"{a.rows / remote['seconds'] / 1e3:,.0f} k rows/s; ratio x{local['seconds'] / remote['seconds']:.2f};"
                  f" output identical: {remote['out'] == local['out']}; load {remote['load']}", flush=True)
        pairs.append((room, local, remote))
    if sp is not None:
        sp.stop()
    ref = None
    if a.reference_rows:
        dr = generate(a.out, a.reference_rows, 1)
        fast, pure = run_stats(dr), run_stats(dr, pure=True)
        ref = (a.reference_rows, fast, pure, json.loads(fast["out"]) == json.loads(pure["out"]))

    def med(xs):
        return statistics.median(xs)

    print()
    print(f"{'measure':<34} {'rows':>11} {'seconds':>8} {'CPU s':>6} {'k rows/s':>9} {'peak RSS':>9}  notes")

    def line(name, n, secs, cpu, rss, note=""):
        print(f"{name:<34} {n:>11,} {secs:>8.1f} {cpu:>6.1f} {n / secs / 1e3:>9,.1f} {rss:>6,.0f}MiB  {note}")
    line("floor: pyarrow decodes the parts", a.rows, fl["seconds"], fl["cpu"], fl["rss_mib"], "a child process")
    loc = [p[1] for p in pairs]
    line("local: wqtool stats (1 process)", a.rows, med([x["seconds"] for x in loc]), med([x["cpu"] for x in loc]),
         max(x["rss_mib"] for x in loc), f"median of {len(loc)}")
    rem = [p[2] for p in pairs if p[2] is not None]
    if rem:
        line("spark local[2], once started", a.rows, med([x["seconds"] for x in rem]), med([x["cpu"] for x in rem]),
             max(x["rss_mib"] for x in rem), f"median of {len(rem)}; driver + JVM + workers")
        line("spark local[2], with start-up", a.rows, med([x["seconds"] for x in rem]) + sp.fixed,
             med([x["cpu"] for x in rem]), max(x["rss_mib"] for x in rem), f"fixed cost {sp.fixed:.1f} s")
    if ref is not None:
        n, fast, pure, eq = ref
        line("reference (WQTOOL_PURE_PYTHON=1)", n, pure["seconds"], pure["cpu"], pure["rss_mib"], "process start incl.")
        line("local fast path", n, fast["seconds"], fast["cpu"], fast["rss_mib"], "process start incl.")
        print(f"fast path / reference on {n:,} rows: {pure['seconds'] / fast['seconds']:.1f}x; outputs identical: {eq}")
    print(f"2-process headroom: {', '.join(f'x{p[0]:.2f}' for p in pairs)}; load now {load()}")
    same = all(p[2]["out"] == p[1]["out"] for p in pairs if p[2] is not None)
    if rem:
        ratios = [p[1]["seconds"] / p[2]["seconds"] for p in pairs]
        print(f"ratio spark/local (local seconds / spark seconds): pairs {', '.join(f'x{r:.2f}' for r in ratios)}, "
              f"median x{med(ratios):.2f} once started; x{med([x['seconds'] for x in loc]) / (med([x['seconds'] for x in rem]) + sp.fixed):.2f} "
              f"including start-up; stats output byte-identical: {same}")
    return 0 if same and (ref is None or ref[3]) else 1


if __name__ == "__main__":
    sys.exit(main())
