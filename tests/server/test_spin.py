"""The fsync spinner (wqtool/server/workq/spin.py): it runs while its block runs, at most ``limit_s``, and then
parks (no CPU used between fsyncs)."""
from __future__ import annotations

import os
import time

from wqtool.server.workq.spin import Spinner


def _cpu(tid: int) -> float:
    f = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _spun_during(sp: Spinner, block_s: float) -> float:
    t0 = _cpu(sp._thread.native_id) if sp._thread else 0.0
    with sp:
        end = time.monotonic() + block_s
        while time.monotonic() < end:
            time.sleep(0.01)            # the "fsync": the GIL is free
    return t0


def test_spins_inside_the_block_and_parks_after():
    sp = Spinner(limit_s=5.0, use_c=False)      # the Python reference
    _spun_during(sp, 0.01)              # starts the thread
    tid = sp._thread.native_id
    before = _cpu(tid)
    deadline = time.monotonic() + 10    # a shared machine gives the thread a share of a core: blocks until it spun
    while _cpu(tid) - before < 0.05 and time.monotonic() < deadline:
        _spun_during(sp, 0.2)
    inside = _cpu(tid) - before
    assert inside >= 0.05, inside       # it spun (CPU time), within 10 s of blocks
    time.sleep(0.05)
    parked = _cpu(tid)
    time.sleep(0.4)
    assert _cpu(tid) - parked <= 0.02   # parked: no CPU between blocks


def test_never_spins_past_its_limit():
    sp = Spinner(limit_s=0.02, use_c=False)
    _spun_during(sp, 0.01)
    tid = sp._thread.native_id
    before = _cpu(tid)
    _spun_during(sp, 0.5)
    assert _cpu(tid) - before <= 0.1


# ---------------------------------------------------------------- the C spinner (_proto.spin_start / spin_stop)
import pytest  # noqa: E402

from wqtool.server.workq import spin as spin_mod  # noqa: E402

needs_c = pytest.mark.skipif(spin_mod._c is None, reason="the C module is not built (or WQTOOL_PURE_PYTHON)")


def _spin_tid() -> int | None:
    for tid in os.listdir("/proc/self/task"):
        try:
            if open(f"/proc/self/task/{tid}/comm").read().strip() == "wqtool-fsync-sp":
                return int(tid)
        except OSError:
            pass
    return None


def _fsyncs(fd: int, n: int, limit_ns: int) -> float:
    """``n`` appends, each fsynced inside the C spinner (as Server._commit does); the seconds spent in fsync."""
    sp = Spinner(limit_ns / 1e9, use_c=True)
    spent = 0.0
    for _ in range(n):
        os.write(fd, b"r" * 87)
        t = time.perf_counter()
        with sp:
            os.fsync(fd)
        spent += time.perf_counter() - t
    return spent


@needs_c
def test_c_spinner_spins_while_fsync_runs_and_parks_after(tmp_path):
    fd = os.open(tmp_path / "seg", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        _fsyncs(fd, 1, 5_000_000)           # starts the thread
        tid = _spin_tid()
        assert tid is not None              # a C thread of its own (it never takes the GIL)
        before = _cpu(tid)
        spent = _fsyncs(fd, 1000, 5_000_000)
        if spent < 0.1:
            pytest.skip(f"fsync is too fast here to see the spinner ({spent * 1e3:.1f} ms for 1000)")
        deadline = time.monotonic() + 10    # a shared machine: the yielding thread gets what the others leave
        while _cpu(tid) - before < 0.01 and time.monotonic() < deadline:
            _fsyncs(fd, 200, 5_000_000)
        assert _cpu(tid) - before >= 0.01   # it ran while the fsyncs did (CPU ticks: 10 ms each)
        time.sleep(0.05)
        parked = _cpu(tid)
        time.sleep(0.4)
        assert _cpu(tid) - parked <= 0.02   # parked between fsyncs
    finally:
        os.close(fd)


@needs_c
def test_c_spinner_never_spins_past_its_limit(tmp_path):
    fd = os.open(tmp_path / "seg", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        _fsyncs(fd, 1, 5_000_000)
        tid = _spin_tid()
        before = _cpu(tid)
        _fsyncs(fd, 200, 1_000)             # 1 us each at most
        assert _cpu(tid) - before <= 0.03
    finally:
        os.close(fd)


def test_the_default_spinner_is_the_c_one_unless_pure_python(monkeypatch):
    assert Spinner().c is spin_mod._c
    assert Spinner(use_c=False).c is None
    monkeypatch.setattr(spin_mod, "_c", None)
    assert Spinner().c is None
    with pytest.raises(RuntimeError):
        Spinner(use_c=True)


@needs_c
def test_c_spinner_in_a_forked_child_is_its_own(tmp_path):
    """A child forked after the thread started has no spinning thread (fork copies only the caller): its first
    spin_start starts one, with fresh locks (one the parent's thread held at the fork would never be let go)."""
    fd = os.open(tmp_path / "seg", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        _fsyncs(fd, 1, 5_000_000)
        assert _spin_tid() is not None
        pid = os.fork()
        if pid == 0:                                    # the child: exit 0 only if it started a thread of its own
            code = 1
            try:
                if _spin_tid() is None:
                    _fsyncs(fd, 3, 5_000_000)
                    code = 0 if _spin_tid() is not None else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the forked child hung in the spinner")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(fd)
