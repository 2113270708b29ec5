"""The priority-FIFO daemon — per the unimplemented libfastjournal design (m2osw/fastjournal is a README only; no
upstream daemon, protocol implementation or file exists). It speaks the design's ``FJ`` / ``JR`` messages over TCP
(``wqtool.engine.fastjournal.wire``), applies the FIFO's rules (``engine.fastjournal.fifo``) and journals every
change through the engine's writer (``JournalAppender``) **before** any reply that could depend on it is sent:
replies wait until every change made before them is written (and fsynced with ``sync="full"``), in batches
shared by all connections (group commit). Start-up replays the journal (``engine.fastjournal.verify``): a torn
tail of the newest segment is truncated (those bytes were never acknowledged) after they were copied to a
quarantine beside the journal (``<dir>.quarantine-<stamp>/<segment>@<offset>-<end>.bin``, as ``wqtool repair``
keeps what it cuts; fsynced before the cut, the cut fsynced too), and one log line names file, offset, byte count
and quarantine file; corruption or an invalid history stops the start with the finding.

Functions (the design's numbers; NEXT and PING are the README's unnumbered requests, numbered here):

* ``SET`` (2): key = the resource's uri, value = type BUFFER ``fifo_value`` (priority u8, key_start_date u64 µs),
  timestamp = the request's (the newest wins); the overwrite flag (bit 5) must be set to update an existing
  entry (else error "exists"). Reply: the timestamp now stored (a stale SET is acknowledged and changes nothing).
* ``GET`` (3): key = a uri -> that entry (error "not found"; "deleted" with the tombstone's timestamp when a
  plain delete removed it, so a client can tell that a SET not newer would change nothing); with flag 6 an entry being worked on is skipped
  (error "worked on"); with a timeout (flag 3) the entry is marked worked on for that many µs (flag 4 needed to
  extend an existing mark). An empty key is ``NEXT`` over every domain.
* ``NEXT`` (5): key = a domain (empty: any) -> the next due entry, marked worked on when a timeout is given. With
  nothing due the reply has no pair and, when an entry will become due, its time in the timeout field ("next job
  at T"); without it: "nothing to do".
* ``DELETE`` (4): key = uri, timestamp = the version handed out; removes the entry unless a newer SET replaced it,
  leaving a tombstone; with the overwrite flag: removed completely, no tombstone.
* ``PING`` (6): a reply with the server's time; ``QUIT`` (1): a reply, then the connection is closed; ``NOP`` (0)
  is never sent (error).

Replies to GET / NEXT set the data flag (bit 10): a u16 count and the pairs follow (the value when the request
set flag 10); the reply timestamp is the entry's, the timeout field its worked-on deadline.
"""
from __future__ import annotations

import asyncio
import collections
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ...engine.fastjournal.fifo import Entry, Fifo, Outcome
from ...engine.fastjournal.reader import discover
from ...engine.fastjournal.verify import FjjRun
from ...engine.fastjournal.wire import (BadRequest, Reply, Request, WireError, decode_request, encode_reply,
                                        frame_request)
from ...engine.fastjournal.writer import (JournalAppender, delete_request, encode_record, fifo_value, mark_request,
                                          set_request, take_lock)
from ...engine.findings import ERROR, Verdict
from ...errors import InputError
from ...formats.fastjournal import (DEFAULT_SEGMENT_SIZE, FIFO_VALUE_SIZE, FJ_VERSION, FLAG_DATA, FLAG_LISTEN,
                                    FLAG_OVERWRITE, FLAG_TIMEOUT, FLAG_UPDATE_TIMEOUT, FLAG_WORKED_ON, QUERY_MASK, FjError,
                                    Function, ValueType)

#: Replies queued on one connection before it stops reading (backpressure).
MAX_QUEUED = 4096
_VALUE = int(ValueType.BUFFER)


def now_us() -> int:
    return time.time_ns() // 1000


def _log_stderr(message: str) -> None:
    sys.stderr.write(f"fastjournal: {message}\n")
    sys.stderr.flush()


