"""What a format's fleet (``engine/<format>/fleet.py``) may ask of Spark, without importing it: tasks, a shuffle,
a collect, the executor slots; a JDBC table, a filter, a SQL query over frames. A fleet is engine code; the Spark
calls are here, once. Frames are opaque to a fleet: it hands them back to the cluster.

Every task function is run in the driver's working directory (``_paths.working_dir``), so relative PATHs and the
paths the engine prints mean what they meant to the caller, as with the local engine."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

from ._paths import working_dir

#: the column types a fleet's rows use, as Spark DDL (Spark's own names pass as they are)
_DDL = {"int8": "tinyint", "int32": "int", "int64": "bigint", "binary": "binary"}


def ddl(fields: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{n} {_DDL.get(k, k)}" for n, k in fields)


class _InDir:
    """A task function run in the driver's working directory (picklable: it is shipped to the executors), with
    the staged copies of the command's remote logs readable where it runs (``engine.uris.restage``: on a machine
    without the driver's copy, staged under this machine's own TMPDIR, the task's paths moved there by
    ``_here``) and the job's files read as the driver pinned them (``engine.fileio.pinned``)."""

    def __init__(self, fn: Callable[[Iterator], Iterator], cwd: str, staged: tuple = (), snap=None):
        self.fn, self.cwd, self.staged, self.snap = fn, cwd, staged, snap

    def __call__(self, batches):
        from ..engine.fileio import pinned
        moved, (fn, snap) = _here(self.staged, (self.fn, self.snap))
        with working_dir(self.cwd), pinned(snap):
            yield from _named_back(fn(batches), moved)


def _here(staged: tuple, task: tuple) -> tuple[dict, tuple]:
    """``task`` (the task function, its snapshot) as this machine reads it: every staged copy made readable
    (``engine.uris.restage``); where a copy was staged elsewhere than at the driver's path (this machine's own
    cache), every path under the driver's copy in ``task`` names this machine's instead (``_relocated``).
    Returns ({the driver's path: this machine's}, the task)."""
    if not staged:
        return {}, task
    from ..engine.uris import restage
    moved = restage(staged)
    return moved, (_relocated(task, moved) if moved else task)


def _named_back(batches, moved: dict[str, str]):
    """A task's Arrow batches with every path under this machine's copy of a staged log named as the driver
    named it (the driver names a staged copy's findings and rows by its URI from its own path): a string value
    that starts with the path mapped; a binary value holding the path — a pickled result — unpickled, mapped
    (``_relocated``) and pickled again. Other values (ids, Arrow streams, counts, bytes that are no pickle) pass
    as they are."""
    if not moved:
        yield from batches
        return
    import pickle

    import pyarrow as pa
    back = {here: lo for lo, here in moved.items()}
    marks = [here.encode() for here in back]

    def value(v):
        if isinstance(v, str):
            return _relocated(v, back) if any(m.decode() in v for m in marks) else v
        if isinstance(v, bytes) and v[:1] == b"\x80" and any(m in v for m in marks):
            try:
                obj = pickle.loads(v)
            except Exception:  # noqa: BLE001 — not a pickle after all: the bytes as they are
                return v
            return pickle.dumps(_relocated(obj, back), protocol=5)
        return v

    for b in batches:
        cols = []
        for col in b.columns:
            if pa.types.is_string(col.type) or pa.types.is_binary(col.type) or \
                    pa.types.is_large_string(col.type) or pa.types.is_large_binary(col.type):
                vals = col.to_pylist()
                new = [value(v) for v in vals]
                if any(x is not y for x, y in zip(new, vals)):
                    col = pa.array(new, col.type)
            cols.append(col)
        yield pa.RecordBatch.from_arrays(cols, schema=b.schema)


