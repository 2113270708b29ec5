#!/usr/bin/env python3
"""wqtool serve under load: ops/s and p50/p99 latency, against workq-server in the same run when it is on PATH.

    python bench/bench_serve.py [--connections 16] [--clients 4] [--seconds 5] [--sync interval,always]

For each server (``wqtool serve``; ``workq-server`` too when ``shutil.which`` finds it) and each sync policy, a
fresh server on a loopback port and an empty command log under bench/out/serve/, then two phases of
``--seconds`` each, driven by ``--clients`` load-generator processes sharing ``--connections`` connections, each
connection speaking the protocol as the Go client does (one request, wait for its reply):

* ``add-lease-complete``: every connection loops add -> lease (its own queue) -> complete;
* ``run-result``: half the connections loop ``run`` (blocking until a worker's result), the other half are
  workers looping ``lease`` (on the run queue) -> ``complete``, and every 10th run is followed by ``result`` of
  an already completed job.

Prints one row per server, policy and phase: operations per second (every request counts as one operation),
p50 / p99 latency of a request in milliseconds, and the ratio to workq-server's row in the same run. Two rows
first, in the same run, say how much of a result is the load generator and the machine:

* ``client``: the load generator's own ceiling — the same client processes against a server that does nothing
  (``+OK``, or a fixed job for ``lease``) running as as many processes as there are clients (SO_REUSEPORT), so
  the server side is not what limits it;
* ``floor``: the same do-nothing server as one asyncio process: what a single-threaded Python server doing no
  work reaches on this machine (``wqtool serve`` is one).

The load generator is compiled Go (``bench/bench_serve_load.go``, built into bench/out/serve/ with the standard
library only) when ``go`` is on PATH — one Python client process tops out near 28 k ops/s on an idle 2-core
machine, below workq-server — else the Python one (``--client python`` forces it). Each server row also gives the
server's CPU time per operation (user + system, from /proc/<pid>/stat over the phase, all its threads): on a
shared machine the wall-clock ops/s follow the other load, the CPU per operation much less, so the ``cpu vs``
column (workq-server's CPU µs/op over this server's) is printed next to the wall-clock ratio.

Then ``seg-size-15``: 1,000 adds on one connection against a server started with ``-cmdlog-seg-size 15`` (one
segment per record, as upstream's TestCmdLog/1K), seconds and ratio, in ``--seg15-rounds`` rounds (default 4),
each round the two servers back to back (which one goes first alternates), so that each ratio compares two runs a
second apart; the median of the rounds' ratios is printed last (one run each swung 1.4-2.1x on a shared machine).
Each line also gives the server's user and system CPU time per add. Every run writes a new directory, and the
rounds' directories are removed only after the last round: ext4 skips inodes deleted in the last 60 s when it
allocates one (fs/ext4/ialloc.c ``recently_deleted``), so removing a round's 1,000 segments before the next run
made every file creation of that run scan past them — 530-620 µs per create instead of 20-100 µs, for both
servers, growing round by round — and the bench measured the file system's state rather than the servers. A
system that deleted many files in the last minute (another bench, a test suite) still shows it: the ``sys``
column says which state a round ran in. In that state the server that runs second in a round is the slower one
(1.1-1.8x in either direction), hence the alternation and the geometric mean printed beside the median. workq-server needs ``-cmdlog-sync-int 0`` with os/always
(upstream quirk); the script passes it. The load average is printed before and after: on a shared machine only
ratios within one run mean anything.

``--phases`` picks the load phases (``none``: only seg-size-15); ``--no-seg15`` skips seg-size-15.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
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
import asyncio, os, socket, sys
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
                self.skip = line.startswith((b"add", b"complete", b"run"))
                out.append(b"+OK\r\n" if not line.startswith(b"run") else
                           b"+OK 1\r\n00000000-0000-4000-8000-000000000001 1 2\r\nok\r\n")
        if out:
            self.t.write(b"".join(out))
async def main(sock):
    srv = await asyncio.get_running_loop().create_server(P, sock=sock)
    await asyncio.sleep(3600)
procs = int(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", 0))
s.listen(1024)
print("Listening on 127.0.0.1:%d" % s.getsockname()[1], flush=True)
for _ in range(procs - 1):
    if os.fork() == 0:
        break
asyncio.run(main(s))
"""


