#!/usr/bin/env python3
"""CPU per request of the request path in process: ``Conn`` objects on a fake transport and a fake loop (no
sockets, no event loop), N connections each looping add -> lease -> complete as the Go load client does, with
``--ready`` of them sending a request per loop iteration (16 connections: several requests per tick, one group
commit and one release per tick). Prints microseconds of CPU (``time.process_time``) per request, the median of
``--rounds``; ``--profile`` prints a cProfile of one round instead. ``--ab`` runs every round twice, with the C
request core (``Server.core``, _core.c) and without it (the Python handlers and queue), in interleaved pairs;
``--lone`` runs every round with the lone connection's turn in C (``Server.lone``, _core.c lone_turn: one
connection) and without it (the core alone), in interleaved pairs.

    python bench/bench_serve_inproc.py [--conns 16] [--ready 6] [--requests 60000] [--rounds 5] [--profile] [--ab]
        [--lone]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.server.test_hot_path import in_process  # noqa: E402


def one_round(conns: int, ready: int, requests: int, profile: bool, core: bool = True, lone: bool = True) -> float:
    d = tempfile.mkdtemp(prefix="wq-inproc-")
    try:
        now, srv, cs, ts = in_process(d, conns)
        if not core:
            srv.core = None
        if not (core and lone):
            srv.lone = None
        # per connection: its next requests, cycled (add -> lease -> complete of a fresh id each time)
        ids = [str(uuid.UUID(int=(k + 1) * 0x1_0000_0001, version=4)) for k in range(requests)]
        seqs = []
        for k in range(conns):
            q = b"lq%d" % k
            reqs = []
            for i in range(k, requests // 3, conns):
                jid = ids[i].encode()
                reqs += [b"add " + jid + b" " + q + b" 60000 3600000 5\r\nhello\r\n", b"lease " + q + b" 1000\r\n",
                         b"complete " + jid + b" 2\r\nok\r\n"]
            seqs.append(reqs)
        pos = [0] * conns
        total = sum(len(s) for s in seqs)
        done = 0
        k = 0
        prof = None
        if profile:
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        t0 = time.process_time()
        while done < total:
            for _ in range(ready):
                for _ in range(conns):
                    k = (k + 1) % conns
                    if pos[k] < len(seqs[k]):
                        break
                else:
                    break
                cs[k].data_received(seqs[k][pos[k]])
                pos[k] += 1
                done += 1
                ts[k].got.clear()
            now[0] += 20_000
            srv.loop.run_due()
        srv._commit()
        t = time.process_time() - t0
        if prof is not None:
            prof.disable()
            import pstats
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        srv.appender.close(sync=False)
        srv.locks.release()
        if srv.queue.reader is not None:
            srv.queue.reader.close()
        return t / total * 1e6
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--ready", type=int, default=6, help="requests per loop iteration")
    ap.add_argument("--requests", type=int, default=60000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--ab", action="store_true", help="with and without the C request core, interleaved")
    ap.add_argument("--lone", action="store_true", help="with and without the lone turn in C, interleaved")
    a = ap.parse_args()
    if a.profile:
        one_round(a.conns, a.ready, a.requests, True)
        return
    if a.ab or a.lone:
        other = (True, False) if a.lone else (False, True)
        pairs = [(one_round(a.conns, a.ready, a.requests, False, True),
                  one_round(a.conns, a.ready, a.requests, False, *other)) for _ in range(a.rounds)]
        for label, k in (("core + lone turn" if a.lone else "core", 0), ("core alone" if a.lone else "no core", 1)):
            us = [p[k] for p in pairs]
            print(f"{a.conns} conns, {a.ready} requests per tick, {label}: {statistics.median(us):.2f} us CPU per "
                  f"request (rounds {', '.join(f'{u:.2f}' for u in us)})")
        print(f"load {os.getloadavg()[0]:.2f}")
        return
    us = [one_round(a.conns, a.ready, a.requests, False) for _ in range(a.rounds)]
    print(f"{a.conns} conns, {a.ready} requests per tick: {statistics.median(us):.2f} us CPU per request "
          f"(rounds {', '.join(f'{u:.2f}' for u in us)}), load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