def _relocated(obj, moved: dict[str, str]):
    """A copy of ``obj`` in which every string that is a path under one of ``moved``'s keys (the driver's staged
    copies) is that path under its value (this machine's copy): the task's logs, segments, snapshot pins and the
    names that map a staged copy back to its URI. A pickle round trip whose ``persistent_id`` sees every string."""
    import io
    import pickle

    from pyspark import cloudpickle
    tops = sorted(moved.items(), key=lambda kv: -len(kv[0]))

    class Moving(cloudpickle.Pickler):
        def persistent_id(self, o):
            if type(o) is str:
                for lo, here in tops:
                    if o == lo or o.startswith(lo + "/"):
                        return here + o[len(lo):]
            return None

    class Moved(pickle.Unpickler):
        def persistent_load(self, pid):
            return pid

    buf = io.BytesIO()
    Moving(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    buf.seek(0)
    return Moved(buf).load()


class _Numbered:
    """A task of ``Cluster.tasks``: ``fn`` gets its task number at once — the partition's id, which is the one row
    of ``spark.range(0, n, 1, n)``'s partition — rather than when the JVM has sent that row (~40 ms after the task
    starts, measured on local[2]: time every task lost before its work began). The row is read after ``fn`` and
    must agree (else the task fails: it did another task's work)."""

    def __init__(self, fn: Callable[[Iterator], Iterator], cwd: str, staged: tuple = (), snap=None):
        self.fn, self.cwd, self.staged, self.snap = fn, cwd, staged, snap

    def __call__(self, batches):
        import pyarrow as pa
        from pyspark import TaskContext

        from ..engine.fileio import pinned
        ctx = TaskContext.get()
        if ctx is None:      # no task context (not seen on Spark 4): the row, as it comes
            yield from _InDir(self.fn, self.cwd, self.staged, self.snap)(batches)
            return
        moved, (fn, snap) = _here(self.staged, (self.fn, self.snap))
        k = ctx.partitionId()
        with working_dir(self.cwd), pinned(snap):
            yield from _named_back(fn(iter([pa.RecordBatch.from_arrays([pa.array([k], pa.int64())],
                                                                       names=["id"])])), moved)
        got = [x for b in batches for x in b.column(0).to_pylist()]
        if got != [k]:
            raise RuntimeError(f"wqtool: Spark task {k} was given the rows {got}, not [{k}]: it did the work of "
                               f"another task")


class _Indexed:
    """A task of ``Cluster.run``: ``fn`` gets its task number (the RDD partition's index) at once, as
    ``_Numbered`` gives it, and the rows of the Arrow batches it yields go back as tuples through PySpark's RDD
    path — no DataFrame plan on the driver, no Arrow stream into the JVM and rows out of it again. The partition's
    one row is read after ``fn``, must agree (else the task did another task's work), and drains the input, so
    the worker is reused (a Python worker whose input is left unread exits after its task)."""

    def __init__(self, fn: Callable[[Iterator], Iterator], cwd: str, staged: tuple = (), snap=None):
        self.fn, self.cwd, self.staged, self.snap = fn, cwd, staged, snap

    def __call__(self, k: int, rows: Iterator):
        import pyarrow as pa

        from ..engine.fileio import pinned
        moved, (fn, snap) = _here(self.staged, (self.fn, self.snap))
        with working_dir(self.cwd), pinned(snap):
            for b in _named_back(fn(iter([pa.RecordBatch.from_arrays([pa.array([k], pa.int64())], names=["id"])])),
                                 moved):
                yield from zip(*(c.to_pylist() for c in b.columns))
        got = list(rows)
        if got != [k]:
            raise RuntimeError(f"wqtool: Spark task {k} was given the rows {got}, not [{k}]: it did the work of "
                               f"another task")


def _numbers(sc, n: int):
    """``sc.parallelize(range(n), n)`` (partition k holds k), made once per SparkContext and n and kept on it: its
    JVM side (an empty ``ParallelCollectionRDD``, ``pyspark/core/context.py``'s ``parallelize`` of a range) is
    created over Py4J through a temporary file — ~2.4 ms of every job's ~35 ms at load 0.7 (an empty job, 20
    interleaved rounds: 34.6 ms made each time, 32.1 ms kept). A job's tasks are ``mapPartitionsWithIndex``
    over it: their functions are pipelined with the range's, so each job still ships its own closure."""
    kept = sc.__dict__.setdefault("_wqtool_numbers", {})
    rdd = kept.get(n)
    if rdd is None:
        rdd = kept.setdefault(n, sc.parallelize(range(n), n))
    return rdd


class Relay:
    """A task's end of the driver's relay (``Cluster.relay``): short strings one task sends and another one
    waits for — within one job, with no Spark round in between (a barrier stage's ``allGather`` wakes a waiting
    task once a second: Spark's ``BarrierTaskContext.runBarrier`` polls with ``Thread.sleep(1000)``). Picklable:
    it travels in the task function. Each request carries the job's secret; the relay listens on loopback."""

    def __init__(self, host: str, port: int, secret: str):
        self.host, self.port, self.secret = host, port, secret

    def _ask(self, line: str, timeout: float) -> str:
        import socket
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(f"{self.secret} {line}\n".encode())
            return s.makefile("r", encoding="ascii").readline().rstrip("\n")

    def send(self, key: str, value: str) -> None:
        """Leave ``value`` (no whitespace) under ``key`` (the first value stays: a retried task sends the same)."""
        if self._ask(f"PUT {key} {value}", 30.0) != "OK":
            raise ConnectionError(f"the driver's relay at {self.host}:{self.port} refused {key}")

    def receive(self, key: str, timeout: float) -> str | None:
        """The value under ``key`` once a task has sent it; None when none came within ``timeout`` seconds."""
        got = self._ask(f"GET {key} {timeout:.3f}", timeout + 30.0)
        return None if got == "?" else got


class _RelayServer:
    """The driver's side of ``Relay``: a thread per connection on loopback, values kept for the job."""

    def __init__(self):
        import secrets
        import socketserver
        import threading
        self.secret = secrets.token_hex(16)
        self.values: dict[str, str] = {}
        self.cond = threading.Condition()
        relay = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                words = self.rfile.readline(4096).decode("ascii", "replace").split()
                if len(words) < 3 or words[0] != relay.secret:
                    return
                if words[1] == "PUT" and len(words) == 4:
                    with relay.cond:
                        relay.values.setdefault(words[2], words[3])
                        relay.cond.notify_all()
                    self.wfile.write(b"OK\n")
                elif words[1] == "GET" and len(words) == 4:
                    with relay.cond:
                        relay.cond.wait_for(lambda: words[2] in relay.values, timeout=float(words[3]))
                        value = relay.values.get(words[2], "?")
                    self.wfile.write(value.encode("ascii") + b"\n")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.5},
                                       name="wqtool-relay", daemon=True)
        self.thread.start()

    def client(self) -> Relay:
        host, port = self.server.server_address[:2]
        return Relay(host, port, self.secret)

    def close(self) -> None:
        """Stop serving, without waiting (``shutdown`` returns only at the serving loop's next poll)."""
        import threading

        def stop():
            self.server.shutdown()
            self.server.server_close()
        threading.Thread(target=stop, name="wqtool-relay-stop", daemon=True).start()


