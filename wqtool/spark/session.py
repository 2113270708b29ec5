"""The one SparkSession builder every `--engine spark` command and the tests use.

Start-up costs ~6-7 s (JVM) plus ~3-4 s for the first job (its Python workers start and import the engine; see
``warm_up``), so a command builds exactly one session. The JVM lingers after ``stop()`` until the Python process
exits; that is PySpark's behaviour, not a leak of ours.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from typing import Callable, Iterable, Sequence

DEFAULT_MASTER = "local[*]"

#: Defaults that keep a local run quiet and small; any --spark-conf of the same key wins.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    # the executors talk to their Python workers over a Unix socket: on loopback TCP a task's input and its end
    # each waited ~40 ms (Nagle's algorithm against delayed ACKs; docs/spark.md, one log in one task)
    "spark.python.unix.domain.socket.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # the status tracker (our progress lines) sees task starts at once, not at the next 100 ms-spaced event
    "spark.ui.liveUpdate.period": "0ms",
}


#: ``replay --summary`` of one log that no job can speed up (its chain would not pay, or cannot run) is read in
#: the driver, by the local engine's pass, while the log is at most this many bytes — as Hive runs a small query
#: as a fetch task instead of a job (``hive.fetch.task.conversion.threshold``, 1 GiB). A Spark size (``512m``,
#: ``1g``, bytes without a suffix), set like any other (``--spark-conf spark.wqtool.inDriver.threshold=0``);
#: 0: always a job. docs/spark.md, "One log in the driver".
IN_DRIVER_CONF = "spark.wqtool.inDriver.threshold"
IN_DRIVER_DEFAULT = "1g"

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def size_setting(key: str, value: str) -> int:
    """A Spark size setting in bytes (``JavaUtils.byteStringAsBytes``' units: b, k/kb, m/mb, g/gb, t/tb, p/pb,
    binary; no suffix: bytes); a usage error naming ``key`` otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(value).lower())
    if m is None or m.group(2) not in _UNITS:
        from ..errors import UsageError
        raise UsageError(f"{key}: not a size (a number of bytes, or with k, m, g, t: 512m, 1g): {value!r}")
    return int(m.group(1)) * _UNITS[m.group(2)]


#: The JIT of a local-mode JVM of a command's session (driver and executors in one process, on the cores the
#: Python workers use): C1 only (``build_session(sources=False)``; a data-source session keeps the full JIT). C2's compiler threads took 0.2-0.4 s of CPU per fleet job here, out of the Python tasks' 2 cores
#: (bench_fleet: verify x1.43 -> x1.74 the local engine, replay x1.70 -> x1.79), while the JVM's own heavy
#: paths ran as fast (the reference pipeline's shuffle 81.5 -> 81.4 s, the workq source's count() 22.7 ->
#: 22.9 s); start-up 11.3 -> 10.1 s. A caller's own -XX:TieredStopAtLevel (--spark-conf
#: spark.driver.extraJavaOptions=...) wins.
LOCAL_JIT = "-XX:TieredStopAtLevel=1"


