"""A CPU kept busy while the loop thread waits in fsync(2) (``-cmdlog-sync always``).

Measured here (2 shared vCPUs, load average 7-8, 87-byte write + fsync of an O_APPEND segment, 400 times, three
alternating runs): a single-threaded Python process spent 2.3-4.5 ms per fsync, a Go program doing the same
system calls 0.4-1.3 ms, and the same Python loop with a second thread spinning while the fsync ran 0.36-1.35 ms.
The time is not the disk's: it is the wake-up of the thread the fsync returns to, queued behind other processes on
a busy machine (or a halted vCPU on an idle one). Go's runtime keeps spinning threads (sysmon, idle Ps) that hold a
CPU while a goroutine sits in a system call; a Python server blocked in fsync holds none. ``Spinner`` does what the
Go runtime does, for the duration of one fsync and never longer than ``limit_s``: a daemon thread that loops on
``time.sleep(0)`` (a system call that releases the GIL, so the returning fsync never waits for it).

In the server (1 connection, add -> lease -> complete, load average 9-10): p50 2.8-3.9 ms without it, 0.36-0.49 ms
with it (workq-server 0.23-0.29 ms). Variants measured and dropped: ``os.sched_yield()`` instead of ``sleep(0)``
(more CPU, no faster), ``select()`` with a zero timeout (a quarter of the throughput: it keeps the GIL busy), and
spinning on for 0.5-2 ms after the fsync to catch the client's next request (slower: the spinner then competes with
the loop thread itself).

With the C module (``_proto.spin_start`` / ``spin_stop``, the default; ``WQTOOL_PURE_PYTHON=1`` runs this Python
one) the spinning thread is a C thread that loops on ``sched_yield()`` and never takes the GIL: this Python thread
has to take it after every ``sleep(0)`` to see that the fsync returned, and the loop thread then waited for it to
let go (8 futex calls per fsync under strace). 1 connection, add -> lease -> complete under ``always``, four alternating rounds at load
average 4.9-5.3, median latency per request: the C thread 221-275 us, no spinner 272-575 us, workq-server
235-282 us; the C thread on ``nanosleep(0)`` as this one (316-584 us) and on a pause-instruction busy loop (0.6-3.9
ms: it takes the CPU the loop thread returns to) were slower.
"""
from __future__ import annotations

import time


def _load_c():
    from .wire import proto_c
    _proto = proto_c()
    return _proto if hasattr(_proto, "spin_start") else None


_c = _load_c()


class Spinner:
    """``with spinner:`` around a blocking call: a thread spins until the block ends (at most ``limit_s``)."""

    def __init__(self, limit_s: float = 0.005, use_c: bool | None = None):
        self.limit_s = limit_s
        self._on = False
        self._wake = None           # a threading.Event, with the thread (threading: imported by the Python spinner)
        self._thread = None
        #: the C thread (``_proto.spin_start``) when built and not turned off; else this module's Python thread
        self.c = _c if use_c is None or use_c else None
        if use_c and self.c is None:
            raise RuntimeError("the C spinner is not built (or WQTOOL_PURE_PYTHON is set)")
        self._ns = int(limit_s * 1e9)

    def __enter__(self) -> "Spinner":
        if self.c is not None:
            self.c.spin_start(self._ns)
            return self
        if self._thread is None:
            import threading
            self._wake = threading.Event()
            self._thread = threading.Thread(target=self._run, name="wqtool-fsync-spin", daemon=True)
            self._thread.start()
        self._on = True
        self._wake.set()
        return self

    def __exit__(self, *exc) -> None:
        if self.c is not None:
            self.c.spin_stop()
            return
        self._on = False

    def _run(self) -> None:
        wait, clear, sleep, clock = self._wake.wait, self._wake.clear, time.sleep, time.monotonic
        while True:
            wait()
            clear()
            end = clock() + self.limit_s
            while self._on and clock() < end:
                sleep(0)


#: the idle spinner's default window (us): how long after the last request it keeps a CPU awake (see idle_start)
IDLE_SPIN_US = 1000


def env_us(name: str, default: int) -> int:
    """The environment variable ``name`` in microseconds (unset or empty: ``default``; 0: off); a value that is not
    a whole number >= 0 is an error (UsageError)."""
    import os
    v = os.environ.get(name, "").strip()
    if not v:
        return default
    if not v.isdigit():
        from ...errors import UsageError
        raise UsageError(f"{name}: expected microseconds (a whole number, 0 = off), got {v!r}")
    return int(v)


def idle_window_us() -> int:
    """``WQTOOL_SERVE_SPIN_US`` (0: off), else ``IDLE_SPIN_US`` (``env_us``)."""
    return env_us("WQTOOL_SERVE_SPIN_US", IDLE_SPIN_US)


def idle_as_process() -> bool:
    """``WQTOOL_SERVE_SPIN_AS=thread`` keeps the spinner a thread of the server; else it is a process of its own."""
    import os
    return os.environ.get("WQTOOL_SERVE_SPIN_AS", "process") != "thread"


def idle_start(window_us: int, process: bool = True) -> int | None:
    """Start the idle spinner (``_proto.idle_spin_start``; once per process): a C loop with policy SCHED_IDLE that
    busy-waits (``pause``) while requests come, and parks on a futex ``window_us`` after the last one. It keeps the
    CPU the loop thread's next wake-up lands on out of halt, as Go's spinning Ms keep workq-server's (the C
    comment in _proto.c says what it costs and why). Its pid when it is a process of its own (``process``), 0 when
    it is a thread of this one, None when off (0), without the C module (``WQTOOL_PURE_PYTHON=1``), or when it
    could not be started."""
    c = _c
    if c is None or window_us <= 0 or not hasattr(c, "idle_spin_start"):
        return None
    return c.idle_spin_start(window_us * 1000, process)
