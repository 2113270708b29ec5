"""Fleet benchmark: local single-process verify/replay vs --engine spark on local[2], in one run.

    python bench/bench_fleet.py [--dirs 4] [--segments 4] [--segment-mib 64] [--out bench/out/fleet] [--repeat 3]
                                [--reference] [--damaged FLIPS] [--no-under-load]

Generates (once, cached under --out) DIRS log directories of SEGMENTS segments of SEGMENT-MIB MiB each with
wqtool's own writer (two distinct logs, each copied into half of the directories: every directory is a whole,
valid log), then measures in this process, on a warm page cache:
  local verify   engine.verify.run_log(state=False, workers=1) per directory (the hot kernel, one process)
  local replay   engine.verify.run_log() + state digest per directory
  local stats    engine.workq.verify.fast_stats per directory, the union of their job ids (what `wqtool stats` does)
  spark          session start-up (local[2]) and worker warm-up (wqtool.spark.session.warm_up: a Python worker per
                 slot with the engine imported) — the fixed cost —, then fleet verify and replay over all
                 directories (wqtool.engine.workq.fleet.run_fleet on a spark.cluster.Cluster), excluding and including the fixed cost
--repeat (local, spark) pairs run back to back (this shared host's speed drifts by tens of percent over minutes,
so each ratio compares two runs under the same conditions), and prints MB/s (medians), every pair's ratio
spark/local and their median (target >= 1.6 once started), and whether the findings and digests are identical.
--reference also times the reference pipeline (segments framed per task, shuffle by job), the path a log the
kernel cannot hold takes (damaged logs took it until the kernel's tasks read through damage). --damaged FLIPS
measures verify and replay + digest, local vs spark, on a copy of the fleet with FLIPS bit flips per segment.
Also printed: the read + CRC-32C floor over the same files in the same run (one process: every measure's MB/s
beside it), which wqtool (file and kernel) the driver and the workers import, and the driver's peak memory (the
Python driver's and the JVM's peak RSS, reset before each run through /proc/PID/clear_refs, and the JVM's heap in use after a full GC, jcmd) during fleet replay
over 1, 2, ... DIRS logs: flat as the logs grow when the tasks aggregate where the data is; the same during stats
with the distributed union of job ids (forced whatever the fleet's size), with its time. --under-load runs the
verify, replay + digest and stats pairs again while a second process spins on a CPU, with the load average (on by default: --no-under-load). Not a test: the numbers go in notes. The machine's 2 cores may be shared: load is printed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from harness import crc_floor, headroom   # bench/harness.py (the script's folder is on sys.path)

# the installed wqtool on both sides (driver and Spark's Python workers): the checkout is NOT put on sys.path, so
# a non-editable install is measured as installed (its C kernel), never the checkout's pure-Python one
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AS_OF_NS = 1_795_306_600_000_000_000  # 2026-11-22T00:16:40Z


def generate(out: str, dirs: int, segments: int, segment_mib: int) -> list[str]:
    from wqtool.engine.workq.sample import SampleSpec, generate
    paths = [os.path.join(out, f"server{i:02d}") for i in range(dirs)]
    stamp = os.path.join(out, f".ready-{dirs}x{segments}x{segment_mib}")
    if os.path.exists(stamp):
        return paths
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    seg = segment_mib << 20
    records = int(segments * seg / 84)  # ~84 bytes per record with payload_max=64
    for k in range(min(2, dirs)):
        t = time.perf_counter()
        generate(paths[k], SampleSpec(records=records, segment_size=seg, seed=k + 1))
        print(f"generated {paths[k]}: {len(os.listdir(paths[k]))} files in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
    for i in range(2, dirs):
        shutil.copytree(paths[i % 2], paths[i])
    open(stamp, "w").close()
    return paths


def damaged(paths: list[str], out: str, flips: int) -> list[str]:
    """A copy of each log directory (once, cached under ``out``) with ``flips`` bit flips in every segment at
    seeded random offsets past the header: CRC errors, bad sizes, undecodable payloads, resynchronisation — the
    damaged path, over the same bytes as the intact run."""
    import random
    dst = [os.path.join(out, os.path.basename(p)) for p in paths]
    stamp = os.path.join(out, f".ready-{len(paths)}-{flips}")
    if os.path.exists(stamp):
        return dst
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for i, (src, d) in enumerate(zip(paths, dst)):
        shutil.copytree(src, d)
        rng = random.Random(i)
        for name in sorted(os.listdir(d)):
            seg = os.path.join(d, name)
            size = os.path.getsize(seg)
            if size <= 8:
                continue
            with open(seg, "r+b") as f:
                for at in sorted(rng.sample(range(8, size), min(flips, size - 8))):
                    f.seek(at)
                    b = f.read(1)[0] ^ (1 << rng.randrange(8))
                    f.seek(at)
                    f.write(bytes([b]))
    open(stamp, "w").close()
    return dst


def warm(logs) -> None:
    """Read every segment of ``logs`` once: the runs measure a warm page cache."""
    for g in logs:
        for s in g.segments:
            with open(s.path, "rb") as f:
                while f.read(1 << 24):
                    pass


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (the driver JVM and, in local mode, its Python workers)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _jvm(pid: int) -> int | None:
    for k in _descendants(pid):
        try:
            with open(f"/proc/{k}/cmdline", "rb") as f:
                if b"java" in f.read().split(b"\0")[0]:
                    return k
        except OSError:
            pass
    return None


def _reset_peak(pid: int) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:   # "5": reset the peak RSS (VmHWM), Linux >= 4.0
            f.write("5")
    except OSError:
        pass


def _peak_mib(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _jvm_live_mib(pid: int | None) -> float:
    """The JVM's heap in use right after a full GC (``jcmd PID GC.run``, then ``GC.heap_info``'s "used"): what
    the JVM holds, as opposed to its peak RSS, which follows how far the heap grew before a collection."""
    import re
    if pid is None or shutil.which("jcmd") is None:
        return 0.0
    try:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60)
        out = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return 0.0
    m = re.search(r"used (\d+)K", out)
    return int(m.group(1)) / 1024 if m else 0.0


class _Which:
    """A task: which wqtool file and which replay kernel a Spark Python worker imports."""

    def __call__(self, batches):
        import pyarrow as pa

        import wqtool
        from wqtool.engine.workq import fastreplay
        for b in batches:
            yield pa.RecordBatch.from_pydict({"where": [f"{wqtool.__file__} kernel={fastreplay.KERNEL}"]
                                              * b.num_rows})


_CONNECT_SERVER = """
import os, sys, time
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]")
         .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
         .config("spark.connect.grpc.binding.port", sys.argv[1])
         .config("spark.connect.grpc.binding.address", "127.0.0.1")
         .config("spark.connect.authenticate.token", os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"])
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
import socket
for _ in range(300):       # the Connect service listens a little after getOrCreate returns
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.2)
print("ready", flush=True)
time.sleep(1800)           # until the bench kills it
"""


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid``'s descendants now: the JVM and, in local mode, its Python workers
    (reused, so they live across the runs)."""
    tick = os.sysconf("SC_CLK_TCK")
    t = 0
    for k in _descendants(pid):
        try:
            with open(f"/proc/{k}/stat") as f:
                x = f.read().rsplit(")", 1)[1].split()
            t += int(x[11]) + int(x[12])
        except (OSError, IndexError, ValueError):
            pass
    return t / tick


