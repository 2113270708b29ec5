"""A short scheduler slice for the loop thread while the machine is busy and one client is served.

Why. Beside other work (8 CPU burners on 2 vCPUs, Linux 6.18, EEVDF, autogroups), one connection's request waits
for a CPU about four times as long as it runs: a woken task is placed by the lag it left, and the loop thread asks
for 50-80 us per request in one slice (docs/serve.md, "The one-connection row"). Since Linux 6.12 a thread may ask
for a shorter slice (``sched_setattr``'s ``sched_runtime`` for ``SCHED_OTHER``); EEVDF then lets it preempt a task
of a longer slice when it wakes (``PREEMPT_SHORT``), instead of queueing behind it. Measured
(``bench/bench_serve_sched.py``, 8 own-session burners, the same server with ``WQTOOL_SERVE_SLICE_US=0`` in the same
rounds): one connection, ``-cmdlog-sync interval``, 1.28x the rate of the default slice (median of 16 rounds' pairs,
load 9.0-9.4; faster in 11 of 16), 47 us of CPU and 195 us of wait per request against 52 and 244; ``always``
1.36x (12 rounds, load 8.6-9.6; faster in 9 of 12), 0.86x workq-server's rate against 0.58x. On an idle machine
the short slice cost 0.84x against 0.99x (4 rounds, worse in all 4): nothing is preempted there, and it only cuts
the thread's own turns. So the slice follows the machine:

* short while the 1-minute load average is at least ``BUSY_PER_CPU`` per CPU online (the test the idle spinner backs
  off by, ``_proto.c`` ``idle_loop``) and one client is connected (at 16 connections a short slice cost 0.78x ->
  0.59x beside the burners: the loop thread's turn then serves many requests, and a short slice cuts it up);
* the default otherwise. The load is looked at once a second (``Server._sweep``), the connections at each connect
  and disconnect; the system call is made only when the answer changes.

``WQTOOL_SERVE_SLICE_US`` sets the short slice (default ``SLICE_US``; 0: never). A kernel before 6.12 ignores the
request (``_proto.sched_slice`` then reads 0). ``WQTOOL_SERVE_LOADAVG_FILE`` reads the load from another file than
``/proc/loadavg`` (for tests).
"""
from __future__ import annotations

import os

#: the short slice (us)
SLICE_US = 100
#: busy: the 1-minute load average at least this many per CPU online
BUSY_PER_CPU = 2
#: the short slice only while at most this many clients are connected
SLICE_CONNS = 1


def slice_us() -> int:
    """``WQTOOL_SERVE_SLICE_US`` (0: off), else ``SLICE_US`` (``spin.env_us``)."""
    from .spin import env_us
    return env_us("WQTOOL_SERVE_SLICE_US", SLICE_US)


def want_short(load1: float, ncpu: int, conns: int, max_conns: int = SLICE_CONNS) -> bool:
    """The rule: a busy machine (``load1 >= BUSY_PER_CPU * ncpu``) and 1 to ``max_conns`` clients (0: any
    number)."""
    return load1 >= BUSY_PER_CPU * ncpu and conns >= 1 and (max_conns == 0 or conns <= max_conns)


class Slicer:
    """The loop thread's slice, kept to ``want_short``. ``look()`` reads the load, ``conns(n)`` takes the number of
    clients; either sets or resets the slice when the answer changes. A refused system call turns it off."""

    def __init__(self, us: int, tid: int, sched_slice, log=None, loadavg: str | None = None,
                 max_conns: int | None = None):
        self.ns, self.tid, self._set, self.log = us * 1000, tid, sched_slice, log
        self.path = loadavg or os.environ.get("WQTOOL_SERVE_LOADAVG_FILE") or "/proc/loadavg"
        self.max_conns = SLICE_CONNS if max_conns is None else max_conns
        self.ncpu = os.cpu_count() or 1
        self.load1 = 0.0
        self.n = 0
        #: the slice is the short one
        self.short = False
        self.on = True

    def look(self) -> None:
        try:
            with open(self.path, "rb") as f:
                self.load1 = float(f.read(64).split()[0])
        except (OSError, ValueError, IndexError):
            self.load1 = 0.0
        self._apply()

    def conns(self, n: int) -> None:
        self.n = n
        self._apply()

    def _apply(self) -> None:
        want = self.on and want_short(self.load1, self.ncpu, self.n, self.max_conns)
        if want == self.short:
            return
        try:
            self._set(self.tid, self.ns if want else 0)
        except OSError as exc:          # (a seccomp filter, an unknown system call: the default slice stays)
            self.on = want = False
            if self.log is not None:
                self.log.warn("scheduler slice not available", error=str(exc))
        self.short = want
        if self.log is not None and self.log.level <= 10:
            self.log.debug("scheduler slice", short=want, load1=self.load1, conns=self.n)

    def close(self) -> None:
        """Back to the default slice (the thread lives on after the server: a test, an embedding program)."""
        self.on = False
        self._apply()


def start(us: int, log=None) -> Slicer | None:
    """The calling thread's Slicer for a short slice of ``us`` (``slice_us()``), or None when that is 0 or without
    the C module."""
    if us <= 0:
        return None
    from .wire import proto_c
    c = proto_c()
    if c is None or not hasattr(c, "sched_slice"):
        return None
    import _thread
    return Slicer(us, _thread.get_native_id(), c.sched_slice, log)
