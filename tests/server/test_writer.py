"""The reply writer (_proto.c ``writer_*``, conn.py ``Conn._send`` / ``unwrite``): with more than one connection the
replies of a loop iteration are sent by a C thread; a lone connection's are sent at once by the loop thread; a send
that would block hands the connection's writes back to its asyncio transport. Each test runs a server in process on
asyncio's own loop, with connections on socket pairs, and checks the bytes each client receives, in order."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from tests.server.conftest import jid
from wqtool.server.workq import wire

pytestmark = pytest.mark.skipif(wire._c is None or not hasattr(wire._c, "writer_open"),
                                reason="the C module is not built (or WQTOOL_PURE_PYTHON is set)")


def _server(writer: bool = True):
    from wqtool.server.workq.server import Server, ServeOptions, StructLog
    srv = Server(ServeOptions(listen="127.0.0.1:0"), log=StructLog("error"))
    srv.writer = writer
    srv.loop = asyncio.get_running_loop()
    return srv


async def _connect(srv):
    from wqtool.server.workq.conn import Conn
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    conn = Conn(srv)
    await srv.loop.connect_accepted_socket(lambda: conn, a)
    return conn, b


async def _read(loop, s: socket.socket, n: int, timeout: float = 20.0) -> bytes:
    """Exactly ``n`` bytes from ``s`` (bounded in time)."""
    got = bytearray()
    end = time.monotonic() + timeout
    while len(got) < n:
        assert time.monotonic() < end, (len(got), n)
        try:
            chunk = await asyncio.wait_for(loop.sock_recv(s, min(n - len(got), 1 << 20)),
                                           max(0.01, end - time.monotonic()))
        except asyncio.TimeoutError:
            continue
        assert chunk, f"closed after {len(got)} of {n} bytes"
        got += chunk
    return bytes(got)


def _session(k: int, n: int) -> tuple[bytes, bytes]:
    """``n`` adds, leases and completes on queue ``wk<k>``, pipelined, and the exact replies owed."""
    q = b"wk%d" % k
    ids = [jid(0x7000 + 256 * k + i) for i in range(n)]
    req, rep = [], []
    for i, j in enumerate(ids):
        body = b"b%d-%d" % (k, i)
        req.append(b"add %s %s 60000 3600000 %d\r\n%s\r\n" % (j, q, len(body), body))
        rep.append(b"+OK\r\n")
    for i, j in enumerate(ids):
        body = b"b%d-%d" % (k, i)
        req.append(b"lease %s 0\r\n" % q)
        rep.append(b"+OK 1\r\n%s %s 60000 %d\r\n%s\r\n" % (j, q, len(body), body))
    for j in ids:
        req.append(b"complete %s 2\r\nok\r\n" % j)
        rep.append(b"+OK\r\n")
    return b"".join(req), b"".join(rep)


def test_replies_of_several_connections_leave_through_the_writer_in_order():
    async def main():
        srv = _server()
        loop = srv.loop
        pairs = [await _connect(srv) for _ in range(6)]
        assert all(c.wfd >= 0 for c, _ in pairs)              # writer mode (a descriptor of the writer's own)
        sessions = [_session(k, 40) for k in range(len(pairs))]
        for (_c, s), (req, _rep) in zip(pairs, sessions):
            await loop.sock_sendall(s, req)
        for (_c, s), (_req, rep) in zip(pairs, sessions):
            assert await _read(loop, s, len(rep)) == rep
        assert srv.metrics["writer_fallbacks"] == 0
        for c, s in pairs:                                  # EOF: the connection closes after its replies
            s.shutdown(socket.SHUT_WR)
        for c, s in pairs:
            assert await _read(loop, s, 0) == b""
            end = time.monotonic() + 10
            while (await loop.sock_recv(s, 100)) != b"":    # (FIN once the writer's descriptor is closed too)
                assert time.monotonic() < end
            assert c.wfd == -1
        assert srv.wconns == {}
    asyncio.run(main())


def test_a_lone_connection_is_answered_by_the_loop_thread_itself():
    async def main():
        srv = _server()
        c, s = await _connect(srv)
        assert c.wfd >= 0
        req, rep = _session(0, 30)
        await srv.loop.sock_sendall(s, req)
        assert await _read(srv.loop, s, len(rep)) == rep
        assert srv.wbatch == [] and not srv._wsched          # nothing went through the batch
        c.abort("test over")
        assert c.wfd == -1 and srv.wconns == {}
    asyncio.run(main())


def test_a_client_that_stops_reading_gets_its_writes_back_on_the_transport_in_order():
    """A send that would block marks the connection fallen back; the loop takes what was not sent back from the
    writer (and what was queued after it) and writes it through the asyncio transport, whose buffer and
    pause_writing bound it from then on. The client, reading at last, gets every reply whole and in order."""
    async def main():
        srv = _server()
        loop = srv.loop
        (slow, ss), (_other, os_) = await _connect(srv), await _connect(srv)
        big = bytes(range(256)) * 1024                       # 256 KiB: a few replies fill the socket's buffers
        j = jid(0xfa11)
        await loop.sock_sendall(os_, b"add %s fb 60000 3600000 %d\r\n%s\r\n" % (j, len(big), big))
        assert await _read(loop, os_, 5) == b"+OK\r\n"
        await loop.sock_sendall(os_, b"inspect job %s\r\n" % j)
        one = bytearray()                                   # the reply whole: its last line is "created ..."
        end = time.monotonic() + 20
        while not (b"\r\ncreated " in one and one.endswith(b"\r\n")):
            assert time.monotonic() < end
            one += await asyncio.wait_for(loop.sock_recv(os_, 1 << 20), 20)
        one = bytes(one)
        assert one.startswith(b"+OK 1\r\n") and big in one
        n = 24
        await loop.sock_sendall(ss, b"inspect job %s\r\n" % j * n)     # none of it read for now
        end = time.monotonic() + 20
        while slow.wfd >= 0:                                # the writer's send would block: handed back
            assert time.monotonic() < end
            await asyncio.sleep(0.005)
        assert srv.metrics["writer_fallbacks"] >= 1
        assert await _read(loop, ss, len(one) * n, timeout=30) == one * n
        await loop.sock_sendall(os_, b"inspect queue fb\r\n")          # the other connection still served
        assert await _read(loop, os_, len(b"+OK 1\r\nfb 2\r\nready-len 1\r\nscheduled-len 0\r\n")) == \
            b"+OK 1\r\nfb 2\r\nready-len 1\r\nscheduled-len 0\r\n"
    asyncio.run(main())


def test_without_the_writer_the_transport_writes():
    async def main():
        srv = _server(writer=False)
        pairs = [await _connect(srv) for _ in range(2)]
        assert all(c.wfd == -1 for c, _ in pairs)
        for k, (_c, s) in enumerate(pairs):
            req, rep = _session(k, 10)
            await srv.loop.sock_sendall(s, req)
            assert await _read(srv.loop, s, len(rep)) == rep
    asyncio.run(main())