class FastJournalServer:
    """One journal directory served on one port (see the module docstring)."""

    def __init__(self, journal_dir: str, *, sync: str = "full", segment_size: int = DEFAULT_SEGMENT_SIZE,
                 clock: Callable[[], int] | None = None, track_keys: bool = False,
                 log: Callable[[str], None] | None = None):
        self.dir = journal_dir
        self.log = log or _log_stderr
        self.sync = sync
        self.segment_size = segment_size
        self.clock = clock or now_us
        self.fifo: Fifo | None = None
        self.appender: JournalAppender | None = None
        self.port: int | None = None
        self.replayed = 0
        self.truncated: tuple[str, int] | None = None
        self.failed: BaseException | None = None
        self.stats = collections.Counter()          # requests by function
        self.keys: collections.Counter | None = collections.Counter() if track_keys else None   # (function, key)
        self._waiting: set = set()
        self._conns: set = set()

    # ---------------------------------------------------------------- start-up: lock, replay, open for append
    def open(self) -> "FastJournalServer":
        os.makedirs(self.dir, exist_ok=True)
        lock = take_lock(self.dir)
        try:
            journal = discover([self.dir])[0]
            run = FjjRun(journal, self.clock() * 1000, limit=None)
            for _ in run.events():
                pass
            rep = run.report
            if rep.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY):
                first = next((f for f in rep.findings if f.severity == ERROR and f.verdict == rep.verdict), None)
                raise InputError(f"refusing to start on a journal with {rep.verdict.label.lower()}"
                                 + (f": {first.location()}: {first.code} {first.message}" if first else "")
                                 + " (wqtool verify / pack --salvage)", path=self.dir)
            if rep.verdict == Verdict.TORN_TAIL and rep.last_good is not None:
                self.truncated = rep.last_good
            self.fifo = rep.state.fifo
            self.fifo.rebuild()
            self.replayed = rep.records
            self.appender = JournalAppender(self.dir, segment_size=self.segment_size, sync=self.sync,
                                            truncate_at=self.truncated, lock=lock, now_ns=self.clock() * 1000)
            for cut in self.appender.cuts:
                self.log(f"start-up: cut a torn tail: file={cut.path} offset={cut.offset} bytes={cut.nbytes} "
                         f"quarantine={cut.quarantine}")
        except BaseException:
            lock.release()
            raise
        return self

    # ---------------------------------------------------------------- one request
    def _journal(self, request: bytes, now: int) -> None:
        self.appender.append(encode_record(now, request))

    def _entry_reply(self, req: Request, e: Entry, now: int) -> Reply:
        value = fifo_value(e.priority, e.key_start_date) if req.flags & FLAG_DATA else None
        return Reply(req.identifier, 0, e.timestamp, e.worked_until if e.worked_until > now else None, b"",
                     [(e.uri, _VALUE if value is not None else None, value)])

    def _mark(self, e: Entry, duration: int, now: int) -> None:
        self.fifo.mark(e.uri, now + duration)
        self._journal(mark_request(e.uri, e.timestamp, duration), now)

    def handle(self, req: Request) -> tuple[Reply, bool]:
        """Apply one request; (reply, close the connection after it)."""
        now = self.clock()
        f = req.function
        self.stats[f] += 1
        if self.keys is not None:
            self.keys[(f, req.key)] += 1
        err = lambda text: Reply(req.identifier, 0, now, None, text)  # noqa: E731
        if req.version != FJ_VERSION:
            return err(FjError.VERSION), False
        if req.flags & FLAG_LISTEN:
            return err(FjError.FLAG), False
        if req.flags & QUERY_MASK:
            return err(FjError.QUERY), False
        fifo = self.fifo
        if f == Function.SET:
            if not req.key:
                return err(FjError.KEY), False
            if req.value_type != _VALUE or req.value is None or len(req.value) != FIFO_VALUE_SIZE:
                return err(FjError.VALUE), False
            if req.flags & FLAG_TIMEOUT:
                return err(FjError.FLAG), False
            prio, ksd = req.value[0], int.from_bytes(req.value[1:], "big")
            over = bool(req.flags & FLAG_OVERWRITE)
            out = fifo.set(req.key, prio, ksd, req.timestamp, overwrite=over)
            if out is Outcome.EXISTS:
                return err(FjError.EXISTS), False
            if out.changes:
                self._journal(set_request(req.key, prio, ksd, req.timestamp, overwrite=over), now)
            e = fifo.get(req.key)
            ts = e.timestamp if e is not None else fifo.tombstones.get(req.key, req.timestamp)
            return Reply(req.identifier, FLAG_OVERWRITE if out is Outcome.UPDATED else 0, ts), False
        if f == Function.DELETE:
            if not req.key:
                return err(FjError.KEY), False
            complete = bool(req.flags & FLAG_OVERWRITE)
            out = fifo.delete(req.key, req.timestamp, complete=complete)
            if out is Outcome.NOT_FOUND:
                return err(FjError.NOT_FOUND), False
            if out.changes:
                self._journal(delete_request(req.key, req.timestamp, complete=complete), now)
            e = fifo.get(req.key)
            return Reply(req.identifier, 0, e.timestamp if e is not None else req.timestamp), False
        if f == Function.GET and req.key:
            e = fifo.get(req.key)
            if e is None:
                t = fifo.tombstones.get(req.key)
                if t is not None:       # deleted: the tombstone's timestamp (a SET not newer changes nothing)
                    return Reply(req.identifier, 0, t, None, FjError.DELETED, []), False
                return Reply(req.identifier, 0, now, None, FjError.NOT_FOUND, []), False
            busy = e.worked_on(now)
            if busy and req.flags & FLAG_WORKED_ON:
                return Reply(req.identifier, 0, e.timestamp, e.worked_until, FjError.WORKED_ON, []), False
            if req.flags & FLAG_TIMEOUT:
                if busy and not req.flags & FLAG_UPDATE_TIMEOUT:
                    return Reply(req.identifier, 0, e.timestamp, e.worked_until, FjError.WORKED_ON, []), False
                self._mark(e, req.timeout, now)
            return self._entry_reply(req, e, now), False
        if f == Function.GET or f == Function.NEXT:
            domain = req.key if f == Function.NEXT and req.key else None
            e = fifo.next(now, domain)
            if e is None:
                t = fifo.next_due(now, domain)
                return Reply(req.identifier, 0, now, t, b"", []), False
            if req.flags & FLAG_TIMEOUT:
                self._mark(e, req.timeout, now)
            return self._entry_reply(req, e, now), False
        if f == Function.PING:
            return Reply(req.identifier, 0, now), False
        if f == Function.QUIT:
            return Reply(req.identifier, 0, now), True
        return err(FjError.NOP), False

    def barrier(self) -> int:
        return self.appender.appended

    # ---------------------------------------------------------------- asyncio
    async def run(self, host: str, port: int, *, ready: Callable[[int], None] | None = None,
                  stop: asyncio.Event | None = None) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._kick = asyncio.Event()
        self._stop = stop or asyncio.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="fastjournal-write")
        server = await loop.create_server(lambda: _Conn(self), host, port)
        self.port = server.sockets[0].getsockname()[1]
        flusher = loop.create_task(self._flush_loop())
        try:
            if ready is not None:
                ready(self.port)
            await self._stop.wait()
        finally:
            server.close()
            for c in list(self._conns):
                c.transport.abort()
            flusher.cancel()
            try:
                await flusher
            except (asyncio.CancelledError, Exception):
                pass
            self._pool.shutdown(wait=True)
            self.appender.close()

    def kick(self) -> None:
        self._kick.set()

    async def _flush_loop(self) -> None:
        loop = self._loop
        while True:
            await self._kick.wait()
            self._kick.clear()
            batch = self.appender.take()
            if batch is None:
                continue
            try:
                await loop.run_in_executor(self._pool, self.appender.write, *batch)
            except Exception as exc:     # noqa: BLE001 — nothing unwritten is ever acknowledged: stop serving
                self.failed = exc
                for c in list(self._conns):
                    c.transport.abort()
                self._stop.set()
                return
            durable = self.appender.durable
            for c in list(self._waiting):
                c.drain(durable)


