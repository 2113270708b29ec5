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
    sp = Spinner(limit_s=5.0)
    _spun_during(sp, 0.01)              # starts the thread
    tid = sp._thread.native_id
    before = _cpu(tid)
    _spun_during(sp, 0.4)
    inside = _cpu(tid) - before
    assert inside >= 0.05, inside       # it spun (CPU time; the machine may be shared)
    time.sleep(0.05)
    parked = _cpu(tid)
    time.sleep(0.4)
    assert _cpu(tid) - parked <= 0.02   # parked: no CPU between blocks


def test_never_spins_past_its_limit():
    sp = Spinner(limit_s=0.02)
    _spun_during(sp, 0.01)
    tid = sp._thread.native_id
    before = _cpu(tid)
    _spun_during(sp, 0.5)
    assert _cpu(tid) - before <= 0.1
