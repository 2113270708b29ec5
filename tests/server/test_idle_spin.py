"""The idle spinner (_proto.c idle_spin_start, spin.idle_start, ``WQTOOL_SERVE_SPIN_US``): a C loop with policy
SCHED_IDLE — a process of its own (clone(CLONE_VM): the server's memory, no copy) in its own session (autogroup at
nice 19), or with ``WQTOOL_SERVE_SPIN_AS=thread``
a thread of the server — that keeps a CPU out of halt while requests come, parks on a futex once the window passes
with no request (an idle server uses no CPU), is woken by the next request, ends with the server, and is not there
with ``WQTOOL_SERVE_SPIN_US=0`` or ``WQTOOL_PURE_PYTHON=1``. Every wait is a poll bounded in time."""
from __future__ import annotations

import os
import platform
import signal
import time

import pytest

from tests.server.conftest import ServerProc, jid, poll
from wqtool.server.workq import spin as spin_mod

pytestmark = [
    pytest.mark.skipif(spin_mod._c is None or not hasattr(spin_mod._c, "idle_spin_start"),
                       reason="the C module is not built (or WQTOOL_PURE_PYTHON)"),
    pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc"),
]

NAME = "wqtool-idle-sp"
#: the futex(2) system call's number, as /proc/PID/task/TID/syscall shows a thread blocked in it
FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine())


