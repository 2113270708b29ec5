"""One client connection: upstream's framing (int/prot ParseCmd, int/server clientLoop) as an asyncio Protocol.

Requests on a connection are answered strictly in order; a blocking command (lease, run, result) stops the
parsing of what follows until it is answered. Every reply is tagged with the log position (LSN) of the records
applied before it and leaves only once the server has written them (and fsynced them under
``-cmdlog-sync always``), so no client ever sees state that a crash could take back.

Bounded everything: a line longer than the per-command budget (MaxRead, 1,058,576 bytes) closes the connection
as upstream's LimitedReader does; a body is read only up to what is left of that budget; unread input beyond
one command's budget stops reading from the socket; replies waiting to be sent stop the parsing of further
requests once they pass ``OUT_HIGH``; the transport's buffer pauses both. A half-closed client (EOF) still gets
the replies to everything it sent, then the connection closes; a vanished one (reset) cancels its waiting
lease/result so no job is leased to nobody; its waiting run goes on until the run's timeout, as upstream's.
"""
from __future__ import annotations

import _socket as socket     # (constants only: socket.py, with its enums, is not imported before the first reply)
import time
from _collections import deque      # (collections.deque, without importing the collections package)

from ...errors import WqError
from . import wire
from .queue import Waiter

OUT_HIGH = 1 << 20            # unsent reply bytes before this connection stops parsing requests
#: requests handled per turn of one connection: a client that pipelines thousands of requests in one read (256 KB
#: of adds) then waits for the next loop iteration, and every other connection (a probe, a lease timing out) gets
#: its turn in between — before, one read of such a client held the loop for up to 200,000 requests (OUT_HIGH of
#: 5-byte replies): a probe waited 10 s behind two flooding clients
TURN = 64
MAX_READ = wire.MAX_READ
IN_CAP = MAX_READ + (1 << 16)   # unparsed input before reading from the socket pauses


