#!/usr/bin/env python3
"""The idle spinner of ``wqtool serve`` (``WQTOOL_SERVE_SPIN_US``, _proto.c's idle_spin_start): its rate and its CPU.

    python bench/bench_serve_spin.py --peer /work/anchors/workq/workq-server [--spins 0,1000] [--conns 1,16]
                                     [--rounds 3] [--seconds 3] [--sync interval]

For each round, each row (``--conns``) and each variant (wqtool with each ``--spins`` window in us, 0 = no spinner,
then workq-server), in an order that rotates from round to round: a fresh server on a fresh command log, the
compiled Go load client (add -> lease -> complete, one request in flight per connection) for ``--seconds``, then
the server's ops/s, its CPU (utime + stime of every thread, /proc/PID/stat) per 100k requests, and its CPU over the
``--idle`` seconds after the traffic stopped (the spinner parks after its window: ~0). Each line carries the load
average; the summary gives the median of the rounds per variant and the ratio of each wqtool variant to
workq-server in the same round (the median of those). The machine is shared: only ratios within one run mean
anything.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import build_go_client  # noqa: E402
from bench_serve_peer import command, fresh_dir, free_port, load, spawn, stop, wait_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of the process and of its children (the idle spinner, when it is a process of its own)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    t = (int(f[11]) + int(f[12])) / TICK
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            kids = open(f"/proc/{pid}/task/{task}/children").read().split()
        except OSError:
            continue
        for k in kids:
            try:
                t += cpu_s(int(k))
            except OSError:
                pass
    return t


def one(kind: str, spin: str | None, peer: str, go: str, conns: int, seconds: float, sync: str,
        idle: float) -> tuple[float, float, float, float]:
    """(ops/s, CPU seconds per 100k requests, CPU seconds in the ``idle`` seconds after the traffic, the client's
    median latency in us)."""
    port = free_port()
    old = os.environ.get("WQTOOL_SERVE_SPIN_US")
    old_as = os.environ.get("WQTOOL_SERVE_SPIN_AS")
    if spin is not None:
        os.environ["WQTOOL_SERVE_SPIN_US"] = spin.lstrip("t")
        os.environ["WQTOOL_SERVE_SPIN_AS"] = "thread" if spin.startswith("t") else "process"
    try:
        p = spawn(command(kind, peer, port, fresh_dir(f"spin-{kind}-{spin}-{conns}"), sync))
    finally:
        for k, v in (("WQTOOL_SERVE_SPIN_US", old), ("WQTOOL_SERVE_SPIN_AS", old_as)):
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        wait_port(port, p)
        time.sleep(0.3)             # (the asyncio loop takes over from the early loop)
        c0 = cpu_s(p.pid)
        r = subprocess.run([go, "-addr", f"127.0.0.1:{port}", "-conns", str(conns), "-seconds", str(seconds),
                            "-phase", "add-lease-complete", "-base", str((1 << 41) + int(time.time() * 1000))],
                           capture_output=True, text=True, timeout=seconds + 60)
        c1 = cpu_s(p.pid)
        if r.returncode:
            raise SystemExit(f"the load client failed: {r.stderr[:200]}")
        doc = json.loads(r.stdout)
        time.sleep(0.1)             # (past any window)
        c2 = cpu_s(p.pid)
        time.sleep(idle)
        c3 = cpu_s(p.pid)
        return doc["n"] / doc["dt"], (c1 - c0) / doc["n"] * 1e5, c3 - c2, doc.get("p50_ns", 0) / 1e3
    finally:
        stop(p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", default="workq-server")
    ap.add_argument("--spins", default="0,1000", help="windows in us to compare (0: no spinner; t1000: the "
                    "spinner as a thread of the server, WQTOOL_SERVE_SPIN_AS=thread)")
    ap.add_argument("--conns", default="1,16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--sync", default="interval")
    ap.add_argument("--idle", type=float, default=1.0)
    a = ap.parse_args()
    go = build_go_client()
    if go is None:
        raise SystemExit("the compiled load client needs go on PATH")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "wqtool"], check=True,
                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    variants = [("wqtool", s) for s in a.spins.split(",")] + [("workq-server", None)]
    print(f"# idle spinner: {a.rounds} rounds x {a.seconds:.0f} s, -cmdlog-sync {a.sync}, load {load()} "
          f"({os.cpu_count()} CPUs)")
    print(f"{'conns':>5} {'server':<18} {'ops/s':>8} {'cpu s/100k':>10} {'idle cpu s':>10} {'p50 us':>7}  load")
    res: dict = {}
    for rnd in range(a.rounds):
        for conns in [int(c) for c in a.conns.split(",")]:
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            for kind, spin in order:
                ops, cpu, idle, p50 = one(kind, spin, a.peer, go, conns, a.seconds, a.sync, a.idle)
                name = kind if spin is None else f"wqtool spin={spin}"
                res.setdefault((conns, name), []).append((rnd, ops, cpu, idle, p50))
                print(f"{conns:>5} {name:<18} {ops:>8.0f} {cpu:>10.2f} {idle:>10.2f} {p50:>7.0f}  {load()}", flush=True)
    print("# medians (ratio: to workq-server in the same round)")
    for conns in [int(c) for c in a.conns.split(",")]:
        peer = {r: ops for r, ops, _, _, _ in res.get((conns, "workq-server"), [])}
        for (c, name), rows in res.items():
            if c != conns:
                continue
            ratios = [ops / peer[r] for r, ops, _, _, _ in rows if peer.get(r)]
            print(f"{conns:>5} {name:<18} {statistics.median(o for _, o, _, _, _ in rows):>8.0f} "
                  f"{statistics.median(c_ for _, _, c_, _, _ in rows):>10.2f} "
                  f"{max(i for _, _, _, i, _ in rows):>10.2f} "
                  f"{statistics.median(p for _, _, _, _, p in rows):>7.0f}  ratio {statistics.median(ratios) if ratios else 0:.2f} "
                  f"({', '.join(f'{x:.2f}' for x in ratios)})")
    print(f"# load average at the end: {load()}")


if __name__ == "__main__":
    main()
