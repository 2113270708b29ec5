"""What the benchmarks share: the read + CRC-32C floor, a measured child process, the load average, the 2-process
headroom (``headroom()``: 2.0 on an idle 2-core machine, less when neighbours have the second core — the ceiling
of any 2-way speed-up measured beside it, e.g. Spark's ``local[2]`` against one process).

Each ``bench_*.py`` puts this directory on ``sys.path`` and imports it (``import harness``).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def crc_floor(directory: str, *, suffix: str | None = None, chunk: int = 16 << 20) -> int:
    """Read every file of ``directory`` (those ending in ``suffix``, in name order) in ``chunk``-byte reads and
    CRC-32C (google-crc32c, the hardware one) every byte: the floor each benchmark is a ratio to. Returns the
    bytes read."""
    import google_crc32c
    nbytes = 0
    for name in sorted(os.listdir(directory)):
        if suffix is not None and not name.endswith(suffix):
            continue
        with open(os.path.join(directory, name), "rb", buffering=0) as f:
            c = google_crc32c.Checksum()
            while True:
                b = f.read(chunk)
                if not b:
                    break
                c.update(b)
                nbytes += len(b)
    return nbytes


#: ``python -c FLOOR_SCRIPT DIR``: the floor in a fresh interpreter (1 MiB reads of the ``.log`` files, as issue
#: 14 measured it), for benchmarks that time whole processes
FLOOR_SCRIPT = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import harness; "
                "harness.crc_floor(sys.argv[1], suffix='.log', chunk=1 << 20)")


def timed(argv: list[str], cwd: str | None = None, env: dict | None = None) -> tuple[float, float, int, int]:
    """Run ``argv`` (stdout to /dev/null): (wall seconds, CPU seconds of it and its children, peak RSS bytes,
    exit code); its stderr is printed when it fails (3, damage found, is what the damaged copies exist for: the
    row shows that code, and no line is printed for it)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    p.stderr.close()
    if code not in (0, 3):
        print(f"  ! {' '.join(argv[2:6])}... exit {code}: {err[:300]}", file=sys.stderr)
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, code


def measured_child(script: str, *args: str) -> dict:
    """``script --measure ...`` in a child that prints one JSON row; the row gets the child's peak RSS
    (``maxrss_kib``). Call it from a runner process of its own when several measures must not share the
    RUSAGE_CHILDREN maximum."""
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, check=True)
    row = json.loads(p.stdout)
    row["maxrss_kib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return row


def loadavg() -> str:
    """The 1, 5 and 15-minute load averages, as /proc/loadavg has them (the machine is shared: part of every
    result)."""
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


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