class _Conn(asyncio.Protocol):
    def __init__(self, server: FastJournalServer):
        self.server = server
        self.buf = bytearray()
        self.out: collections.deque = collections.deque()
        self.closing = False
        self.paused = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.server._conns.add(self)

    def connection_lost(self, exc) -> None:
        self.server._conns.discard(self)
        self.server._waiting.discard(self)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        s = self.server
        buf = self.buf
        buf += data
        pos = 0
        while not self.closing:
            try:
                n = frame_request(buf, pos)
            except WireError as exc:
                ident = int.from_bytes(buf[pos + 6:pos + 8], "big") if len(buf) - pos >= 8 else 0
                self.queue(encode_reply(Reply(ident, 0, s.clock(), None, exc.error)), s.barrier(), True)
                pos = len(buf)
                break
            if n is None:
                break
            try:
                req = decode_request(buf, pos, n)
            except BadRequest as exc:
                reply, close = Reply(exc.identifier, 0, s.clock(), None, exc.error), False
            else:
                reply, close = s.handle(req)
            pos += n
            self.queue(encode_reply(reply), s.barrier(), close)
        del buf[:pos]

    def queue(self, data: bytes, seq: int, close: bool) -> None:
        s = self.server
        self.out.append((seq, data, close))
        if close:
            self.closing = True
        if seq > s.appender.durable:
            s.kick()
        self.drain(s.appender.durable)

    def drain(self, durable: int) -> None:
        out = self.out
        chunks = []
        close = False
        while out and out[0][0] <= durable:
            _seq, data, c = out.popleft()
            chunks.append(data)
            if c:
                close = True
                out.clear()
                break
        if chunks and not self.transport.is_closing():
            self.transport.write(b"".join(chunks))
        if close:
            self.transport.close()
        if out:
            self.server._waiting.add(self)
            if len(out) > MAX_QUEUED and not self.paused:
                self.paused = True
                self.transport.pause_reading()
        else:
            self.server._waiting.discard(self)
            if self.paused:
                self.paused = False
                self.transport.resume_reading()


