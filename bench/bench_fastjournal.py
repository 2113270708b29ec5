#!/usr/bin/env python3
"""fastjournal benchmark (per the unimplemented libfastjournal design: wqtool's own daemon and journal).

    python bench/bench_fastjournal.py [--seconds 8] [--connections 16] [--records 1000000] [--distinct 100000]

1. **The daemon**: ``serve()`` in its own process on loopback (journal in a temp directory, ``sync=full``: every
   batch of changes is written and fsynced before its replies), and a load process with ``--connections`` asyncio
   connections, each a closed loop (send one request, wait for its reply): SET phase (distinct uris cycling over
   ``--distinct``, each a change, journaled), then NEXT phase (each NEXT marks the entry it returns worked on: a
   change, journaled), then NEXT without a mark (a read). Operations per second and p50 / p99 latency.
2. **Replay** of a journal of ``--records`` SETs over ``--distinct`` resources (written with the engine's writer,
   cached under bench/out/fastjournal/), each in a fresh process: seconds, records/s, peak RSS (which counts the
   journal's mmapped pages: clean, file-backed) and the heap after the replay (RssAnon: the state) — and the same
   for a journal of the same resources with a fifth of the records, and of the same records over a tenth of the
   resources: the heap follows the distinct resources, not the records.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.path.join(ROOT, "bench", "out", "fastjournal")
NOW_US = 1_769_743_800_000_000

SERVER = ("import sys\nsys.path.insert(0, sys.argv[2])\nfrom wqtool.server.fastjournal import serve\n"
          "serve(sys.argv[1], '127.0.0.1', 0, sync=sys.argv[3], ready=lambda p: print(p, flush=True))\n")


# ---------------------------------------------------------------- load (runs in its own process)
async def _conn(port: int, phase: str, n: int, distinct: int, deadline: float, lat: list, start_at: int) -> int:
    from wqtool.engine.fastjournal.client import entry_value
    from wqtool.engine.fastjournal.wire import Request, decode_reply, encode_request, frame_reply
    from wqtool.formats.fastjournal import FLAG_DATA, FLAG_OVERWRITE, FLAG_PERSIST, FLAG_WORKED_ON, Function, ValueType
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    buf = bytearray()
    done = 0
    i = start_at
    ident = 0
    try:
        while time.perf_counter() < deadline:
            ident = (ident + 1) & 0xFFFF
            if phase == "set":
                k = i % distinct
                u = b"http://d%d.example/page/%d" % (k % 97, k)
                req = Request(Function.SET, ident, FLAG_OVERWRITE | FLAG_PERSIST, NOW_US + i, u,
                              value_type=ValueType.BUFFER, value=entry_value(i % 8, NOW_US - 1000))
                i += n
            elif phase == "next-mark":
                req = Request(Function.NEXT, ident, FLAG_DATA | FLAG_WORKED_ON, 0, b"", timeout=3_600_000_000)
            else:
                req = Request(Function.NEXT, ident, FLAG_DATA | FLAG_WORKED_ON, 0, b"")
            t0 = time.perf_counter()
            writer.write(encode_request(req))
            while True:
                m = frame_reply(buf)
                if m is not None:
                    r = decode_reply(buf, 0, m)
                    del buf[:m]
                    break
                chunk = await asyncio.wait_for(reader.read(65536), 10)
                if not chunk:
                    raise ConnectionError("closed")
                buf += chunk
            lat.append(time.perf_counter() - t0)
            if r.identifier != ident or r.error:
                raise RuntimeError(f"bad reply {r}")
            done += 1
    finally:
        writer.close()
    return done


def load_main(port: int, phase: str, conns: int, seconds: float, distinct: int) -> None:
    async def main():
        lat: list = []
        deadline = time.perf_counter() + seconds
        t0 = time.perf_counter()
        counts = await asyncio.gather(*(_conn(port, phase, conns, distinct, deadline, lat, k) for k in range(conns)))
        el = time.perf_counter() - t0
        lat.sort()
        print(json.dumps({"ops": sum(counts), "seconds": el, "p50_ms": lat[len(lat) // 2] * 1e3,
                          "p99_ms": lat[int(len(lat) * 0.99)] * 1e3}))
    asyncio.run(main())


def start_server(d: str, sync: str) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, "-c", SERVER, d, ROOT, sync], stdout=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    if not sel.select(30):
        p.kill()
        raise SystemExit("the server did not start")
    return p, int(p.stdout.readline())


def run_load(port: int, phase: str, conns: int, seconds: float, distinct: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--load", str(port), phase, str(conns), str(seconds),
                          str(distinct)], capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout)


# ---------------------------------------------------------------- replay
def generate(path: str, records: int, distinct: int) -> int:
    from wqtool.engine.fastjournal.writer import SegmentWriter, encode_record
    from wqtool.engine.fastjournal.wire import Request, encode_request
    from wqtool.formats.fastjournal import FLAG_OVERWRITE, Function, ValueType
    import struct
    if os.path.exists(path):
        return os.path.getsize(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".part"
    if os.path.exists(tmp):
        os.unlink(tmp)
    w = SegmentWriter(tmp, 1)
    pack = struct.Struct(">BQ").pack
    for i in range(records):
        k = i % distinct
        u = b"http://d%d.example/page/%d" % (k % 97, k)
        req = encode_request(Request(Function.SET, 0, FLAG_OVERWRITE, NOW_US + i, u, value_type=ValueType.BUFFER,
                                     value=pack(i % 8, NOW_US - 1000 + i)))
        w.raw(encode_record(NOW_US + i, req))
    w.close()
    os.rename(tmp, path)
    return os.path.getsize(path)


def replay_main(d: str) -> None:
    from wqtool.engine.format import Options, get
    fmt = get("fastjournal")
    opts = Options(NOW_US * 1000)
    t0 = time.perf_counter()
    (log,) = fmt.discover([d], opts)
    rep = fmt.passes.run_log(log, opts)
    el = time.perf_counter() - t0
    anon = 0
    with open("/proc/self/status") as f:          # the heap now (the state is alive): RssAnon, without the
        for line in f:                             # journal's mmapped (clean, file-backed) pages
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) / 1024
    print(json.dumps({"seconds": el, "records": rep.records, "entries": len(rep.state.fifo.entries),
                      "verdict": rep.verdict.label, "anon_mb": anon,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_replay(records: int, distinct: int) -> dict:
    d = os.path.join(OUT, f"r{records}-d{distinct}")
    size = generate(os.path.join(d, "000000001.fjj"), records, distinct)
    out = subprocess.run([sys.executable, __file__, "--replay", d], capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr)
    r = json.loads(out.stdout)
    r["mb"] = size / 1e6
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0, help="per load phase")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--distinct", type=int, default=100_000)
    ap.add_argument("--sync", default="full", choices=["full", "write"])
    args = ap.parse_args()
    print(f"fastjournal (per the unimplemented libfastjournal design): {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}")
    d = tempfile.mkdtemp(prefix="fj-bench-", dir=os.path.join(ROOT, "bench"))
    p, port = start_server(os.path.join(d, "journal"), args.sync)
    try:
        print(f"daemon: {args.connections} connections, closed loop, sync={args.sync}, {args.seconds:g} s per phase")
        print(f"{'phase':<22} {'ops':>9} {'ops/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
        for phase, label in (("set", "SET (journaled)"), ("next-mark", "NEXT + mark (journaled)"),
                             ("next", "NEXT (read)")):
            r = run_load(port, phase, args.connections, args.seconds, args.distinct)
            print(f"{label:<22} {r['ops']:>9} {r['ops'] / r['seconds']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        shutil.rmtree(d)
    print(f"replay (each in a fresh process; {OUT})")
    print(f"{'journal':<34} {'MB':>7} {'seconds':>8} {'records/s':>10} {'entries':>8} {'peak RSS MB':>12} "
          f"{'heap MB':>8}")
    for records, distinct in ((args.records, args.distinct), (args.records // 5, args.distinct),
                              (args.records, args.distinct // 10)):
        r = run_replay(records, distinct)
        print(f"{f'{records:,} SETs / {distinct:,} resources':<34} {r['mb']:>7.1f} {r['seconds']:>8.2f} "
              f"{r['records'] / r['seconds']:>10.0f} {r['entries']:>8} {r['rss_mb']:>12.0f} {r['anon_mb']:>8.0f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        load_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--replay":
        replay_main(sys.argv[2])
    else:
        main()