def set_sockopts(sock) -> None:
    """TCP_NODELAY and keepalive (idle 60 s, then 6 probes 10 s apart). On Linux a connection inherits them from
    the listening socket (``Server.start`` sets them there: no system calls per accepted connection — a storm of
    connections otherwise filled the accept queue and a probe's SYN waited 1 s for its retransmission)."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for opt, val in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 6)):
            if hasattr(socket, opt):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), val)
    except OSError:
        pass


class Conn:                     # an asyncio Protocol (not a subclass: asyncio is imported after the first replies)
    __slots__ = ("srv", "t", "buf", "pos", "scan", "req", "budget", "blocked", "eof", "closing", "out",
                 "out_bytes", "paused_write", "paused_read", "partial_since", "last_active", "in_process",
                 "resume_scheduled", "made", "handed_over", "make_waiter")

    def __init__(self, srv):
        self.srv = srv
        self.t = None
        self.buf = bytearray()
        self.pos = 0
        self.scan = 0
        self.req: wire.Request | None = None
        self.budget = 0
        self.blocked: Waiter | None = None
        self.eof = False
        self.closing = False
        self.out: deque = deque()          # (lsn, chunk) not yet handed to the transport
        self.out_bytes = 0
        self.paused_write = False
        self.paused_read = False
        self.partial_since: float | None = None
        self.last_active = time.monotonic()
        self.in_process = False
        self.resume_scheduled = False
        self.made: Waiter | None = None     # the waiter a blocking command just made (``execute``)
        self.handed_over = False            # early.handover: the asyncio transport replaces the early loop's
        self.make_waiter = self._make_waiter    # (bound once, not per request)

    # ---------------------------------------------------------------- asyncio callbacks
    def connection_made(self, transport) -> None:
        self.t = transport
        if self.handed_over:                # (early.py) the same connection, now on the asyncio loop
            self.handed_over = False
            transport.set_write_buffer_limits(high=OUT_HIGH)
            return          # (it reads at once, paused or not: uvloop starts reading after this call; data_received
                            # pauses it again if its unread input is over IN_CAP)
        srv = self.srv
        if len(srv.conns) >= srv.max_connections:
            srv.refused += 1
            srv.log.warn("connection refused: max connections reached", peer=self.peer,
                         max_connections=srv.max_connections)
            self.closing = True
            transport.abort()
            return
        srv.conns.add(self)
        srv.accepted += 1
        if srv.slicer is not None:
            srv.slicer.conns(len(srv.conns))
        if not srv.inherits_sockopts:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                set_sockopts(sock)
        transport.set_write_buffer_limits(high=OUT_HIGH)
        if srv.log.level <= 10:
            srv.log.debug("connection open", peer=self.peer)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        lone = self.srv.lone        # the only connection's read, all in C (_core.c lone_turn), or None
        taken = lone(self, data) if lone is not None else 0
        if taken == 1:              # answered: its records written, its replies sent
            return
        if not taken:
            self.buf += data
            self.last_active = time.monotonic()
        if self.blocked is None:    # (taken == 2: the rest of the read, inside the inline turn lone_turn began)
            self.process()
        if len(self.buf) - self.pos > IN_CAP and not self.closing:
            # (paused already: a transport that reads all the same, the asyncio one after the early loop's
            # hand-over, is paused now; it read 8 MB of a pipelining client's input when only this flag was looked at)
            self.paused_read = True
            self.t.pause_reading()

    def eof_received(self):
        self.eof = True
        if self.blocked is None and not self.closing:
            self.process()
        return True            # keep the write side open: a half-closed client still reads its replies

    def connection_lost(self, exc) -> None:
        srv = self.srv
        was_open = self in srv.conns
        srv.conns.discard(self)
        if srv.slicer is not None:
            srv.slicer.conns(len(srv.conns))
        srv.dirty.discard(self)
        self.closing = True
        if self.blocked is not None:
            srv.queue.abandon(self.blocked)     # a lease or result stops waiting; a run goes on (as upstream)
            self.blocked = None
            srv.after_change()
        if was_open:
            srv.log.debug("connection closed", peer=self.peer, error=str(exc) if exc else None)

    @property
    def peer(self) -> str:
        """HOST:PORT of the client (for log lines: worked out only when one is written)."""
        peer = self.t.get_extra_info("peername") if self.t is not None else None
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def pause_writing(self) -> None:
        self.paused_write = True

    def resume_writing(self) -> None:
        self.paused_write = False
        self.flush_out()
        if self.blocked is None and not self.closing:
            self.process()

    # ---------------------------------------------------------------- parsing
    def process(self) -> None:
        if self.in_process:
            return
        self.in_process = True
        srv = self.srv
        # the only connection, and no commit pending: its records are written (fsynced under always) when its turn
        # ends, and the replies leave at once — not one loop iteration later (a group commit with nobody to group:
        # 1 client, add -> lease -> complete, a poll of the loop and a callback less per request)
        inline = srv.inline or (len(srv.conns) == 1 and not srv._commit_scheduled)
        srv.inline = inline
        try:
            more = self._process()
        finally:
            self.in_process = False
            if inline:
                srv.inline = False
                if srv._commit_scheduled:
                    srv._commit()
        out = self.out
        if self.closing or (out and out[0][0] <= srv.durable_lsn):     # (else nothing to send yet: no call)
            self.flush_out()
        # the loop timer: re-armed by the commit this loop iteration (``Server._commit_tick``: once per iteration,
        # not once per request), or now when no commit is coming
        if not srv._commit_scheduled:
            srv.after_change()
        if more and not self.resume_scheduled:       # its turn is over: the rest at the next loop iteration
            self.resume_scheduled = True
            srv.loop.call_soon(self._continue)

    def _process(self) -> bool:  # noqa: C901 — the framing state machine, kept in one place
        """Handle what is buffered, at most TURN requests; True when the turn ended with requests left."""
        buf = self.buf
        srv = self.srv
        turn = TURN
        more = False
        n = len(buf)                # (the buffer does not change during a turn; self.pos is written as it moves)
        pos = self.pos
        core = srv.core             # the C request core (_core.c): add / lease / complete / fail, or None
        while not self.closing and self.blocked is None and not self.paused_write and self.out_bytes < OUT_HIGH:
            req = self.req
            if req is None:
                if pos >= n:                     # all of it handled (the usual end): no search for a line
                    break
                if core is not None and turn > 0:
                    k = core(self, buf, pos, turn)      # the requests it answers (moving self.pos), from pos on
                    if k:
                        turn -= k
                        pos = self.pos
                        continue
            turn -= 1
            if turn < 0:
                more = True
                break
            if req is None:
                nl = buf.find(b"\n", self.scan)
                if nl < 0:
                    if n - pos >= MAX_READ:
                        self.close("line longer than the read budget")
                        return
                    self.scan = n
                    break
                end = nl + 1
                length = end - pos
                if length > MAX_READ:
                    self.close("line longer than the read budget")
                    return
                if length < 2 or buf[nl - 1] != 13:
                    self.close("line not terminated by CRLF")
                    return
                line = bytes(buf[pos:nl - 1])
                self.budget = MAX_READ - length
                self.pos = self.scan = pos = end
                r = wire.parse_line(line)
                if r.__class__ is bytes:
                    srv.count(b"?", r)
                    self.reply(r)
                    continue
                if r.size is None:
                    self.execute(r, None)
                    continue
                self.req = req = r
            need = req.size + 2
            take = need if need <= self.budget else self.budget
            if n - pos < take:
                break
            p = pos
            self.pos = self.scan = pos = p + take
            self.req = None
            if take < need or buf[pos - 2] != 13 or buf[pos - 1] != 10:
                r = wire.body_error(req.name)
                srv.count(req.name, r)
                self.reply(r)
                continue
            if take <= 4096:                     # (a small body: one copy less than through a memoryview)
                body = bytes(buf[p:pos - 2])
            else:
                with memoryview(buf) as mv:
                    body = bytes(mv[p:pos - 2])
            self.execute(req, body)
        # what is left is an incomplete request (or we stopped for a blocked command / backpressure)
        if self.pos:
            if self.pos >= len(buf):
                buf.clear()
                self.pos = self.scan = 0
            elif self.pos > 65536:
                del buf[:self.pos]
                self.scan -= self.pos
                self.pos = 0
        partial = len(buf) > self.pos or self.req is not None
        if partial and self.blocked is None:
            if self.partial_since is None:
                self.partial_since = time.monotonic()
        else:
            self.partial_since = None
        if self.paused_read and len(buf) - self.pos < IN_CAP // 2 and not self.closing:
            self.paused_read = False
            self.t.resume_reading()
        if self.eof and self.blocked is None and not self.closing and not more:
            if self.req is not None:              # the client went away inside a body: upstream's reply
                r = wire.body_error(self.req.name)
                self.req = None
                srv.count(b"?", r)
                self.reply(r)
            self.close(None)                      # EOF: after the replies to everything it sent
        return more

    def _make_waiter(self) -> Waiter:
        w = self.made = Waiter(self._resume)
        return w

    def execute(self, req: wire.Request, body: bytes | None) -> None:
        srv = self.srv
        try:
            res = srv.handlers.execute(req, body, srv.clock(), self.make_waiter)
        except WqError as exc:      # a job body that cannot be read back from the log (changed under the server)
            srv.log.error("command failed", command=req.name.decode("ascii", "replace"), error=str(exc))
            res = wire.server_error(str(exc).replace("\r", " ").replace("\n", " "))
        if res is None:
            w = self.made
            self.made = None
            if not w.done:
                self.blocked = w
            srv.count(req.name, b"(waiting)")
            return
        if res.__class__ is bytes:          # (Server.count and reply, inline: the common case, two calls less)
            srv.replies[(req.name, res[:4])] += 1
            lsn = srv.durable_lsn if srv.handlers.read_only else srv.lsn
            self.out.append((lsn, res))
            self.out_bytes += len(res)
            if lsn > srv.durable_lsn:
                srv.dirty.add(self)
            return
        srv.count(req.name, res[0])
        self.reply(res)

    def _resume(self, reply) -> None:
        """A blocked command is answered (by a timer, another connection's command, or synchronously)."""
        self.blocked = None
        self.reply(reply)
        self.srv.count_late(reply[0] if reply.__class__ is list else reply)
        if not self.in_process and not self.resume_scheduled and not self.closing:
            if self.pos >= len(self.buf) and not self.eof and not self.paused_read and not self.paused_write:
                # nothing sent after the blocked request (a client waiting for this reply, as go-workq's): no
                # parsing to resume, only the reply to send — now if its records are written, else with them
                # (Server._release); no loop callback per resumed request
                self.flush_out()
                return
            self.resume_scheduled = True
            self.srv.loop.call_soon(self._continue)

    def _continue(self) -> None:
        self.resume_scheduled = False
        if not self.closing or self.out:
            self.flush_out()
        if self.blocked is None and not self.closing:
            self.process()

    # ---------------------------------------------------------------- replies
    def reply(self, res) -> None:
        """Queue a reply behind everything this connection was told before, tagged with the log position it
        depends on."""
        srv = self.srv
        # the log position it depends on: records made so far (in read-only mode, read-only replies do not wait
        # for records that cannot be written)
        lsn = srv.durable_lsn if srv.handlers.read_only else srv.lsn
        if res.__class__ is bytes:
            self.out.append((lsn, res))
            self.out_bytes += len(res)
        else:
            for c in res:
                self.out.append((lsn, c))
                self.out_bytes += len(c)
        if lsn > srv.durable_lsn:
            srv.dirty.add(self)

    def flush_out(self) -> None:
        out = self.out
        if not out or self.t is None:
            if self.closing and not out:
                self._maybe_close()
            return
        durable = self.srv.durable_lsn
        t = self.t
        if len(out) == 1 and out[0][0] <= durable:          # one reply (the usual case): sent as it is
            c = out.popleft()[1]
            self.out_bytes -= len(c)
            self.last_active = time.monotonic()
            if not t.is_closing():
                t.write(c)
            if self.closing:
                self._maybe_close()
            return
        sent = 0
        chunks = []
        while out and out[0][0] <= durable:
            c = out.popleft()[1]
            chunks.append(c)
            sent += len(c)
            if sent >= OUT_HIGH:
                break
        if chunks:
            self.out_bytes -= sent
            self.last_active = time.monotonic()
            if not t.is_closing():
                t.write(b"".join(chunks) if len(chunks) > 1 else chunks[0])
        if out and out[0][0] <= durable and not self.paused_write:
            self.srv.loop.call_soon(self.flush_out)
        if self.closing and not out:
            self._maybe_close()

    # ---------------------------------------------------------------- closing
    def close(self, why: str | None) -> None:
        """Stop reading requests; close once every reply owed has been handed to the transport."""
        if why is not None:
            self.srv.log.debug("closing connection", peer=self.peer, reason=why)
        self.closing = True
        self._maybe_close()

    def _maybe_close(self) -> None:
        if not self.out and self.t is not None and not self.t.is_closing():
            self.t.close()

    def abort(self, why: str) -> None:
        self.srv.log.info("dropping connection", peer=self.peer, reason=why)
        self.closing = True
        if self.t is not None:
            self.t.abort()