def start(kind: str, sync: str, logdir: str, extra: tuple = (), procs: int = 1
          ) -> tuple[subprocess.Popen, tuple[str, int]]:
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    if kind == "floor":
        cmd = [sys.executable, "-c", FLOOR, str(procs)]
    elif kind == "wqtool":
        cmd = [sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-path", logdir,
               "-cmdlog-sync", sync, "--log-level", "warning", *extra]
    else:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        cmd = ["workq-server", "-listen", f"127.0.0.1:{port}", "-cmdlog-path", logdir, "-cmdlog-sync", sync]
        if sync != "interval":
            cmd += ["-cmdlog-sync-int", "0"]
        cmd += list(extra)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
                         start_new_session=True)
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
        q = b"bench-%x-%d" % (base, k)      # its own queue (base differs between client processes)
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


PHASES = {"add-lease-complete": (phase_alc, 1 << 40), "run-result": (phase_run, 2 << 40)}


async def _part(addr, n: int, seconds: float, phase: str, base: int, start_at: float) -> tuple[list, float]:
    conns = []
    for _ in range(n):
        r, w = await asyncio.open_connection(*addr)
        conns.append(Conn(r, w))
    await asyncio.sleep(max(0.0, start_at - time.time()))
    fn, _ = PHASES[phase]
    t0 = time.perf_counter()
    lat = await fn(conns, seconds, base)
    dt = time.perf_counter() - t0
    for c in conns:
        c.w.close()
    return lat, dt


def _client(args) -> tuple[list, float]:
    return asyncio.run(_part(*args))


GO_CLIENT = os.path.join(OUT, "bench_serve_load")


