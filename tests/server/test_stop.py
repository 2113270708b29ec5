"""Stop means stopped (issue 33 item 3): SIGTERM during a cleaning cycle ends or cancels the cycle before the locks
are released, and the process exits within 2 s of the signal; a second server started the moment the locks are
free sees no file of the log change after that."""
from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import threading
import time

from tests.server.conftest import jid, poll

LOCKS = ("append.lock", "read.lock")


def build_log(d: str, segments: int) -> None:
    """``segments`` segments, each with expired adds (the cleaner drops them: every segment is rewritten) and one
    add that stays live."""
    from wqtool.engine.workq.writer import SegmentWriter, add
    from wqtool.formats._common import GoTime
    now = time.time_ns()
    old = GoTime.from_unix_ns(now - 3_600 * 10**9)
    fresh = GoTime.from_unix_ns(now)
    n = 0
    with SegmentWriter(d, segment_size=600) as w:
        for _ in range(segments):
            for _ in range(5):          # created an hour ago with a 1 s TTL: expired
                w.append(add(bytes.fromhex("00000000000040008000%012x" % n), "gone", ttr=1000, ttl=1000,
                             created=old, payload=b"x" * 60), old)
                n += 1
            w.append(add(bytes.fromhex("00000000000040008000%012x" % n), "kept", ttr=1000, ttl=86_400_000,
                         created=fresh, payload=b"y" * 60), fresh)
            n += 1


def snapshot(d: str) -> dict:
    """Every file of the log but the lock files: size, mtime and a digest of its bytes."""
    out = {}
    for name in sorted(os.listdir(d)):
        if name in LOCKS:
            continue
        p = os.path.join(d, name)
        st = os.stat(p)
        with open(p, "rb") as f:
            out[name] = (st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def test_sigterm_during_a_cleaning_cycle_writes_nothing_after_the_locks_are_released(server_factory, tmp_path):
    d = str(tmp_path / "log")
    build_log(d, 1500)
    srv = server_factory("-cmdlog-path", d, "-cmdlog-clean-int", "100", "-cmdlog-sync", "os")
    # the cycle is writing: its first .rw file is there
    assert poll(lambda: any(n.endswith(".rw") for n in os.listdir(d)), 60), "no cleaning cycle started writing"
    t_signal = time.monotonic()
    srv.p.send_signal(signal.SIGTERM)
    # the instant it exits, by a thread of its own: the second server below is started (its replay of the log
    # included) before this one is waited for, and its start-up is not the first one's stop
    exit_at: list[float] = []
    waiter = threading.Thread(target=lambda: (srv.p.wait(10), exit_at.append(time.monotonic())), daemon=True)
    waiter.start()

    fd = os.open(os.path.join(d, "append.lock"), os.O_RDONLY)
    try:
        def free() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
        assert poll(free, 10), "the server never released append.lock"
        before = snapshot(d)            # the moment the locks are free
    finally:
        os.close(fd)
    srv2 = server_factory("-cmdlog-path", d, "-cmdlog-clean-int", "0")   # a second server, at once
    waiter.join(15)
    assert exit_at, "the server did not exit within 10 s of SIGTERM"
    exited = exit_at[0] - t_signal
    assert srv.p.returncode == 0, srv.stderr_text()
    assert exited < 2.0, f"exited {exited:.2f} s after SIGTERM"
    assert snapshot(d) == before, "a file of the log changed after the locks were released"
    assert not any(n.endswith(".rw") for n in before), "a cancelled cycle left its .rw files"
    err = srv.stderr_text()
    assert "msg=\"cleaning cycle stopped\"" in err, err            # the stop waited for a cycle that was writing
    # the log is whole: the second server replayed it, and every live job is there
    c = srv2.client()
    assert c.inspect_job(jid(1500 * 6 - 1))["payload-size"] == 60
    assert srv2.stop() == 0
