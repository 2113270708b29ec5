"""How much a second process helps right now, for the benchmarks that compare a 2-way engine (Spark's
``local[2]``) with one process: ``headroom()`` is 2.0 on an idle 2-core machine, less when neighbours have the
second core — the ceiling of any 2-way speed-up measured beside it."""
from __future__ import annotations

import time


def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x ^= i * 2654435761 & 0xFFFFFFFF
    return x


def headroom(n: int = 6_000_000) -> float:
    """Seconds of two units of CPU work in one process / the same two units in two processes at once."""
    import multiprocessing as mp
    t = time.perf_counter()
    _spin(n)
    _spin(n)
    one = time.perf_counter() - t
    with mp.get_context("fork").Pool(2) as pool:
        t = time.perf_counter()
        pool.map(_spin, [n, n])
        two = time.perf_counter() - t
    return one / two
