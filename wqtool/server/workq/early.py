"""The first requests, answered before asyncio is imported (``run_early``, the lean start only).

Where a start's time went (exec to the first reply on an empty log, ``python -X importtime`` and the start-up
marks, load average 3.5-5): the interpreter 16-30 ms, the engine's modules 35-50 ms, asyncio 55-60 ms (with
concurrent.futures, logging and ssl, which it imports), uvloop 4 ms — asyncio was the largest single step, and on
a loaded machine every one of them stretches 3-6 fold. So the lean start (``prebind.lean``) opens the log,
prints ``Listening`` and serves on the socket ``prebind.early`` bound with this small epoll loop, while a thread
imports uvloop / asyncio; once that import is done the loop stops at its next iteration and the asyncio loop takes
every connection over (``Server.start``: ``handover``) with what was buffered on it, and the callbacks still pending
(a connection's next turn, a group commit), in their order. It did wait for a moment with no callback pending: two
clients pipelining adds from the start never gave it one, and the hand-over, with the stop a SIGTERM asked for, the
slow-loris sweep and cleaning, waited until they stopped (8.5 s after the signal in a 9 s run).

The same ``Conn`` objects, handlers, queue and group commit run here: this module gives them the part of the
asyncio loop and transport interfaces they use (``call_soon``, ``call_later`` with ``cancel``,
``call_soon_threadsafe``; ``write``, ``pause_reading`` / ``resume_reading``, ``close``, ``abort``,
``get_extra_info``, write-buffer limits with ``pause_writing`` / ``resume_writing``), with asyncio's ordering:
callbacks run in the order they were scheduled, ``connection_lost`` is called from the loop, never from inside a
call. Timers still pending at the hand-over are armed again on the asyncio loop (their handles forward
``cancel``). The interval fsync has a tick of its own here (``Server._early_sync``: inline, there is no worker
thread); cleaning, the slow-loris sweep and the asyncio loop's fsync tick are armed by ``Server.start`` after the
hand-over; a SIGTERM / SIGINT that arrives meanwhile is kept and acted on by the asyncio loop once it runs.

Imports: select, heapq, and _signal and _socket rather than signal and socket (their enums): nothing
the first replies do not need. Until the hand-over the sockets are ``_socket.socket`` objects
(``prebind.take(raw=True)``, ``_socket.socket._accept``); ``handover`` turns each into a ``socket.socket`` for
asyncio's transports.
"""
from __future__ import annotations

import _heapq as heapq        # (heapq's C module, without its Python wrapper)
import os
import select
import sys
import time
from _collections import deque      # (collections.deque; the collections package: not before the first reply)

import _signal as signal        # (signal's enums: not needed to answer the first requests)
import _socket                  # (likewise socket.py's: the accepted sockets are _socket.socket until the hand-over)

from .wire import _c as _C      # (the C module of wire.py's parser, or None: WQTOOL_PURE_PYTHON, no build)

_IN, _OUT = select.EPOLLIN, select.EPOLLOUT
#: how often (s) the loop looks whether the import is done, when nothing else wakes it
POLL_S = 0.005
#: the import of the event loop starts once the loop has had nothing to do for IDLE_S (the first requests are
#: answered first: that import's CPU, taken before them, delayed them), or DEFER_MAX_S after it began serving
IDLE_S = 0.003
DEFER_MAX_S = 0.1
#: per readiness of the listening socket (both loops): the live connections taken, and the connections taken in all
#: (those closed by their peer before a byte cost a system call or three each: ``accept_live``)
ACCEPT_BATCH = 64
ACCEPT_MAX = 1024
RECV = 262_144
_PEEK = _socket.MSG_PEEK | _socket.MSG_DONTWAIT


