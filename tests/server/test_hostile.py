"""Hostile and broken clients: every buffer bounded, every wait bounded, the server never crashes, and a bad
request gets upstream's reply with the connection behaving as upstream's does."""
from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from tests.server.conftest import Reply, jid


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.fixture(scope="module")
def strict_server():
    from tests.server.conftest import ServerProc
    s = ServerProc("--request-timeout", "1", "--idle-timeout", "2", "--max-connections", "8")
    yield s
    s.stop()


def test_line_longer_than_the_read_budget_closes_silently(mem_server):
    c = mem_server.client()
    c.send(b"add " + b"x" * (1_058_576 + 10))
    assert c.closed(5) and c.buf == b""


def test_long_line_within_the_budget_is_answered(mem_server):
    c = mem_server.client()
    c.expect(b"inspect" + b" " * 500_000 + b"server x\r\n", b"-CLIENT-ERROR Invalid command args\r\n")


def test_body_beyond_the_budget_is_cut_and_the_rest_parsed_as_commands(mem_server):
    c = mem_server.client()
    line = b"add %s q-big 1000 60000 1048576 " % jid(0xe001) + b" " * 20_000 + b"\r\n"
    c.send(line + b"a" * 1_048_576 + b"\r\n")
    assert c.read_exact(36) == b"-CLIENT-ERROR Invalid payload size\r\n"
    # what the budget left unread (the body's last ~20 KB and its CRLF) is parsed as the next line
    assert c.read_exact(31) == b"-CLIENT-ERROR Unknown command\r\n"
    assert c.quiet()


def test_exactly_one_mib_is_accepted(mem_server):
    c = mem_server.client()
    c.expect(b"add %s q-mib 1000 60000 1048576\r\n" % jid(0xe002) + b"\xff" * 1_048_576 + b"\r\n", b"+OK\r\n")
    assert c.inspect_job(jid(0xe002))["payload-size"] == 1_048_576


def test_client_vanishing_mid_body_gets_upstreams_reply_then_close(mem_server):
    s = mem_server.sock()
    s.sendall(b"fail %s 10\r\nabc" % jid(0xe003))
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
    assert data == b"-CLIENT-ERROR Invalid result size\r\n"


def test_half_closed_client_still_gets_its_blocked_lease(mem_server):
    s = mem_server.sock()
    s.sendall(b"lease q-half 3000\r\n")
    s.shutdown(socket.SHUT_WR)
    time.sleep(0.2)
    p = mem_server.client()
    p.add(jid(0xe004), b"q-half", 1000, 60000, b"h")
    data = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
    assert data == b"+OK 1\r\n%s q-half 1000 1\r\nh\r\n" % jid(0xe004)


def _reset(s: socket.socket) -> None:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_vanished_leaser_gets_no_job(mem_server):
    s = mem_server.sock()
    s.sendall(b"lease q-gone 5000\r\n")
    time.sleep(0.2)
    _reset(s)
    time.sleep(0.2)
    p = mem_server.client()
    p.add(jid(0xe005), b"q-gone", 1000, 60000, b"g")
    assert p.inspect_job(jid(0xe005))["state"] == 0       # not leased to nobody
    assert p.lease([b"q-gone"], 100)[0] == jid(0xe005)


def test_vanished_run_client_keeps_its_run_until_the_runs_timeout(mem_server):
    """As upstream: a handler blocked in Controller.Run notices no disconnect; the job is removed only by Run's
    deferred timeoutRun at the run's timeout (int/job/controller.go:425-431). A worker that leased the job meanwhile
    gets +OK from complete (go-workq would see an error otherwise)."""
    s = mem_server.sock()
    s.sendall(b"run %s q-gone-run 1000 3000 1\r\nr\r\n" % jid(0xe006))
    p = mem_server.client()
    _poll(lambda: _state(p, jid(0xe006)) == 0)
    _reset(s)
    time.sleep(0.2)
    assert _state(p, jid(0xe006)) == 0                         # still there, still leasable
    w = mem_server.client()
    assert w.lease([b"q-gone-run"], 1000)[0] == jid(0xe006)
    w.complete(jid(0xe006), b"done")                          # +OK, as upstream
    assert _state(p, jid(0xe006)) is None                     # the run ended with its result


def test_vanished_run_client_job_goes_at_the_runs_timeout(mem_server):
    s = mem_server.sock()
    t0 = time.monotonic()
    s.sendall(b"run %s q-gone-run2 1000 800 1\r\nr\r\n" % jid(0xe007))
    p = mem_server.client()
    _poll(lambda: _state(p, jid(0xe007)) == 0)
    _reset(s)
    _poll(lambda: _state(p, jid(0xe007)) is None, timeout=5.0)
    assert time.monotonic() - t0 >= 0.8                       # not before the run's own timeout


def _state(c, job_id):
    try:
        return c.inspect_job(job_id)["state"]
    except Reply as e:
        assert e.code == "NOT-FOUND"
        return None


