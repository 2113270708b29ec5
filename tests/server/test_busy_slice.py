"""The loop thread's short scheduler slice on a busy machine (busy.py, _proto.c sched_slice): short (100 us) while
the 1-minute load average is at least 2 per CPU and one client is connected, the default otherwise; the load read
once a second, the connections at each connect and disconnect. The load is a file the test writes
(``WQTOOL_SERVE_LOADAVG_FILE``); the slice is read back from the kernel (sched_getattr). Every wait is a poll."""
from __future__ import annotations

import os

import pytest

from tests.server.conftest import ServerProc, poll
from wqtool.server.workq import busy
from wqtool.server.workq.wire import proto_c

_c = proto_c()
pytestmark = pytest.mark.skipif(_c is None or not hasattr(_c, "sched_slice"),
                                reason="the C module is not built (or WQTOOL_PURE_PYTHON)")

NCPU = os.cpu_count() or 1
BUSY = f"{2 * NCPU + 0.5:.2f} 1.00 1.00 3/200 1234\n"
QUIET = "0.25 1.00 1.00 1/200 1234\n"


def kernel_has_slices() -> bool:
    """Linux 6.12 and later: sched_getattr reports a fair thread's slice."""
    return _c.sched_slice(os.getpid(), -1) > 0


# ------------------------------------------------------------------ the rule and the Slicer, without a server
@pytest.mark.parametrize("load1, conns, max_conns, want", [
    (2 * NCPU, 1, 1, True),             # busy: load at 2 per CPU
    (2 * NCPU - 0.01, 1, 1, False),     # just under
    (2 * NCPU, 0, 1, False),            # nobody to serve
    (2 * NCPU, 2, 1, False),            # a second client: the default slice (at 16 it cost 0.78x -> 0.59x)
    (2 * NCPU, 16, 0, True),            # 0: any number
    (0.0, 1, 1, False),
])
def test_the_rule(load1, conns, max_conns, want):
    assert busy.want_short(load1, NCPU, conns, max_conns) is want


class FakeSet:
    def __init__(self, fail: bool = False):
        self.calls: list[tuple[int, int]] = []
        self.fail = fail

    def __call__(self, tid: int, ns: int) -> int:
        if self.fail:
            raise PermissionError(1, "Operation not permitted")
        self.calls.append((tid, ns))
        return ns


class Log:
    level = 20

    def __init__(self):
        self.warned: list[tuple[str, dict]] = []

    def warn(self, msg, **kv):
        self.warned.append((msg, kv))


def test_the_system_call_is_made_only_when_the_answer_changes(tmp_path):
    load = tmp_path / "loadavg"
    load.write_text(QUIET)
    fake = FakeSet()
    s = busy.Slicer(100, 4242, fake, loadavg=str(load), max_conns=1)
    s.look()
    s.conns(1)
    assert fake.calls == []                        # quiet: the default, which it already has
    load.write_text(BUSY)
    s.look()
    s.look()
    assert fake.calls == [(4242, 100_000)] and s.short
    s.conns(2)
    s.conns(3)
    assert fake.calls[1:] == [(4242, 0)] and not s.short
    s.conns(1)
    load.write_text(QUIET)
    s.look()
    assert fake.calls[2:] == [(4242, 100_000), (4242, 0)]
    load.write_text(BUSY)
    s.look()
    s.close()                                      # back to the default, for good
    s.look()
    assert fake.calls[4:] == [(4242, 100_000), (4242, 0)] and not s.short


@pytest.mark.parametrize("text", ["", "busy\n", None])
def test_a_load_that_cannot_be_read_is_not_busy(tmp_path, text):
    load = tmp_path / "loadavg"
    if text is not None:
        load.write_text(text)
    fake = FakeSet()
    s = busy.Slicer(100, 1, fake, loadavg=str(load), max_conns=1)
    s.conns(1)
    s.look()
    assert fake.calls == [] and s.load1 == 0.0