def accept_live(lsock, max_live: int = ACCEPT_BATCH, max_total: int = ACCEPT_MAX) -> tuple[list[int], int, int]:
    """The connections waiting on the listening socket ``lsock`` (non-blocking), accepted until ``max_live`` are
    live, ``max_total`` were taken, or none is left -> (their descriptors, how many were closed at once, the errno of
    the accept that failed or 0). A connection its peer closed or reset before sending a byte (a 1-byte MSG_PEEK
    reads 0, or fails) has nothing to serve: it is closed here, not handed to the loop as a socket, a transport and
    a task. A client that opens and drops connections in a loop (a TCP health check does the same) filled the
    accept queue with thousands of them, and a new client's first reply waited 230-300 ms behind them
    (bench_serve_peer.py's hostile row; 64 per loop iteration). ``_proto.accept_live`` is this in C."""
    c = _C
    if c is not None:
        return c.accept_live(lsock.fileno(), max_live, max_total)
    live: list[int] = []
    closed = taken = 0
    while taken < max_total and len(live) < max_live:
        try:
            fd, _addr = lsock._accept()
        except BlockingIOError:
            break
        except ConnectionAbortedError:
            taken += 1
            continue
        except OSError as exc:
            return live, closed, exc.errno or 0
        taken += 1
        s = _socket.socket(lsock.family, lsock.type, lsock.proto, fd)
        try:
            gone = not s.recv(1, _PEEK)
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:
            s.close()
            closed += 1
        else:
            live.append(s.detach())
    return live, closed, 0


class Handle:
    """A callback scheduled on the early loop; after the hand-over, ``real`` is the asyncio loop's handle."""

    __slots__ = ("when", "cb", "args", "cancelled", "real")

    def __init__(self, when: float, cb, args):
        self.when, self.cb, self.args = when, cb, args
        self.cancelled = False
        self.real = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.real is not None:
            self.real.cancel()

    def __lt__(self, other: "Handle") -> bool:
        return self.when < other.when


