"""``wqtool serve``: a workq 0.2.0 server on wqtool's engine (spec: workq-protocol.md, workq-cmdlog.md).

One event loop thread runs the protocol, the live queues and the command log:

* the lean start (``run_server``): the first requests are served by a small epoll loop (early.py) while a thread
  imports uvloop / asyncio, which then takes every connection over;
* start-up: ``append.lock`` LOCK_EX (held for the server's life), ``read.lock`` LOCK_SH while the log replays
  through the engine (``engine.workq.startup``: the C kernel), anything but a clean log refused with the
  engine's finding (as workq-server refuses to start), the live queues rebuilt, the newest segment reopened;
* group commit: records made while handling the requests of one loop iteration (and by timers) are written
  together, one ``write(2)`` per segment touched (fsynced first under ``-cmdlog-sync always``), and only then
  are the replies that depend on them released (each reply carries the log position it depends on) — under every
  policy (writing each connection's records at once cost more: server CPU per add -> lease -> complete operation
  71-78 us against 55-60 us batched, 16 connections, three alternating pairs at load average 13);
* ``-cmdlog-sync interval``: every ``-cmdlog-sync-int`` ms, in a worker thread, an fsync of the current segment
  (on a duplicate descriptor, so a roll-over cannot close it under the fsync); a segment left by a roll-over is
  closed without an fsync, as upstream's; with ``--sync-rolled``, a tick after roll-overs makes one ``syncfs(2)``
  that covers them, their directory entries and the current segment (``Server._interval_sync``); ``os``: no
  fsync of the current segment (``--sync-rolled``: rolled segments fsynced by a background thread);
* an append that fails opens the circuit breaker as upstream (mutating commands answer ``-SERVER-ERROR
  Read-only mode triggered by cmdlog circuit breaker`` until restart); the records are retried every second and
  the replies waiting for them are released once they are written;
* cleaning every ``-cmdlog-clean-int`` ms through ``wqtool clean``'s engine (``_cleaner``, ``Server._clean_tick``);
* SIGTERM / SIGINT: stop accepting, close connections, write and fsync what is pending, release the locks,
  log the live state's replay digest, exit 0.
"""
from __future__ import annotations

import _thread
import os
import sys
import time

# (the replay's modules — findings, reader, replay, fastreplay, the record encoders' model — are imported where
# they are used: an empty log's first replies do without them, and without the dataclasses and enums they make)
from ...engine.fsync import fsync_dir
from ...engine.workq.appender import Appender, CmdlogLocks, syncfs
from ...engine.workq.rules import has_siblings
from ...errors import InputError, LogBusy, UsageError, WqError
from ...formats._common import format_unix_ns
from ...formats.workq import CMD_CODES, LOCK_FILES
from .. import prebind
from . import wire
from .conn import Conn, set_sockopts
from .handlers import Handlers
from .queue import LiveQueue
from .spin import Spinner, idle_as_process, idle_start, idle_window_us

def _only_lock_files(path: str) -> bool:
    """``path`` (a directory) holds nothing but workq's lock files: a log with nothing to replay."""
    return all(name in LOCK_FILES for name in os.listdir(path))


def syncfs_dir(directory: str) -> None:
    """syncfs(2) on the filesystem holding ``directory``."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        syncfs(fd)
    finally:
        os.close(fd)


class Counts(dict):
    """What the server counts (``metrics``, ``replies``): ``collections.Counter``'s counting — a missing key is 0,
    ``counts[key] += 1`` — without importing collections (with functools and contextlib, a fifth of the CPU to
    the first reply)."""

    __slots__ = ()

    def __missing__(self, key) -> int:
        return 0

    def copy(self) -> "Counts":
        return Counts(self)


def make_clock():
    """The server's wall clock (Unix ns). ``WQTOOL_SERVE_TIME=<instant>`` (RFC 3339 or epoch seconds) starts it at
    that instant instead of now, for tests and demos on old logs; it then runs at the real rate."""
    v = os.environ.get("WQTOOL_SERVE_TIME")
    if not v:
        return time.time_ns
    from ...engine.instant import parse_instant
    try:
        offset = parse_instant(v) - time.time_ns()
    except ValueError:
        raise UsageError(f"WQTOOL_SERVE_TIME: not an instant: {v!r}") from None
    return lambda: time.time_ns() + offset


_ADD, _SCHEDULE, _COMPLETE, _FAIL = CMD_CODES["ADD"], CMD_CODES["SCHEDULE"], CMD_CODES["COMPLETE"], CMD_CODES["FAIL"]


def add_record_py(unix_ns: int, cmd: int, jid: bytes, name: bytes, ttr: int, ttl: int, priority: int,
                  max_attempts: int, max_fails: int, body: bytes, time_ns: int | None, created_ns: int) -> bytes:
    """The framed record of an add / schedule command (the engine's encoders; _proto.add_record is its C twin)."""
    from ...engine.workq.fastpath import encode_payload, encode_record
    from ...engine.workq.model import Command
    from ...formats._common import GO_ZERO_TIME, GoTime
    from ...formats.workq import CmdType
    return encode_record(GoTime.from_unix_ns(unix_ns), encode_payload(Command(
        CmdType(cmd), jid, name, ttr, ttl, priority, max_attempts, max_fails, body,
        GO_ZERO_TIME if time_ns is None else GoTime.from_unix_ns(time_ns), GoTime.from_unix_ns(created_ns))))


def short_record_py(unix_ns: int, cmd: int, jid: bytes, result: bytes | None) -> bytes:
    """The framed record of any other command, ``result`` for complete and fail (_proto.short_record's reference)."""
    from ...engine.workq.fastpath import encode_payload, encode_record
    from ...engine.workq.model import Command
    from ...formats._common import GoTime
    from ...formats.workq import CmdType
    return encode_record(GoTime.from_unix_ns(unix_ns),
                         encode_payload(Command(CmdType(cmd), jid, result=b"" if result is None else result)))


if wire._c is not None:
    _c_add_record, short_record = wire._c.add_record, wire._c.short_record

    def add_record(unix_ns, cmd, jid, name, ttr, ttl, priority, max_attempts, max_fails, body, time_ns, created_ns):
        try:
            return _c_add_record(unix_ns, cmd, jid, name, ttr, ttl, priority, max_attempts, max_fails, body,
                                 time_ns, created_ns)
        except OverflowError:           # (a schedule past the year 2262: Unix ns beyond 64 bits)
            return add_record_py(unix_ns, cmd, jid, name, ttr, ttl, priority, max_attempts, max_fails, body,
                                 time_ns, created_ns)
else:
    add_record, short_record = add_record_py, short_record_py

LOGO = "\n. . .,---.\n| | ||   |\n`-'-'`---|\n         |\n"
SYNC_POLICIES = ("interval", "os", "always")


class ServeOptions:
    """The server's options (each defaulted; positional in this order, as the dataclass it was). A plain class with
    slots, not a dataclass: serve's first reply imports no ``dataclasses`` (nothing takes its fields(), asdict()
    or replace())."""

    __slots__ = ("listen", "cmdlog_path", "seg_size", "sync", "sync_int_ms", "clean_int_ms", "max_connections",
                 "idle_timeout_s", "request_timeout_s", "metrics", "log_level", "create", "sync_rolled")

    def __init__(self, listen: str = "127.0.0.1:9922", cmdlog_path: str = "", seg_size: int = 67_108_864,
                 sync: str = "interval", sync_int_ms: int = 1000, clean_int_ms: int = 300_000,
                 max_connections: int = 10_000,
                 idle_timeout_s: float = 0.0,           # 0: never close an idle client (upstream never does)
                 request_timeout_s: float = 60.0,       # a started request must be complete within this (slow-loris)
                 metrics: str | None = None,            # [HOST:]PORT for Prometheus text
                 log_level: str = "info",
                 create: bool = False,                  # make a missing -cmdlog-path (workq-server refuses one)
                 sync_rolled: bool = False):            # sync segments left by roll-overs (workq-server does not)
        self.listen = listen
        self.cmdlog_path = cmdlog_path
        self.seg_size = seg_size
        self.sync = sync
        self.sync_int_ms = sync_int_ms
        self.clean_int_ms = clean_int_ms
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.request_timeout_s = request_timeout_s
        self.metrics = metrics
        self.log_level = log_level
        self.create = create
        self.sync_rolled = sync_rolled

    def __repr__(self) -> str:
        return "ServeOptions(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None


class MissingLogDir(UsageError):
    """-cmdlog-path names no directory: refused as workq-server refuses it, before anything is created. Upstream
    opens ``<path>/read.lock`` with O_CREATE first (cmd/workq-server/main.go:65 ``stream.OpenCursor()`` ->
    int/captain/cursor.go:24 ``openFileMutex`` -> int/captain/filemutex.go:16 ``os.OpenFile``), which fails on a
    missing directory, and exits with that error (main.go:26-27): a mistyped path on a restart does not serve an
    empty queue while the jobs sit elsewhere."""

    def __init__(self, path: str, why: str):
        super().__init__(f"open {os.path.join(path, 'read.lock')}: {why} (-cmdlog-path must be an existing "
                         f"directory, as for workq-server; --create makes a missing one)")


def check_log_dir(path: str, create: bool) -> None:
    """A -cmdlog-path that is not a directory is refused (MissingLogDir), or made with ``create``."""
    if os.path.isdir(path):
        return
    if os.path.lexists(path):
        raise MissingLogDir(path, "not a directory")
    if not create:
        raise MissingLogDir(path, "no such file or directory")
    os.makedirs(path, exist_ok=True)


class StartRefused(Exception):
    """The log is not one workq-server would start on: the engine's first error finding and the verdict."""

    def __init__(self, finding: Finding, verdict: Verdict):
        super().__init__(finding.message)
        self.finding = finding
        self.verdict = verdict


def check_options(o: ServeOptions) -> None:
    """workq-server's own checks of its flags (cmd/workq-server main.go buildAppenderOptions)."""
    if o.sync not in SYNC_POLICIES:
        raise UsageError(f"Invalid cmdlog-sync policy: {o.sync}")
    if o.sync == "interval" and o.sync_int_ms == 0:
        raise UsageError("Invalid sync interval, must be greater than 0")
    host, sep, port = o.listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"-listen: expected HOST:PORT, got {o.listen!r}")
    if o.max_connections < 1:
        raise UsageError("--max-connections must be at least 1")