def spinner_tid(pid: int) -> int | None:
    """The spinner's thread id: a thread of the server, or its child process (/proc/TID/... serves both)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            cands = [tid, *open(f"/proc/{pid}/task/{tid}/children").read().split()]
        except OSError:
            continue
        for t in cands:
            try:
                if open(f"/proc/{t}/comm").read().strip() == NAME:
                    return int(t)
            except OSError:
                pass
    return None


def in_futex(pid: int, tid: int) -> bool:
    """The thread sleeps in futex(2): parked (not spinning, not in its busy machine's back-off nanosleep)."""
    try:
        f = open(f"/proc/{tid}/syscall").read().split()
        st = open(f"/proc/{tid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return st == "S" and f[0] == str(FUTEX)


def voluntary(pid: int, tid: int) -> int:
    for line in open(f"/proc/{tid}/status"):
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def cpu_ticks(pid: int, tid: int) -> int:
    f = open(f"/proc/{tid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def traffic(srv: ServerProc, n: int, base: int) -> None:
    c = srv.client()
    try:
        for i in range(n):
            c.add(jid(base + i), b"q", 1000, 60000, b"x")
    finally:
        c.close()


@pytest.fixture(params=["process", "thread"])
def spinning_server(server_factory, request):
    return server_factory(env={"WQTOOL_SERVE_SPIN_US": "2000", "WQTOOL_SERVE_SPIN_AS": request.param})


@pytest.mark.skipif(FUTEX is None, reason="futex's number on this machine is not listed")
def test_parks_on_a_futex_when_traffic_stops_and_an_idle_server_uses_no_cpu(spinning_server):
    srv = spinning_server
    pid = srv.p.pid
    tid = poll(lambda: spinner_tid(pid))
    assert tid is not None, "no idle spinner thread"
    traffic(srv, 200, 1)
    assert poll(lambda: in_futex(pid, tid)), "the spinner did not park after the traffic stopped"
    ticks = cpu_ticks(pid, tid)
    v = voluntary(pid, tid)
    # parked (blocked in futex: no CPU), and a connection that sends no request does not wake it
    c = srv.client()
    assert c.quiet(0.2)
    c.close()
    # never woken (no voluntary switch, still in futex); its CPU within one clock tick of the reading before (a CI
    # run read 12 after 11 with no switch in between: the kernel's tick-sampled utime/stime split, not a run)
    assert in_futex(pid, tid) and voluntary(pid, tid) == v and cpu_ticks(pid, tid) - ticks <= 1


@pytest.mark.skipif(FUTEX is None, reason="futex's number on this machine is not listed")
def test_a_request_wakes_it(spinning_server):
    srv = spinning_server
    pid = srv.p.pid
    tid = poll(lambda: spinner_tid(pid))
    traffic(srv, 5, 1000)
    assert poll(lambda: in_futex(pid, tid))
    v = voluntary(pid, tid)
    traffic(srv, 1, 2000)
    # woken by the request (a FUTEX_WAKE), it spins out its window (or backs off on a busy machine) and sleeps
    # again: one more voluntary switch at least; never without the wake-up
    assert poll(lambda: voluntary(pid, tid) > v), "the parked spinner was not woken by a request"
    assert poll(lambda: in_futex(pid, tid))


def test_it_runs_with_sched_idle(spinning_server):
    pid = spinning_server.p.pid
    tid = poll(lambda: spinner_tid(pid))
    assert tid is not None
    assert os.sched_getscheduler(tid) == os.SCHED_IDLE
    assert os.sched_getscheduler(pid) == os.SCHED_OTHER        # (the loop thread is not)


def test_as_a_process_it_has_its_own_session_at_nice_19_and_none_of_the_servers_files(server_factory):
    srv = server_factory(env={"WQTOOL_SERVE_SPIN_US": "2000"})
    pid = srv.p.pid
    tid = poll(lambda: spinner_tid(pid))
    assert tid is not None and tid != pid and tid not in map(int, os.listdir(f"/proc/{pid}/task"))
    assert os.getsid(tid) == tid != os.getsid(pid)
    ag = open(f"/proc/{tid}/autogroup").read() if os.path.exists(f"/proc/{tid}/autogroup") else None
    if ag is not None and open("/proc/sys/kernel/sched_autogroup_enabled").read().strip() == "1":
        assert ag.split()[-1] == "19", ag
    fds = {int(f): os.readlink(f"/proc/{tid}/fd/{f}") for f in os.listdir(f"/proc/{tid}/fd")}
    assert {fds[0], fds[1], fds[2]} == {"/dev/null"}           # not the server's stdout / stderr pipes
    assert set(fds) <= {0, 1, 2, 3} and fds.get(3, "/proc/loadavg") == "/proc/loadavg"   # no socket, no lock


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_spinner_process_ends_with_the_server(server_factory, sig):
    srv = server_factory(env={"WQTOOL_SERVE_SPIN_US": "5000000"})
    tid = poll(lambda: spinner_tid(srv.p.pid))
    assert tid is not None
    traffic(srv, 20, 5000)                  # spinning (5 s window)
    srv.p.send_signal(sig)
    srv.p.wait(10)

    def gone() -> bool:
        try:
            return open(f"/proc/{tid}/stat").read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True
    assert poll(gone, timeout=5), "the spinner process outlived the server"


@pytest.mark.parametrize("as_", ["process", "thread"])
def test_sigterm_stops_a_spinning_server_within_2_s(server_factory, as_):
    srv = server_factory(env={"WQTOOL_SERVE_SPIN_US": "5000000", "WQTOOL_SERVE_SPIN_AS": as_})  # spins 5 s on
    pid = srv.p.pid
    assert poll(lambda: spinner_tid(pid)) is not None
    traffic(srv, 50, 3000)
    t0 = time.monotonic()
    srv.p.send_signal(signal.SIGTERM)
    assert poll(lambda: srv.p.poll() is not None, timeout=2.0), "the server did not exit within 2 s of SIGTERM"
    assert time.monotonic() - t0 < 2.0
    assert srv.p.returncode == 0


@pytest.mark.parametrize("env", [{"WQTOOL_SERVE_SPIN_US": "0"}, {"WQTOOL_PURE_PYTHON": "1"}])
def test_off_with_0_and_without_the_c_module(server_factory, env):
    srv = server_factory(env=env)
    traffic(srv, 20, 4000)
    assert spinner_tid(srv.p.pid) is None
    assert "idle_spin_us=0" in _listening_line(srv)


def test_the_default_window_is_on_and_logged(server_factory):
    srv = server_factory(env={"WQTOOL_SERVE_SPIN_US": ""})
    assert poll(lambda: spinner_tid(srv.p.pid)) is not None
    assert f"idle_spin_us={spin_mod.IDLE_SPIN_US}" in _listening_line(srv)


def test_a_bad_window_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="WQTOOL_SERVE_SPIN_US: expected microseconds"):
        ServerProc(env={"WQTOOL_SERVE_SPIN_US": "1ms"}, timeout=30)


def _listening_line(srv: ServerProc) -> str:
    srv.stop()
    return next((ln for ln in srv.stderr_text().splitlines() if "msg=listening" in ln), "")


def test_not_beside_the_fsync_spinner(server_factory, tmp_path):
    """Under -cmdlog-sync always the fsync spinner keeps a CPU awake through each request's fsync; an idle spinner
    beside it took turns with it on 2 CPUs (one connection 0.70x workq-server's with both, 0.72-0.91x without)."""
    srv = server_factory("-cmdlog-path", str(tmp_path / "log"), "-cmdlog-sync", "always",
                         env={"WQTOOL_SERVE_SPIN_US": "5000"})
    traffic(srv, 20, 4000)
    assert spinner_tid(srv.p.pid) is None
    assert "idle_spin_us=0" in _listening_line(srv)


def test_interval_sync_has_it(server_factory, tmp_path):
    srv = server_factory("-cmdlog-path", str(tmp_path / "log"), "-cmdlog-sync", "interval",
                         env={"WQTOOL_SERVE_SPIN_US": "5000"})
    assert poll(lambda: spinner_tid(srv.p.pid)) is not None
    assert "idle_spin_us=5000" in _listening_line(srv)