class Transport:
    """A non-blocking socket with asyncio's transport interface, as far as ``Conn`` uses it."""

    __slots__ = ("loop", "sock", "fd", "conn", "out", "high", "low", "proto_paused", "reading", "eof", "closing",
                 "closed", "mask")

    def __init__(self, loop: "EarlyLoop", sock, conn):
        self.loop, self.sock, self.fd, self.conn = loop, sock, sock.fileno(), conn
        self.out = bytearray()
        self.high, self.low = 65536, 16384
        self.proto_paused = False
        self.reading = True
        self.eof = False
        self.closing = False
        self.closed = False
        self.mask = 0

    def get_extra_info(self, name: str, default=None):
        if name == "socket":
            return self.sock
        if name == "peername":
            try:
                return self.sock.getpeername()
            except OSError:
                return default
        return default

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        self.high = 65536 if high is None else high
        self.low = self.high // 4 if low is None else low

    def is_closing(self) -> bool:
        return self.closing or self.closed

    def write(self, data) -> None:
        if self.closing or self.closed or not data:
            return
        if self.loop.probe is not None and self.loop.start_import is not None:
            self.loop.write_probe()
        if not self.out:
            try:
                n = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError as exc:
                self._lost(exc)
                return
            if n == len(data):
                return
            self.out += memoryview(data)[n:]
            self.loop.update(self)
        else:
            self.out += data
        if not self.proto_paused and len(self.out) > self.high:
            self.proto_paused = True
            self.conn.pause_writing()

    def pause_reading(self) -> None:
        self.reading = False
        self.loop.update(self)

    def resume_reading(self) -> None:
        self.reading = True
        self.loop.update(self)

    def close(self) -> None:
        if self.closing or self.closed:
            return
        self.closing = True
        if not self.out:
            self._lost(None)
        else:
            self.loop.update(self)

    def abort(self) -> None:
        self.out.clear()
        self.closing = True
        self._lost(None)

    def _lost(self, exc) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.forget(self)
        try:
            self.sock.close()
        except OSError:
            pass
        self.loop.call_soon(self.conn.connection_lost, exc)

    # the loop's side
    def readable(self) -> None:
        try:
            data = self.sock.recv(RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.out.clear()
            self._lost(exc)
            return
        if data:
            self.conn.data_received(data)
            return
        self.eof = True
        self.loop.update(self)
        if not self.conn.eof_received() and not self.closed:
            self.close()

    def writable(self) -> None:
        try:
            n = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.out.clear()
            self._lost(exc)
            return
        del self.out[:n]
        if self.proto_paused and len(self.out) <= self.low:
            self.proto_paused = False
            self.conn.resume_writing()
        if not self.out:
            if self.closing:
                self._lost(None)
            else:
                self.loop.update(self)


class EarlyLoop:
    """The loop of the first requests (module docstring): one epoll set, a ready queue, a timer heap."""

    def __init__(self, lsock, factory, start_import=None, closed_unused=None):
        self.lsock, self.factory = lsock, factory
        #: called with how many connections ``accept_live`` closed unused (the server counts them as accepted)
        self.closed_unused = closed_unused
        #: starts the thread that imports the event loop (``Server.start_early``), called once the loop is idle
        self.start_import = start_import
        #: ``WQTOOL_SERVE_STARTUP_PROBE=FILE`` (tests, measurements): at the first reply, the CPU used so far and
        #: the modules imported are written to FILE (``write_probe``) — and again at each reply until the event
        #: loop's import starts (requests sent together are answered before it: the file then tells what they needed)
        self.probe = os.environ.get("WQTOOL_SERVE_STARTUP_PROBE") or None
        self.probed = None          # the probe file, once written (``handover`` adds a line)
        self.ep = select.epoll()
        self.ready: deque = deque()
        self.timers: list[Handle] = []
        self.threadsafe: deque = deque()
        self.transports: dict[int, Transport] = {}
        self.signals: list[int] = []
        self.old_signals: dict = {}     # the handlers ``run`` replaced, until ``restore_signals``
        self.ep.register(lsock.fileno(), _IN)

    # the asyncio loop's interface (the part the server uses before ``start``)
    def time(self) -> float:
        return time.monotonic()

    def call_soon(self, cb, *args) -> Handle:
        h = Handle(0.0, cb, args)
        self.ready.append(h)
        return h

    def call_later(self, delay: float, cb, *args) -> Handle:
        h = Handle(time.monotonic() + max(0.0, delay), cb, args)
        heapq.heappush(self.timers, h)
        return h

    def call_soon_threadsafe(self, cb, *args) -> Handle:
        h = Handle(0.0, cb, args)
        self.threadsafe.append(h)          # (deque.append is atomic; the loop polls every POLL_S)
        return h

    def is_closed(self) -> bool:
        return False

    # transports
    def update(self, t: Transport) -> None:
        if t.closed:
            return
        mask = (_IN if t.reading and not t.eof and not t.closing else 0) | (_OUT if t.out else 0)
        if mask != t.mask:
            if t.mask == 0:
                self.ep.register(t.fd, mask)
            elif mask == 0:
                self.ep.unregister(t.fd)
            else:
                self.ep.modify(t.fd, mask)
            t.mask = mask

    def forget(self, t: Transport) -> None:
        self.transports.pop(t.fd, None)
        if t.mask:
            try:
                self.ep.unregister(t.fd)
            except OSError:
                pass
            t.mask = 0

    def _accept(self) -> None:
        lsock = self.lsock                  # (an _socket.socket: prebind.take(raw=True))
        live, closed, _err = accept_live(lsock)   # (an error, out of descriptors: the asyncio loop's acceptor reports it)
        if closed and self.closed_unused is not None:
            self.closed_unused(closed)
        for fd in live:
            sock = _socket.socket(lsock.family, lsock.type, lsock.proto, fd)
            sock.setblocking(False)
            conn = self.factory()
            t = Transport(self, sock, conn)
            self.transports[t.fd] = t
            self.update(t)
            conn.connection_made(t)

    def write_probe(self) -> None:
        """At a reply (the first, and each until the import starts): the process's CPU (ms, every thread), each
        thread's (from /proc, ms), and the modules imported so far, one a line, to the ``probe`` file."""
        import gc
        path = self.probed = self.probe
        lines = [f"cpu_ms {time.process_time() * 1000:.2f}", f"import_started {self.start_import is None}",
                 f"gc_enabled {gc.isenabled()}"]
        try:
            for tid in sorted(os.listdir("/proc/self/task")):
                with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                    lines.append(f"thread {tid} {int(f.read().split()[0]) / 1e6:.2f}")
        except OSError:
            pass
        lines += sorted(sys.modules)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")

    def _on_signal(self, sig, _frame) -> None:
        self.signals.append(sig)

    def restore_signals(self, keep=()) -> None:
        """Put back the SIGTERM / SIGINT handlers ``run`` replaced, but for ``keep`` (the signals the asyncio loop
        handles now). ``run`` leaves its own in place when it stops for the hand-over: a stop asked for before the
        asyncio loop's handlers are installed (``Server.run``, after ``Server.start``) is still noted in
        ``signals`` and acted on then, not the default action's abrupt end."""
        old, self.old_signals = self.old_signals, {}
        for sig, handler in old.items():
            if sig not in keep:
                signal.signal(sig, handler)

    def run(self, done) -> None:
        """Serve until ``done`` (a ``threading.Event`` or ``server.Flag``) is set, then stop at the top of the next
        iteration: the callbacks still pending and the timers stay, for the hand-over (``handover``); so do the
        signal handlers (``restore_signals``)."""
        old = self.old_signals
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                old[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):       # (not the main thread)
                pass
        switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)           # the importing thread lets go of the GIL soon after a request
        ready, timers, lfd, transports = self.ready, self.timers, self.lsock.fileno(), self.transports
        hold = os.environ.get("WQTOOL_SERVE_EARLY_HOLD")   # (tests: no hand-over while this file exists)
        began = busy = time.monotonic()
        try:
            while True:
                if done.is_set() and not (hold and os.path.exists(hold)):
                    break
                if ready or self.threadsafe:
                    timeout = 0.0
                elif timers:
                    timeout = min(POLL_S, max(0.0, timers[0].when - time.monotonic()))
                else:
                    timeout = POLL_S
                events = self.ep.poll(timeout)
                if self.start_import is not None:
                    now = time.monotonic()
                    if events or ready:
                        busy = now
                    if now - busy >= IDLE_S or now - began >= DEFER_MAX_S:
                        start, self.start_import = self.start_import, None
                        start()                 # idle (or served long enough): the event loop's import may run
                for fd, ev in events:
                    if fd == lfd:
                        self._accept()
                        continue
                    t = transports.get(fd)
                    if t is None:
                        continue
                    if ev & (_OUT | select.EPOLLERR | select.EPOLLHUP) and t.out:
                        t.writable()
                    if ev & (_IN | select.EPOLLERR | select.EPOLLHUP) and not t.closed and t.mask & _IN:
                        t.readable()
                while self.threadsafe:
                    ready.append(self.threadsafe.popleft())
                now = time.monotonic()
                while timers and (timers[0].cancelled or timers[0].when <= now):
                    h = heapq.heappop(timers)
                    if not h.cancelled:
                        ready.append(h)
                for _ in range(len(ready)):
                    h = ready.popleft()
                    if not h.cancelled:
                        h.cb(*h.args)
        except BaseException:
            self.restore_signals()
            raise
        finally:
            sys.setswitchinterval(switch)
            for t in transports.values():
                if t.mask:
                    self.ep.unregister(t.fd)
                    t.mask = 0
            self.ep.unregister(lfd)
            self.ep.close()