def parse_conf(pairs: Iterable[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` → dict; raises ValueError on an entry without '='."""
    out: dict[str, str] = {}
    for p in pairs or ():
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"--spark-conf: expected KEY=VALUE, got {p!r}")
        out[k.strip()] = v.strip()
    return out


def _prepare_env(local: bool) -> None:
    # Python workers are started with PYSPARK_PYTHON (default: python3 on PATH), which may not have wqtool;
    # a builder config does not help, the variable must be set before the JVM starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")   # loopback only; silences the hostname warning


_LOG4J2 = """\
# wqtool: Spark's own logging at WARN, on stderr, without the start-up banner lines.
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = spark: %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
# a failed task: wqtool reports it as one line (the stack traces are in --traceback)
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
# the Python worker pool's life (a daemon lost or restarted as a failed job's workers are killed): a task's own
# error still reaches wqtool as the job's failure
logger.pyworkers.name = org.apache.spark.api.python.PythonWorkerFactory
logger.pyworkers.level = error
"""


def _local_driver_gib() -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2
    return max(2, min(16, total // 4 // 2**30))


def _log4j2_file() -> str:
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"wqtool-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == _LOG4J2:
                return path
    except OSError:
        pass
    tmp = path + f".{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(_LOG4J2)
    os.replace(tmp, path)
    return path


#: The JVM's own start-up line (Spark 4 adds --add-modules=jdk.incubator.vector; the JDK has no switch for it).
_JVM_NOISE = (b"WARNING: Using incubator modules: ",)


def _quiet_gateway(conf: dict[str, str]) -> None:
    """Start the driver JVM as PySpark would, but with its stderr through a filter that drops only the JDK's
    incubator-module warning (Spark's logging is already at WARN): ``verify -q`` in cron stays silent.

    Uses PySpark's ``launch_gateway(conf, popen_kwargs)`` and the class attribute SparkContext reads a running
    gateway from; on any surprise (another PySpark layout) it does nothing and PySpark starts the JVM itself.
    """
    import threading
    try:
        from pyspark import SparkConf
        from pyspark.core.context import SparkContext
        from pyspark.java_gateway import launch_gateway
        lock = SparkContext._lock
    except (ImportError, AttributeError):
        return
    with lock:
        if getattr(SparkContext, "_gateway", None) is not None:
            return
        spark_conf = SparkConf(loadDefaults=True)
        for k, v in conf.items():
            spark_conf.set(k, v)
        rfd, wfd = os.pipe()   # pumped from before the launch: a failing start-up (no java) still shows its lines
        pump = threading.Thread(target=_pump, args=(rfd,), name="wqtool-jvm-stderr", daemon=True)
        pump.start()
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": wfd})
        except TypeError:      # another launch_gateway signature: let PySpark start the JVM its own way
            os.close(wfd)
            return
        except BaseException:
            os.close(wfd)
            pump.join(timeout=2)   # the launcher's own lines first, then wqtool's one-line error
            raise
        os.close(wfd)          # the JVM (and the workers it starts) hold the write end now
        SparkContext._gateway = gateway
        SparkContext._jvm = gateway.jvm


#: The last line of a Python worker's traceback when the JVM dropped its socket (a failed or cancelled job's other
#: workers, a stopping session): PySpark's daemon prints it; it says nothing about the job.
_WORKER_TEARDOWN = (b"BrokenPipeError: ", b"ConnectionResetError: ")


def _pump(rfd: int) -> None:
    """Copy the JVM's stderr (and its Python workers', which inherit it) to ours, line by line, minus
    ``_JVM_NOISE`` and the worker tracebacks of a dropped socket (``_WORKER_TEARDOWN`` raised in
    pyspark/daemon.py): every other traceback passes whole."""
    held: list[bytes] = []

    def out(data: bytes) -> bool:
        try:
            os.write(2, data)
            return True
        except OSError:
            return False
    with os.fdopen(rfd, "rb") as src:
        for line in iter(src.readline, b""):
            if held or line.startswith(b"Traceback (most recent call last):"):
                held.append(line)
                if len(held) == 1 or line[:1] in (b" ", b"\t"):
                    continue
                block, held = held, []      # the exception's line ends the traceback
                if line.startswith(_WORKER_TEARDOWN) and b"pyspark/daemon.py" in block[1]:
                    continue
                if not out(b"".join(block)):
                    return
            elif not line.startswith(_JVM_NOISE) and not out(line):
                return
        if held:
            out(b"".join(held))


def build_session(*, master: str | None = None, conf: dict[str, str] | Sequence[str] | None = None,
                  remote: str | None = None, app_name: str = "wqtool", log_level: str = "WARN",
                  sources: bool = True):
    """Return a SparkSession: Spark Connect when ``remote`` (sc://host:port), else classic on ``master``.

    The wqtool data sources are registered on it (``sources``; False: only the workers are checked, and
    ``datasources.ensure_sources`` registers them when a command reads through them — 17 registrations cost
    ~0.6 s of a CLI call through Spark Connect that never uses them).

    A local JVM runs C1 only (``LOCAL_JIT``) for a command's session (``sources=False``: fleet jobs, whose
    Python tasks C2's compiler threads took cores from); a session made for the data sources keeps the JVM's
    full JIT, which takes their rows in with less CPU once warm (a ``count()`` of 335,070 records: 0.98–0.99 s
    of CPU against 1.33–1.38 s with C1 only, both sessions warm side by side: ``bench_fleet --count-sessions``).
    """
    from pyspark.sql import SparkSession

    if conf is not None and not isinstance(conf, dict):
        conf = parse_conf(conf)
    conf = dict(conf or {})
    master = retrying(master or DEFAULT_MASTER, conf)
    local = remote is None and master.startswith("local")
    _prepare_env(local)
    builder = SparkSession.builder.appName(app_name)
    if remote:
        builder = builder.remote(remote)
        settings = dict(conf)
    else:
        builder = builder.master(master)
        settings = {**_DEFAULT_CONF, **conf}
        settings["spark.driver.extraJavaOptions"] = driver_java_opts(settings, local and not sources)
        # the driver runs here (local mode, or client mode on a cluster): Spark's 1g default overflows on a fleet
        # replay that lists ~1 GiB of logs' jobs (a cluster driver kept it: issue 24). A quarter of this
        # machine's memory, 2..16 GiB; results lost on the way are an error either way (spark/_results.py).
        settings.setdefault("spark.driver.memory", f"{_local_driver_gib()}g")
        if local:
            settings.setdefault("spark.driver.host", "127.0.0.1")
            settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
    for k, v in settings.items():
        builder = builder.config(k, v)
    if local and settings.get("spark.python.unix.domain.socket.enabled", "").lower() == "true":
        clean_stale_sockets(socket_dir(settings))
    if not remote:
        _quiet_gateway({**settings, "spark.master": master, "spark.app.name": app_name})
    spark = builder.getOrCreate()
    if not remote:
        spark.sparkContext.setLogLevel(log_level)
        one_worker_pool(spark)
    from ..engine.uris import use_spark_conf
    use_spark_conf(settings)     # spark.hadoop.fs.s3a.*: this process's s3:// / s3a:// reads use them too
    check = not _workers_are_this_python(local)
    if sources:
        from . import register
        register(spark, check=check)
    else:
        from .datasources import check_workers
        if check:
            check_workers(spark)
    return spark


_LOCAL = re.compile(r"^local(?:\[(\d+|\*)\])?$")

#: the socket a PySpark worker daemon listens on (``pyspark/daemon.py:125-129``: ``.<uuid4>.sock`` in the JVM's
#: ``PYTHON_WORKER_FACTORY_SOCK_DIR``); it removes it on SIGTERM only, so a killed session leaves it behind
_DAEMON_SOCKET = re.compile(r"^\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.sock$")
#: a daemon's socket file younger than this is never removed (bound, then listened on, at once by its daemon)
STALE_SOCKET_AGE_S = 60.0


def socket_dir(settings: dict[str, str]) -> str:
    """Where the session's worker daemons put their Unix sockets: ``spark.python.unix.domain.socket.dir``, else
    the JVM's ``java.io.tmpdir`` (a ``-Djava.io.tmpdir`` of the driver's options, else /tmp)."""
    if settings.get("spark.python.unix.domain.socket.dir"):
        return settings["spark.python.unix.domain.socket.dir"]
    m = re.search(r"-Djava\.io\.tmpdir=(\S+)", settings.get("spark.driver.extraJavaOptions", ""))
    return m.group(1) if m else "/tmp"


def _bound_unix_paths() -> set[str] | None:
    """The paths of every Unix socket bound now in this network namespace (``/proc/net/unix``'s last column),
    or None where that list cannot be read."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return None
    return {os.path.realpath(w[7]) for w in (ln.split() for ln in lines) if len(w) >= 8 and w[7].startswith("/")}


def clean_stale_sockets(directory: str, *, now: float | None = None) -> list[str]:
    """Remove the socket files that killed sessions' worker daemons left in ``directory`` (a daemon removes its
    own only on SIGTERM): a socket named as a daemon names it (``.<uuid>.sock``), this user's, at least
    ``STALE_SOCKET_AGE_S`` old, that no process has bound any more — the kernel's list of bound Unix sockets does
    not name it, so its daemon is gone (a live session's daemon keeps its socket bound). Nothing is removed where
    that list cannot be read. Returns the paths removed."""
    import stat
    bound = _bound_unix_paths()
    if bound is None:
        return []
    now = time.time() if now is None else now
    gone: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        if not _DAEMON_SOCKET.match(name):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if (not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < STALE_SOCKET_AGE_S
                    or os.path.realpath(path) in bound):
                continue
            os.unlink(path)
            gone.append(path)
        except OSError:         # gone meanwhile, or not ours to remove
            continue
    return gone


def retrying(master: str, conf: dict[str, str]) -> str:
    """``local`` / ``local[N]`` as ``local[N,F]``: a failed task is retried as a cluster retries it (F:
    ``spark.task.maxFailures``, a cluster's 4 by default); Spark's local mode retries none. Other masters (and a
    ``local[N,F]`` given) as they are."""
    m = _LOCAL.match(master)
    if m is None:
        return master
    return f"local[{m.group(1) or 1},{conf.get('spark.task.maxFailures', '4')}]"


def driver_java_opts(settings: dict[str, str], local: bool) -> str:
    """The driver JVM's options: the caller's, Spark at WARN (``_LOG4J2``) unless the caller configures log4j,
    and in local mode ``LOCAL_JIT`` unless the caller sets the JIT's tiers."""
    java_opts = settings.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" not in java_opts:   # the caller's own options keep Spark at WARN too
        java_opts = f"{java_opts} -Dlog4j2.configurationFile=file:{_log4j2_file()}".strip()
    if local and "TieredStopAtLevel" not in java_opts:
        java_opts = f"{java_opts} {LOCAL_JIT}"
    return java_opts


def _workers_are_this_python(local: bool) -> bool:
    """Local mode with the workers started as this very interpreter (``PYSPARK_PYTHON``, which ``_prepare_env``
    sets) and wqtool not taken from the working directory (which a worker's sys.path lacks): the workers import
    the wqtool this driver runs, so ``register()``'s worker probe (a Spark job: ~1.5 s of a tiny log's run) is
    skipped. Anywhere else (a cluster, Spark Connect, another Python) the probe runs, once per session."""
    if not local or os.path.realpath(os.environ.get("PYSPARK_PYTHON", "")) != os.path.realpath(sys.executable):
        return False
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))    # this wqtool's folder
    return not package.startswith(os.path.realpath(os.getcwd()) + os.sep)


class _Warm:
    """A warm-up task: imports the engine's hot path (and pyarrow) in the Python worker that runs it and holds
    the slot briefly, so that every slot gets its own worker rather than one worker taking all the tasks."""

    def __init__(self, hold_s: float):
        self.hold_s = hold_s

    def __call__(self, batches):
        import pyarrow as pa

        self._load()
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.array([os.getpid()] * batch.num_rows, pa.int64())], names=["pid"])

    def rows(self, rows):
        """The same on an RDD partition (the workers ``Cluster.run`` uses: another pool than a DataFrame's)."""
        self._load()
        return [os.getpid() for _ in rows]

    def _load(self) -> None:
        from ..engine.format import formats
        formats()      # the import is the point: every format's engine (and its hot path) in this worker
        time.sleep(self.hold_s)


def slot_count(spark, *, default: int) -> int:
    """The executor slots of a classic session (``defaultParallelism``); ``default`` for Spark Connect, which
    does not say."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 — Spark Connect has no SparkContext
        return max(1, default)


def one_worker_pool(spark) -> bool:
    """Let an RDD's tasks (the fleets' ``Cluster.run``) and a DataFrame's (the data sources, ``mapInArrow``) share
    one pool of Python workers. Spark keeps a pool per (python, worker module, daemon module, environment); a SQL
    runner adds ``SPARK_SIMPLIFIED_TRACEBACK=1`` to its workers' environment while
    ``spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled`` is on (the default) and an RDD's runner does
    not — the only difference between the two pools' daemons here (their environments compared). With it in
    the SparkContext's environment, which both take their functions' environment from, an RDD's tasks get the
    same workers: one daemon and a worker per slot instead of two of each, and ``warm_up`` starts one pool.
    (An RDD task's error is then told with the traceback a UDF's gets: PySpark's own frames left out.) Returns
    whether the pools are one."""
    sc = spark.sparkContext
    on = str(spark.conf.get("spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled", "true")).lower()
    if on == "true":
        sc.environment.setdefault("SPARK_SIMPLIFIED_TRACEBACK", "1")
    return (sc.environment.get("SPARK_SIMPLIFIED_TRACEBACK") == "1") == (on == "true")


def warm_up(spark, *, hold_s: float = 0.5) -> frozenset[int]:
    """Start a Python worker on every executor slot with the engine imported: the cost a fleet's first job
    would otherwise pay on the clock (about 1 s here, more on a busy machine), in both pools: a DataFrame's
    tasks' (the data sources) and an RDD's (the fleets' ``Cluster.run``) — one pool where ``one_worker_pool``
    made them one (every session ``build_session`` makes). Returns the process ids of the fleets'
    workers that answered (one per slot in local mode; Spark Connect gives no slot count: 2 tasks, DataFrames').
    """
    slots = slot_count(spark, default=2)
    rows = spark.range(0, slots, 1, slots).mapInArrow(_Warm(hold_s), "pid bigint").collect()   # the data sources'
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 — Spark Connect: DataFrames only
        return frozenset(r["pid"] for r in rows)
    if one_worker_pool(spark):      # the fleets' RDD tasks take the workers just started
        return frozenset(r["pid"] for r in rows)
    # the fleets' workers (``Cluster.run``: an RDD's tasks, whose Python workers are another pool than a DataFrame's)
    return frozenset(sc.parallelize(range(slots), slots).mapPartitions(_Warm(hold_s).rows).collect())


@contextlib.contextmanager
def open_session(master: str | None = None, conf: Sequence[str] | None = None, remote: str | None = None,
                 *, progress: Callable[[str], None] | None = None):
    """A session for one command: start-up reported through ``progress``; stopped at the end.

    pyspark missing (no ``[spark]`` extra) is exit 5 as the exit table says (no session), with the way out; a bad
    --spark-conf is a usage error.
    """
    from ..errors import SparkError, UsageError
    say = progress or (lambda _m: None)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkError("--engine spark: no session: pyspark is not installed here (pip install 'wqtool[spark]', "
                         "and Java 17)") from None
    try:
        settings = parse_conf(conf)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not remote:  # a session someone else started in this process (tests, a notebook): use it, leave it running
        from pyspark.sql import SparkSession
        active = SparkSession.getActiveSession()
        if active is not None:
            from .datasources import register
            register(active, conf=settings)     # its S3A settings under the command's --spark-conf
            with job_errors(), task_progress(active, progress):
                yield active
            return
    t0 = time.monotonic()
    where = redact(remote) if remote else (master or DEFAULT_MASTER)
    say(f"spark: starting a session on {where} ...")
    if remote:
        _reachable(remote, where)   # the Connect client retries a dead address for minutes: ask once, bounded
    try:
        if remote:
            _ready(remote, where)       # a server that accepts and never answers: bounded, before any client
        spark = build_session(master=master, conf=settings, remote=remote, sources=False)
        if remote:
            spark.version      # Spark Connect connects lazily: fail here, with the address, not mid-job
    except Exception as exc:  # noqa: BLE001 — whatever PySpark raises: one line, exit 5
        if not _from_spark(exc):
            raise
        hint = " (Java 17 on PATH or JAVA_HOME?)" if "JAVA_GATEWAY_EXITED" in str(exc) else ""
        raise SparkError(f"--engine spark: no session on {where}{hint}: {spark_message(exc)}") from exc
    say(f"spark: session ready in {time.monotonic() - t0:.1f} s")
    try:
        with job_errors(), task_progress(spark, progress):
            yield spark
    finally:
        if not remote:
            spark.stop()


#: Seconds between progress lines of a running job (a line only when its task counts changed).
PROGRESS_EVERY_S = 10.0


@contextlib.contextmanager
def task_progress(spark, progress: Callable[[str], None] | None, every_s: float = PROGRESS_EVERY_S):
    """While the block runs, report the active stages' task counts through ``progress`` every ``every_s``
    seconds when they changed: ``spark: stage 3: 5/16 task(s) done, 2 running``. Spark's own console progress
    bar stays off (it redraws with carriage returns into logs). Nothing for Spark Connect (no status tracker)."""
    import threading
    try:
        tracker = spark.sparkContext.statusTracker() if progress is not None else None
    except Exception:  # noqa: BLE001 — Spark Connect: no SparkContext
        tracker = None
    if tracker is None:
        yield
        return
    stop = threading.Event()

    def poll() -> None:
        last: dict[int, tuple[int, int]] = {}
        while not stop.wait(every_s):
            try:
                for sid in sorted(tracker.getActiveStageIds()):
                    info = tracker.getStageInfo(sid)
                    if info is None:
                        continue
                    now = (info.numCompletedTasks, info.numActiveTasks)
                    if last.get(sid) != now:
                        last[sid] = now
                        progress(f"spark: stage {sid}: {info.numCompletedTasks}/{info.numTasks} task(s) done, "
                                 f"{info.numActiveTasks} running")
            except Exception:  # noqa: BLE001 — the session is going away: stop reporting
                return

    t = threading.Thread(target=poll, name="wqtool-spark-progress", daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(timeout=every_s + 5)


@contextlib.contextmanager
def job_errors():
    """What PySpark raises while a command's jobs run becomes one ``SparkError`` line whose ``cause`` is the class
    of the task's own exception (``task_cause``), so the CLI gives it the exit code it has locally; wqtool's own
    errors and anything else pass through."""
    from ..errors import SparkError
    try:
        yield
    except Exception as exc:  # noqa: BLE001
        if not _from_spark(exc):
            raise
        err = SparkError(death_message(str(exc)) or f"--engine spark: a Spark job failed: {spark_message(exc)}")
        err.cause = task_cause(exc)
        raise err from exc


def task_cause(exc: BaseException) -> type | None:
    """The class of the Python exception a task raised, as far as it means something here: a wqtool error
    class, an OSError class, ``Exception`` for any other Python exception (a bug, as in the local engine);
    None for a failure with no Python exception (an executor lost, a JVM-side error)."""
    import builtins

    from .. import errors
    m = _worker_exception(str(exc))
    if m is None:
        return None
    name = m.group(1)
    ours = getattr(errors, name, None)
    if isinstance(ours, type) and issubclass(ours, errors.WqError):
        return ours
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, OSError):
        return builtin
    return Exception


def _worker_exception(text: str) -> re.Match | None:
    """The last line of a Python worker's traceback in ``text`` (groups: class name, message), if there is one."""
    if "Traceback" not in text:
        return None
    hits = [m for m in map(_EXC_LINE.match, text.splitlines()) if m]
    return hits[-1] if hits else None


#: Seconds a Spark Connect server has to complete a CLI call's connection (``_ready``);
#: ``WQTOOL_SPARK_CONNECT_WAIT`` sets another.
CONNECT_ANSWER_S = 60.0


def _answer_s() -> float:
    v = os.environ.get("WQTOOL_SPARK_CONNECT_WAIT")
    try:
        return float(v) if v else CONNECT_ANSWER_S
    except ValueError:
        from ..errors import UsageError
        raise UsageError(f"WQTOOL_SPARK_CONNECT_WAIT: not a number of seconds: {v!r}") from None


def _ready(remote: str, where: str) -> None:
    """The gRPC channel PySpark would open to ``remote`` (``DefaultChannelBuilder``: the same TLS and options) is
    ready within ``_answer_s()`` seconds, else SparkError (exit 5) with the likely reason. PySpark's own client
    waits without end for a server that accepts the connection and never completes the handshake — a ``token=``
    URL to a host other than ``localhost`` makes it speak TLS (``ChannelBuilder.secure``), which a server without
    TLS never answers — and once its client exists, its exit hook blocks the process's exit the same way; so this
    is asked first, with a channel of our own, closed after."""
    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder

    from ..errors import SparkError
    wait = _answer_s()
    channel = DefaultChannelBuilder(remote).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=wait)
    except grpc.FutureTimeoutError:
        tls = re.search(r"(?i);token=", remote) and not re.search(r"(?i);use_ssl=true", remote)
        raise SparkError(f"--engine spark: the Spark Connect server at {where} accepted the connection but did not "
                         f"answer within {wait:g} s"
                         + ("; with token= in the URL PySpark speaks TLS (to any host but 'localhost'): a server "
                            "without TLS never answers — use sc://localhost:PORT/;token=... for a local server, or "
                            "TLS on the server" if tls else "")) from None
    finally:
        channel.close()


def _reachable(remote: str, where: str, timeout_s: float = 10.0) -> None:
    """A TCP connection to the Spark Connect endpoint of ``sc://host[:port]/...`` (port 15002 by default)."""
    import socket
    from urllib.parse import urlparse

    from ..errors import SparkError, UsageError
    try:
        url = urlparse(remote.split(";", 1)[0].replace("sc://", "http://", 1) if remote.startswith("sc://") else "")
        host, port = url.hostname, url.port or 15002
    except ValueError:
        host = None
    if not host:
        raise UsageError(f"--remote: expected sc://host[:port][/;param=value...], got {where!r}")
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        raise SparkError(f"--engine spark: no Spark Connect server at {where} ({host}:{port}): "
                         f"{exc.strerror or exc}") from None


def redact(url: str) -> str:
    """A Spark Connect URL fit for stderr: ``token=...`` parameters masked."""
    return re.sub(r"(?i)(token=)[^;]*", r"\1***", url)


def _from_spark(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("pyspark", "py4j", "grpc")


_EXC_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*): (.+)$")   # a traceback's last line: Class: message


#: How a Spark failure says a worker died (killed, or out of memory), and what that means in words.
_DEATHS = ((re.compile(r"Python worker exited unexpectedly"), "its Python worker died"),
           (re.compile(r"EOFException occurred while reading the port number from pyspark\.daemon"),
            "the executor's Python worker daemon died"),
           (re.compile(r"Python worker failed to connect back|Connection reset by peer|Broken pipe"),
            "its Python worker stopped answering"),
           (re.compile(r"ExecutorLostFailure|Executor heartbeat timed out|Container killed"),
            "its executor was lost"))
_LOST_TASK = re.compile(r"Task (\d+) in stage [\d.]+ failed (\d+) times?")


def worker_death(text: str) -> tuple[int | None, int, str] | None:
    """When a Spark failure is a worker that died (killed, or out of memory — the Python worker, its daemon or
    the executor): (the failed task's index in its stage or None, the times it failed, what died in words)."""
    if _worker_exception(text) is not None:      # the task's Python code raised: that is the error, not a death
        return None
    for rx, words in _DEATHS:
        if rx.search(text):
            m = _LOST_TASK.search(text)
            return (int(m.group(1)) if m else None, int(m.group(2)) if m else 1, words)
    return None


def death_message(text: str, what: str | None = None) -> str | None:
    """One line for a worker that died (``worker_death``), naming what its task was reading (``what``)."""
    death = worker_death(text)
    if death is None:
        return None
    task, times, words = death
    doing = f" while reading {what}" if what else ""
    who = f"task {task}" if task is not None else "a task"
    return (f"--engine spark: a Spark worker died: {who}{doing} failed {times} time(s): {words} (killed, or out "
            f"of memory: give the executors more memory, spark.executor.memory / spark.python.worker.memory, or "
            f"fewer slots)")


def spark_message(exc: BaseException) -> str:
    """One line for what went wrong in Spark: the Python exception a task raised (the last ``XError: ...`` line
    of a worker's traceback), else the first line of PySpark's message; at most 400 characters."""
    text = str(exc)
    grpc = re.search(r'status = StatusCode\.(\w+)\s+details = "([^"]*)"', text)   # a Spark Connect RPC error
    m = grpc or _worker_exception(text)
    if m:
        return f"{m.group(1)}: {m.group(2)}"[:400]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].startswith("An error occurred while calling"):   # py4j: the JVM's exception follows
        java = next(filter(None, map(_JAVA_LINE.match, lines[1:4])), None)
        if java:
            return f"{java.group(1)}: {java.group(2)}"[:400] + _hint(java.group(1), java.group(2))
    first = lines[0].strip() if lines else type(exc).__name__
    return first[:400] + _hint("", first)


_JAVA_LINE = re.compile(r"^\s*:?\s*(?:[a-z_$][\w$]*\.)*([A-Z][\w$]*(?:Exception|Error)): (.+)$")


def _hint(cls: str, msg: str) -> str:
    """The setting to change, for the failures a bigger driver fixes."""
    if cls == "OutOfMemoryError" or "spark.driver.maxResultSize" in msg or "OutOfMemoryError" in msg:
        from ..engine.fleet import FIX
        return f"; {FIX}"
    return ""
