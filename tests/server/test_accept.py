"""Accepting connections (early.accept_live, _proto.accept_live, server.Acceptor) and the early loop's hand-over
under a client that never pauses.

A connection its peer closed or reset before sending a byte is closed as it is accepted: a client opening and
dropping connections in a loop filled the accept queue with thousands, each of which cost a socket, a transport and
a task, and a new client's first reply waited 230-300 ms behind them (bench_serve_peer.py's hostile row). The C
function and its Python reference must sort the same connections the same way."""
from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time

import pytest

from tests.server.conftest import jid
from tests.server.test_early import Done, _serve, _stderr_until, early_loop
from tests.server.test_prebind import _connect_when_bound, _free_port
from wqtool.server.workq import early, wire


def _impls():
    out = [pytest.param(None, id="python")]
    if wire.proto_c() is not None:
        out.append(pytest.param(wire.proto_c(), id="c"))
    return out


@pytest.fixture
def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4096)
    s.setblocking(False)
    yield s
    s.close()


def _client(addr, kind: str) -> tuple[socket.socket, int]:
    """A connection of ``kind``: fin (closed before a byte), rst (reset before a byte), idle (open, nothing sent),
    data (a request sent, open), data-fin (a request sent, then closed: it is still owed its reply) -> (it, its
    local port)."""
    c = socket.create_connection(addr, timeout=5)
    port = c.getsockname()[1]
    if kind in ("data", "data-fin"):
        c.sendall(b"inspect server\r\n")
    if kind == "rst":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if kind in ("fin", "rst", "data-fin"):
        c.close()
    return c, port


def _peer_ports(fds: list[int]) -> list[int]:
    ports = []
    for fd in fds:
        s = socket.socket(fileno=fd)
        ports.append(s.getpeername()[1])
        s.close()
    return ports


@pytest.mark.parametrize("c", _impls())
def test_connections_closed_before_a_byte_are_closed_and_the_rest_handed_out_in_order(listener, monkeypatch, c):
    monkeypatch.setattr(early, "_C", c)
    kinds = ["fin", "idle", "rst", "data", "fin", "data-fin", "fin", "idle"]
    clients = [_client(listener.getsockname(), k) for k in kinds]
    live, closed, err = early.accept_live(listener, 64, 1024)
    assert (closed, err) == (4, 0)                          # the fin and rst ones
    assert _peer_ports(live) == [port for (_, port), k in zip(clients, kinds) if k in ("idle", "data", "data-fin")]
    assert early.accept_live(listener, 64, 1024) == ([], 0, 0)      # nothing left
    for x, _ in clients:
        x.close()


@pytest.mark.parametrize("c", _impls())
def test_the_limits_on_live_and_taken_connections(listener, monkeypatch, c):
    monkeypatch.setattr(early, "_C", c)
    addr = listener.getsockname()
    clients = [_client(addr, k) for k in ["fin"] * 5 + ["idle"] * 4]
    live, closed, err = early.accept_live(listener, 2, 3)   # three taken, all closed ones
    assert (live, closed, err) == ([], 3, 0)
    live, closed, err = early.accept_live(listener, 2, 100)  # two closed, then two live: the live limit
    assert (len(live), closed, err) == (2, 2, 0)
    _peer_ports(live)
    live, closed, err = early.accept_live(listener, 64, 100)
    assert (len(live), closed, err) == (2, 0, 0)
    _peer_ports(live)
    for x, _ in clients:
        x.close()


def test_an_accept_error_is_returned_not_raised(monkeypatch):
    """Out of descriptors (EMFILE) ends the batch with the error's number; the server pauses accepting for 1 s."""
    import resource
    monkeypatch.setattr(early, "_C", wire.proto_c())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.setblocking(False)
    c = socket.create_connection(s.getsockname(), timeout=5)
    c.sendall(b"x")
    held = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        try:
            while True:
                held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        import errno
        assert early.accept_live(s, 64, 1024) == ([], 0, errno.EMFILE)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        c.close()
        s.close()


