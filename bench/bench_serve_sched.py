#!/usr/bin/env python3
"""Per-thread scheduler probe of ``wqtool serve`` and workq-server under the Go load client.

    python bench/bench_serve_sched.py --peer /work/anchors/workq/workq-server [--conns 1,16] [--rounds 2]
        [--seconds 4] [--variant NAME:ENV=VALUE[,ENV=VALUE...]]... [--burners 8]
        [--sync interval|always] [--rows interval:1,interval:16,always:1] [--floor c1,c1fs,c2,c3,c3burn40,c3wq,c4]
        [--peer-variant NAME:GOMAXPROCS=1] [--peer-variant NAME:CPUS=0]

For each round, each ``--conns`` row and each server (wqtool, each ``--variant`` of wqtool — the same server with
those environment variables — and workq-server, in an order that rotates from round to round): a fresh server on a
fresh command log, started in a session of its own (its own scheduling group under ``sched_autogroup``, as
``bench_serve_peer.py`` starts them), the compiled Go load client (add -> lease -> complete, one request in flight
per connection) for ``--seconds``, and, from every thread's ``/proc/PID/task/TID/schedstat`` and ``status`` before
and after, per request: CPU, time runnable but waiting for a CPU, slices (times put on a CPU), voluntary and
involuntary context switches — over all the server's threads, and for wqtool also of its loop thread alone
(``loop``). Each line carries the 1-minute load average. ``--burners N`` starts N ``python3 -c 'while 1: pass'``,
each in a session of its own, waits until the load average reaches ``--burn-load``, and stops them (by their own
pids) at the end, also on an error. The machine may be shared: only rows of one run compare.

``--rows SYNC:CONNS,...`` measures those rows (``-cmdlog-sync`` and connections; workq-server gets
``-cmdlog-sync-int 0`` with always, as ``bench_serve_peer.py`` starts it) in place of ``--sync`` x ``--conns``.
``--floor`` adds the floor servers of bench/floor (built with ``make -C bench/floor``; README.md there): ``c1`` the
standalone C server, ``c1fs`` with wqtool's fsync spinner (``-fsync-spin 5000``: a thread on sched_yield while
the loop waits in fdatasync, at most 5 ms, as spin.py's), ``c4`` the same with a second thread for the commit
(``-threads 2``), ``c2`` its loop in a thread of a Python process, ``c3`` / ``c3burnN`` / ``c3wq`` that with a
Python call per request (the reply, the reply after N us of Python, wqtool's own request path). The load client's
error count must be 0 (``errs``).

What the numbers say: ops/s follows how long a request waits for a CPU on its critical path; a server whose loop
thread sleeps once per request (vol ~1) pays a wake-up each time, one that stays on a CPU (vol ~0, spinning) pays
it only when preempted (invol).
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


_TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")


def tasks(pid: int) -> dict[str, tuple]:
    """Per thread: CPU ns, runnable-waiting ns, slices (schedstat); voluntary, involuntary switches (status);
    user and system CPU ns (stat's utime / stime, in clock ticks: coarse, but a split the run time has not)."""
    out = {}
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(t + "/schedstat") as f:
                run, wait, n = map(int, f.read().split())
            with open(t + "/status") as f:
                st = f.read()
            vol = int(st.split("\nvoluntary_ctxt_switches:")[1].split()[0])
            inv = int(st.split("nonvoluntary_ctxt_switches:")[1].split()[0])
            with open(t + "/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[t] = (run, wait, n, vol, inv, int(fields[11]) * _TICK_NS, int(fields[12]) * _TICK_NS)
        except (OSError, IndexError, ValueError):
            pass
    return out


def wait_port(port: int, limit: float = 20.0) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.01)
    raise SystemExit(f"bench_serve_sched: nothing listening on 127.0.0.1:{port} after {limit:.0f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FLOOR = os.path.join(HERE, "floor")


def floor_cmd(variant: str, python: str) -> list[str]:
    """The command of a floor server variant (bench/floor/README.md)."""
    if not os.path.exists(os.path.join(FLOOR, "floor")):
        raise SystemExit("bench_serve_sched: the floor servers are not built (make -C bench/floor)")
    if variant == "c1":
        return [os.path.join(FLOOR, "floor")]
    if variant == "c1fs":
        return [os.path.join(FLOOR, "floor"), "-fsync-spin", "5000"]
    if variant == "c4":
        return [os.path.join(FLOOR, "floor"), "-threads", "2"]
    if variant in ("c2", "c3", "c3wq") or variant.startswith("c3burn"):
        return [python, os.path.join(FLOOR, "pyfloor.py"), variant]
    raise SystemExit(f"bench_serve_sched: unknown floor variant {variant!r} (c1, c1fs, c2, c3, c3burnN, c3wq, c4)")


def one(name: str, cmd: list[str], env: dict, conns: int, seconds: int, loadgen: str, sync: str = "interval") -> dict:
    d = tempfile.mkdtemp(prefix="wq-sched-")
    port = free_port()
    extra = ["-cmdlog-sync", sync] + (["-cmdlog-sync-int", "0"] if name == "workq" and sync != "interval" else [])
    p = subprocess.Popen(cmd + ["-listen", f"127.0.0.1:{port}", "-cmdlog-path", d] + extra, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_port(port)
        a = tasks(p.pid)
        r = subprocess.run([loadgen, f"127.0.0.1:{port}", str(conns), str(seconds)], capture_output=True,
                           text=True, check=True)
        b = tasks(p.pid)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)
    ops = float(r.stdout.split()[0])
    errs = int(r.stdout.split()[3])
    nreq = max(1.0, ops * seconds)
    zero = (0,) * 7
    tot = [sum(b[t][i] - a.get(t, zero)[i] for t in b) / nreq for i in range(7)]
    main = f"/proc/{p.pid}/task/{p.pid}"
    loop = [(b[main][i] - a.get(main, zero)[i]) / nreq for i in range(7)] if main in b else None
    per = sorted(([(b[t][i] - a.get(t, zero)[i]) / nreq for i in range(7)] for t in b), key=lambda v: -v[0])
    return {"name": name, "conns": conns, "sync": sync, "errs": errs, "ops": ops, "load": os.getloadavg()[0],
            "all": tot, "loop": loop, "threads": len(b), "per": per}


def fmt(v: list[float]) -> str:
    per_slice = v[1] / 1e3 / v[2] if v[2] else 0.0
    return (f"cpu {v[0] / 1e3:5.1f} us  wait {v[1] / 1e3:6.1f} us  slices {v[2]:4.2f}  wait/slice {per_slice:6.1f} us  "
            f"vol {v[3]:4.2f}  invol {v[4]:4.2f}  usr {v[5] / 1e3:5.1f}  sys {v[6] / 1e3:5.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--peer", default="/work/anchors/workq/workq-server", help="workq-server binary")
    ap.add_argument("--loadgen", default="/work/anchors/loadgen-bin", help="the compiled Go load client")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"),
                    help="the interpreter running `-m wqtool serve` (default: this tree's .venv)")
    ap.add_argument("--conns", default="1,16", help="comma-separated connection counts (default 1,16)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:ENV=VALUE[,ENV=VALUE...]: also run wqtool with these environment variables")
    ap.add_argument("--peer-variant", action="append", default=[],
                    help="NAME:ENV=VALUE[,ENV=VALUE...]: also run workq-server with these environment variables "
                         "(e.g. GOMAXPROCS=1); the key CPUS=LIST runs it under `taskset -c LIST` instead")
    ap.add_argument("--no-base", action="store_true", help="leave out wqtool with the environment as it is")
    ap.add_argument("--no-peer", action="store_true", help="leave out workq-server")
    ap.add_argument("--per-thread", action="store_true", help="also one line per thread (busiest first)")
    ap.add_argument("--burners", type=int, default=0, help="CPU burners, each in a session of its own")
    ap.add_argument("--burn-load", type=float, default=6.0, help="load average to wait for with --burners")
    ap.add_argument("--sync", default="interval", help="-cmdlog-sync of every server (default interval)")
    ap.add_argument("--rows", default="", help="SYNC:CONNS,... (in place of --sync x --conns)")
    ap.add_argument("--floor", default="", help="floor servers of bench/floor to add: c1,c1fs,c2,c3,c3burnN,c3wq,c4")
    a = ap.parse_args(argv)
    rows = ([(r.split(":")[0], int(r.split(":")[1])) for r in a.rows.split(",") if r] if a.rows
            else [(a.sync, int(c)) for c in a.conns.split(",")])

    base = dict(os.environ)
    servers: list[tuple[str, list[str], dict]] = []
    wq = [a.python, "-m", "wqtool", "serve"]
    if not a.no_base:
        servers.append(("wqtool", wq, base))
    for v in a.variant:
        name, _, kvs = v.partition(":")
        env = dict(base)
        for kv in filter(None, kvs.split(",")):
            k, _, val = kv.partition("=")
            env[k] = val
        servers.append((name, wq, env))
    for v in filter(None, a.floor.split(",")):
        servers.append((v, floor_cmd(v, a.python), base))
    if not a.no_peer:
        servers.append(("workq", [a.peer], base))
    for v in a.peer_variant:
        name, _, kvs = v.partition(":")
        env, cmd = dict(base), [a.peer]
        for kv in filter(None, kvs.split(",")):
            k, _, val = kv.partition("=")
            if k == "CPUS":
                cmd = ["taskset", "-c", val, a.peer]
            else:
                env[k] = val
        servers.append((name, cmd, env))
    subprocess.run([a.python, "-m", "compileall", "-q", os.path.join(ROOT, "wqtool")], check=False)

    burners: list[subprocess.Popen] = []
    try:
        for _ in range(a.burners):
            burners.append(subprocess.Popen([sys.executable, "-c", "while 1: pass"], start_new_session=True))
        if burners:
            end = time.monotonic() + 120
            while os.getloadavg()[0] < a.burn_load and time.monotonic() < end:
                time.sleep(1)
            print(f"{len(burners)} burners, each in a session of its own; load {os.getloadavg()[0]:.1f}", flush=True)
        res: list[dict] = []
        for r in range(a.rounds):
            for sync, conns in rows:
                k = (r % len(servers))
                order = servers[k:] + servers[:k]
                for name, cmd, env in order:
                    x = one(name, cmd, env, conns, a.seconds, a.loadgen, sync)
                    res.append(x)
                    line = f"r{r + 1} {name:10s} {sync:8s} conns={conns:<3d} load={x['load']:5.1f} " \
                           f"ops/s={x['ops']:7.0f} errs={x['errs']}  all {x['threads']:2d} threads: {fmt(x['all'])}"
                    if x["loop"] is not None and name not in ("workq", "c1", "c1fs", "c4"):
                        line += f"\n{'':46s}loop thread: {fmt(x['loop'])}"
                    if a.per_thread:
                        for v in x["per"]:
                            if v[2] >= 0.01:
                                line += f"\n{'':46s}     thread: {fmt(v)}"
                    print(line, flush=True)
        print("medians (ops/s; ratio to workq-server in the same round, then each round's; per request over all "
              "threads: CPU us, wait us, slices, wait per slice us, user and system CPU us; load range; load client errors):")
        for sync, conns in rows:
            peer = [y for y in res if y["name"] == "workq" and y["conns"] == conns and y["sync"] == sync]
            for name, _, _ in servers:
                xs = [x for x in res if x["name"] == name and x["conns"] == conns and x["sync"] == sync]
                ops = statistics.median(x["ops"] for x in xs)
                ratios = []
                for i, x in enumerate(xs):
                    if i < len(peer) and peer[i]["ops"]:
                        ratios.append(x["ops"] / peer[i]["ops"])
                rs = f"{statistics.median(ratios):.2f}x ({', '.join(f'{q:.2f}' for q in ratios)})" if ratios else ""
                med = [statistics.median(x["all"][i] for x in xs) for i in range(7)]
                wps = statistics.median(x["all"][1] / x["all"][2] for x in xs if x["all"][2]) / 1e3
                lo, hi = min(x["load"] for x in xs), max(x["load"] for x in xs)
                print(f"  {sync:8s} conns={conns:<3d} {name:10s} {ops:8.0f}  {rs}  cpu {med[0] / 1e3:.1f}  "
                      f"wait {med[1] / 1e3:.1f}  slices {med[2]:.2f}  wait/slice {wps:.1f}  usr {med[5] / 1e3:.1f}  "
                      f"sys {med[6] / 1e3:.1f}  load {lo:.1f}-{hi:.1f}  "
                      f"errs {sum(x['errs'] for x in xs)}")
    finally:
        for b in burners:
            b.kill()
        for b in burners:
            b.wait()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
