"""kill -9 under load loses no acknowledged command: clients add / lease / complete while the server is killed at
random moments; each restart on the same directory must hold every acknowledged job in (at least) its
acknowledged state, and the log must verify clean.

A kill can tear the last write: a loop iteration's records go out in one write(2), and the kernel copies a write
into the page cache a page (folio) at a time, looking for a fatal signal before each (mm/filemap.c,
generic_perform_write: ``if (fatal_signal_pending(current)) { status = -EINTR; break; }``, returning what was
copied). No reply of those records has left (a reply waits for its records' whole write), so nothing acknowledged is
in the torn bytes; workq-server refuses to start on a torn tail (Replay error, unexpected EOF), and so does serve.
The operator's step is `wqtool repair --apply` (the torn tail cut, its bytes quarantined): ``_restart`` takes it
when verify says torn tail (a kill landing between two chunks of a write that crosses a page boundary: seen once,
a segment cut at 8,192 bytes, 8 bytes into a record, after many runs of this test without it)."""
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


def _restart(server_factory, args: tuple, d: str):
    """The server again on ``d``, after `wqtool repair --apply` where the kill tore the last write (the module
    docstring): only a torn tail is cut, nothing else."""
    v = cli("verify", d)
    if v.code == 1:
        r = cli("repair", "--apply", "-o", "json", d)
        assert r.code == 1, r.out + r.err
        import json
        [doc] = json.loads(r.out)["logs"]
        assert set(doc["cut"]["by_what"]) == {"torn-tail"} and doc["cut"]["ranges"] == 1, doc["cut"]
    else:
        assert v.code == 0, v.out
    return server_factory(*args)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["always", "interval"])
def test_kill_9_under_load_loses_no_acknowledged_command(server_factory, tmp_path, policy):
    d = str(tmp_path / "log")
    acked: dict[bytes, str] = {}
    rng = random.Random(11)
    args = ("-cmdlog-path", d, "-cmdlog-sync", policy, "-cmdlog-seg-size", "65536")
    for cycle in range(3):
        srv = _restart(server_factory, args, d) if cycle else server_factory(*args)
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
    srv = _restart(server_factory, args, d)
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


def test_a_write_torn_by_the_kill_is_cut_by_repair_and_nothing_acknowledged_is_lost(server_factory, tmp_path):
    """The torn write of the module docstring, made in code: acknowledged adds, a kill -9, then the first page of a
    next write that the kill cut (a record's first bytes at the segment's end, as generic_perform_write leaves
    it). serve refuses the log as workq-server would; ``_restart`` (verify, `repair --apply`) cuts exactly those
    bytes, and every acknowledged job is there."""
    import glob
    import os
    d = str(tmp_path / "log")
    args = ("-cmdlog-path", d, "-cmdlog-sync", "interval")
    srv = server_factory(*args)
    c = srv.client()
    ids = [jid(0x7_000_000 + k) for k in range(20)]
    for j in ids:
        c.add(j, b"torn", 60000, 3_600_000, b"p-" + j[-4:])
    c.close()
    srv.kill()
    seg = sorted(glob.glob(os.path.join(d, "*.log")))[-1]
    size = os.path.getsize(seg)
    with open(seg, "rb") as f:
        f.seek(8)
        first = f.read(40)                              # the first record's head: a record cut after 40 bytes
    with open(seg, "ab") as f:
        f.write(first)
    assert cli("verify", d).code == 1
    with pytest.raises(RuntimeError, match="refusing to serve"):
        server_factory(*args)
    srv = _restart(server_factory, args, d)
    assert os.path.getsize(seg) == size
    c = srv.client()
    assert all(c.inspect_job(j)["state"] == 0 for j in ids)
    srv.stop()
    assert cli("verify", d).code == 0