def start_burners(n: int) -> list[int]:
    """``n`` CPU burners, each in a session of its own (its own autogroup, as other users' and services' work
    is), started through a shell that exits at once: they are no descendants of this process (so never counted
    as a side's CPU). Returns their pids; ``stop_burners`` ends exactly those."""
    import subprocess
    if n <= 0:
        return []
    out = subprocess.run(["sh", "-c", f"for i in $(seq {n}); do setsid {sys.executable} -c 'while 1: pass' "
                          "</dev/null >/dev/null 2>&1 & echo $!; done"], capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def stop_burners(pids: list[int]) -> None:
    import signal
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for_load(least: float, timeout_s: float = 180.0) -> float:
    """Poll the 1-minute load average until it is at least ``least`` (bounded by ``timeout_s``)."""
    end = time.monotonic() + timeout_s
    while os.getloadavg()[0] < least and time.monotonic() < end:
        time.sleep(1.0)
    return os.getloadavg()[0]


def _threads(pids: list[int]):
    """(tid, name, seconds on a CPU, seconds runnable but waiting for one) of every thread of ``pids``
    (``/proc/PID/task/*/schedstat``: run_ns, wait_ns; ``comm``)."""
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tids:
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    a, b, _ = f.read().split()
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    name = f.read().strip()
            except (OSError, ValueError):
                continue
            yield int(t), name, int(a) / 1e9, int(b) / 1e9


def _sched(pids: list[int]) -> tuple[float, float]:
    """Seconds on a CPU and seconds waiting for one, summed over every thread of ``pids``."""
    ts = list(_threads(pids))
    return sum(t[2] for t in ts), sum(t[3] for t in ts)


def _thread_cpu(pids: list[int]) -> dict[tuple[int, str], float]:
    """CPU seconds of each thread of ``pids``, by (tid, name)."""
    return {(tid, name): run for tid, name, run, _ in _threads(pids)}


def _warm_session(kind: str, conf: dict):
    """A warmed-up ``local[2]`` session: a user's plain PySpark session ("user") or the CLI's ("cli")."""
    from wqtool.spark.datasources import ensure_sources
    from wqtool.spark.session import build_session, warm_up
    if kind == "user":
        spark = _plain_session("local[2]", conf)
    else:
        spark = build_session(master="local[2]", conf=conf)
        ensure_sources(spark)
    warm_up(spark)
    return spark


def _plain_session(master: str, conf: list[str]):
    """A session as a user of the data sources builds it (``SparkSession.builder`` and ``wqtool.spark.register``):
    Spark's own JVM settings (its JIT: C1 and C2), not the CLI's (``build_session``: C1 only in local mode)."""
    from pyspark.sql import SparkSession

    from wqtool.spark import register
    from wqtool.spark.session import parse_conf
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1"))
    for k, v in parse_conf(conf).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark, check=False)
    return spark


def count_vs_stats(scale: float, n: int, out: str, conf: list[str], loaded: bool = False,
                   warm_counts: int = 10) -> None:
    """``spark.read.format("workq").load(log).count()`` on a warm local[2] session against ``wqtool stats`` of
    the same log (a new process, as a user runs it; and the engine's stats pass in this process), ``n``
    interleaved triples on the issue-14 log at ``scale`` (bench/shapes.py; 0.27: ~197 k adds, ~335 k records,
    ~40 MB), in two sessions one after the other: a user's (``SparkSession.builder`` + ``register``: Spark's
    JIT) and the CLI's (``build_session``: C1 only). Medians, every triple's ratio, the CPU seconds of one
    count() (the JVM and its Python workers), the source's partitions (a file split over the slots: byte-range
    shares), the load before and after; ``warm_counts`` counts first (a warm session: the workers' imports and
    the JVM's JIT). ``loaded``: a second process spins on a CPU throughout. Goal: count()
    <= 3x wqtool stats (this round's target: <= 2.5x, idle and loaded)."""
    from shapes import ensure

    from wqtool.engine.format import Options, get
    log_dir = ensure(os.path.join(out, ".."), scale)
    fmt = get("workq")
    (log,) = fmt.discover([log_dir], Options(AS_OF_NS))
    warm([log])
    size = sum(os.path.getsize(s_.path) for s_ in log.segments)
    wq = os.path.join(os.path.dirname(sys.executable), "wqtool")
    med = statistics.median
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
    try:
        for kind in ("user", "cli"):
            load0 = os.getloadavg()[0]
            spark = _warm_session(kind, conf)
            src = spark.read.format("workq").load(log_dir)
            parts = src.rdd.getNumPartitions()
            records = src.count()                    # warm: the source's first job, the workers' imports,
            for _ in range(warm_counts - 1):         # the JVM's JIT (C2 compiles for ~10 counts)
                src.count()
            cli, eng, cnt, cpu = [], [], [], []
            for _ in range(n):
                t = time.perf_counter()
                subprocess.run([wq, "stats", log_dir], check=True, stdout=subprocess.DEVNULL)
                cli.append(time.perf_counter() - t)
                t = time.perf_counter()
                _, st = fmt.passes.stats_log(log, Options(AS_OF_NS), ids=False)
                eng.append(time.perf_counter() - t)
                c0 = _cpu_s(os.getpid())
                t = time.perf_counter()
                got = src.count()
                cnt.append(time.perf_counter() - t)
                cpu.append(_cpu_s(os.getpid()) - c0)
                assert got == records == st.records, (got, records, st.records)
            spark.stop()
            print(f"issue-14 log at scale {scale:g}: {records} records, {size / 1e6:.1f} MB, {len(log.segments)} "
                  f"segment(s), {parts} partition(s), {warm_counts} warm count(s) first; {kind} session"
                  f"{' (Spark JIT)' if kind == 'user' else ' (build_session)'}; load average {load0:.2f} "
                  f"before, {os.getloadavg()[0]:.2f} after{', a second process spinning' if loaded else ''}, "
                  f"{os.cpu_count()} CPUs (shared)")
            def runs(xs):
                return f"median {med(xs):.2f} s  runs " + " ".join(f"{x:.2f}" for x in xs)
            print(f"  wqtool stats (new process)       {runs(cli)}")
            print(f"  engine stats pass (in process)   {runs(eng)}")
            print(f"  source count(), session warm     {runs(cnt)}; CPU per count() median {med(cpu):.2f} s (JVM + "
                  f"Python workers)")
            print(f"  count() / wqtool stats: x{med(cnt) / med(cli):.2f} (triples: "
                  + " ".join(f"x{c / s:.2f}" for c, s in zip(cnt, cli)) + "); / the in-process pass: "
                  f"x{med(cnt) / med(eng):.2f} (goal: <= x3 of wqtool stats; target x2.5)")
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()