# ---------------------------------------------------------------- structured log lines (stderr)
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


class StructLog:
    """logfmt lines on stderr: ``time=... level=... msg="..." key=value ...``."""

    def __init__(self, level: str = "info", stream=None):
        self.level = _LEVELS[level]
        self.stream = stream or sys.stderr

    def _emit(self, level: str, msg: str, kv: dict) -> None:
        if _LEVELS[level] < self.level:
            return
        parts = [f"time={format_unix_ns(time.time_ns() // 1_000_000 * 1_000_000)}", f"level={level}",
                 f"msg={_quote(msg)}"]
        parts += [f"{k}={_quote(str(v))}" for k, v in kv.items() if v is not None]
        try:
            self.stream.write(" ".join(parts) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def debug(self, msg: str, **kv) -> None:
        self._emit("debug", msg, kv)

    def info(self, msg: str, **kv) -> None:
        self._emit("info", msg, kv)

    def warn(self, msg: str, **kv) -> None:
        self._emit("warning", msg, kv)

    def error(self, msg: str, **kv) -> None:
        self._emit("error", msg, kv)


def _quote(s: str) -> str:
    if s and all(c.isalnum() or c in "-_.:/@+" for c in s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# ---------------------------------------------------------------- the server
class Server:
    #: job-table rows translated past rewritten segments per loop iteration (``_settle``)
    SETTLE_SLICE = 4096
    #: segments left by roll-overs waiting for their fsync before the loop waits for them (``_roll_sync``, os)
    ROLL_BACKLOG = 256

    def __init__(self, opts: ServeOptions, *, log: StructLog | None = None, out=None):
        check_options(opts)
        self.opts = opts
        self.log = log or StructLog(opts.log_level)
        self.out = out or sys.stdout
        self.clock = make_clock()
        self.loop = None             # the asyncio loop (an EarlyLoop before it: early.py)
        self.queue = LiveQueue(self._log_record if opts.cmdlog_path else None)
        #: the C request core (``_proto.core_run``, _core.c: add / lease / complete / fail over this queue's objects),
        #: None in pure Python, without the C modules, without a log, or with WQTOOL_SERVE_CORE=0 (a benchmark's
        #: A/B switch): queue.py and handlers.py then do it all
        self.core = _CORE if opts.cmdlog_path and os.environ.get("WQTOOL_SERVE_CORE") != "0" else None
        #: the turn of a read in C (``_proto.lone_turn``, _core.c: a read of the only connection answered, its
        #: records written and its replies sent without the Python frames of Conn.process; a read of one of several
        #: answered, its commit left to the loop iteration's ``_tick``), with the core; WQTOOL_SERVE_LONE=0 turns it
        #: and the C tick off (a benchmark's A/B switch)
        self.lone = (_CORE_MOD.lone_turn if self.core is not None and os.environ.get("WQTOOL_SERVE_LONE") != "0"
                     else None)
        #: what a loop iteration's group commit runs (``_commit_tick``): with the turn in C, ``_proto.commit_tick``
        #: (its plain case in C; it calls ``_commit_tick`` for the rest, and whenever ``lone`` is None)
        self._tick = self._commit_tick
        if self.lone is not None:       # (a bound method's class, without importing ``types``)
            self._tick = type(self._tick)(_CORE_MOD.commit_tick, self)
        #: lone_turn writes a turn's records itself (no fsync to make: -cmdlog-sync interval / os), else it calls
        #: _commit
        self.lone_write = opts.sync != "always"
        self.queue.on_read_error = lambda exc: self.log.error("a job body could not be read back; the job stays "
                                                              "ready", error=str(exc))
        self.handlers = Handlers(self.queue, self._stats)
        self.conns: set[Conn] = set()
        #: the loop thread's scheduler slice, short on a busy machine with one client (busy.py); None: off
        self.slicer = None
        self.dirty: set[Conn] = set()
        self.max_connections = opts.max_connections
        self.accepted = self.refused = 0
        self.started_ns = 0
        self.locks: CmdlogLocks | None = None
        self.appender: Appender | None = None
        self.pending: list[bytes] = []
        self._adds: dict = {}        # id(record) -> the queue's Entry of a pending add/schedule record
        self._segs: dict[int, int] = {}   # appender segment sequence number -> the job table's segment number
        self.lsn = 0                 # records made so far
        self.durable_lsn = 0         # records written (and fsynced under "always")
        self._commit_scheduled = False
        #: a lone client's requests are being handled (Conn.process): their records are written as its turn ends,
        #: not at the next loop iteration — there is no other connection to group them with
        self.inline = False
        self._closed = False
        self._cleaning = False
        self._settling = False
        self._roll_pool = None       # the roll-over fsyncs' thread (interval / os)
        self._roll_q: list = []
        self._roll_lock = _thread.allocate_lock()     # (threading.Lock itself; threading: not before the first reply)
        self._roll_busy = False
        self._roll_fut = None
        self._retry_handle = None
        self._timer = None
        self._timer_at: int | None = None
        self._stop = None
        self._syncing = False
        self._sync_missed = False    # a tick came while the interval sync ran: the next starts when it ends
        self._rolled = False         # interval: a roll-over since the last sync started (it then is a syncfs)
        self._synced_bytes = 0
        self.metrics = Counts()
        self.replies = Counts()
        self.fsync_seconds = 0.0
        self.append_errors = 0
        self.clean = None            # a callable running one cleaning cycle (None: not available)
        self.listeners: list = []
        self.inherits_sockopts = False   # accepted sockets get the listener's TCP options (Linux: Conn)
        self.address = ""
        self.loop_name = "asyncio"
        self._lsock = None           # the listening socket, when ``start_early`` took it
        self._early = None           # the EarlyLoop that served before the asyncio loop (early.py)
        self.served_early = False
        self._announced = False      # "Listening on" printed
        #: -cmdlog-sync always: a thread spinning while the loop waits in fsync (WQTOOL_SERVE_SPIN=0: none)
        self.spinner = Spinner() if opts.sync == "always" and os.environ.get("WQTOOL_SERVE_SPIN") != "0" else None
        #: the idle spinner's window (WQTOOL_SERVE_SPIN_US, 0: none): a SCHED_IDLE process (or thread) keeps a CPU
        #: out of halt while requests come (spin.idle_start), started when serving starts. Not beside the fsync
        #: spinner (-cmdlog-sync always), which keeps a CPU awake through each request's fsync: the two took turns
        #: on 2 CPUs, one connection 0.70x workq-server's with both against 0.72-0.91x with the fsync spinner alone
        window = idle_window_us()
        self.spin_us = window if self.spinner is None else 0
        self.idle_spinner: int | None = None    # its pid (a process), 0 (a thread), None (none)
        from .busy import slice_us
        self.slice_us = slice_us()              # (WQTOOL_SERVE_SLICE_US: checked before the port is served)

    # ---------------------------------------------------------------- start-up
    def open_log(self) -> None:
        """Locks, replay through the engine, live queues, appender. Raises StartRefused / LogBusy."""
        path = self.opts.cmdlog_path
        if has_siblings(path):      # a half-installed log (an interrupted wqtool repair / pack) is not served
            from ...engine.workq.interrupted import refuse_start
            refuse_start(path)
        check_log_dir(path, self.opts.create)
        if not _only_lock_files(path) and not os.path.exists(os.path.join(path, "append.lock")):
            # no server ever ran here (workq-server creates append.lock first): a log it would refuse is refused
            # before anything is created in the directory — nothing modified (an empty directory is a new log)
            from ...engine.findings import Finding, Verdict
            from ...engine.workq.startup import replay_directory
            rep = replay_directory(path, self.clock(), payloads=False)
            if rep.verdict != Verdict.CLEAN:
                raise StartRefused(rep.first_error() or Finding("error", "WQ-?", "log refused"), rep.verdict)
        self.locks = CmdlogLocks(path)
        self.locks.lock_append()
        try:
            self.locks.lock_read_shared()
            now = self.clock() - prebind.since_start()     # the restart instant: the process's start
            t0 = time.perf_counter()
            if _only_lock_files(path):
                # nothing to replay (the lock files alone): the queue stays as it was made, empty (what restoring
                # the replay's empty state makes), without importing the replay's modules (with their dataclasses
                # and enums, most of the CPU to a first reply); its one finding is the reader's WQ-NO-SEGMENTS
                # warning (engine/workq/reader.py _discover_dir)
                state = None
                segments = records = size = jobs = 0
                warnings = 1
            else:
                from ...engine.findings import Finding, Verdict
                from ...engine.workq.startup import replay_directory
                rep = replay_directory(path, now, payloads=False)
                if rep.verdict != Verdict.CLEAN:
                    self.locks.unlock_read()
                    raise StartRefused(rep.first_error() or Finding("error", "WQ-?", "log refused"), rep.verdict)
                state, r = rep.state, rep.report
                segments, records, size, warnings = r.segments, r.records, r.bytes, r.severities.get("warning", 0)
                jobs = len(state.jobs)
            elapsed = time.perf_counter() - t0
            self.locks.unlock_read()
            if state is not None:
                self.queue.restore(state, None, now)    # takes the replay's job table over; upstream's timers
            self.appender = Appender(path, segment_size=self.opts.seg_size,
                                     defer_roll_sync={"always": None, "interval": self._roll_interval,
                                                      "os": self._roll_sync if self.opts.sync_rolled
                                                      else self._roll_interval}[self.opts.sync])
            self.appender.open()
            self.log.info("log replayed", path=path, segments=segments, records=records, bytes=size,
                          jobs=jobs, elapsed_ms=round(elapsed * 1000, 1),
                          warnings=warnings, active_segment=self.appender.path)
        except BaseException:
            self.locks.release()
            raise
        prebind.mark("log")       # (the cleaner is looked for by ``start``: importlib.util, after the first replies)

    async def start(self) -> None:
        import asyncio
        self.loop = asyncio.get_running_loop()
        if self.opts.cmdlog_path and self.locks is None:
            self.open_log()
        if self.appender is not None and self.clean is None:
            self.clean = Cleaner(self) if Cleaner.available() else None
        host, _, port = self.opts.listen.rpartition(":")
        lsock, self._lsock = self._lsock, None
        if lsock is not None:       # the early loop's _socket.socket: asyncio's acceptor takes a socket.socket
            import socket
            lsock = socket.socket(fileno=lsock.detach())
        else:
            lsock = prebind.take(host.strip("[]"), int(port))      # bound before the imports
        if lsock is None:
            lsock = listen_socket(host.strip("[]") or None, int(port))
        set_sockopts(lsock)
        self.inherits_sockopts = sys.platform.startswith("linux")
        if self._early is not None:         # the connections the early loop served go on here (early.py)
            from .early import handover
            await handover(self._early, self.loop)
        self.listeners.append(Acceptor(self.loop, lsock, lambda: Conn(self), self.log, self._closed_unused))
        if self.idle_spinner is None:
            self.idle_spinner = idle_start(self.spin_us, idle_as_process())
        if self.slicer is None:
            from . import busy
            self.slicer = busy.start(self.slice_us, self.log)
            if self.slicer is not None:
                self.slicer.n = len(self.conns)
                self.slicer.look()
        self._set_address(lsock)
        if self.opts.metrics:
            await self._start_metrics()
        self.started_ns = self.clock()
        if self.appender is not None:
            if self.opts.sync == "interval":
                self.loop.call_later(self.opts.sync_int_ms / 1000, self._interval_sync)
            if self.opts.clean_int_ms:
                self.loop.call_later(self.opts.clean_int_ms / 1000, self._clean_tick)
        self.loop.call_later(1.0, self._sweep)
        self.after_change()
        prebind.mark("listening")
        self.log.info("listening", addr=self.address, loop=self.loop_name, startup_ms=prebind.startup_marks(),
                      idle_spin_us=0 if self.idle_spinner is None else self.spin_us,
                      busy_slice_us=0 if self.slicer is None else self.slice_us, cmdlog=self.opts.cmdlog_path or None,
                      sync=self.opts.sync if self.appender else None,
                      sync_rolled="on" if self.opts.sync_rolled and self.appender else None,
                      cleaning=("off" if not self.opts.clean_int_ms else "on" if self.clean else "not available")
                      if self.appender else None)
        self._announce()

    def _set_address(self, lsock) -> None:
        sock = lsock.getsockname()
        self.address = f"{sock[0]}:{sock[1]}" if ":" not in sock[0] else f"[{sock[0]}]:{sock[1]}"

    def _announce(self) -> None:
        """upstream's banner and ``Listening on``, once (stdout)."""
        if not self._announced:
            self._announced = True
            self.out.write(LOGO + f"Listening on {self.address}\n")
            self.out.flush()

    def start_early(self):
        """The lean start (``run_server``): serve on the socket ``prebind.early`` bound with the early loop
        (early.py), and once it is idle, import the event loop (uvloop / asyncio) in a thread; returns
        ``event_loop_factory()``'s (name, factory) once the import is done. ``open_log`` has run. Without a bound
        socket (port 0, the CLI's start) or epoll, or with ``WQTOOL_SERVE_EARLY=0``, it only waits for the import."""
        import select
        host, _, port = self.opts.listen.rpartition(":")
        lsock = self._lsock = prebind.take(host.strip("[]"), int(port), raw=True)
        box: list = []
        done = Flag()

        def load() -> None:
            try:
                box.append(event_loop_factory())
            except BaseException as exc:  # noqa: BLE001 — raised in the main thread below
                box.append(exc)
            finally:
                done.set()

        def start_import() -> None:
            import threading                    # (once the first requests are served)
            # typing whole before the thread imports asyncio (which imports it): a dataclass made here meanwhile
            # (a module a request imports) reads typing from sys.modules without the import lock, and a half-made
            # typing failed it ("partially initialized module 'typing' has no attribute 'ClassVar'": exit 70 under
            # upstream's TestCmdLog beside CPU burners)
            import typing  # noqa: F401
            prebind.release_gc()                # (held by wqtool._entry until the first requests are served)
            threading.Thread(target=load, name="wqtool-import", daemon=True).start()

        if lsock is None or not hasattr(select, "epoll") or os.environ.get("WQTOOL_SERVE_EARLY") == "0":
            start_import()
            done.wait()
        else:
            from .early import EarlyLoop
            set_sockopts(lsock)
            self.inherits_sockopts = sys.platform.startswith("linux")
            lsock.setblocking(False)
            self._set_address(lsock)

            def when_idle() -> None:
                # the idle spinner (a process started by fork) too: it keeps a CPU awake between requests, and the
                # requests waiting at the start are served before it
                self.idle_spinner = idle_start(self.spin_us, idle_as_process())
                start_import()

            # the import starts once the early loop is idle: the requests already waiting are answered first
            self._early = self.loop = EarlyLoop(lsock, lambda: Conn(self), when_idle, self._closed_unused)
            if self.appender is not None and self.opts.sync == "interval":
                self._early.call_later(self.opts.sync_int_ms / 1000, self._early_sync)
            self.served_early = True
            self._announce()
            prebind.mark("early")
            self._early.run(done)
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    async def run(self) -> None:
        import asyncio
        await self.start()
        self._stop = asyncio.Event()
        import signal
        handled = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self.loop.add_signal_handler(sig, self._on_signal, sig)
                handled.append(sig)
            except (NotImplementedError, RuntimeError):
                pass
        early, self._early = self._early, None
        if early is not None:               # its handlers noted a stop asked for until the loop's were installed
            early.restore_signals(keep=handled)
        for sig in early.signals if early is not None else ():   # a stop asked for while the early loop ran
            self._on_signal(sig)
        await self._stop.wait()
        await self.shutdown()

    def _on_signal(self, sig) -> None:
        import signal
        self.log.info("stopping", signal=signal.Signals(sig).name)
        self._stop.set()

    async def shutdown(self) -> None:
        import asyncio
        for s in self.listeners:
            s.close()
        cleaner_free = self.clean is None or self.clean.stop()     # a cycle in flight stops at its next step
        now = self.clock()
        try:
            self.queue.advance(now)
        except WqError as exc:                  # the shutdown goes on: the final commit, fsync, lock release
            self.log.error("timer event failed at shutdown", error=str(exc))
        for c in list(self.conns):
            if c.blocked is not None:          # its run ends (records logged below), its lease stops waiting
                self.queue.cancel(c.blocked)
                c.blocked = None
            c.abort("server stopping")
        self.conns.clear()
        if self.slicer is not None:             # (the thread may go on: a test's, an embedding program's)
            self.slicer.close()
        digest = None
        if self.appender is not None:
            self._commit()
            self._closed = True                 # nothing is appended after the final commit
            if self.pending:
                self.log.error("records could not be written at shutdown", records=len(self.pending))
            try:
                self.appender.close(sync=True)
                if self._rolled or self._syncing:   # interval: segments left by roll-overs since the last sync
                    syncfs_dir(self.appender.directory)
                    self._rolled = False
            except OSError as exc:
                self.log.error("fsync at shutdown failed", error=str(exc))
            if self._roll_pool is not None:         # os: the roll-overs' fsyncs end before the locks are released
                self._roll_pool.shutdown(wait=True)
            if not cleaner_free:                    # the locks are released after the cleaner's last write
                t0 = time.perf_counter()
                while not self.clean.stop():
                    await asyncio.sleep(0.005)
                self.log.info("cleaning cycle stopped", waited_ms=round((time.perf_counter() - t0) * 1000, 1))
            self.locks.release()
            from ...engine.workq.replay import state_digest
            digest = state_digest(self.queue.snapshot(now))
        if self.queue.reader is not None and not self._cleaning:
            self.queue.reader.close()
        self.log.info("stopped", jobs=len(self.queue.jobs), as_of=format_unix_ns(now),
                      digest=f"sha256:{digest}" if digest else None, records=self.lsn)

    # ---------------------------------------------------------------- records and group commit
    def _log_record(self, cmd: int, jid: bytes, extra) -> None:
        if self._closed:
            return
        if cmd == _ADD or cmd == _SCHEDULE:
            j = extra
            rec = add_record(self.clock(), cmd, jid, j.name, j.ttr, j.ttl, j.priority, j.max_attempts, j.max_fails,
                             j.payload, j.time_ns, j.created_ns)
            self._adds[id(rec)] = self.queue.jobs.get(jid)   # where it is written goes to the job's row
        else:
            rec = short_record(self.clock(), cmd, jid, extra if cmd == _COMPLETE or cmd == _FAIL else None)
        self.pending.append(rec)
        self.lsn += 1
        if not self._commit_scheduled and self._retry_handle is None:
            self._commit_scheduled = True
            if not self.inline:
                self.loop.call_soon(self._tick)

    def _commit_tick(self) -> None:
        """The group commit of a loop iteration, then the loop timer re-armed for what its requests changed (the
        connections leave that to it: once per iteration, not once per request)."""
        self._commit()
        self.after_change()

    def _commit(self) -> None:
        self._commit_scheduled = False
        if self._closed:
            return
        if self.pending:
            recs = self.pending
            self.pending = []
            always = self.opts.sync == "always"
            where = self.appender.positions(recs) if always else None
            try:
                self._append(recs, where)
            except OSError as exc:          # what a roll-over wrote before the failure is not written again
                self.pending = recs[getattr(exc, "records_done", 0):] + self.pending
                self._append_failed(exc)
                return
            self.metrics["records"] += len(recs)
            if always:
                try:
                    t0 = time.perf_counter()
                    if self.spinner is None:
                        self.appender.sync()
                    else:
                        with self.spinner:      # a CPU held for the thread the fsync returns to (spin.py)
                            self.appender.sync()
                    self.fsync_seconds += time.perf_counter() - t0
                    self.metrics["fsyncs"] += 1
                except OSError as exc:      # not durable: cut and written again; nothing acknowledged before
                    self._unsynced(recs, where)
                    self._append_failed(exc)
                    return
            self.durable_lsn = self.lsn - len(self.pending)
        self._release()

    def _unsynced(self, recs: list[bytes], where: list[tuple[int, int]]) -> None:
        """The fsync after writing ``recs`` (at ``where``) failed. Those in the current segment are cut from it and
        queued again (a roll-over fsynced the earlier segments), to be written at the same places by the retry:
        after a failed fsync the kernel may drop the pages and report a later fsync as a success. If the cut
        fails too they stay written, and the retry's fsync is the one that counts."""
        ap = self.appender
        k = next((i for i, (seq, _off) in enumerate(where) if seq == ap.seq), len(recs))
        if k == len(recs):
            return
        try:
            ap.cut_back(where[k][1])
        except OSError as exc:
            self.log.error("cutting records whose fsync failed failed too; they stay written", error=str(exc))
            return
        self.pending = recs[k:] + self.pending

    def _append(self, recs: list[bytes], where: list[tuple[int, int]] | None = None) -> None:
        """Write records; the rows of the jobs whose add/schedule records these are get the segment and offset
        (the queue then stops holding their bodies). ``where``: ``positions(recs)`` if the caller has it."""
        adds = self._adds
        if not adds:
            self.appender.append(recs)
            return
        ap = self.appender
        if where is None:
            where = ap.positions(recs)
        n = len(recs)
        try:
            ap.append(recs)
        except OSError as exc:              # the records a roll-over wrote before the failure are located
            n = getattr(exc, "records_done", 0)
            raise
        finally:
            q = self.queue
            segs = self._segs
            for rec, (seq, off) in zip(recs[:n], where[:n]):
                e = adds.pop(id(rec), None)
                if e is not None:
                    seg = segs.get(seq)
                    if seg is None:
                        seg = segs[seq] = q.payload_reader().index(ap.segment_path(seq))
                    q.located(e, seg, off)

    def _release(self) -> None:
        if self.dirty:
            dirty = self.dirty
            self.dirty = set()
            for c in dirty:
                c.flush_out()
                if c.out and c.out[0][0] > self.durable_lsn:
                    self.dirty.add(c)

    def _append_failed(self, exc: OSError) -> None:
        self.append_errors += 1
        if not self.handlers.read_only:
            self.handlers.read_only = True
            self.log.error("cmdlog append failed: read-only mode (circuit breaker open until restart)",
                           error=str(exc), segment=self.appender.path, pending=len(self.pending))
        self._retry_handle = self.loop.call_later(1.0, self._retry)

    def _retry(self) -> None:
        self._retry_handle = None
        if self._closed:
            return
        recs = self.pending
        self.pending = []
        try:
            where = self.appender.positions(recs)
            try:
                self._append(recs, where)
            except OSError as exc:
                self.pending = recs[getattr(exc, "records_done", 0):] + self.pending
                raise
            try:
                self.appender.sync()        # (also what an earlier commit wrote if cutting it back failed)
            except OSError:
                self._unsynced(recs, where)
                raise
        except OSError as exc:
            self.append_errors += 1
            self._retry_handle = self.loop.call_later(1.0, self._retry)
            if self.append_errors % 60 == 0:
                self.log.error("cmdlog append still failing", error=str(exc), pending=len(self.pending))
            return
        self.durable_lsn = self.lsn - len(self.pending)
        self.log.warn("cmdlog append recovered; still read-only until restart", written=len(recs))
        self._release()

    def _roll_interval(self, fd: int | None) -> None:
        """A roll-over under ``interval`` (and ``os`` without ``--sync-rolled``): the segment left (``fd``) is closed
        without an fsync, as upstream closes it (int/captain/appender.go:162-172; its ticker fsyncs only the active
        segment, appender.go:94-111): a record in a rolled segment is left to the kernel's writeback. With
        ``--sync-rolled`` the next interval tick makes one ``syncfs(2)`` instead of its fsync of the current
        segment (``_sync_now``): it flushes every segment left since the last tick, their directory entries and
        the current segment, so a record acknowledged is durable within one interval wherever it was written, in
        one sync call per tick however many segments rolled. Not the default: the blocks it allocates make each
        later delete of a one-record segment cost a discard (at ``-cmdlog-seg-size 15`` under load, upstream's
        TestCmdLog/1K spent 17-26 s in its own ``RemoveAll``; docs/serve-lifecycle.md). A stop syncs what rolled
        either way (``_run``'s end)."""
        if fd is not None:
            os.close(fd)
        self._rolled = True

    def _roll_sync(self, fd: int | None) -> None:
        """A roll-over under ``os`` with ``--sync-rolled``: the segment left (``fd``, taken over) and then the directory (None) are fsynced
        by one background thread, in order, so a roll-over does not stall the loop on two fsyncs. The thread takes
        what has queued up in one batch: one segment is fsynced, then the directory; several are flushed by one
        syncfs(2). Past ``ROLL_BACKLOG`` (roll-overs faster than fsyncs), the loop waits for the batch in flight:
        the descriptors held stay bounded."""
        with self._roll_lock:
            self._roll_q.append(fd)
            waiting = len(self._roll_q)
        self._roll_start()
        if waiting > self.ROLL_BACKLOG and self._roll_fut is not None:
            self._roll_fut.result()

    def _roll_start(self) -> None:
        """Start the roll-over fsync thread on what has queued up (nothing when it runs already: it takes it)."""
        with self._roll_lock:
            if self._roll_busy or not self._roll_q:
                return
            self._roll_busy = True
            if self._roll_pool is None:
                from concurrent.futures import ThreadPoolExecutor
                self._roll_pool = ThreadPoolExecutor(1, thread_name_prefix="wqtool-roll-sync")
            self._roll_fut = self._roll_pool.submit(self._roll_drain, self.appender.directory)

    def _roll_drain(self, directory: str) -> None:
        """(The roll-over fsync thread.)"""
        while True:
            with self._roll_lock:
                if not self._roll_q:
                    self._roll_busy = False
                    return
                batch = list(self._roll_q)
                self._roll_q.clear()
            err = None
            fds = [fd for fd in batch if fd is not None]
            try:
                if len(fds) > 1:            # one syncfs(2) flushes them all and the directory (not one per file)
                    syncfs(fds[0])
                else:
                    for fd in fds:
                        os.fsync(fd)
                    if None in batch:
                        fsync_dir(directory)
            except OSError as exc:
                err = exc
            finally:
                for fd in fds:
                    os.close(fd)
            if err is not None and not self._closed_loop():
                self.loop.call_soon_threadsafe(lambda e=err: self.log.error("roll-over fsync failed", error=str(e)))

    def _closed_loop(self) -> bool:
        return self.loop is None or self.loop.is_closed()

    def _interval_sync(self) -> None:
        """The ``-cmdlog-sync-int`` tick (re-armed first, so a slow sync does not shift the ticks)."""
        self.loop.call_later(self.opts.sync_int_ms / 1000, self._interval_sync)
        self._sync_now()

    def _early_sync(self) -> None:
        """The ``-cmdlog-sync-int`` tick while the early loop serves (early.py: a start slow enough to outlast a
        tick — a loaded machine, strace): ``_sync_now`` made inline, the early loop having no worker thread. It ends
        at the hand-over, where ``start`` arms the asyncio loop's own tick."""
        early = self._early
        if early is None or self.loop is not early:
            return
        early.call_later(self.opts.sync_int_ms / 1000, self._early_sync)
        self._sync_now(inline=True)

    def _sync_now(self, inline: bool = False) -> None:
        """One sync in a worker thread (``inline``: in this one): an fsync of the current segment, or, with
        ``--sync-rolled``, one syncfs(2) when segments were left by roll-overs since the last sync started (it covers
        them, their directory entries and the current segment). A tick that finds a sync still running is not lost:
        the next sync starts as that one ends."""
        ap = self.appender
        if ap is None or self._closed:
            return
        if self._syncing:
            self._sync_missed = True
            return
        rolled = self._rolled and self.opts.sync_rolled
        if not rolled and ap.bytes_written == self._synced_bytes:
            return
        fd = ap.dup_fd()
        if fd is None:
            if not rolled:
                return
            fd = os.open(ap.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self._syncing = True
        if rolled:
            self._rolled = False            # a roll-over from now on is the next sync's
        mark = ap.bytes_written

        def work():
            t0 = time.perf_counter()
            try:
                if rolled:
                    syncfs(fd)
                else:
                    os.fsync(fd)
            finally:
                os.close(fd)
            return time.perf_counter() - t0

        def finish(seconds: float, exc: OSError | None) -> None:
            self._syncing = False
            if exc is None:
                self.fsync_seconds += seconds
                self.metrics["fsyncs"] += 1
                self._synced_bytes = mark
            else:
                self._rolled = self._rolled or rolled       # tried again at the next tick
                self.log.error("interval fsync failed", error=str(exc))
            if self._sync_missed:
                self._sync_missed = False
                self._sync_now(inline)

        def done(fut):
            try:
                seconds = fut.result()
            except OSError as exc:
                finish(0.0, exc)
            else:
                finish(seconds, None)

        if not inline:
            self.loop.run_in_executor(None, work).add_done_callback(done)
            return
        try:
            seconds = work()
        except OSError as exc:
            finish(0.0, exc)
        else:
            finish(seconds, None)

    # ---------------------------------------------------------------- timers and housekeeping
    def after_change(self) -> None:
        """Re-arm the loop timer when the earliest deadline moved earlier (called after every batch)."""
        at = self.queue.next_deadline()
        if at is None or (self._timer_at is not None and self._timer_at <= at):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        delay = max(0.0, (at - self.clock()) / 1e9)
        self._timer = self.loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        try:
            self.queue.advance(self.clock())
        except WqError as exc:     # a job body that cannot be read back from the log (changed under the server)
            self.log.error("timer event failed", error=str(exc))
        self.after_change()

    def _sweep(self) -> None:
        """Once a second: drop clients whose started request did not complete within --request-timeout
        (slow-loris) and, with --idle-timeout, clients idle that long (never one waiting in lease/run/result)."""
        self.loop.call_later(1.0, self._sweep)
        if self.slicer is not None:
            self.slicer.look()
        now = time.monotonic()
        rt, it = self.opts.request_timeout_s, self.opts.idle_timeout_s
        for c in list(self.conns):
            if c.closing or c.blocked is not None:
                continue
            if rt and c.partial_since is not None and now - c.partial_since > rt:
                c.abort(f"request not completed within {rt:g} s")
            elif it and c.partial_since is None and not c.out and now - c.last_active > it:
                c.abort(f"idle for {it:g} s")

    def _clean_tick(self) -> None:
        """Every -cmdlog-clean-int ms: one cleaning cycle in a worker thread (skipped while one still runs);
        errors are logged and the server keeps serving, as upstream's cleaner."""
        self.loop.call_later(self.opts.clean_int_ms / 1000, self._clean_tick)
        if self.clean is None or self._cleaning or self._closed:
            return
        self._cleaning = True
        t0 = time.perf_counter()

        def done(fut) -> None:
            self._cleaning = False
            try:
                doc = fut.result()
            except Exception as exc:  # noqa: BLE001 — upstream logs cleaner errors and keeps serving
                self._moved(getattr(exc, "wqtool_moved", ()))
                if isinstance(exc, CycleSkipped):
                    self.metrics["clean_skips"] += 1
                    self.log.warn("cleaner cycle skipped", reason=str(exc))
                    return
                self.metrics["clean_errors"] += 1
                self.log.error("cleaner cycle failed", error=f"{type(exc).__name__}: {exc}")
                return
            self.metrics["cleans"] += 1
            if doc is None:
                self.log.debug("cleaner cycle: nothing to drop", elapsed_ms=round((time.perf_counter() - t0) * 1000, 1))
            else:
                doc, moved = doc
                self._moved(moved)
                self.metrics["clean_rewrites"] += sum(1 for _p, action, _d in moved if action == "rewrite")
                rec = doc["reclaimed"]
                self.log.info("cleaned", records=rec["records"], bytes=rec["bytes"], segments_deleted=rec["files"],
                              segments_rewritten=sum(1 for a in doc["actions"] if a["action"] == "rewrite"),
                              elapsed_ms=round((time.perf_counter() - t0) * 1000, 1))

        ap = self.appender
        if not ap.seq:
            self._cleaning = False
            self.log.debug("cleaner cycle skipped", reason="no segment written yet")
            return
        as_of = self.clock()
        try:        # the queue first lets go of what the cleaner may drop as expired at as_of (a clock stepped
            self.queue.advance(as_of)       # back later must not leave it serving a job whose add is gone)
        except WqError as exc:
            self.log.error("timer event failed", error=str(exc))
        held = self.queue.outliving(as_of)
        if held is not None:                # its add record must stay: the replay at as_of would drop it
            self._cleaning = False
            self.metrics["clean_skips"] += 1
            self.log.info("cleaner cycle skipped", reason="a job restored at start-up outlives its logged expiry "
                          f"{format_unix_ns(held)} (upstream's fresh TTL at a restart)")
            return
        # the log as of now: the active segment up to its last complete record (the appender goes on writing
        # while the cycle runs in its thread; what it writes after this point is not the cycle's input). A daemon
        # thread of its own, not the loop's executor: a stop does not wait for a cycle that is only reading
        # (shutdown waits for one that writes: Cleaner.stop)
        fut = self.loop.create_future()
        fut.add_done_callback(done)
        loop, clean, seq, size = self.loop, self.clean, ap.seq, ap.size

        def work() -> None:
            try:
                res = clean(as_of, seq, size)
            except BaseException as exc:  # noqa: BLE001 — handed to the loop (done)
                back = (fut.set_exception, exc)
            else:
                back = (fut.set_result, res)
            try:
                loop.call_soon_threadsafe(lambda: fut.done() or back[0](back[1]))
            except RuntimeError:        # the loop is closed: the server stopped
                pass
        import threading
        threading.Thread(target=work, name="wqtool-clean", daemon=True).start()

    def _closed_unused(self, n: int) -> None:
        """``n`` connections their peer closed before sending a byte, closed as they were accepted
        (``early.accept_live``): accepted all the same (``wqtool_serve_connections_accepted_total``)."""
        self.accepted += n

    def _moved(self, moved) -> None:
        """Segments a cleaning cycle rewrote or deleted: rows naming a rewritten one are translated on read."""
        reader = self.queue.payload_reader()    # (an empty log's start makes it with the first record written)
        for path, action, drops in moved:
            if action == "rewrite":
                reader.rewritten(path, drops)
            else:
                reader.gone(path)
        if reader.has_moves and not self._settling:
            self._settling = True
            self.loop.call_soon(self._settle)

    def _settle(self) -> None:
        """Rows naming rewritten segments are translated a slice per loop iteration (the reader then forgets the
        rewrites: memory follows the last cycles, not the server's life)."""
        if self.queue.settle(self.SETTLE_SLICE) and not self._closed:
            self.loop.call_soon(self._settle)
        else:
            self._settling = False

    def _stats(self) -> tuple[int, int]:
        return len(self.conns), self.started_ns

    # ---------------------------------------------------------------- metrics
    def count(self, name: bytes, reply) -> None:
        """One reply to ``name`` (``b"(waiting)"``: the command blocks), counted by the reply's first bytes (its
        class is worked out when the metrics are read: this runs for every request)."""
        self.replies[(name, reply[:4])] += 1

    def count_late(self, reply) -> None:
        self.replies[(b"(blocked)", reply[:4])] += 1

    def reply_counts(self) -> dict[tuple[bytes, str], int]:
        """Replies by (command, class): ``wire.reply_class`` of each counted prefix, ``waiting`` for blocks (a
        ``collections.Counter``)."""
        from collections import Counter
        out = Counter()
        for (name, head), n in self.replies.items():
            out[(name, "waiting" if head == b"(wai" else wire.reply_class(head))] += n
        return out

    def metrics_text(self) -> str:
        q = self.queue
        lines = ["# TYPE wqtool_serve_replies_total counter"]
        for (name, cls), n in sorted(self.reply_counts().items()):
            lines.append(f'wqtool_serve_replies_total{{command="{name.decode("ascii", "replace")}",'
                         f'class="{cls}"}} {n}')
        lines += ["# TYPE wqtool_serve_connections gauge", f"wqtool_serve_connections {len(self.conns)}",
                  "# TYPE wqtool_serve_connections_accepted_total counter",
                  f"wqtool_serve_connections_accepted_total {self.accepted}",
                  "# TYPE wqtool_serve_connections_refused_total counter",
                  f"wqtool_serve_connections_refused_total {self.refused}",
                  "# TYPE wqtool_serve_jobs gauge"]
        for st, n in q.counts().items():
            lines.append(f'wqtool_serve_jobs{{state="{st}"}} {n}')
        lines += ["# TYPE wqtool_serve_queues gauge", f"wqtool_serve_queues {len(q.queues)}",
                  "# TYPE wqtool_serve_evicted_jobs_total counter", f"wqtool_serve_evicted_jobs_total {q.evicted}",
                  "# TYPE wqtool_serve_records_total counter", f"wqtool_serve_records_total {self.lsn}",
                  "# TYPE wqtool_serve_records_pending gauge", f"wqtool_serve_records_pending {len(self.pending)}",
                  "# TYPE wqtool_serve_fsyncs_total counter", f"wqtool_serve_fsyncs_total {self.metrics['fsyncs']}",
                  "# TYPE wqtool_serve_fsync_seconds_total counter",
                  f"wqtool_serve_fsync_seconds_total {self.fsync_seconds:.6f}",
                  "# TYPE wqtool_serve_append_errors_total counter",
                  f"wqtool_serve_append_errors_total {self.append_errors}",
                  "# TYPE wqtool_serve_clean_cycles_total counter",
                  f"wqtool_serve_clean_cycles_total {self.metrics['cleans']}",
                  "# TYPE wqtool_serve_clean_errors_total counter",
                  f"wqtool_serve_clean_errors_total {self.metrics['clean_errors']}",
                  "# TYPE wqtool_serve_clean_skips_total counter",
                  f"wqtool_serve_clean_skips_total {self.metrics['clean_skips']}",
                  "# TYPE wqtool_serve_body_moves gauge",
                  f"wqtool_serve_body_moves {q.reader.moved_offsets if q.reader is not None else 0}",
                  "# TYPE wqtool_serve_read_only gauge", f"wqtool_serve_read_only {int(self.handlers.read_only)}",
                  "# TYPE wqtool_serve_started_seconds gauge",
                  f"wqtool_serve_started_seconds {self.started_ns / 1e9:.3f}"]
        if self.appender is not None:
            lines += ["# TYPE wqtool_serve_segment gauge", f"wqtool_serve_segment {self.appender.seq}",
                      "# TYPE wqtool_serve_bytes_appended_total counter",
                      f"wqtool_serve_bytes_appended_total {self.appender.bytes_written}"]
        return "\n".join(lines) + "\n"

    async def _start_metrics(self) -> None:
        import asyncio
        host, sep, port = self.opts.metrics.rpartition(":")
        host = host if sep and host else "127.0.0.1"

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
                path = head.split(b" ", 2)[1] if head.count(b" ") >= 2 else b"/"
                if path.split(b"?")[0] in (b"/metrics", b"/"):
                    body, status = self.metrics_text().encode(), b"200 OK"
                else:
                    body, status = b"not found\n", b"404 Not Found"
                writer.write(b"HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n%s" % (status, len(body), body))
                await asyncio.wait_for(writer.drain(), 5.0)
            except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                pass
            finally:
                writer.close()

        srv = await asyncio.start_server(handle, host, int(port), limit=8192)
        self.listeners.append(srv)
        s = srv.sockets[0].getsockname()
        self.log.info("metrics listening", addr=f"{s[0]}:{s[1]}")


def listen_socket(host: str | None, port: int) -> socket.socket:
    """A listening TCP socket on (host, port) (IPv6 for a host with a colon; all IPv4 addresses for none)."""
    import socket
    family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host or "", port))
        s.listen(prebind.BACKLOG)
    except BaseException:
        s.close()
        raise
    return s


class Acceptor:
    """The listening socket, accepted from by the server itself: up to ``early.ACCEPT_BATCH`` live connections each
    time it is readable, those their peer already closed dropped at once (``early.accept_live``). uvloop's own
    server accepts one connection per loop iteration: a client that opens and drops connections in a loop (the
    kernel completes them without the server) filled the accept queue with thousands of them, and a new client
    waited seconds behind them (4.4 s for a probe, with a client flooding pipelined requests at the same time). The
    connections are handed to the loop as usual (``connect_accepted_socket``); ``closed_unused(n)`` counts the
    others."""

    def __init__(self, loop, sock: socket.socket, factory, log, closed_unused=None):
        self.loop, self.sock, self.factory, self.log = loop, sock, factory, log
        self.closed_unused = closed_unused
        import socket
        from .early import accept_live
        self._socket, self._accept_live = socket.socket, accept_live
        self.sockets = [sock]
        self._paused = None
        self._attaching: set = set()        # the hand-over tasks in flight (the loop keeps only weak references)
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._ready)

    def _ready(self) -> None:
        sock, attach, make = self.sock, self._attach, self._socket
        live, closed, err = self._accept_live(sock)
        if closed and self.closed_unused is not None:
            self.closed_unused(closed)
        for fd in live:
            task = self.loop.create_task(attach(make(sock.family, sock.type, sock.proto, fd)))
            self._attaching.add(task)
            task.add_done_callback(self._attaching.discard)
        if err:                             # out of descriptors or memory: accepting again in a second
            self.log.error("accept failed; accepting again in 1 s", error=os.strerror(err))
            self.loop.remove_reader(sock.fileno())
            self._paused = self.loop.call_later(1.0, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if self.sock.fileno() >= 0:
            self.loop.add_reader(self.sock.fileno(), self._ready)

    async def _attach(self, conn: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.factory, conn)
        except OSError:
            conn.close()

    def close(self) -> None:
        if self._paused is not None:
            self._paused.cancel()
        elif self.sock.fileno() >= 0:
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()


class CycleSkipped(Exception):
    """A cleaning cycle did not run (nothing changed): the reason is logged, the next tick tries again."""


class CycleCancelled(CycleSkipped):
    """The server is stopping: the cycle stopped between two of its steps (nothing half written is left: the plan's
    rollback removes its ``.rw`` files; past its commit point any subset of the renames replays the same)."""


class Cleaner:
    """One cleaning cycle through ``wqtool clean``'s engine (``engine.workq.clean``), called with (as_of_ns,
    active_seq, active_size) in the cleaning thread. A cycle replays the log at the server's clock, drops only
    records the replay gives no effect (expired adds, records of jobs that are not live) from every segment but the
    active one — never the record that removed a live job, so nothing is resurrected — re-verifies the digest, and
    swaps segments under LOCK_EX on read.lock, as upstream's cleaner cycle; the server keeps append.lock. Segments
    before the active one are immutable to the appender, which only appends to the newest.

    Stopping (``stop``): a cycle writes only while it holds ``writing``, and checks ``stopping`` before each of its
    steps (plan.py's step hook). The server sets ``stopping`` and takes ``writing`` before it releases its locks:
    after that no file of the log is written by this process (a cycle still reading, in its plan, ends there)."""

    def __init__(self, server: Server):
        self.server = server
        self.stopping = Flag()
        self.writing = _thread.allocate_lock()

    @staticmethod
    def available() -> bool:
        import importlib.util
        return importlib.util.find_spec("wqtool.engine.workq.clean") is not None

    def stop(self) -> bool:
        """No cycle writes from now on once this is True (call again until it is: a step in flight ends first)."""
        self.stopping.set()
        return self.writing.acquire(blocking=False)

    def _step(self, when: str, label: str) -> None:
        if when == "before" and self.stopping.is_set():
            raise CycleCancelled(f"the server is stopping (before step {label})")

    def __call__(self, as_of_ns: int, active_seq: int, active_size: int) -> tuple[dict, list] | None:
        from ...engine.workq import clean as clean_mod     # (imported by the first cycle, not at start-up)
        import dataclasses
        from ...engine.workq.reader import discover
        server = self.server
        (log,) = discover([server.opts.cmdlog_path])
        # the input is the log the loop saw when it started the cycle: segments up to the active one, that one
        # pinned at its last complete record (a roll-over since made newer ones: the appender's, not the input's)
        segs = [sg for sg in log.segments if sg.seq is not None and sg.seq <= active_seq]
        if not segs or segs[-1].seq != active_seq:
            raise CycleSkipped(f"the active segment {active_seq:09d}.log is not in the directory listing")
        segs[-1] = dataclasses.replace(segs[-1], pinned_size=active_size)
        log = dataclasses.replace(log, segments=segs)
        try:
            plan = clean_mod.clean_plan(log, as_of_ns)
        except InputError as exc:           # a segment vanished or changed under the listing: the next tick
            raise CycleSkipped(str(exc)) from None
        if not plan.changed:
            return None
        with self.writing:
            self._step("before", "apply")
            # the queue reads job bodies by (segment, offset): the segments about to change stay open as they are
            # until the loop learns what moved (Server._clean_tick), so no read meets a renamed file in between
            reader = server.queue.reader
            if reader is not None:
                reader.pin([sc.path for sc in plan.changed])
            try:
                try:
                    clean_mod.apply_plan(plan, locks="read", hook=self._step)
                except (InputError, LogBusy) as exc:    # before anything is renamed: the log changed, or a reader
                    raise CycleSkipped(str(exc)) from None      # holds read.lock (the next tick tries again)
            except Exception as exc:
                # a cycle that failed or stopped after renaming some segments: those moved all the same; the
                # others are unpinned
                if reader is not None:
                    exc.wqtool_moved = [(sc.path, sc.action, sc.drops) for sc in plan.changed
                                        if reader.replaced(sc.path)]
                    reader.unpin([sc.path for sc in plan.changed])
                raise
        return plan.report_doc(), [(sc.path, sc.action, sc.drops) for sc in plan.changed]


class Flag:
    """``threading.Event``'s set / is_set / wait, on a ``_thread`` lock (held while the flag is down): what the
    start-up and the cleaner need of an event, without importing threading before serve's first reply."""

    __slots__ = ("_down",)

    def __init__(self):
        self._down = _thread.allocate_lock()
        self._down.acquire()

    def set(self) -> None:
        try:
            self._down.release()
        except RuntimeError:        # (set already)
            pass

    def is_set(self) -> bool:
        return not self._down.locked()

    def wait(self) -> None:
        with self._down:
            pass


def _core_init():
    """``_proto.core_run`` once the C module knows queue.py's classes, the row layout and the constants (the rules
    stay in queue.py and handlers.py: _core.c takes only what they would do, else the request is theirs); None
    when the C modules are not built or ``WQTOOL_PURE_PYTHON`` is set."""
    from . import conn as conn_mod, queue as q
    from ...engine.workq import jobtable as jt
    c = wire._c
    if c is None or q._kernel is None or not hasattr(c, "core_run"):
        return None
    c.core_init({
        "Entry": q.Entry, "FewSorted": q.FewSorted, "WorkQueue": q.WorkQueue, "JobTable": q._kernel.JobTable,
        "K_STATE": jt.K_STATE, "K_ATT": jt.K_ATT, "K_MA": jt.K_MA, "K_RES": jt.K_RES, "K_TTR": jt.K_TTR,
        "ROW_LEN": len(jt.ROW), "AT_SHIFT": q._AT_SHIFT, "SEQ_BITS": q._SEQ_BITS, "R_TTL": q.R_TTL, "R_TTR": q.R_TTR,
        "IN_READY": q.IN_READY, "IN_NONE": q.IN_NONE, "NOWHERE": q.NOWHERE, "HARD_ATTEMPTS": q.MAX_HARD_ATTEMPTS,
        "FS_LIMIT": q.FewSorted.LIMIT, "OUT_HIGH": conn_mod.OUT_HIGH, "MAX_READ": conn_mod.MAX_READ,
        "MAX_WAIT": wire.MAX_WAIT_MS, "OK": wire.OK, "TIMEOUT": wire.TIMEOUT, "NOT_FOUND": wire.NOT_FOUND,
        "log_record": Server._log_record, "Appender_append": Appender.append, "TURN": conn_mod.TURN,
        "K_SEG": jt.K_SEG, "K_OFF": jt.K_OFF, "queue_module": q})
    return c.core_run


_CORE = _core_init()
_CORE_MOD = wire._c if _CORE is not None else None


def check_loop_choice() -> str:
    """``WQTOOL_SERVE_LOOP``, checked (UsageError) without importing anything."""
    want = os.environ.get("WQTOOL_SERVE_LOOP", "")
    if want not in ("", "asyncio", "uvloop"):
        raise UsageError(f"WQTOOL_SERVE_LOOP: expected asyncio or uvloop, got {want!r}")
    return want


def event_loop_factory():
    """(name, loop factory): uvloop's when it is installed (a default dependency where it has wheels), else
    asyncio's own. ``WQTOOL_SERVE_LOOP=asyncio`` picks asyncio's even so (``uvloop`` requires it)."""
    want = check_loop_choice()
    import asyncio
    if want != "asyncio":
        try:
            import uvloop
        except ImportError:
            if want == "uvloop":
                raise UsageError("WQTOOL_SERVE_LOOP=uvloop: uvloop is not installed (pip install uvloop)") from None
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


def serve(opts: ServeOptions) -> None:
    """Run the server until SIGTERM/SIGINT (a clean stop returns). StartRefused, LogBusy, UsageError propagate."""
    import asyncio
    name, factory = event_loop_factory()
    srv = Server(opts)
    srv.loop_name = name
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(srv.run())


def run_server(srv: Server, factory=None) -> bool | None:
    """The lean start's run (``wqtool.server.prebind.lean``): None when the CLI must report how the server ended —
    before it listened (the CLI then runs and reports why, as always), or on an error after it listened, which is
    handed to the CLI (``prebind.hand_over``) so that its funnel reports it with the exit code of its table."""
    try:
        if srv.opts.cmdlog_path:
            srv.open_log()          # (a log refused, a lock held: nothing listens yet)
        if factory is None:         # serving while the event loop is imported (early.py)
            srv.loop_name, factory = srv.start_early()
        import asyncio
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(srv.run())
        return True                 # served, then a clean stop (SIGTERM / SIGINT)
    except BaseException as exc:
        if srv._early is not None:          # (stopped before the asyncio loop's signal handlers: early.py's go)
            srv._early.restore_signals()
        if not srv.listeners and not srv.served_early:      # nothing was served: the CLI runs and reports it
            if srv.locks is not None:
                srv.locks.release()
            if srv.queue.reader is not None:
                srv.queue.reader.close()
            return None
        if isinstance(exc, SystemExit):
            raise
        prebind.hand_over(exc)
        return None
