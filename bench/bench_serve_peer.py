#!/usr/bin/env python3
"""wqtool serve against workq-server 0.2.0, row by row, in one run (``make bench-serve``).

    python bench/bench_serve_peer.py [--rounds 3] [--seconds 3] [--systests]

The rows of issue 33's table, each measured ``--rounds`` times with the two servers back to back (which one goes
first alternates), each on a fresh command log under bench/out/serve-peer/; the median of the rounds' ratios is the
result, and every line carries the load average (on a shared machine only ratios within one run mean anything):

* ``always 1 conn``, ``interval 1 / 16 / 64 conns``, ``seg-size 15, 64 conns``: ops/s of the compiled load client
  (bench/bench_serve_load.go, add -> lease -> complete per connection, one request in flight per connection, as
  go-workq) — workq-server gets ``-cmdlog-sync-int 0`` with always (upstream's quirk);
* ``first reply, empty log``: ms from exec to the answer of a request sent as soon as the port accepts (the median
  of five starts per round);
* ``probes > 100 ms, hostile clients``: a probe (``inspect server`` every 10 ms, its own process) while six client
  processes flood pipelined adds without reading, send 1 MB lines, churn connections, dribble 1 MB bodies and hold
  half-sent requests; the count of probes answered after more than 100 ms, of all probes, and the slowest;
* with ``--systests`` (needs $ANCHORS/run_systests.sh, shared/peers/workq-server.md): upstream's TestCmdLog/1K, in
  seconds, and whether it passed.

With ``--drop-in`` every row is also measured for ``wqtool-serve`` (the launcher beside the console script: the
port bound before Python starts, then ``wqtool serve``), in the same rounds, on a line of its own under wqtool's.

workq-server is found on PATH (or ``--peer PATH``); without it the wqtool rows are printed alone. wqtool is
started as users start it, by the ``wqtool`` console script next to this interpreter (every row; the first line
says which), or as ``python -m wqtool`` with a note where there is none.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_serve import ROOT, build_go_client  # noqa: E402

OUT = os.path.join(ROOT, "bench", "out", "serve-peer")


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


#: how wqtool is started: as users start it, by the installed console script next to this interpreter (bin/wqtool,
#: no runpy); ``python -m wqtool`` only where that script is missing (``launcher`` says which, once)
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "wqtool")
_DROP_IN = os.path.join(os.path.dirname(sys.executable), "wqtool-serve")
_LAUNCHER: list[str] = []


def launcher() -> list[str]:
    """The command that starts wqtool: the console script beside ``sys.executable``, else ``python -m wqtool``."""
    if not _LAUNCHER:
        if os.path.isfile(_SCRIPT) and os.access(_SCRIPT, os.X_OK):
            _LAUNCHER.append(_SCRIPT)
        else:
            print(f"note: no console script at {_SCRIPT}: wqtool is started as {sys.executable} -m wqtool", flush=True)
            _LAUNCHER.extend([sys.executable, "-m", "wqtool"])
    return list(_LAUNCHER)


def command(kind: str, peer: str, port: int, logdir: str | None, sync: str = "interval", extra=()) -> list[str]:
    if kind == "wqtool":
        cmd = launcher() + ["serve", "-listen", f"127.0.0.1:{port}", "--log-level", "warning"]
    elif kind == "wqtool-serve":
        cmd = [_DROP_IN, "-listen", f"127.0.0.1:{port}", "--log-level", "warning"]
    else:
        cmd = [peer, "-listen", f"127.0.0.1:{port}"]
    if logdir is not None:
        cmd += ["-cmdlog-path", logdir, "-cmdlog-sync", sync]
        if kind == "workq-server" and sync != "interval":
            cmd += ["-cmdlog-sync-int", "0"]
    return cmd + list(extra)


def spawn(cmd: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
                            start_new_session=True)


def wait_port(port: int, p: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{p.args[0]} did not start")
            time.sleep(0.005)


def stop(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, 15)
        p.wait(15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait(5)


def fresh_dir(name: str) -> str:
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


# ---------------------------------------------------------------- the rows
def throughput(kind: str, peer: str, go: str, conns: int, seconds: float, sync: str, extra=()) -> float:
    port = free_port()
    p = spawn(command(kind, peer, port, fresh_dir(f"{kind}-{sync}-{conns}"), sync, extra))
    try:
        wait_port(port, p)
        r = subprocess.run([go, "-addr", f"127.0.0.1:{port}", "-conns", str(conns), "-seconds", str(seconds),
                            "-phase", "add-lease-complete", "-base", str((1 << 41) + int(time.time() * 1000))],
                           capture_output=True, text=True, timeout=seconds + 60)
        if r.returncode:
            raise SystemExit(f"the load client failed: {r.stderr[:200]}")
        doc = json.loads(r.stdout)
        return doc["n"] / doc["dt"]
    finally:
        stop(p)


#: kind -> the CPU ms (every thread, /proc/PID/task/*/schedstat) each ``first_reply`` start had used at its reply
FIRST_CPU: dict[str, list[float]] = {}
#: kind -> (ms from exec until the port accepted, CPU ms used by then) of each ``first_reply`` start
FIRST_ACCEPT: dict[str, list[tuple[float, float]]] = {}


def process_cpu_ms(pid: int) -> float:
    """CPU ms used so far by every thread of ``pid`` (schedstat's run time: what a CPU share is spent on)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return float("nan")
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e6


def first_reply(kind: str, peer: str, starts: int = 5) -> float:
    """Median ms from exec to the answer of a request sent as soon as the port accepts (empty log); the CPU the
    server had used at each answer goes to ``FIRST_CPU``."""
    times = []
    for _ in range(starts):
        port = free_port()
        cmd = command(kind, peer, port, fresh_dir(f"{kind}-ready"))
        t0 = time.perf_counter()
        p = spawn(cmd)
        try:
            while True:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    break
                except OSError:
                    if p.poll() is not None:
                        raise SystemExit(f"{kind} did not start")
                    time.sleep(0.001)
            FIRST_ACCEPT.setdefault(kind, []).append(((time.perf_counter() - t0) * 1000, process_cpu_ms(p.pid)))
            s.settimeout(30)
            s.sendall(b"inspect server\r\n")
            got = b""
            while got.count(b"\r\n") < 4:
                got += s.recv(1000)
            times.append((time.perf_counter() - t0) * 1000)
            FIRST_CPU.setdefault(kind, []).append(process_cpu_ms(p.pid))
            s.close()
        finally:
            stop(p)
    return statistics.median(times)


def _hostile(kind: str, port: int, until: float) -> None:
    def conn():
        return socket.create_connection(("127.0.0.1", port), timeout=2)
    while time.monotonic() < until:
        try:
            if kind == "flood":          # pipelined adds, replies never read
                s = conn()
                chunk = b"".join(b"add %s fl 1000 60000 1\r\nx\r\n" % str(uuid.uuid4()).encode() for _ in range(3000))
                while time.monotonic() < until:
                    s.sendall(chunk)
            elif kind == "longline":     # a line near the read budget
                s = conn()
                s.sendall(b"inspect " + b" " * 1_000_000 + b"server\r\n")
                s.recv(100)
                s.close()
            elif kind == "churn":
                conn().close()
            elif kind == "bigbody":      # a 1 MB body in 64 KB pieces
                s = conn()
                s.sendall(b"add %s bb 1000 60000 1048576\r\n" % str(uuid.uuid4()).encode())
                for _ in range(16):
                    s.sendall(b"y" * 65536)
                s.sendall(b"\r\n")
                s.recv(100)
                s.close()
            else:                        # half-sent requests, held open
                held = []
                while time.monotonic() < until:
                    s = conn()
                    s.sendall(b"ad")
                    held.append(s)
                    time.sleep(0.05)
        except OSError:
            time.sleep(0.01)


def probes(kind: str, peer: str, seconds: float) -> tuple[int, int, float]:
    """(probes over 100 ms, probes, slowest ms) while the hostile clients run."""
    port = free_port()
    p = spawn(command(kind, peer, port, fresh_dir(f"{kind}-hostile")))
    try:
        wait_port(port, p)
        until = time.monotonic() + seconds + 0.3
        ctx = mp.get_context("fork")
        procs = [ctx.Process(target=_hostile, args=(k, port, until), daemon=True)
                 for k in ("flood", "flood", "longline", "churn", "bigbody", "slowloris")]
        for q in procs:
            q.start()
        time.sleep(0.3)
        probe = socket.create_connection(("127.0.0.1", port), timeout=30)
        probe.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        lat = []
        while time.monotonic() < until:
            t = time.perf_counter()
            probe.sendall(b"inspect server\r\n")
            got = b""
            while got.count(b"\r\n") < 4:
                got += probe.recv(1000)
            lat.append((time.perf_counter() - t) * 1000)
            time.sleep(0.01)
        for q in procs:
            q.terminate()
            q.join(5)
        return sum(1 for x in lat if x > 100), len(lat), max(lat)
    finally:
        stop(p)


def systest(kind: str, peer: str) -> tuple[float, bool]:
    anchors = os.environ["ANCHORS"]
    cmd = [peer] if kind == "workq-server" else [_DROP_IN] if kind == "wqtool-serve" else launcher() + ["serve"]
    env = dict(os.environ, SYSTESTS_RUN="TestCmdLog/1K",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    r = subprocess.run([os.path.join(anchors, "run_systests.sh"), *cmd], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:       # what failed, and the server log's path (run_systests.sh prints it)
        tail = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()][-12:]
        print(f"TestCmdLog/1K failed ({kind}):\n    " + "\n    ".join(tail), flush=True)
    return time.perf_counter() - t0, r.returncode == 0


# ---------------------------------------------------------------- the table
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per throughput run (default 3)")
    ap.add_argument("--hostile-seconds", type=float, default=5.0)
    ap.add_argument("--peer", default=shutil.which("workq-server"), help="workq-server (default: on PATH)")
    ap.add_argument("--systests", action="store_true", help="also upstream's TestCmdLog/1K ($ANCHORS)")
    ap.add_argument("--rows", default="", help="only the rows whose label contains one of these, comma-separated")
    ap.add_argument("--drop-in", action="store_true", help="also wqtool-serve (the launcher), on lines of its own")
    a = ap.parse_args()
    # the bytecode of wqtool's modules, as an installed package has it (PYTHONDONTWRITEBYTECODE=1 here: without
    # it every start compiles what it imports, and the first reply measures the compiler)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "wqtool")], check=True)
    go = build_go_client()
    if go is None:
        raise SystemExit("the compiled load client needs go on PATH (apt-get install golang-go)")
    if a.drop_in and not os.access(_DROP_IN, os.X_OK):
        raise SystemExit(f"--drop-in: no launcher at {_DROP_IN} (pip install . builds it)")
    servers = ["wqtool"] + (["wqtool-serve"] if a.drop_in else []) + (["workq-server"] if a.peer else [])
    print(f"wqtool serve ({' '.join(launcher())}) vs {a.peer or '(no workq-server on PATH: wqtool alone)'}; "
          f"{a.rounds} round(s), the servers "
          f"back to back, alternating which goes first; load average {load()} ({os.cpu_count()} CPUs)")
    print(f"{'row':<34} {'wqtool':>10} {'workq-server':>13} {'ratio':>7}   rounds (ratio, load)")
    rows = [("always, 1 conn (ops/s)", lambda k: throughput(k, a.peer, go, 1, a.seconds, "always"), True),
            ("interval, 1 conn (ops/s)", lambda k: throughput(k, a.peer, go, 1, a.seconds, "interval"), True),
            ("interval, 16 conns (ops/s)", lambda k: throughput(k, a.peer, go, 16, a.seconds, "interval"), True),
            ("interval, 64 conns (ops/s)", lambda k: throughput(k, a.peer, go, 64, a.seconds, "interval"), True),
            ("seg-size 15, 64 conns (ops/s)", lambda k: throughput(k, a.peer, go, 64, a.seconds, "interval",
                                                                    ("-cmdlog-seg-size", "15")), True),
            ("first reply, empty log (ms)", lambda k: first_reply(k, a.peer), False)]
    want = [w for w in a.rows.split(",") if w]
    for label, run, higher_better in rows:
        if want and not any(w in label for w in want):
            continue
        ours = [k for k in servers if k != "workq-server"]
        per, ratios = {k: [] for k in servers}, {k: [] for k in ours}
        for rnd in range(a.rounds):
            order = servers if rnd % 2 == 0 else servers[::-1]
            got = {k: run(k) for k in order}
            for k in servers:
                per[k].append(got[k])
            if a.peer:
                for k in ours:
                    r = got[k] / got["workq-server"] if higher_better else got["workq-server"] / got[k]
                    ratios[k].append((r, load()))
        med = {k: statistics.median(v) for k, v in per.items()}
        for k in ours:
            ratio = f"{statistics.median(r for r, _ in ratios[k]):.2f}x" if ratios[k] else "-"
            peer = f"{med['workq-server']:13.1f}" if a.peer else f"{'-':>13}"
            print(f"{label if k == 'wqtool' else '  ' + k:<34} {med[k]:10.1f} {peer} {ratio:>7}   "
                  + ", ".join(f"{r:.2f}x ({ld})" for r, ld in ratios[k]), flush=True)
        if label.startswith("first reply") and FIRST_CPU:
            nan = float("nan")
            for k in ours:
                cpu = {x: statistics.median(v) for x, v in FIRST_CPU.items()}
                acc = {x: "%.1f; %.1f" % (statistics.median(t for t, _ in v), statistics.median(c for _, c in v))
                       for x, v in FIRST_ACCEPT.items()}
                who = "" if k == "wqtool" else f" ({k})"
                print(f"{'  CPU at the reply (ms)' + who:<34} {cpu.get(k, nan):10.1f} "
                      + (f"{cpu.get('workq-server', nan):13.1f}" if a.peer else f"{'-':>13}")
                      + "   (every thread; the median of all starts)", flush=True)
                print(f"{'  port accepts (ms; CPU)' + who:<34} {acc.get(k, '-'):>10} "
                      + (f"{acc.get('workq-server', '-'):>13}" if a.peer else f"{'-':>13}")
                      + "   (exec to the first connect that succeeds, polled every 1 ms)", flush=True)
    if not want or any(w in "probes" for w in want):
        got = {k: [] for k in servers}
        for rnd in range(a.rounds):
            for k in (servers if rnd % 2 == 0 else servers[::-1]):
                got[k].append((*probes(k, a.peer, a.hostile_seconds), load()))
        cells = {k: ", ".join(f"{o}/{n} (max {m:.0f} ms, load {ld})" for o, n, m, ld in v) for k, v in got.items()}
        for k in servers:
            print(f"{'probes > 100 ms, hostile clients':<34} {k:>10}: {cells[k]}", flush=True)
    if a.systests:
        if not os.environ.get("ANCHORS") or not a.peer:
            print("TestCmdLog/1K: skipped (needs $ANCHORS/run_systests.sh and workq-server)")
        else:
            res = {k: [] for k in servers}
            for rnd in range(a.rounds):
                for k in (servers if rnd % 2 == 0 else servers[::-1]):
                    dt, ok = systest(k, a.peer)
                    res[k].append((dt, ok, load()))
            for k in servers:
                print(f"{'TestCmdLog/1K (s, wall of the run)':<34} {k:>10}: "
                      + ", ".join(f"{dt:.1f} {'pass' if ok else 'FAIL'} (load {ld})" for dt, ok, ld in res[k]))
            for k in servers[:-1]:
                ratios = [w[0] / g[0] for w, g in zip(res[k], res["workq-server"])]
                print(f"{'TestCmdLog/1K ratio':<34} {k:>10}: {statistics.median(ratios):.2f}x   "
                      + ", ".join(f"{r:.2f}x" for r in ratios))
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