# ---------------------------------------------------------------- entry points
def serve(journal_dir: str, host: str = "127.0.0.1", port: int = 0, *, sync: str = "full",
          segment_size: int = DEFAULT_SEGMENT_SIZE, ready: Callable[[int], None] | None = None,
          clock: Callable[[], int] | None = None, handle_signals: bool = True,
          log: Callable[[str], None] | None = None) -> FastJournalServer:
    """Serve ``journal_dir`` on ``host:port`` until SIGTERM / SIGINT (blocking). ``ready(port)`` is called once
    the port listens (port 0: an ephemeral one). Returns the stopped server."""
    srv = FastJournalServer(journal_dir, sync=sync, segment_size=segment_size, clock=clock, log=log).open()

    async def main():
        stop = asyncio.Event()
        if handle_signals and threading.current_thread() is threading.main_thread():
            import signal
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
        await srv.run(host, port, ready=ready, stop=stop)

    try:
        asyncio.run(main())
    except BaseException:
        if srv.appender is not None and srv.appender.lock.fds:
            srv.appender.close()
        raise
    return srv


class Running:
    """A server running in a background thread (tests, the benchmark): ``port``, ``server``, ``stop()``."""

    def __init__(self, journal_dir: str, host: str = "127.0.0.1", port: int = 0, *, timeout: float = 10.0, **kw):
        self.server = FastJournalServer(journal_dir, **kw).open()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

        def target():
            async def main():
                self._loop = asyncio.get_running_loop()
                self._stop = asyncio.Event()
                await self.server.run(host, port, ready=lambda p: self._ready.set(), stop=self._stop)
            try:
                asyncio.run(main())
            except BaseException as exc:     # noqa: BLE001 — reported by stop()
                self._error = exc
                self._ready.set()

        self._thread = threading.Thread(target=target, name="fastjournal-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the fastjournal server did not start in time")
        if self._error is not None:
            raise self._error
        self.port = self.server.port

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the fastjournal server did not stop in time")
        if self._error is not None:
            raise self._error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
