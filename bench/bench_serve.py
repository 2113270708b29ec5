#!/usr/bin/env python3
"""wqtool serve under load: ops/s and p50/p99 latency, against workq-server in the same run when it is on PATH.

    python bench/bench_serve.py [--connections 16] [--seconds 5] [--sync interval,always]

For each server (``wqtool serve``; ``workq-server`` too when ``shutil.which`` finds it) and each sync policy, a
fresh server on a loopback port and an empty command log under bench/out/serve/, then two phases of
``--seconds`` each, driven by one asyncio process with ``--connections`` connections, each speaking the protocol
as the Go client does (one request, wait for its reply):

* ``add-lease-complete``: every connection loops add -> lease (its own queue) -> complete;
* ``run-result``: half the connections loop ``run`` (blocking until a worker's result), the other half are
  workers looping ``lease`` (on the run queue) -> ``complete``, and every 10th run is followed by ``result`` of
  an already completed job.

Prints one row per server, policy and phase: operations per second (every request counts as one operation) and
p50 / p99 latency of a request in milliseconds. The floor, measured first in the same run: a trivial asyncio
server that answers every request without doing anything (``+OK``, or a fixed job for ``lease``), driven by the
same load generator — on a small machine the load generator shares the CPU with the server, and the floor says
how much of the result is the client and the machine. workq-server needs ``-cmdlog-sync-int 0`` with os/always
(upstream quirk); the script passes it.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "serve")


FLOOR = r"""
import asyncio, socket
class P(asyncio.Protocol):
    def connection_made(self, t):
        self.t, self.buf, self.skip = t, b"", False
        t.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def data_received(self, d):
        self.buf += d
        out = []
        while b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            if self.skip:
                self.skip = False
                continue
            if line.startswith(b"lease"):
                out.append(b"+OK 1\r\n00000000-0000-4000-8000-000000000001 q 60000 2\r\nok\r\n")
            else:
                self.skip = line.startswith((b"add", b"complete"))
                out.append(b"+OK\r\n")
        if out:
            self.t.write(b"".join(out))