async def handover(early: EarlyLoop, loop) -> None:
    """The asyncio loop takes over the early loop's timers and connections (``Server.start``)."""
    import socket
    now = time.monotonic()
    for h in early.timers:
        if not h.cancelled:
            h.real = loop.call_later(max(0.0, h.when - now), h.cb, *h.args)
    early.timers = []
    for t in list(early.transports.values()):
        if t.closed:
            continue
        conn = t.conn
        conn.handed_over = True             # connection_made: only the transport changes
        sock = socket.socket(fileno=t.sock.detach())     # (asyncio's transports take a socket.socket)
        try:
            transport, _ = await loop.connect_accepted_socket(lambda c=conn: c, sock)
        except OSError as exc:
            sock.close()
            conn.connection_lost(exc)
            continue
        if t.out:
            transport.write(bytes(t.out))
        if t.closing:
            transport.close()
        elif conn.paused_write and t.proto_paused:
            conn.paused_write = False       # the new transport pauses it again if its buffer fills
            loop.call_soon(conn._continue)
    early.transports = {}
    # what the early loop had scheduled runs next, in order, once every connection has its asyncio transport (a
    # connection's next turn writes to it); a handle a caller keeps forwards ``cancel`` (``Handle.real``)
    while early.ready or early.threadsafe:
        h = (early.ready or early.threadsafe).popleft()
        if not h.cancelled:
            h.real = loop.call_soon(h.cb, *h.args)
    if early.probed:
        import gc
        with open(early.probed, "a", encoding="utf-8") as f:
            f.write(f"handover gc_enabled {gc.isenabled()}\n")