class Cluster:
    """One Spark session, as a fleet sees it. ``spark``: the session itself (for the generic fleet and the data
    sources in ``wqtool.spark``)."""

    def __init__(self, spark, staged: tuple = (), snap=None):
        import os
        self.spark = spark
        self.cwd = os.getcwd()
        self.staged = staged    # engine.uris.stage_plan of the logs read: every task makes them readable first
        self.snap = snap        # engine.fileio.Snapshot of the logs read: every task reads the pinned bytes
        self._what: dict[int, Callable[[int], str]] = {}    # tasks() frames: what each task reads

    def partitions(self, default: int) -> int:
        """The session's shuffle partitions (``spark.sql.shuffle.partitions``)."""
        return int(self.spark.conf.get("spark.sql.shuffle.partitions", str(default)))

    def local(self) -> bool:
        """Whether the session's executors run on this machine (a ``local`` master; Spark Connect: no)."""
        try:
            return str(self.spark.sparkContext.master).startswith("local")
        except Exception:  # noqa: BLE001 — Spark Connect has no SparkContext
            return False

    @contextlib.contextmanager
    def relay(self):
        """A ``Relay`` the tasks of the jobs inside may pass strings through, or None where the executors may not
        reach it (a relay on loopback serves a ``local`` master only)."""
        if not self.local():
            yield None
            return
        server = _RelayServer()
        try:
            yield server.client()
        finally:
            server.close()

    def slots(self, default: int) -> int:
        """The executor slots (task threads) the session has now."""
        from .session import slot_count
        return slot_count(self.spark, default=default)

    def tasks(self, n: int, fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]],
              what: Callable[[int], str] | None = None) -> Any:
        """``n`` tasks, one per partition: ``fn`` gets Arrow batches of its task numbers (column 0) and yields
        Arrow batches of ``fields``. A task starts on its work as soon as it runs (``_Numbered``). ``what(k)``:
        what task ``k`` reads (a log, a share of it), named when its worker dies (``collect``, ``named_deaths``)."""
        frame = self.spark.range(0, n, 1, n).mapInArrow(_Numbered(fn, self.cwd, self.staged, self.snap),
                                                        ddl(fields))
        if what is not None:
            self._what[id(frame)] = what
        return frame

    def run(self, n: int, fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]],
            what: Callable[[int], str] | None = None) -> list:
        """``tasks(n, fn, fields, what)`` collected: every row the ``n`` tasks yield, on the driver (each has
        ``fields`` by name). One stage of an RDD where the session has a SparkContext (``_Indexed``): a job's
        fixed cost is its scheduling and the rows' way back — a DataFrame's query planning, the Arrow stream of
        ``mapInArrow`` and the rows' conversion cost ~0.1 s more per job (docs/spark.md, one log in one task);
        through Spark Connect, ``tasks`` and ``collect``."""
        sc = self._context()
        if sc is None:
            return self.collect(self.tasks(n, fn, fields, what=what))
        names = [f for f, _ in fields]
        rdd = _numbers(sc, n).mapPartitionsWithIndex(_Indexed(fn, self.cwd, self.staged, self.snap))
        with self.named_deaths(what):
            return [dict(zip(names, row)) for row in rdd.collect()]

    def in_driver_bytes(self) -> int:
        """How big a log the driver reads itself when no job can speed the work up (``session.IN_DRIVER_CONF``,
        default ``IN_DRIVER_DEFAULT``; 0: never)."""
        from .session import IN_DRIVER_CONF, IN_DRIVER_DEFAULT, size_setting
        try:
            value = self.spark.conf.get(IN_DRIVER_CONF, IN_DRIVER_DEFAULT)
        except Exception:  # noqa: BLE001 — a session whose conf cannot be read: the default
            value = IN_DRIVER_DEFAULT
        return size_setting(IN_DRIVER_CONF, value if value is not None else IN_DRIVER_DEFAULT)

    @staticmethod
    def reads_here(paths: Sequence[str]) -> bool:
        """Whether this process (the driver) can read every one of ``paths`` itself: local files, or the staged
        copies of remote logs it made when it resolved them."""
        import os
        return all(os.path.isfile(p) and os.access(p, os.R_OK) for p in paths)

    def run_here(self, n: int, fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]]) -> list:
        """``run(n, fn, fields)``'s rows computed in this process, no Spark job: each task function called as an
        executor calls it (``_Indexed``: the driver's working directory, the staged copies made readable, the
        files read as the driver pinned them — a file replaced or shrunk is the same ``FileChanged``), one after
        another. For work a job cannot speed up (``spark.wqtool.inDriver.threshold``)."""
        names = [f for f, _ in fields]
        task = _Indexed(fn, self.cwd, self.staged, self.snap)
        return [dict(zip(names, row)) for k in range(n) for row in task(k, iter([k]))]

    def _context(self):
        """The session's SparkContext, or None (Spark Connect has none)."""
        try:
            return self.spark.sparkContext
        except Exception:  # noqa: BLE001 — Spark Connect: no SparkContext
            return None

    @contextlib.contextmanager
    def named_deaths(self, what: Callable[[int], str] | None = None):
        """Spark actions inside: a worker that died (killed, or out of memory) is one ``SparkError`` line saying
        so, with what its task was reading (``what(task index)``), exit 5 — not the JVM's EOFException."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 — whatever PySpark raises; anything else passes on
            from .session import _from_spark, death_message, worker_death
            if not _from_spark(exc):
                raise
            death = worker_death(str(exc))
            if death is None:
                raise
            from ..errors import SparkError
            try:
                doing = what(death[0]) if what is not None and death[0] is not None else None
            except (IndexError, KeyError):
                doing = None
            raise SparkError(death_message(str(exc), doing)) from exc

    def over(self, frame: Any, fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]]) -> Any:
        """``fn`` over each partition of ``frame`` (Arrow batches in, Arrow batches of ``fields`` out)."""
        return frame.mapInArrow(_InDir(fn, self.cwd, self.staged, self.snap), ddl(fields))

    def parallelism(self, least: int) -> int:
        """The session's default parallelism, at least ``least``."""
        sc = getattr(self.spark, "sparkContext", None)
        return max(least, int(sc.defaultParallelism)) if sc is not None else least

    def persist(self, frame: Any) -> Any:
        from pyspark import StorageLevel
        return frame.persist(StorageLevel.MEMORY_AND_DISK)

    def unpersist(self, frame: Any) -> None:
        frame.unpersist()

    def where(self, frame: Any, condition: str) -> Any:
        """``frame``'s rows for which the SQL ``condition`` holds."""
        return frame.where(condition)

    def columns(self, frame: Any) -> list[str]:
        return list(frame.columns)

    def rename(self, frame: Any, names: Sequence[str]) -> Any:
        return frame.toDF(*names)

    def frame(self, rows: Sequence[tuple], fields: Sequence[tuple[str, str]]) -> Any:
        """A small frame of ``rows`` made on the driver (none: an empty frame of ``fields``)."""
        return self.spark.createDataFrame(list(rows), ddl(fields))

    def without(self, frame: Any, keys: Sequence[tuple], fields: Sequence[tuple[str, str]]) -> Any:
        """``frame``'s rows whose ``fields`` values are not one of ``keys`` (a broadcast anti-join)."""
        from pyspark.sql import functions as F
        return frame.join(F.broadcast(self.frame(keys, fields)), [n for n, _ in fields], "left_anti")

    def repeated(self, frame: Any, key: str, order: Sequence[str]) -> list:
        """Every row of ``frame`` whose ``key`` another row has too, in ``order``, on the driver."""
        from pyspark.sql import functions as F
        ids = frame.groupBy(key).count().where("count > 1").select(key)
        if not ids.take(1):
            return []
        return frame.join(F.broadcast(ids), key).orderBy(*order).collect()

    def sql(self, query: str, **frames: Any) -> list:
        """The rows of a Spark SQL ``query`` in which ``{name}`` stands for the frame passed as ``name``."""
        views = {}
        for name, frame in frames.items():
            views[name] = f"wqtool_{name}_{id(frame):x}"
            frame.createOrReplaceTempView(views[name])
            query = query.replace("{" + name + "}", views[name])
        try:
            return self.spark.sql(query).collect()
        finally:
            for v in views.values():
                self.spark.catalog.dropTempView(v)

    def jdbc(self, url: str, user: str, password: str, driver: str, jars: Sequence[str], dbtable: str, *,
             init: str | None = None, partition: tuple[str, int, int, int] | None = None) -> Any:
        """A table (or ``(subquery) alias``) read through Spark's JDBC source, its driver's ``jars`` added to the
        session once; ``partition``: (column, lower, upper, partitions) splits the read by that column."""
        self._add_jars(jars)
        r = (self.spark.read.format("jdbc").option("url", url).option("user", user).option("password", password)
             .option("driver", driver).option("preferTimestampNTZ", "true").option("fetchsize", "10000")
             .option("dbtable", dbtable))
        if init:
            r = r.option("sessionInitStatement", init)
        if partition is not None:
            col, lo, hi, n = partition
            r = (r.option("partitionColumn", col).option("lowerBound", str(lo)).option("upperBound", str(hi))
                 .option("numPartitions", str(n)))
        return r.load()

    def _add_jars(self, jars: Sequence[str]) -> None:
        """Put JDBC drivers' jars on the session's class path (``ADD JAR``), once per session."""
        spark = self.spark
        done = getattr(spark, "_wqtool_jars", set())
        for j in jars:
            if j not in done:
                spark.sql(f"ADD JAR '{j}'")
                done.add(j)
        try:
            spark._wqtool_jars = done
        except AttributeError:
            pass

    def regroup(self, frame: Any, partitions: int, key: str, order: Sequence[str],
                fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]]) -> Any:
        """``frame``'s rows shuffled into ``partitions`` by ``key``, sorted by ``order`` within each, then ``fn``
        over each partition (as ``tasks``)."""
        return (frame.repartition(partitions, key).sortWithinPartitions(*order)
                .mapInArrow(_InDir(fn, self.cwd, self.staged, self.snap), ddl(fields)))

    def collect(self, frame: Any, *, keep_partitions: bool = False, columns: Sequence[str] = (),
                order: Sequence[str] = ()) -> list:
        """Every row of ``frame`` on the driver (only ``columns``, sorted by ``order``, where given).
        ``keep_partitions``: adaptive execution may not coalesce the shuffle's partitions (they are the
        parallelism the fleet planned)."""
        what = self._what.get(id(frame))
        if columns:
            frame = frame.select(*columns)
        if order:
            frame = frame.orderBy(*order)
        if not keep_partitions:
            with self.named_deaths(what):
                return frame.collect()
        key = "spark.sql.adaptive.coalescePartitions.enabled"
        conf = self.spark.conf
        old = conf.get(key, None)
        conf.set(key, "false")
        try:
            with self.named_deaths(what):
                return frame.collect()
        finally:
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