def test_a_client_behind_a_storm_of_dropped_connections_is_served_at_the_first_readiness():
    """1,500 connections opened and dropped, then one that sends a request: one readiness of the listening socket
    (two, with the cap of ACCEPT_MAX taken per readiness) hands it to the loop; the dropped ones never reach it and
    are counted as accepted."""
    import asyncio

    from wqtool.server.workq.server import Acceptor, StructLog, listen_socket

    async def main():
        loop = asyncio.get_running_loop()
        lsock = listen_socket("127.0.0.1", 0)
        made, counted = [], []

        class P(asyncio.Protocol):
            def connection_made(self, t):
                made.append(t)

        acc = Acceptor(loop, lsock, P, StructLog("error"), counted.append)
        loop.remove_reader(lsock.fileno())                  # the test calls it by hand
        for _ in range(1500):
            socket.create_connection(lsock.getsockname(), timeout=5).close()
        probe, port = _client(lsock.getsockname(), "data")
        for calls in range(1, 1500 // early.ACCEPT_MAX + 2):
            acc._ready()
            for _ in range(20):
                await asyncio.sleep(0)
            if made:
                break
        assert len(made) == 1 and calls == -(-1501 // early.ACCEPT_MAX)
        assert made[0].get_extra_info("peername")[1] == port
        assert sum(counted) == 1500
        made[0].close()
        probe.close()
        acc.close()
    asyncio.run(main())


def test_the_early_loop_hands_over_while_clients_pipeline_without_a_pause(tmp_path):
    """Two clients pipelining adds from the first moment (reading their replies): the early loop had no moment
    without a pending callback, and the hand-over waited for them to stop — and with it a SIGTERM (8.5 s after the
    signal in a 9 s run), the slow-loris sweep and cleaning. It now hands over with what is pending; the stop comes
    while they still send."""
    port = _free_port()
    p = _serve(port, tmp_path / "log", {}, "--log-level", "info")
    err = bytearray()
    stop = threading.Event()
    sent = [0, 0]

    def flood(k: int) -> None:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)

        def drain():
            try:
                while s.recv(1 << 20):
                    pass
            except OSError:
                pass
        threading.Thread(target=drain, daemon=True).start()
        chunk = b"".join(b"add %s fl 1000 60000 1\r\nx\r\n" % jid(0x10000 * (k + 1) + i) for i in range(200))
        try:
            while not stop.is_set():
                s.sendall(chunk)
                sent[k] += 1
        except OSError:
            pass
        finally:
            s.close()

    threads = []
    try:
        _connect_when_bound(port, p, 30).close()
        threads = [threading.Thread(target=flood, args=(k,), daemon=True) for k in range(2)]
        for t in threads:
            t.start()
        assert _stderr_until(p, err, b"msg=listening", 20), err.decode()[-2000:]
        before, deadline = list(sent), time.monotonic() + 10
        while sent == before and time.monotonic() < deadline:      # they still send
            time.sleep(0.005)
        assert sent != before
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0
        assert _stderr_until(p, err, b"msg=stopped", 5), err.decode()[-2000:]
        assert b"signal=SIGTERM" in err
    finally:
        stop.set()
        if p.poll() is None:
            p.kill()
            p.wait(5)
        for t in threads:
            t.join(10)


def test_callbacks_pending_at_the_hand_over_run_on_the_asyncio_loop_in_order():
    """The early loop stops at the top of its next iteration once the event loop is imported, whatever is pending:
    those callbacks (a connection's next turn, a group commit) run on the asyncio loop after every connection has
    its transport, in order; a cancelled one does not, and a handle cancelled later forwards the cancel."""
    import asyncio

    from wqtool.server.workq.early import handover

    loop, lsock = early_loop()
    ran: list[int] = []
    loop.call_soon(ran.append, 1)
    loop.call_soon(ran.append, 2).cancel()
    loop.call_soon(ran.append, 3)
    later = loop.call_soon(ran.append, 4)
    loop.call_soon_threadsafe(ran.append, 5)
    try:
        loop.run(Done())
    finally:
        loop.restore_signals()
        lsock.close()
    assert ran == []                                    # stopped with them pending

    async def main():
        await handover(loop, asyncio.get_running_loop())
        later.cancel()                                  # after the hand-over: the asyncio handle's cancel
        for _ in range(3):
            await asyncio.sleep(0)
    asyncio.run(main())
    assert ran == [1, 3, 5]
    assert not loop.ready and not loop.threadsafe


def test_the_hand_over_keeps_a_paused_connection_paused(tmp_path):
    """A connection whose reading the early loop paused (its unread input over conn.IN_CAP, here behind a blocked
    lease) stays paused on the asyncio loop: uvloop starts reading a transport after connection_made whatever the
    protocol did there, and Conn looked only at its own flag, so after the hand-over it read a pipelining client's
    whole input (8-9 MB per connection in the 45 ms the hand-over awaited it; here all 48 MB)."""
    from wqtool.server.workq.conn import IN_CAP
    hold = tmp_path / "hold"
    hold.write_bytes(b"")
    port = _free_port()
    p = _serve(port, tmp_path / "log", {"WQTOOL_SERVE_EARLY_HOLD": str(hold)}, "--log-level", "info")
    err = bytearray()
    total = 48 << 20
    sent = [0]
    s = None
    try:
        _connect_when_bound(port, p, 30).close()
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(b"lease nothing-here 60000\r\n")               # blocked: what follows is only buffered
        chunk = b"inspect server\r\n" * 4096

        def send():
            try:
                while sent[0] < total:
                    s.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:
                pass
        threading.Thread(target=send, daemon=True).start()

        def settled() -> int:                                   # what the server took, once it stops taking more
            last, since = -1, time.monotonic()
            while time.monotonic() - since < 0.5 and sent[0] < total:
                if sent[0] != last:
                    last, since = sent[0], time.monotonic()
                time.sleep(0.01)
            return sent[0]
        before, deadline = settled(), time.monotonic() + 30
        while before <= IN_CAP and time.monotonic() < deadline:  # (a loaded machine: the early loop still reads)
            before = settled()
        assert IN_CAP < before < total // 2                     # the early loop paused at IN_CAP (+ socket buffers)
        hold.unlink()
        assert _stderr_until(p, err, b"msg=listening", 30), err.decode()[-2000:]
        after = settled()
        assert after - before <= 1 << 20, (before, after)       # one read at most, then paused again
    finally:
        if s is not None:
            s.close()
        p.terminate()
        p.wait(20)