def test_a_refused_system_call_turns_it_off_with_a_warning(tmp_path):
    load = tmp_path / "loadavg"
    load.write_text(BUSY)
    log = Log()
    s = busy.Slicer(100, 1, FakeSet(fail=True), log=log, loadavg=str(load), max_conns=1)
    s.conns(1)
    s.look()
    assert not s.short and not s.on
    assert [m for m, _ in log.warned] == ["scheduler slice not available"]
    s.look()
    assert len(log.warned) == 1


@pytest.mark.parametrize("value, us", [("", busy.SLICE_US), ("0", 0), ("250", 250)])
def test_the_environment_sets_the_slice(monkeypatch, value, us):
    monkeypatch.setenv("WQTOOL_SERVE_SLICE_US", value)
    assert busy.slice_us() == us


def test_a_bad_slice_is_refused_before_serving(tmp_path):
    with pytest.raises(RuntimeError, match="WQTOOL_SERVE_SLICE_US: expected microseconds"):
        ServerProc(env={"WQTOOL_SERVE_SLICE_US": "100us"}, timeout=30)


@pytest.mark.skipif(not kernel_has_slices(), reason="the kernel reports no slice (before Linux 6.12)")
def test_sched_slice_sets_and_resets_this_thread():
    import _thread
    tid = _thread.get_native_id()
    default = _c.sched_slice(tid, -1)
    nice = os.getpriority(os.PRIO_PROCESS, tid)
    try:
        assert _c.sched_slice(tid, 200_000) == 200_000 == _c.sched_slice(tid, -1)
        assert os.sched_getscheduler(tid) == os.SCHED_OTHER and os.getpriority(os.PRIO_PROCESS, tid) == nice
    finally:
        assert _c.sched_slice(tid, 0) == default


# ------------------------------------------------------------------ a real server
@pytest.mark.skipif(not kernel_has_slices(), reason="the kernel reports no slice (before Linux 6.12)")
def test_a_server_on_a_busy_machine_shortens_its_slice_for_one_client(tmp_path, server_factory):
    load = tmp_path / "loadavg"
    load.write_text(BUSY)
    srv = server_factory(env={"WQTOOL_SERVE_LOADAVG_FILE": str(load), "WQTOOL_SERVE_SLICE_US": ""})
    pid = srv.p.pid
    default = _c.sched_slice(pid, -1)
    assert default != 100_000

    def slice_is(ns):
        return poll(lambda: _c.sched_slice(pid, -1) == ns, timeout=10)

    a = srv.client()
    assert slice_is(100_000), "one client on a busy machine: no short slice"
    b = srv.client()
    assert slice_is(default), "a second client: the slice stayed short"
    b.close()
    assert slice_is(100_000)
    load.write_text(QUIET)                  # the load falls: the next look (once a second) gives the default back
    assert slice_is(default)
    load.write_text(BUSY)
    assert slice_is(100_000)
    a.close()
    assert slice_is(default)
    srv.stop()
    assert "busy_slice_us=100" in srv.stderr_text()


@pytest.mark.skipif(not kernel_has_slices(), reason="the kernel reports no slice (before Linux 6.12)")
@pytest.mark.parametrize("env", [{"WQTOOL_SERVE_SLICE_US": "0"}, {"WQTOOL_PURE_PYTHON": "1"}])
def test_off_with_0_and_without_the_c_module(tmp_path, server_factory, env):
    load = tmp_path / "loadavg"
    load.write_text(BUSY)
    srv = server_factory(env={"WQTOOL_SERVE_LOADAVG_FILE": str(load), **env})
    pid = srv.p.pid
    default = _c.sched_slice(pid, -1)
    c = srv.client()
    assert c.quiet(1.5)                     # past one look at the load
    assert _c.sched_slice(pid, -1) == default
    c.close()
    srv.stop()
    assert "busy_slice_us=0" in srv.stderr_text()
