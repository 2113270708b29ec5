#!/usr/bin/env python3
"""Where one request's wall time goes: wqtool serve and workq-server side by side (docs/serve.md, "Where a
request's time goes").

    python bench/bench_serve_wall.py [--peer workq-server] [--sync interval,always] [--conns 1] [--rounds 2]
                                     [--seconds 3] [--strace]

For each round and sync policy, both servers (which one goes first alternates) on a fresh command log under
bench/out/serve-wall/, loaded by the compiled Go client (add -> lease -> complete, one request in flight per
connection), and for each one line:

* ops/s, the client's median, 99th percentile and mean latency per request (the mean is 1 / the rate: a mean far
  above the median is a tail of slow requests);
* the server's CPU per request, user and system (/proc/PID/task/*/stat, every thread);
* its context switches per request, voluntary (a thread that waited: epoll, fsync, a futex) and involuntary (a
  thread that was running and lost its CPU), from /proc/PID/task/*/status, and the threads that switched more
  than once per 20 requests;
* with ``--strace``, in a second run under ``strace -f -c`` (slow: its rates mean nothing), the system calls per
  request.

Load average on every line: on a shared machine only lines of the same run compare. Run it quiet, then beside CPU
burners (``for i in $(seq 8); do python3 -c 'while 1: pass' & done``; they share the session, and so the
scheduling group, of this script and its load client, as in ``make bench-serve``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import ROOT, build_go_client  # noqa: E402
from bench_serve_peer import command, free_port, spawn, stop, wait_port  # noqa: E402

OUT = os.path.join(ROOT, "bench", "out", "serve-wall")
TCK = os.sysconf("SC_CLK_TCK")


def fresh_dir(name: str) -> str:
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def threads(pid: int) -> dict[str, tuple[str, int, int, int, int]]:
    """tid -> (name, user ticks, system ticks, voluntary switches, involuntary switches)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(f"{base}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            v = nv = 0
            with open(f"{base}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        v = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        nv = int(line.split()[1])
            with open(f"{base}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        out[tid] = (name, int(st[11]), int(st[12]), v, nv)
    return out


def load_client(go: str, port: int, conns: int, seconds: float) -> dict:
    r = subprocess.run([go, "-addr", f"127.0.0.1:{port}", "-conns", str(conns), "-seconds", str(seconds),
                        "-phase", "add-lease-complete", "-base", str((1 << 41) + int(time.time() * 1000))],
                       capture_output=True, text=True, timeout=seconds + 60)
    if r.returncode:
        raise SystemExit(f"the load client failed: {r.stderr[:200]}")
    return json.loads(r.stdout)


def one(kind: str, peer: str, go: str, sync: str, conns: int, seconds: float) -> str:
    port = free_port()
    p = spawn(command(kind, peer, port, fresh_dir(f"{kind}-{sync}"), sync))
    try:
        wait_port(port, p)
        time.sleep(0.5)                             # past the start-up (the import thread, the hand-over)
        a = threads(p.pid)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        doc = load_client(go, port, conns, seconds)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        b = threads(p.pid)
    finally:
        stop(p)
    n = doc["n"]
    zero = ("", 0, 0, 0, 0)
    d = [sum(b[t][i] - a.get(t, zero)[i] for t in b) for i in (1, 2, 3, 4)]
    busy = {b[t][0]: (b[t][3] - a.get(t, zero)[3], b[t][4] - a.get(t, zero)[4]) for t in b
            if b[t][3] + b[t][4] - a.get(t, zero)[3] - a.get(t, zero)[4] > n // 20}
    client = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / n * 1e6
    return (f"{kind:12s} {sync:8s} {conns:3d} conn  load {os.getloadavg()[0]:4.1f}  {n / doc['dt']:8.0f} ops/s  "
            f"p50 {doc['p50_ns'] / 1000:5.0f} us  p99 {doc['p99_ns'] / 1000:6.0f} us  "
            f"mean {doc['dt'] / n * 1e6:5.0f} us"
            f"  CPU/req user {d[0] / TCK / n * 1e6:5.1f} us sys {d[1] / TCK / n * 1e6:5.1f} us  "
            f"switches/req vol {d[2] / n:4.2f} invol {d[3] / n:5.3f}  (client CPU/req {client:4.1f} us)  "
            f"threads {busy}")


def syscalls(kind: str, peer: str, go: str, sync: str, conns: int, seconds: float) -> str:
    port = free_port()
    p = spawn(command(kind, peer, port, fresh_dir(f"{kind}-{sync}-strace"), sync))
    out = os.path.join(OUT, f"strace-{kind}-{sync}.txt")
    try:
        wait_port(port, p)
        time.sleep(0.5)
        st = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-p", str(p.pid)], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        n = load_client(go, port, conns, seconds)["n"]
        st.send_signal(2)
        st.wait(30)
    finally:
        stop(p)
    calls = []
    with open(out) as f:
        for line in f:
            x = line.split()
            if len(x) >= 5 and x[3].isdigit() and x[-1] != "total" and int(x[3]) > n // 20:
                calls.append((int(x[3]) / n, x[-1]))
    total = sum(c for c, _ in calls)
    return f"{kind:12s} {sync:8s} syscalls/req {total:5.2f}: " + ", ".join(f"{name} {c:.2f}" for c, name in
                                                                          sorted(calls, reverse=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", default=shutil.which("workq-server"))
    ap.add_argument("--sync", default="interval,always")
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--strace", action="store_true")
    a = ap.parse_args()
    go = build_go_client()
    if go is None:
        raise SystemExit("needs the compiled Go load client (go on PATH)")
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "wqtool")], check=True)
    kinds = ["wqtool"] + (["workq-server"] if a.peer else [])
    for i in range(a.rounds):
        for sync in a.sync.split(","):
            for kind in (kinds if i % 2 == 0 else kinds[::-1]):
                print(one(kind, a.peer, go, sync, a.conns, a.seconds), flush=True)
    if a.strace:
        for sync in a.sync.split(","):
            for kind in kinds:
                print(syscalls(kind, a.peer, go, sync, a.conns, min(a.seconds, 2.0)), flush=True)


if __name__ == "__main__":
    main()