def count_child(kind: str, scale: float, out: str, conf: list[str], warm_counts: int = 10) -> None:
    """One session (``kind``: "user" — ``SparkSession.builder`` + ``register`` — or "cli" — ``build_session``)
    kept warm in this process: for each "go" line on stdin, one ``count()`` of the issue-14 log; prints its wall
    and CPU seconds (this process's descendants: the JVM and the Python workers)."""
    from shapes import ensure

    log_dir = ensure(os.path.join(out, ".."), scale)
    spark = _warm_session(kind, conf)
    src = spark.read.format("workq").load(log_dir)
    for _ in range(warm_counts):
        src.count()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        c0 = _cpu_s(os.getpid())
        t = time.perf_counter()
        n = src.count()
        print(f"{time.perf_counter() - t:.4f} {_cpu_s(os.getpid()) - c0:.4f} {n}", flush=True)
    spark.stop()


def count_sessions(scale: float, n: int, out: str, conf: list[str], loaded: bool = False) -> None:
    """The two kinds of session side by side, interleaved: both started and warm (10 counts each) in two child
    processes, then ``n`` rounds of (a user's session's count(), the CLI session's count(), ``wqtool stats``),
    the order alternating — so both see the same load. Medians, ratios to ``wqtool stats``, CPU per count."""
    import subprocess
    from shapes import ensure
    log_dir = ensure(os.path.join(out, ".."), scale)
    here = os.path.abspath(__file__)
    kids = {k: subprocess.Popen([sys.executable, here, "--count-child", k, "--count-scale", str(scale),
                                 "--out", out] + [f"--spark-conf={c}" for c in conf],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for k in ("user", "cli")}
    burner = None
    try:
        for k, p in kids.items():
            while True:
                line = p.stdout.readline()
                if not line:
                    raise SystemExit(f"the {k} session did not start")
                if line.strip() == "ready":
                    break
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
        wq = os.path.join(os.path.dirname(sys.executable), "wqtool")
        load0 = os.getloadavg()[0]
        res: dict[str, list] = {"user": [], "cli": [], "stats": []}
        cpu: dict[str, list] = {"user": [], "cli": []}
        for i in range(n):
            for k in (("user", "cli", "stats") if i % 2 == 0 else ("stats", "cli", "user")):
                if k == "stats":
                    t = time.perf_counter()
                    subprocess.run([wq, "stats", log_dir], check=True, stdout=subprocess.DEVNULL)
                    res[k].append(time.perf_counter() - t)
                    continue
                kids[k].stdin.write("go\n")
                kids[k].stdin.flush()
                wall, c, _ = kids[k].stdout.readline().split()
                res[k].append(float(wall))
                cpu[k].append(float(c))
        load1 = os.getloadavg()[0]
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        for p in kids.values():
            try:
                p.stdin.close()
            except OSError:
                pass
            p.wait(timeout=60)
    med = statistics.median
    st_ = med(res["stats"])
    print(f"count() of the issue-14 log at scale {scale:g}, both sessions warm, {n} interleaved rounds; load "
          f"{load0:.2f} -> {load1:.2f}{', a second process spinning' if loaded else ''}, {os.cpu_count()} CPUs "
          f"(shared)")
    print(f"  wqtool stats (new process)   median {st_:.2f} s  runs " + " ".join(f"{x:.2f}" for x in res["stats"]))
    for k, what in (("user", "a user's session (builder + register)"), ("cli", "wqtool's build_session")):
        print(f"  count(), {what:<38} median {med(res[k]):.2f} s (x{med(res[k]) / st_:.2f} the stats; rounds "
              + " ".join(f"x{a_ / b_:.2f}" for a_, b_ in zip(res[k], res["stats"]))
              + f"); CPU per count() median {med(cpu[k]):.2f} s")


def _breakdown_task():
    """A ``_FastTask`` that times itself inside the task (wall clock, as the driver's): when the task function
    was entered, its kernel pass' start and end and the pass' CPU — returned in its result (``_t``). Defined
    here, so that cloudpickle ships it by value to the workers."""
    from wqtool.engine.workq.fleet import _FastTask

    class Timed(_FastTask):
        def __call__(self, batches):
            self._t_in = time.time()
            yield from super().__call__(batches)

        def _run(self, *a):
            t1, c1 = time.time(), time.process_time()
            res = super()._run(*a)
            if res is not None:
                res["_t"] = (self._t_in, t1, time.time(), time.process_time() - c1)
            return res
    return Timed


def one_log_summary(path: str, n: int, conf: list[str], loaded: bool = False, breakdown: bool = False,
                    burners: int = 0, frames: bool = False, threads: bool = False) -> None:
    """``replay --summary`` of one log once the session is started, as the CLI computes it (``engine.read.read``:
    the report, then the view's digest, counts per state and per queue): ``n`` interleaved rounds of the local
    engine (this process) and a warm ``local[2]`` command session (``build_session(sources=False)``, the CLI's)
    through ``SparkRunner`` — the log whole in one task as on a busy machine (``Cluster.run``: one RDD stage),
    the same through a DataFrame (``Cluster.tasks`` + ``collect``: ``mapInArrow``, the path before), and chained
    over the two slots (``chain_plan`` as with a CPU to spare) — each a Spark job (``spark.wqtool.inDriver.threshold``
    0) —, and as the command chooses (``auto``: chained where ``chain_pays``, else read in the driver with no job,
    ``in_driver``). Wall-clock medians, every pair's ratio, the CPU
    seconds of each side (this process and its JVM and Python workers) and the load; ``loaded``: a second process
    spins on a CPU throughout. ``breakdown``: where the Spark side's time goes, from timestamps in the task and
    on the driver (medians over the rounds).

    ``burners``: that many CPU burners, each in a session of its own (``start_burners``: their own autogroups, as
    other sessions' work is), started after the warm-up; the rounds begin once the load average is at least
    6 (or 3/4 of them), and they are killed by pid at the end. Besides the local engine in this process
    (``local``), ``cli`` runs ``wqtool replay --summary LOG`` as a process of its own, as a user runs it (its
    start-up and imports included; bytecode compiled beforehand), in this process' session, as the Spark
    session's JVM and workers are: the sides run in turn, never at once. Every side's CPU and its wait for a CPU
    (``/proc/PID/task/*/schedstat`` of this process and its descendants; the CLI's own process read as it exits)
    are printed as medians. ``frames``: also the one task through a DataFrame (the path before ``Cluster.run``).
    ``threads``: the CPU of each thread of the Spark side (the JVM's by name, the Python workers') over the
    one-task and the chained rounds."""
    import subprocess

    import wqtool.engine.workq.fleet as wf
    import wqtool.spark.cluster as scl
    from wqtool.engine.format import resolve
    from wqtool.engine.options import Options
    from wqtool.engine.read import Want, read
    from wqtool.spark.runner import SparkRunner
    from wqtool.spark.session import build_session, parse_conf, warm_up
    opts = Options(as_of_ns=AS_OF_NS)
    logs = resolve([path], "auto", opts)
    warm([lg.data for lg in logs])
    spark = build_session(master="local[2]", conf=parse_conf(conf), sources=False)
    warm_up(spark)
    auto = "chained" if wf.chain_pays() else "in the driver (a busy machine)"
    real_pays, real_run, real_task, real_here = wf.chain_pays, scl.Cluster.run, wf._FastTask, scl.Cluster.run_here
    from wqtool.spark.session import IN_DRIVER_CONF
    marks: dict[str, float] = {}

    def through_frames(self, n_, fn, fields, what=None):
        return self.collect(self.tasks(n_, fn, fields, what=what))

    def timed_run(self, n_, fn, fields, what=None):
        marks["submit"] = time.time()
        rows = (through_frames if marks.get("frames") else real_run)(self, n_, fn, fields, what)
        marks["back"] = time.time()
        if breakdown:
            import pickle
            for r in rows:
                d = pickle.loads(r["blob"])
                if isinstance(d, dict) and "_t" in d:
                    marks["t"] = d.pop("_t")
                    marks.setdefault("shares", {})[r["part"]] = marks["t"]
        return rows

    def here(self, n_, fn, fields):
        marks["driver"] = True
        return real_here(self, n_, fn, fields)

    def summary(view):
        return view.digest(), view.counts_by_state(), view.queues()

    def local():
        return summary(read(logs, opts, want=Want.REPLAY, max_findings=1000).results[0].view())

    def on_spark(chain: bool | None, through_frames: bool = False, job: bool = True):
        """``chain`` None: ``chain_pays`` decides, as for a user's job (``marks["chained"]``: what it chose);
        ``job``: a Spark job always (``spark.wqtool.inDriver.threshold`` 0), else the log may be read in the driver
        (``marks["driver"]``), as the command does by default."""
        marks_chain = []

        def pays():
            got = real_pays() if chain is None else chain
            marks_chain.append(got)
            return got
        wf.chain_pays = pays
        marks.clear()
        marks["frames"] = through_frames
        if job:
            spark.conf.set(IN_DRIVER_CONF, "0")
        marks["start"] = time.time()
        try:
            r = read(logs, opts, want=Want.REPLAY, runner=SparkRunner(spark), max_findings=1000, summary=True)
            marks["read"] = time.time()
            marks["chained"] = bool(marks_chain and marks_chain[-1])
            return summary(r.results[0].view())
        finally:
            wf.chain_pays = real_pays
            if job:
                spark.conf.unset(IN_DRIVER_CONF)

    scl.Cluster.run = timed_run
    scl.Cluster.run_here = here
    if breakdown:
        wf._FastTask = _breakdown_task()
    iso = "2026-11-22T00:16:40Z"      # AS_OF_NS
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(os.path.dirname(wf.__file__))],
                   check=True)
    cli_sched: dict[str, float] = {}

    def cli():
        """``wqtool replay --summary LOG`` in a process of its own; its CPU and wait from its schedstat, read
        after it exits and before it is reaped (``waitid(WNOWAIT)``)."""
        exe = os.path.join(os.path.dirname(sys.executable), "wqtool")
        p = subprocess.Popen([exe, "replay", "--summary", "--as-of", iso, path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        out = p.stdout.read().decode()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        with open(f"/proc/{p.pid}/schedstat") as f:
            a, b, _ = f.read().split()
        cli_sched["run"], cli_sched["wait"] = int(a) / 1e9, int(b) / 1e9
        if p.wait() != 0:
            raise RuntimeError(f"wqtool replay --summary exited {p.returncode}")
        return [ln.split()[1] for ln in out.splitlines() if ln.startswith("digest ")][0]

    sides = {"local": local, "cli": cli, "whole": lambda: on_spark(False)}
    if frames:
        sides["frames"] = lambda: on_spark(False, True)
    sides["chained"] = lambda: on_spark(True)
    sides["driver"] = lambda: on_spark(False, job=False)      # no chain: read in the driver, no job
    sides["auto"] = lambda: on_spark(None, job=False)
    me = os.getpid()
    for f in sides.values():        # each path's first job (its workers, the JIT)
        f()
        f()
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
    burning = start_burners(burners)
    load_start = wait_for_load(min(6.0, 0.75 * burners)) if burning else os.getloadavg()[0]

    def spun() -> float:
        """The spinning process' CPU seconds (a child of this process: not counted as either side's)."""
        if burner is None:
            return 0.0
        with open(f"/proc/{burner.pid}/stat") as f:
            x = f.read().rsplit(")", 1)[1].split()
        return (int(x[11]) + int(x[12])) / os.sysconf("SC_CLK_TCK")
    wall: dict[str, list[float]] = {k: [] for k in sides}
    cpu: dict[str, list[float]] = {k: [] for k in sides}
    waits: dict[str, list[float]] = {k: [] for k in sides}
    per_thread: dict[str, dict[str, list[float]]] = {"whole": {}, "chained": {}}
    rounds: list[tuple[float, float, str]] = []      # each round's CPU pressure and load at its start; auto's choice
    parts: list[dict] = []
    chain_cpu: list[list[float]] = []      # --breakdown: each chained share's CPU (its pass and its hashing)
    try:
        load0 = load_start
        for i in range(n):
            names = list(sides) if i % 2 == 0 else list(reversed(sides))   # interleaved: none always first
            want = None
            psi = wf.cpu_pressure()
            rounds.append((-1.0 if psi is None else psi, os.getloadavg()[0], "?"))
            for k in names:
                procs = [me] + _descendants(me)
                s0 = _sched(procs)
                th0 = _thread_cpu(procs) if threads and k in per_thread else None
                if th0 is not None:
                    tids_me = {int(t) for t in os.listdir(f"/proc/{me}/task")}
                    jvm_ = _jvm(me)
                    tids_jvm = {int(t) for t in os.listdir(f"/proc/{jvm_}/task")} if jvm_ else set()
                c = time.process_time() + _cpu_s(me) - spun()
                ch = os.times()
                t = time.perf_counter()
                got = sides[k]()
                wall[k].append(time.perf_counter() - t)
                ch1 = os.times()
                s1 = _sched(procs)
                cpu[k].append(time.process_time() + _cpu_s(me) - spun() - c
                              + ch1.children_user + ch1.children_system - ch.children_user - ch.children_system)
                waits[k].append(s1[1] - s0[1] + (cli_sched["wait"] if k == "cli" else 0.0))
                if th0 is not None:     # summed by role: the driver's threads, the JVM's by name, the workers
                    th1 = _thread_cpu(procs)
                    run: dict[str, float] = {}
                    for key, v in th1.items():
                        d = v - th0.get(key, 0.0)
                        if d > 0.0005:
                            name = ("driver (this process)" if key[0] in tids_me else f"jvm {key[1]}"
                                    if key[0] in tids_jvm else "python workers")
                            run[name] = run.get(name, 0.0) + d
                    for name, d in run.items():
                        per_thread[k].setdefault(name, []).append(d)
                if k == "cli":
                    got = got.removeprefix("sha256:")
                    ref = (want or local())[0]
                    assert got == str(ref).removeprefix("sha256:"), f"cli: another digest ({got} vs {ref})"
                    continue
                if want is None:
                    want = got
                assert got == want, f"{k}: another digest or counts"
                if k == "auto":
                    rounds[-1] = (*rounds[-1][:2], "driver" if marks.get("driver") else
                                  "chain" if marks.get("chained") else "whole")
                if k == "whole" and breakdown:
                    parts.append(dict(marks))
                if k == "chained" and breakdown and len(marks.get("shares", {})) == 2:
                    chain_cpu.append([marks["shares"][j][3] for j in (0, 1)])
        load1 = os.getloadavg()[0]
    finally:
        wf.chain_pays, scl.Cluster.run, wf._FastTask = real_pays, real_run, real_task
        scl.Cluster.run_here = real_here
        if burner is not None:
            burner.kill()
            burner.wait()
        stop_burners(burning)
    spark.stop()
    med = statistics.median
    size = sum(os.path.getsize(s_.path) for s_ in logs[0].data.segments)

    def runs(xs):
        return " ".join(f"{x:.2f}" for x in xs)
    print(f"replay --summary of {path} ({size / 2**20:.0f} MiB), load {load0:.2f} -> {load1:.2f}"
          f"{', a second process spinning' if loaded else ''}"
          f"{f', {len(burning)} burners each in a session of its own' if burning else ''}, {os.cpu_count()} CPUs (shared); "
          f"the default at the start: {auto}; {n} interleaved rounds; digests and counts identical")
    words = {"local": "local (this process)", "cli": "wqtool replay --summary (a process)",
             "whole": "spark, one task (Cluster.run)",
             "frames": "spark, one task (DataFrame)", "chained": "spark, chained over 2 slots",
             "driver": "spark session, read in the driver",
             "auto": "spark, as the command chooses"}
    for k in sides:
        pairs = [a_ / b_ for a_, b_ in zip(wall["local"], wall[k])]
        ratio = "" if k == "local" else (f"; local/spark x{med(wall['local']) / med(wall[k]):.2f}, median of the "
                                         f"pairs x{med(pairs):.2f} (pairs " + " ".join(f"x{x:.2f}" for x in pairs) + ")")
        print(f"  {words[k]:<36} {med(wall[k]):.2f} s, CPU {med(cpu[k]):.2f} s, waited for a CPU "
              f"{med(waits[k]):.2f} s (runs {runs(wall[k])}){ratio}")
    print("  each round: CPU pressure (some avg10, %) and load at its start; local / chained, local / one task, "
          "local / in the driver; what the command chose (chain, whole: one task, driver: no job) and local / "
          "that: " + "; ".join(
              f"{p_:.0f}% {ld:.1f} x{lc / c_:.2f} x{lc / w_:.2f} x{lc / d_:.2f} {ch} x{lc / a_:.2f}"
              for (p_, ld, ch), lc, c_, w_, d_, a_ in zip(rounds, wall["local"], wall["chained"], wall["whole"],
                                                           wall["driver"], wall["auto"])))
    for k in ("whole", "chained", "driver", "auto"):
        if k != "local" and "cli" in wall:
            pairs = [a_ / b_ for a_, b_ in zip(wall["cli"], wall[k])]
            print(f"  {words['cli']} / {words[k]}: median of the pairs x{med(pairs):.2f} (pairs "
                  + " ".join(f"x{x:.2f}" for x in pairs) + ")")
    for k, by in per_thread.items():
        if by:
            top = sorted(by.items(), key=lambda kv: -sum(kv[1]))[:10]
            print(f"  {words[k]}, CPU by thread (ms per run, medians over the runs they ran in): "
                  + ", ".join(f"{name} {1000 * med(v):.0f} ({len(v)})" for name, v in top))
    if parts:
        _print_breakdown(parts)
    if chain_cpu and parts:
        s0, s1 = med([c[0] for c in chain_cpu]), med([c[1] for c in chain_cpu])
        whole = med([m["t"][3] for m in parts])
        print(f"  the chained shares' CPU (their pass and hashing; medians): share 0 {s0:.3f} s, share 1 {s1:.3f} s, "
              f"together {s0 + s1:.3f} s against the one task's pass {whole:.3f} s (x{(s0 + s1) / whole:.2f})")


def _print_breakdown(parts: list[dict]) -> None:
    """Medians of where one task's job went (``one_log_summary --breakdown``), in milliseconds."""
    med = statistics.median
    rows = {"driver, before the job (resolve the runner, snapshot, plan)": [],
            "submitted -> the task function entered": [], "entered -> the kernel pass starts": [],
            "the kernel pass (wall)": [], "the kernel pass (CPU)": [], "pass end -> rows on the driver": [],
            "driver, after the job (assemble, check, report)": [], "total": []}
    for m in parts:
        t_in, t1, t2, c = m["t"]
        vals = (m["submit"] - m["start"], t_in - m["submit"], t1 - t_in, t2 - t1, c, m["back"] - t2,
                m["read"] - m["back"], m["read"] - m["start"])
        for k, v in zip(rows, vals):
            rows[k].append(v * 1000)
    print("  where the one task's job goes (ms, medians; timestamps in the task and on the driver):")
    for k, v in rows.items():
        print(f"    {k:<60} {med(v):7.1f}  ({' '.join(f'{x:.0f}' for x in v)})")


def remote_cost(n: int) -> None:
    """The CLI's fixed cost through Spark Connect: ``n`` interleaved (local, --remote) pairs of ``wqtool verify``
    on a tiny log (fixtures/workq/sample-clean: 60 records), each a new process as a user runs it; medians and
    the difference (goal: <= 1.5 s over local), with the load before and after."""
    import secrets
    import socket
    import subprocess
    with socket.socket() as s_:
        s_.bind(("127.0.0.1", 0))
        port = s_.getsockname()[1]
    token = secrets.token_hex(8)
    env = dict(os.environ, SPARK_CONNECT_AUTHENTICATE_TOKEN=token)
    server = subprocess.Popen([sys.executable, "-c", _CONNECT_SERVER, str(port)], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if server.stdout.readline().strip() != "ready":
            raise SystemExit("the Spark Connect server did not start")
        server.stdout.close()
        wqtool = os.path.join(os.path.dirname(sys.executable), "wqtool")
        log = os.path.join(ROOT, "fixtures", "workq", "sample-clean", "log")
        remote = f"sc://localhost:{port}/;token={token}"   # a token to another host name means TLS (PySpark)
        cmds = {"local": [wqtool, "verify", log],
                "remote": [wqtool, "verify", "--engine", "spark", "--remote", remote, log]}
        out = {"local": [], "remote": []}
        subprocess.run(cmds["remote"], capture_output=True, check=True)      # the server's first job: not timed
        load0 = os.getloadavg()[0]
        for _ in range(n):
            for k in ("local", "remote"):
                t = time.perf_counter()
                subprocess.run(cmds[k], capture_output=True, check=True)
                out[k].append(time.perf_counter() - t)
        load1 = os.getloadavg()[0]
    finally:
        server.kill()      # its JVM exits when the Python that started it is gone
        server.wait()
    med = statistics.median
    lo, re_ = med(out["local"]), med(out["remote"])
    print(f"wqtool verify on a tiny log, {n} interleaved pairs (new process each; load {load0:.2f} -> {load1:.2f} "
          f"on {os.cpu_count()} CPUs):")
    for k in ("local", "remote"):
        xs = sorted(out[k])
        print(f"  {k:<7} median {med(xs):.2f} s (min {xs[0]:.2f}, max {xs[-1]:.2f})")
    print(f"  --remote fixed cost over local: +{re_ - lo:.2f} s (goal <= 1.5 s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", type=int, default=4)
    ap.add_argument("--segments", type=int, default=4)
    ap.add_argument("--segment-mib", type=int, default=64)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "fleet"))
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--damaged", type=int, default=0, metavar="FLIPS",
                    help="also run verify and replay + digest on a copy of the fleet with FLIPS bit flips in every "
                    "segment (the damaged path; with --reference, the reference pipeline on it too)")
    ap.add_argument("--sources", action="store_true", help="also time the workq data source on the first directory: "
                    "count() of every record vs select(cmd).where(cmd = 'add').count() (Spark filters: no pushdown on "
                    "Spark 4.3.0, see wqtool.spark.datasources.pushdown_safe)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the median is reported")
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of the bench's local[2] session (repeatable), as the CLI's --spark-conf")
    ap.add_argument("--remote-calls", type=int, default=0, metavar="N",
                    help="only measure the CLI's fixed cost through Spark Connect: a Connect server (local[2]) on "
                    "loopback, then N interleaved pairs of `wqtool verify` on a tiny log, local vs --remote")
    ap.add_argument("--under-load", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the verify, replay + digest and stats pairs again while a second process keeps "
                    "one CPU busy (a spinning Python process), and print those rows too (default; --no-under-load "
                    "skips them)")
    ap.add_argument("--count-vs-stats", type=float, default=0, metavar="SCALE",
                    help="only measure the workq source's count() on a warm session against `wqtool stats` of the "
                    "issue-14 log at SCALE (0.27: ~335 k records), --repeat interleaved runs")
    ap.add_argument("--count-loaded", "--loaded", action="store_true",
                    help="with --count-vs-stats or --one-log-summary: a second process spins on a CPU throughout")
    ap.add_argument("--breakdown", action="store_true",
                    help="with --one-log-summary: where the one task's job goes (timestamps in the task and on the "
                    "driver)")
    ap.add_argument("--burners", type=int, default=0, metavar="N",
                    help="with --one-log-summary: N CPU burners, each in a session of its own, during the rounds "
                    "(killed by pid at the end)")
    ap.add_argument("--frames", action="store_true",
                    help="with --one-log-summary: also the one task through a DataFrame")
    ap.add_argument("--threads", action="store_true",
                    help="with --one-log-summary: the Spark side's CPU by thread")
    ap.add_argument("--one-log-summary", metavar="LOG",
                    help="only measure replay --summary of one log, local (this process, and wqtool as a process) vs "
                    "a started local[2] session (a job chained, a job of one task, and as the command chooses: "
                    "chained, or read in the driver where no job pays), --repeat interleaved rounds")
    ap.add_argument("--count-sessions", type=float, default=0, metavar="SCALE",
                    help="only measure count() in a user's session and the CLI's, both warm in child processes, "
                    "interleaved with `wqtool stats`, --repeat rounds (--loaded: a second process spinning)")
    ap.add_argument("--count-child", help=argparse.SUPPRESS)
    ap.add_argument("--count-scale", type=float, default=0.27, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.count_child:
        count_child(a.count_child, a.count_scale, a.out, a.spark_conf)
        return
    if a.count_sessions:
        count_sessions(a.count_sessions, a.repeat, a.out, a.spark_conf, loaded=a.count_loaded)
        return
    if a.one_log_summary:
        one_log_summary(a.one_log_summary, a.repeat, a.spark_conf, loaded=a.count_loaded, breakdown=a.breakdown,
                        burners=a.burners, frames=a.frames, threads=a.threads)
        return
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.count_vs_stats:
        count_vs_stats(a.count_vs_stats, a.repeat, a.out, a.spark_conf, loaded=a.count_loaded)
        return
    if a.remote_calls:
        remote_cost(a.remote_calls)
        return

    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log

    paths = generate(a.out, a.dirs, a.segments, a.segment_mib)
    logs = discover(paths)
    nseg = sum(len(g.segments) for g in logs)
    size = sum(os.path.getsize(s.path) for g in logs for s in g.segments)
    warm(logs)
    t = time.perf_counter()
    for g in logs:
        for s_ in g.segments:
            crc_floor(os.path.dirname(s_.path), suffix=os.path.basename(s_.path))
    t_floor = time.perf_counter() - t
    rows = []
    ceiling = headroom()
    n = a.repeat

    def row(name, secs, note=""):
        rows.append((name, secs, size / secs / 1e6 if secs else 0.0, note))
        print(f"  {name:<44} {secs:>8.2f} s {size / secs / 1e6 if secs else 0.0:>8.1f} MB/s  {note}", flush=True)

    def runs(secs):
        return "runs " + " ".join(f"{x:.2f}" for x in secs) if n > 1 else ""

    from wqtool.engine.workq.fleet import run_fleet, run_reference
    from wqtool.spark.cluster import Cluster
    from wqtool.spark.session import build_session, warm_up
    t = time.perf_counter()
    spark = build_session(master="local[2]", conf=a.spark_conf)
    t_start = time.perf_counter() - t
    t = time.perf_counter()
    workers = warm_up(spark)   # "started": a Python worker on each slot, the engine imported
    t_first = time.perf_counter() - t
    fixed = t_start + t_first
    import wqtool
    from wqtool.engine.workq import fastreplay
    here = f"{wqtool.__file__} kernel={fastreplay.KERNEL}"
    there = sorted({r["where"] for r in spark.range(0, 2, 1, 2).mapInArrow(_Which(), "where string").collect()})
    jvm = _jvm(os.getpid())

    def pairs(local_fn, spark_fn):
        """--repeat (local, spark) pairs, each pair back to back: this shared host's speed drifts by tens of
        percent over minutes, so each ratio compares two runs made under the same conditions. Returns the
        seconds of both, every pair's ratio and the last results."""
        ls, ss, lo, so = [], [], None, None
        for _ in range(n):
            t = time.perf_counter()
            lo = local_fn()
            ls.append(time.perf_counter() - t)
            t = time.perf_counter()
            so = spark_fn()
            ss.append(time.perf_counter() - t)
        return ls, ss, [x / y for x, y in zip(ls, ss)], lo, so

    s_lv, s_sv, q_v, v_local, v_spark = pairs(
        lambda: [run_log(g, AS_OF_NS, state=False, workers=1) for g in logs],
        lambda: run_fleet(Cluster(spark), logs, AS_OF_NS, digest=False))
    s_lr, s_sr, q_r, d_local, r_spark = pairs(
        lambda: [run_log(g, AS_OF_NS).state.digest() for g in logs],
        lambda: run_fleet(Cluster(spark), logs, AS_OF_NS))
    from wqtool.engine.workq.verify import fast_stats

    def local_stats():      # what `wqtool stats` of the logs does locally: each log's pass, the union of the ids
        got = [fast_stats(g, AS_OF_NS, ids=True)[1] for g in logs]
        return [st.records for st in got], len(set().union(*(st.jobs for st in got)))

    def spark_stats():
        total: list[int] = []
        fleet = run_fleet(Cluster(spark), logs, AS_OF_NS, limit=0, stats=True, stats_total=total)
        return [fl.stats.records for fl in fleet], sum(total)

    s_ls, s_ss, _, st_local, st_spark = pairs(local_stats, spark_stats)
    load_idle = os.getloadavg()[0]
    loaded = None
    if a.under_load:      # the same pairs while another process spins on a CPU
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            loaded = (pairs(lambda: [run_log(g, AS_OF_NS, state=False, workers=1) for g in logs],
                            lambda: run_fleet(Cluster(spark), logs, AS_OF_NS, digest=False)),
                      pairs(lambda: [run_log(g, AS_OF_NS).state.digest() for g in logs],
                            lambda: run_fleet(Cluster(spark), logs, AS_OF_NS)),
                      pairs(local_stats, spark_stats), os.getloadavg()[0])
        finally:
            burner.kill()
            burner.wait()
    med = statistics.median
    t_lv, t_sv, t_lr, t_sr = med(s_lv), med(s_sv), med(s_lr), med(s_sr)
    same_v = all((a_.report.verdict, a_.report.counts) == (b.verdict, b.counts) for a_, b in zip(v_spark, v_local))
    same_d = [f.report.state.digest() for f in r_spark] == d_local
    peaks = []
    for k in sorted({1 << i for i in range(len(logs).bit_length())} | {len(logs)}):   # memory as the fleet doubles
        _reset_peak(os.getpid())
        if jvm:
            _reset_peak(jvm)
        t = time.perf_counter()
        run_fleet(Cluster(spark), logs[:k], AS_OF_NS)
        peaks.append((k, sum(os.path.getsize(s_.path) for g in logs[:k] for s_ in g.segments),
                      time.perf_counter() - t, _peak_mib(os.getpid()), _peak_mib(jvm), _jvm_live_mib(jvm)))
    stats_peaks = []
    from wqtool.engine.workq import fleet as workq_fleet
    small = workq_fleet.DRIVER_UNION_IDS
    workq_fleet.DRIVER_UNION_IDS = 0      # the distributed union whatever the fleet's size (a big fleet's path)
    try:
        shuffled = []
        for _ in range(n):
            t = time.perf_counter()
            total_: list[int] = []
            run_fleet(Cluster(spark), logs, AS_OF_NS, limit=0, stats=True, stats_total=total_)
            shuffled.append(time.perf_counter() - t)
        same_shuffled = sum(total_) == st_local[1]
        for k in sorted(({1 << i for i in range(len(logs).bit_length())} | {len(logs)}) - {1}):   # as it doubles
            _reset_peak(os.getpid())
            if jvm:
                _reset_peak(jvm)
            t = time.perf_counter()
            run_fleet(Cluster(spark), logs[:k], AS_OF_NS, limit=0, stats=True, stats_total=[])
            stats_peaks.append((k, sum(os.path.getsize(s_.path) for g in logs[:k] for s_ in g.segments),
                                time.perf_counter() - t, _peak_mib(os.getpid()), _peak_mib(jvm),
                                _jvm_live_mib(jvm)))
    finally:
        workq_fleet.DRIVER_UNION_IDS = small
    row("floor: read + CRC-32C (1 process)", t_floor)
    row("local verify (1 process)", t_lv, runs(s_lv))
    row("spark verify local[2]", t_sv, f"{runs(s_sv)}; same findings: {same_v}")
    row("spark verify incl. start-up", s_sv[0] + fixed, f"x{t_lv / (s_sv[0] + fixed):.2f} (fixed cost + first run)")
    row("local replay + digest (1 process)", t_lr, runs(s_lr))
    row("spark replay + digest local[2]", t_sr, f"{runs(s_sr)}; identical digests: {same_d}")
    row("spark replay incl. start-up", s_sr[0] + fixed, f"x{t_lr / (s_sr[0] + fixed):.2f} (fixed cost + first run)")
    t_ls, t_ss = med(s_ls), med(s_ss)
    row("local stats (1 process)", t_ls, f"{runs(s_ls)}; {st_local[1]} distinct jobs")
    row("spark stats local[2]", t_ss, f"x{t_ls / t_ss:.2f}; {runs(s_ss)}; same counts: {st_spark == st_local}")
    row("spark stats local[2], distributed union", med(shuffled), f"x{t_ls / med(shuffled):.2f}; {runs(shuffled)}; "
        f"same count: {same_shuffled} (the path of a fleet over {small} ids)")
    if loaded is not None:
        (lv, sv, _, _, v2), (lr, sr, _, _, r2), (ls_, ss_, _, st2l, st2s), load_busy = loaded
        note = f"load {load_busy:.2f} (idle rows: {load_idle:.2f})"
        row("local verify, under load", med(lv), f"{runs(lv)}; {note}")
        row("spark verify local[2], under load", med(sv), f"x{med(lv) / med(sv):.2f}; {runs(sv)}")
        row("local replay + digest, under load", med(lr), runs(lr))
        row("spark replay + digest local[2], under load", med(sr),
            f"x{med(lr) / med(sr):.2f}; {runs(sr)}; identical digests: "
            f"{[f.report.state.digest() for f in r2] == d_local}")
        row("local stats, under load", med(ls_), runs(ls_))
        row("spark stats local[2], under load", med(ss_), f"x{med(ls_) / med(ss_):.2f}; {runs(ss_)}; same counts: "
            f"{st2s == st2l}")
    def reference(name, logs_, digests, t_local):
        """The reference pipeline over ``logs_``, once: its row, against the local replay + digest."""
        t = time.perf_counter()
        ref = run_reference(Cluster(spark), logs_, AS_OF_NS)
        t_ref = time.perf_counter() - t
        same_r = [f.report.state.digest() for f in ref] == digests
        row(name, t_ref, f"x{t_local / t_ref:.2f}; identical digests: {same_r}")

    if a.reference:
        reference("spark reference pipeline", logs, d_local, t_lr)
    if a.damaged:
        dlogs = discover(damaged(paths, a.out + "-damaged", a.damaged))
        warm(dlogs)
        s_dlv, s_dsv, _, dv_local, dv_spark = pairs(
            lambda: [run_log(g, AS_OF_NS, state=False, workers=1) for g in dlogs],
            lambda: run_fleet(Cluster(spark), dlogs, AS_OF_NS, digest=False))
        s_dlr, s_dsr, _, dd_local, dr_spark = pairs(     # the digest timed on both sides, as above
            lambda: [run_log(g, AS_OF_NS).state.digest() for g in dlogs],
            lambda: run_fleet(Cluster(spark), dlogs, AS_OF_NS))
        errors = sum(r.severities.get("error", 0) for r in dv_local)
        same_dv = all((x.report.verdict, x.report.counts, x.report.findings) == (y.verdict, y.counts, y.findings)
                      for x, y in zip(dv_spark, dv_local))
        same_dd = [f.report.state.digest() for f in dr_spark] == dd_local
        t_dlv, t_dsv, t_dlr, t_dsr = med(s_dlv), med(s_dsv), med(s_dlr), med(s_dsr)
        row(f"local verify, damaged ({errors} errors)", t_dlv, runs(s_dlv))
        row("spark verify local[2], damaged", t_dsv, f"x{t_dlv / t_dsv:.2f}; {runs(s_dsv)}; same findings: {same_dv}")
        row("local replay + digest, damaged", t_dlr, runs(s_dlr))
        row("spark replay + digest local[2], damaged", t_dsr,
            f"x{t_dlr / t_dsr:.2f}; {runs(s_dsr)}; identical digests: {same_dd}")
        if a.reference:
            reference("spark reference pipeline, damaged", dlogs, dd_local, t_dlr)
    if a.sources:
        src = spark.read.format("workq").load(paths[0])
        one = sum(os.path.getsize(s_.path) for s_ in logs[0].segments)
        for what, fn in (("full read: count()", lambda: src.count()),
                         ("select(cmd).where(cmd = 'add').count()",
                          lambda: src.select("cmd").where("cmd = 'add'").count())):
            secs = []
            for _ in range(n):
                t = time.perf_counter()
                got = fn()
                secs.append(time.perf_counter() - t)
            print(f"  source on {paths[0]} ({one / 2**20:.0f} MiB): {what}: {got} rows, "
                  f"{statistics.median(secs):.2f} s ({runs(secs)})", flush=True)
    spark.stop()

    records = sum(r.records for r in v_local)
    print(f"\nfleet: {len(logs)} directories, {nseg} segments, {size / 2**20:.0f} MiB, {records} records; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; 2-process headroom now x{ceiling:.2f} "
          f"(x{headroom():.2f} at the end)")
    print(f"wqtool on the driver: {here}\nwqtool on the workers: {'; '.join(there)}")
    if any("kernel=python" in w for w in [here, *there]):
        print("WARNING: a side runs the pure-Python kernel: install wqtool with its C kernels (pip install .)")
    print(f"spark fixed cost: session start-up {t_start:.1f} s + worker warm-up ({len(workers)} workers) "
          f"{t_first:.1f} s = {fixed:.1f} s; medians of {n} run(s) each\n")
    print(f"{'run':<44} {'seconds':>8} {'MB/s':>8}  note")
    for name, secs, mbs, note in rows:
        print(f"{name:<44} {secs:>8.2f} {mbs:>8.1f}  {note}")
    print("\ndriver peak memory during spark replay + digest (Python driver / JVM: driver and local executors)")
    for k, nbytes, secs, py, jv, live in peaks:
        print(f"  {k} log(s), {nbytes / 2**20:>6.0f} MiB: {secs:6.2f} s, Python driver {py:7.0f} MiB peak, "
              f"JVM {jv:7.0f} MiB peak, JVM heap after a full GC {live:6.0f} MiB")
    print("driver peak memory during spark stats, the distributed union (ids shuffled by first byte, counted there)")
    for k, nbytes, secs, py, jv, live in stats_peaks:
        print(f"  {k} log(s), {nbytes / 2**20:>6.0f} MiB: {secs:6.2f} s, Python driver {py:7.0f} MiB peak, "
              f"JVM {jv:7.0f} MiB peak, JVM heap after a full GC {live:6.0f} MiB")
    print(f"floor (read + CRC-32C) {size / t_floor / 1e6:.0f} MB/s; verify at {t_floor / t_sv:.2f} of the floor "
          f"on spark, {t_floor / t_lv:.2f} local; replay + digest {t_floor / t_sr:.2f} spark, {t_floor / t_lr:.2f} "
          "local")
    for what, q in (("verify", q_v), ("replay + digest", q_r)):
        print(f"spark/local {what}, once started: x{statistics.median(q):.2f} (median of {n} back-to-back pairs: "
              + " ".join(f"x{x:.2f}" for x in q) + "; target x1.6)")


if __name__ == "__main__":
    main()
