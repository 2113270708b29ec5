"""kill -9 under load loses no acknowledged command: clients add / lease / complete while the server is killed at
random moments; each restart on the same directory must hold every acknowledged job in (at least) its
acknowledged state, and the log must verify clean (a record is one write(2): a kill cannot tear it)."""
from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from tests.conftest import cli
from tests.server.conftest import Reply, jid

CLIENTS = 4


def _worker(srv, k: int, base: int, acked: dict, stop: threading.Event) -> None:
    try:
        c = srv.client(timeout=3.0)
    except OSError:
        return
    q = b"dur-%d" % k
    n = 0
    try:
        while not stop.is_set():
            j = jid(base + k * 100_000 + n)
            n += 1
            c.add(j, q, 60000, 3_600_000, b"payload-%d" % n)
            acked[j] = "added"
            got = c.lease([q], 1000)
            assert got[0] == j
            acked[j] = "leased"
            c.complete(j, b"r-" + j[-6:])
            acked[j] = "completed"
    except (OSError, EOFError, Reply, socket.timeout, AssertionError):
        pass
    finally:
        c.close()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["always", "interval"])
def test_kill_9_under_load_loses_no_acknowledged_command(server_factory, tmp_path, policy):
    d = str(tmp_path / "log")
    acked: dict[bytes, str] = {}
    rng = random.Random(11)
    args = ("-cmdlog-path", d, "-cmdlog-sync", policy, "-cmdlog-seg-size", "65536")
    for cycle in range(3):
        srv = server_factory(*args)
        stop = threading.Event()
        threads = [threading.Thread(target=_worker, args=(srv, k, 0x1_000_000 * (cycle + 1), acked, stop))
                   for k in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.3, 1.2))
        srv.kill()                                          # SIGKILL at a random moment, clients still busy
        stop.set()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads)
    assert len(acked) > 50, "the load generator did too little to prove anything"
    srv = server_factory(*args)
    c = srv.client()
    rank = {"added": 0, "leased": 1, "completed": 2}
    state_rank = {0: 0, 4: 1, 1: 2}                          # new, leased, completed
    lost = []
    for j, what in acked.items():
        try:
            s = c.inspect_job(j)
        except Reply:
            lost.append((j, what, "missing"))
            continue
        if state_rank.get(s["state"], -1) < rank[what]:
            lost.append((j, what, s["state"]))
        if what == "completed":
            assert c.result(j, 0) == (True, b"r-" + j[-6:])
    assert not lost, lost[:5]
    srv.stop()
    assert cli("verify", d).code == 0