def _poll(cond, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_slow_loris_is_dropped_after_the_request_timeout(strict_server):
    s = strict_server.sock()
    t0 = time.monotonic()
    try:
        for ch in b"inspect server":
            s.sendall(bytes([ch]))
            time.sleep(0.2)
    except OSError:
        pass
    s.settimeout(5)
    try:
        assert s.recv(10) == b""
    except ConnectionResetError:
        pass
    assert time.monotonic() - t0 < 4.5


@pytest.mark.slow
def test_idle_client_is_dropped_but_not_one_waiting_in_lease(strict_server):
    idle = strict_server.client()
    waiting = strict_server.client()
    waiting.send(b"lease q-idle 4000\r\n")
    assert idle.closed(5)
    assert waiting.read_exact(10) == b"-TIMEOUT\r\n"            # after its 4 s wait, still connected


def test_max_connections(strict_server):
    held = [strict_server.sock() for _ in range(8)]
    for s in held:
        s.sendall(b"inspect server\r\n")
        assert s.recv(4096).startswith(b"+OK 1")
    extra = strict_server.sock()
    extra.settimeout(3)
    try:
        assert extra.recv(10) == b""
    except ConnectionResetError:
        pass
    for s in held:
        s.close()
    time.sleep(0.3)
    c = strict_server.client()
    assert c.inspect_server()["active-clients"] == b"1"


def test_garbage_floods_and_the_server_stays_up(mem_server):
    rnd = os.urandom(200_000)
    for chunk in (rnd, b"\r\n" * 50_000, b"\x00" * 100_000, (b"-a=b " * 1000) + b"\r\n"):
        s = mem_server.sock()
        try:
            s.sendall(chunk)
        except OSError:
            pass
        s.close()
    c = mem_server.client()
    assert mem_server.p.poll() is None and int(c.inspect_server()["active-clients"]) >= 1


@pytest.mark.slow
def test_a_client_that_never_reads_cannot_grow_the_server(mem_server):
    c = mem_server.client()
    c.add(jid(0xe007), b"q-nr", 1000, 60000, b"z" * 1_000_000)
    pid = mem_server.p.pid
    before = rss_kb(pid)
    s = mem_server.sock()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    req = b"inspect job %s\r\n" % jid(0xe007)
    sent = 0
    s.setblocking(False)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            sent += s.send(req * 64)
        except BlockingIOError:
            time.sleep(0.01)
    assert sent > 100_000                                   # many replies of 1 MB owed, none read
    grown = rss_kb(pid) - before
    assert grown < 64 * 1024, f"server grew by {grown} KiB"
    assert mem_server.client().inspect_server()          # and it still serves others
    _reset(s)


class _Transport:
    def __init__(self):
        self.out = []

    def write(self, b):
        self.out.append(b)

    def is_closing(self):
        return False

    def get_extra_info(self, _k):
        return None

    def set_write_buffer_limits(self, high):
        pass


def test_a_pipelining_client_gets_turns_not_the_whole_loop():
    """One read of thousands of pipelined requests is handled TURN requests per loop iteration, so other clients'
    requests and timers run in between (before: up to 200,000 requests in one callback — a probe waited 10 s
    behind two such clients)."""
    import asyncio

    from wqtool.server.workq.conn import TURN, Conn
    from wqtool.server.workq.server import Server, ServeOptions, StructLog

    async def main():
        srv = Server(ServeOptions(listen="127.0.0.1:0"), log=StructLog("error"))
        srv.loop = asyncio.get_running_loop()
        flood, probe = Conn(srv), Conn(srv)
        tf, tp = _Transport(), _Transport()
        flood.connection_made(tf)
        probe.connection_made(tp)
        flood.data_received(b"".join(b"add %s fl 1000 60000 1\r\nx\r\n" % jid(0x9000 + i) for i in range(3000)))
        assert b"".join(tf.out).count(b"+OK") == TURN          # one turn, then the loop is free
        probe.data_received(b"inspect queue fl\r\n")             # answered between two of the flood's turns
        assert b"".join(tp.out) == b"+OK 1\r\nfl 2\r\nready-len %d\r\nscheduled-len 0\r\n" % TURN
        for _ in range(3000 // TURN + 2):
            await asyncio.sleep(0)
        assert b"".join(tf.out).count(b"+OK") == 3000          # and the rest, turn by turn
    asyncio.run(main())


def test_a_line_of_a_million_spaces_is_parsed_without_a_million_tokens():
    from wqtool.server.workq import wire
    line = b"inspect" + b" " * 1_000_000 + b"queue" + b"  " + b"q1"
    t0 = time.process_time()
    r = wire.parse_line(line)
    assert time.process_time() - t0 < 0.02
    assert (r.name, r.args) == (b"inspect", [b"queue", b"q1"])
    assert wire.parse_line(b" inspect server") == wire.E_UNKNOWN        # a leading space: an empty command name
    assert wire.parse_line(b"inspect  server").args == [b"server"]


def test_every_waiting_connection_is_accepted_at_once_up_to_the_batch():
    """A storm of connections (opened and dropped by a client in a loop, completed by the kernel) is accepted
    BATCH at a time each time the listening socket is readable — uvloop's own server took one per loop iteration,
    and a new client waited seconds behind thousands of dropped ones."""
    import asyncio

    from wqtool.server.workq.early import ACCEPT_BATCH
    from wqtool.server.workq.server import Acceptor, StructLog, listen_socket

    async def main():
        loop = asyncio.get_running_loop()
        lsock = listen_socket("127.0.0.1", 0)
        made = []

        class P(asyncio.Protocol):
            def connection_made(self, t):
                made.append(t)

        acc = Acceptor(loop, lsock, P, StructLog("error"))
        loop.remove_reader(lsock.fileno())                  # the test calls it by hand
        clients = [socket.create_connection(lsock.getsockname(), timeout=5) for _ in range(ACCEPT_BATCH + 10)]
        acc._ready()                                        # one readiness: one batch
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(made) == ACCEPT_BATCH
        acc._ready()
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(made) == ACCEPT_BATCH + 10
        for t in made:
            t.close()
        for c in clients:
            c.close()
        acc.close()
    asyncio.run(main())