async def main():
    srv = await asyncio.get_running_loop().create_server(P, "127.0.0.1", 0)
    print("Listening on 127.0.0.1:%d" % srv.sockets[0].getsockname()[1], flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def start(kind: str, sync: str, logdir: str) -> tuple[subprocess.Popen, tuple[str, int]]:
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    if kind == "floor":
        cmd = [sys.executable, "-c", FLOOR]
    elif kind == "wqtool":
        cmd = [sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-path", logdir,
               "-cmdlog-sync", sync, "--log-level", "warning"]
    else:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        cmd = ["workq-server", "-listen", f"127.0.0.1:{port}", "-cmdlog-path", logdir, "-cmdlog-sync", sync]
        if sync != "interval":
            cmd += ["-cmdlog-sync-int", "0"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = p.stdout.readline().decode()
        m = re.match(r"Listening on (\S+):(\d+)", line)
        if m:
            if kind != "wqtool":
                time.sleep(0.2)
            return p, (m.group(1), int(m.group(2)))
        if not line and p.poll() is not None:
            break
    p.kill()
    raise SystemExit(f"{kind} did not start")


class Conn:
    def __init__(self, r: asyncio.StreamReader, w: asyncio.StreamWriter):
        self.r, self.w = r, w

    async def call(self, data: bytes, lat: list) -> bytes:
        t0 = time.perf_counter_ns()
        self.w.write(data)
        line = await self.r.readuntil(b"\r\n")
        if line.startswith(b"+OK ") and line != b"+OK 0\r\n":
            head = await self.r.readuntil(b"\r\n")
            size = int(head.rsplit(b" ", 1)[1])
            await self.r.readexactly(size + 2)
            line = head
        lat.append(time.perf_counter_ns() - t0)
        return line


def jid(n: int) -> bytes:
    return b"%08x-0000-4000-8000-%012x" % (n >> 48, n & 0xFFFFFFFFFFFF)


async def phase_alc(conns, seconds: float, base: int) -> list:
    lat: list = []
    stop = time.monotonic() + seconds

    async def loop(k: int, c: Conn):
        n = 0
        q = b"bench-%d" % k
        while time.monotonic() < stop:
            j = jid(base + k * 10_000_000 + n)
            n += 1
            await c.call(b"add %s %s 60000 3600000 16\r\n0123456789abcdef\r\n" % (j, q), lat)
            await c.call(b"lease %s 1000\r\n" % q, lat)
            await c.call(b"complete %s 2\r\nok\r\n" % j, lat)

    await asyncio.gather(*(loop(k, c) for k, c in enumerate(conns)))
    return lat


async def phase_run(conns, seconds: float, base: int) -> list:
    lat: list = []
    stop = time.monotonic() + seconds
    half = len(conns) // 2

    async def runner(k: int, c: Conn):
        n = 0
        while time.monotonic() < stop:
            j = jid(base + k * 10_000_000 + n)
            n += 1
            await c.call(b"run %s bench-run 5000 2000 16\r\n0123456789abcdef\r\n" % j, lat)
            if n % 10 == 0:
                await c.call(b"result %s 0\r\n" % j, lat)

    async def worker(k: int, c: Conn):
        while time.monotonic() < stop + 0.5:
            line = await c.call(b"lease bench-run 200\r\n", lat)
            if line.startswith(b"-TIMEOUT"):
                if time.monotonic() >= stop:
                    return
                continue
            j = line.split(b" ")[0]
            await c.call(b"complete %s 2\r\nok\r\n" % j, lat)

    await asyncio.gather(*(runner(k, c) for k, c in enumerate(conns[:half])),
                         *(worker(k, c) for k, c in enumerate(conns[half:])))
    return lat


def pct(xs: list, p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] / 1e6


async def bench(addr, n: int, seconds: float, phases=("add-lease-complete", "run-result")) -> dict:
    conns = []
    for _ in range(n):
        r, w = await asyncio.open_connection(*addr)
        conns.append(Conn(r, w))
    out = {}
    for name, fn, base in (("add-lease-complete", phase_alc, 1 << 40), ("run-result", phase_run, 2 << 40)):
        if name not in phases:
            continue
        t0 = time.perf_counter()
        lat = await fn(conns, seconds, base + int(time.time()))
        dt = time.perf_counter() - t0
        out[name] = (len(lat) / dt, pct(lat, 0.50), pct(lat, 0.99), len(lat))
    for c in conns:
        c.w.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--sync", default="interval,always")
    a = ap.parse_args()
    servers = ["wqtool"] + (["workq-server"] if shutil.which("workq-server") else [])
    print(f"{a.connections} connections, {a.seconds:g} s per phase, load average {os.getloadavg()[0]:.2f}; "
          f"workq-server on PATH: {'yes' if len(servers) > 1 else 'no'}")
    print(f"{'server':<13} {'sync':<9} {'phase':<19} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'ops':>8}")
    p, addr = start("floor", "-", os.path.join(OUT, "floor"))
    try:
        floor = asyncio.run(bench(addr, a.connections, a.seconds, ("add-lease-complete",)))
    finally:
        p.kill()
        p.wait(5)
    for phase, (ops, p50, p99, n) in floor.items():
        print(f"{'floor':<13} {'-':<9} {phase:<19} {ops:>9.0f} {p50:>8.2f} {p99:>8.2f} {n:>8}", flush=True)
    for sync in a.sync.split(","):
        for kind in servers:
            p, addr = start(kind, sync, os.path.join(OUT, f"{kind}-{sync}"))
            try:
                res = asyncio.run(bench(addr, a.connections, a.seconds))
            finally:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
            for phase, (ops, p50, p99, n) in res.items():
                print(f"{kind:<13} {sync:<9} {phase:<19} {ops:>9.0f} {p50:>8.2f} {p99:>8.2f} {n:>8}", flush=True)


if __name__ == "__main__":
    main()