def build_go_client() -> str | None:
    """The compiled load generator's path, built from bench/bench_serve_load.go when ``go`` is on PATH."""
    if not shutil.which("go"):
        return None
    src = os.path.join(ROOT, "bench", "bench_serve_load.go")
    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(GO_CLIENT) or os.path.getmtime(GO_CLIENT) < os.path.getmtime(src):
        env = dict(os.environ, GO111MODULE="off", GOFLAGS="", GOCACHE=os.environ.get("GOCACHE") or
                   os.path.join(ROOT, "bench", "out", "gocache"))
        r = subprocess.run(["go", "build", "-o", GO_CLIENT, src], env=env, capture_output=True, text=True)
        if r.returncode:
            print(f"(the Go load client did not build, the Python one is used: {r.stderr.strip()[:200]})")
            return None
    return GO_CLIENT


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far."""
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tck, int(fields[12]) / tck


def _go_parts(go: str, addr, split, seconds: float, name: str, base: int, start_at: float) -> list:
    procs = [subprocess.Popen([go, "-addr", f"{addr[0]}:{addr[1]}", "-conns", str(m), "-seconds", str(seconds),
                               "-phase", name, "-base", str(base + k * 100_000_000), "-start-at", repr(start_at)],
                              stdout=subprocess.PIPE, text=True) for k, m in enumerate(split) if m]
    parts = []
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 60)
        if p.returncode:
            raise SystemExit(f"the Go load client failed (exit {p.returncode})")
        parts.append(json.loads(out))
    return parts


def bench(addr, n: int, seconds: float, clients: int, phases=tuple(PHASES), go: str | None = None,
          pid: int | None = None) -> dict:
    """Each phase driven by ``clients`` processes holding ``n`` connections between them, started together.
    Per phase: (ops/s, p50 ms, p99 ms, ops, server CPU µs per op or None)."""
    import multiprocessing as mp
    out = {}
    split = [n // clients + (1 if k < n % clients else 0) for k in range(clients)]
    with mp.get_context("fork").Pool(clients) as pool:
        for name in phases:
            base = PHASES[name][1] + int(time.time()) * 1000
            start_at = time.time() + 0.5
            cpu0 = cpu_seconds(pid) if pid else None
            if go:
                parts = _go_parts(go, addr, split, seconds, name, base, start_at)
                nops = sum(p["n"] for p in parts)
                dt = max(p["dt"] for p in parts)
                # the processes' percentiles, weighted by their ops (their connections are alike)
                p50 = sum(p["p50_ns"] * p["n"] for p in parts) / max(1, nops) / 1e6
                p99 = max(p["p99_ns"] for p in parts) / 1e6
            else:
                parts = pool.map(_client, [(addr, m, seconds, name, base + k * 100_000_000, start_at)
                                           for k, m in enumerate(split) if m])
                lat = [x for p in parts for x in p[0]]
                dt = max(p[1] for p in parts)
                nops, p50, p99 = len(lat), pct(lat, 0.50), pct(lat, 0.99)
            cpu = (cpu_seconds(pid) - cpu0) * 1e6 / max(1, nops) if pid else None
            out[name] = (nops / dt, p50, p99, nops, cpu)
    return out


def seg15(addr, adds: int = 1000) -> float:
    """Seconds for ``adds`` adds, one at a time on one connection."""
    import socket
    s = socket.create_connection(addr, timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    for i in range(adds):
        s.sendall(b"add %s seg15 1000 3600000 1\r\nx\r\n" % jid((3 << 40) + int(time.time()) * 1000 + i))
        buf = b""
        while not buf.endswith(b"\r\n"):
            d = s.recv(64)
            if not d:
                raise SystemExit("seg-size-15: the server closed the connection")
            buf += d
        if buf != b"+OK\r\n":
            raise SystemExit(f"seg-size-15: {buf!r}")
    dt = time.perf_counter() - t0
    s.close()
    return dt


def stop(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        p.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--clients", type=int, default=4, help="load-generator processes (default 4)")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--sync", default="interval,always")
    ap.add_argument("--no-seg15", action="store_true", help="skip the -cmdlog-seg-size 15 case")
    ap.add_argument("--seg15-rounds", type=int, default=4,
                    help="seg-size-15 rounds (each: both servers; an even number lets each go first as often)")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help="load phases, comma-separated, or none (default: %(default)s)")
    ap.add_argument("--client", choices=("auto", "go", "python"), default="auto",
                    help="load generator: the compiled Go one when go is on PATH (auto), or the Python one")
    a = ap.parse_args()
    go = None if a.client == "python" else build_go_client()
    if a.client == "go" and go is None:
        raise SystemExit("--client go: go is not on PATH")
    a.clients = max(1, min(a.clients, a.connections))
    phases = () if a.phases == "none" else tuple(x for x in a.phases.split(",") if x)
    for ph in phases:
        if ph not in PHASES:
            raise SystemExit(f"--phases: unknown phase {ph!r} (known: {', '.join(PHASES)}, none)")
    servers = (["workq-server"] if shutil.which("workq-server") else []) + ["wqtool"]
    try:
        import uvloop  # noqa: F401
        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    if os.environ.get("WQTOOL_SERVE_LOOP") == "asyncio":
        loop = "asyncio"
    print(f"{a.connections} connections over {a.clients} client processes, {a.seconds:g} s per phase, load average "
          f"{os.getloadavg()[0]:.2f}; workq-server on PATH: {'yes' if len(servers) > 1 else 'no'}; wqtool's "
          f"event loop: {loop}; load generator: {'Go' if go else 'Python'}")
    print(f"{'server':<13} {'sync':<9} {'phase':<19} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'ops':>8} "
          f"{'vs workq-server':>16} {'cpu us/op':>10} {'cpu vs':>7} {'load':>6}")
    ref: dict = {}

    def row(kind, sync, phase, ops, p50, p99, n, cpu=None):
        r = ref.get((sync, phase))
        ratio = f"{ops / r[0]:.2f}x" if r and kind != "workq-server" else ""
        cpu_s = f"{cpu:.1f}" if cpu is not None else "-"
        cratio = f"{r[1] / cpu:.2f}x" if r and r[1] and cpu and kind != "workq-server" else ""
        print(f"{kind:<13} {sync:<9} {phase:<19} {ops:>9.0f} {p50:>8.2f} {p99:>8.2f} {n:>8} {ratio:>16} "
              f"{cpu_s:>10} {cratio:>7} {os.getloadavg()[0]:>6.2f}", flush=True)

    for label, procs in (("client", a.clients), ("floor", 1)) if phases else ():
        p, addr = start("floor", "-", os.path.join(OUT, "floor"), procs=procs)
        try:
            res = bench(addr, a.connections, a.seconds, a.clients, ("add-lease-complete",), go=go)
        finally:
            stop(p)
        for phase, v in res.items():
            row(label, "-", phase, *v)
    for sync in a.sync.split(",") if phases else ():
        for kind in servers:
            p, addr = start(kind, sync, os.path.join(OUT, f"{kind}-{sync}"))
            try:
                res = bench(addr, a.connections, a.seconds, a.clients, phases, go=go, pid=p.pid)
            finally:
                stop(p)
            for phase, v in res.items():
                if kind == "workq-server":
                    ref[(sync, phase)] = (v[0], v[4])
                row(kind, sync, phase, *v)
    if not a.no_seg15:
        print(f"\n1,000 adds on one connection, -cmdlog-seg-size 15 (one segment per record), sync interval, "
              f"{a.seg15_rounds} round(s) of both servers, alternating which goes first")
        ratios = []
        rounds_dir = os.path.join(OUT, "seg15")
        shutil.rmtree(rounds_dir, ignore_errors=True)       # an interrupted run's (not this run's: see above)
        for rnd in range(1, a.seg15_rounds + 1):
            got = {}
            order = servers if rnd % 2 or len(servers) < 2 else servers[::-1]
            for kind in order:
                p, addr = start(kind, "interval", os.path.join(rounds_dir, f"{kind}-{rnd}"),
                                extra=("-cmdlog-seg-size", "15"))
                try:
                    u0, s0 = cpu_split(p.pid)
                    dt = seg15(addr)
                    u1, s1 = cpu_split(p.pid)
                finally:
                    stop(p)
                got[kind] = (dt, u1 - u0, s1 - s0, os.getloadavg()[0])
            base = got.get("workq-server")
            for kind in servers:
                dt, user, sys_, load = got[kind]
                cpu = user + sys_
                vs = ""
                if base and kind != "workq-server":
                    bcpu = base[1] + base[2]
                    ratios.append((dt / base[0], cpu / max(bcpu, 1e-9)))
                    vs = f"   {dt / base[0]:.2f}x workq-server (cpu {cpu / max(bcpu, 1e-9):.2f}x)"
                print(f"round {rnd}  {kind:<13} {dt:6.3f} s  cpu {cpu:5.2f} s (user {user * 1e3:4.0f} us, "
                      f"sys {sys_ * 1e3:4.0f} us per add){vs}  load {load:.2f}"
                      + ("  (ran first)" if len(order) > 1 and kind == order[0] else ""), flush=True)
        shutil.rmtree(rounds_dir, ignore_errors=True)
        if ratios:
            ratios.sort()
            mid = ratios[len(ratios) // 2]
            geo = math.exp(sum(math.log(r[0]) for r in ratios) / len(ratios))
            print(f"seg-size-15 median of {len(ratios)} round(s): {mid[0]:.2f}x workq-server (cpu "
                  f"{sorted(r[1] for r in ratios)[len(ratios) // 2]:.2f}x), geometric mean {geo:.2f}x; rounds "
                  f"{', '.join(f'{r[0]:.2f}x' for r in ratios)}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
