"""workq benchmark (issue 14): every command as a ratio to a read + CRC floor measured in the same run.

    python bench/bench_workq.py [--quick] [--repeat 3] [--only verify,replay] [--root DIR] [--json FILE]

Runs on the issue-14 log shape (bench/shapes.py: 148.6 MB, 3 segments, 1.24 M records, 657 k live jobs at
as-of; ``--quick``: a tenth of it, for iterations), generated once and cached under bench/out/. Each measure is a
separate process (wall time, CPU time and peak RSS from wait4), stdout to /dev/null, warm page cache:

  floor            read every segment + google-crc32c over the same bytes (1 MiB chunks), in a fresh python
  baseline         wqtool replay --summary on a 3-record log: the process baseline (start-up time and RSS)
  verify           wqtool verify -q (2 processes for logs over 64 MiB)     verify-1p: --workers 1
  replay-summary   wqtool replay --summary -o json
  replay-jsonl     wqtool replay -o jsonl          replay-json: -o json
  dump-jsonl       wqtool dump -o jsonl            dump-limit: dump -o jsonl --limit 1000 (the same work, ~no output)
  stats            wqtool stats -o json
  verify-damaged   wqtool verify -q on a copy with 4 bytes flipped in the middle of the middle segment (issue 18;
                   the other segments hard-linked; exit 3)     verify-damaged-1p: --workers 1
  diff             wqtool diff -q of the log and a copy whose last record names another job (issue 32; the other
                   segments hard-linked; exit 1): goal <= 2.5x verify-1p's CPU, peak RSS <= 2x replay-summary's

The machine has 2 cores shared with others: each run of a measure is paired with a floor run made right before
it, the figure is the median over ``--repeat`` pairs of (measure time / floor time), and the load average is
printed. ``x floor`` = how many floors the measure takes (1/x of the floor's throughput). Goals (issue 14):
replay --summary <= 30x, RSS above baseline <= 500 bytes per live job, replay/dump -o jsonl <= 60x with RSS
flat in output size (RSS with the full output minus RSS with ~none), stats <= 1.5x replay --summary, verify
<= 12x. Issue 18: verify on the damaged copy <= 1.5x verify on the intact log (each against its own floor: the
same bytes are read). ``--root DIR`` measures another wqtool checkout (``make bench-before`` measures commit 1c22d37, before
issue 14, built into bench/out/before).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
import shapes  # noqa: E402
from harness import loadavg, timed as run  # noqa: E402


MEASURES = ["baseline", "verify", "verify-1p", "replay-summary", "replay-jsonl", "replay-json", "dump-jsonl",
            "dump-limit", "stats", "verify-damaged", "verify-damaged-1p", "diff"]
DEFAULT = ["baseline", "verify", "verify-1p", "replay-summary", "replay-jsonl", "dump-jsonl", "dump-limit", "stats",
           "verify-damaged", "verify-damaged-1p", "diff"]



def damaged_copy(d: str) -> str:
    """``d`` with 4 bytes flipped (xor 0xff) in the middle of its middle segment (issue 18's damaged log): the other
    segments hard-linked, made once beside ``d``."""
    out = d + "-damaged"
    if os.path.isdir(out):
        return out
    tmp = out + ".tmp"
    if os.path.isdir(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    segs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    mid = segs[len(segs) // 2]
    for n in segs:
        if n != mid:
            os.link(os.path.join(d, n), os.path.join(tmp, n))
            continue
        data = bytearray(open(os.path.join(d, n), "rb").read())
        at = len(data) // 2
        data[at:at + 4] = bytes(b ^ 0xFF for b in data[at:at + 4])
        with open(os.path.join(tmp, n), "wb") as f:
            f.write(data)
    os.rename(tmp, out)
    return out


def last_changed_copy(d: str) -> str:
    """``d`` with its last record rewritten to name another job (same length, a valid CRC): issue 32's pair of logs
    that differ in their last record. The other segments hard-linked, made once beside ``d``."""
    out = d + "-last"
    if os.path.isdir(out):
        return out
    sys.path.insert(0, ROOT)
    from wqtool.engine.workq import _kernel
    from wqtool.engine.workq.fastpath import encode_record
    tmp = out + ".tmp"
    if os.path.isdir(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    segs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    for n in segs[:-1]:
        os.link(os.path.join(d, n), os.path.join(tmp, n))
    data = bytearray(open(os.path.join(d, segs[-1]), "rb").read())
    pos, _, why = _kernel.diff_walk(bytes(data), 8, len(data), len(data) - 1, b"")    # the last record
    assert why == 1, "the newest segment ends in a whole record"
    size_at = pos + 15
    body_at = size_at + 1 if data[size_at] < 0x80 else size_at + 2 if data[size_at + 1] < 0x80 else size_at + 3
    payload = bytearray(data[body_at:len(data) - 4])
    payload[1:17] = bytes.fromhex("5eed0000d1ff4000800000000000beef")   # another job id (a v4 uuid)
    from wqtool.formats._common import GoTime
    import struct
    sec, nsec = struct.unpack_from(">qi", data, pos + 1)
    data[pos:] = encode_record(GoTime(sec, nsec, -1), bytes(payload))
    with open(os.path.join(tmp, segs[-1]), "wb") as f:
        f.write(data)
    os.rename(tmp, out)
    return out


def argv_of(name: str, d: str, tiny: str) -> list[str]:
    wq = [sys.executable, "-m", "wqtool"]
    a = ["--as-of", shapes.AS_OF]
    if name.startswith("verify-damaged"):
        d = damaged_copy(d)
    return {
        "floor": [sys.executable, "-c", harness.FLOOR_SCRIPT, d],
        "baseline": wq + ["replay", "--summary", "-o", "json", *a, tiny],
        "verify": wq + ["verify", "-q", *a, d],
        "verify-1p": wq + ["verify", "-q", "--workers", "1", *a, d],
        "replay-summary": wq + ["replay", "--summary", "-o", "json", *a, d],
        "replay-jsonl": wq + ["replay", "-o", "jsonl", *a, d],
        "replay-json": wq + ["replay", "-o", "json", *a, d],
        "dump-jsonl": wq + ["dump", "-o", "jsonl", *a, d],
        "dump-limit": wq + ["dump", "-o", "jsonl", "--limit", "1000", *a, d],
        "stats": wq + ["stats", "-o", "json", *a, d],
        "verify-damaged": wq + ["verify", "-q", *a, d],
        "verify-damaged-1p": wq + ["verify", "-q", "--workers", "1", *a, d],
        "diff": wq + ["diff", "-q", *a, d, last_changed_copy(d)] if name == "diff" else None,
    }[name]


def tiny_log(out: str) -> str:
    d = os.path.join(out, "workq-tiny")
    if not os.path.isdir(d):
        sys.path.insert(0, ROOT)
        from wqtool.engine.workq.sample import SampleSpec, generate
        generate(d + ".tmp", SampleSpec(records=3, seed=1))
        os.rename(d + ".tmp", d)
    return d



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of the issue-14 log (for iterations)")
    ap.add_argument("--scale", type=float, default=None, help="any fraction of the issue-14 log")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measure (each paired with a floor run)")
    ap.add_argument("--only", default=None, help=f"comma-separated measures (default {','.join(DEFAULT)}; "
                    f"all: {','.join(MEASURES)})")
    ap.add_argument("--root", default=ROOT, help="the wqtool checkout to measure (default: this one)")
    ap.add_argument("--pure-python", action="store_true", help="WQTOOL_PURE_PYTHON=1 (the reference path: no C kernel)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--json", default=None, help="also write the results to this file")
    a = ap.parse_args()
    scale = a.scale if a.scale is not None else (0.1 if a.quick else 1.0)
    names = a.only.split(",") if a.only else DEFAULT
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, ROOT)
    t0 = time.perf_counter()
    d = shapes.ensure(a.out, scale)
    tiny = tiny_log(a.out)
    if time.perf_counter() - t0 > 1:
        print(f"generated the logs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    root = os.path.abspath(a.root)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if a.pure_python:
        env["WQTOOL_PURE_PYTHON"] = "1"
    else:
        env.pop("WQTOOL_PURE_PYTHON", None)
    check = subprocess.run([sys.executable, "-c", "import wqtool, os; from wqtool.engine.workq import fastreplay as f; "
                            "print(os.path.dirname(os.path.dirname(wqtool.__file__)), f.KERNEL)"],
                           capture_output=True, text=True, env=env, cwd=root, check=True).stdout.split()
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))
    segs = sum(1 for f in os.listdir(d) if f.endswith(".log"))
    info = json.loads(subprocess.run(argv_of("replay-summary", d, tiny), capture_output=True, text=True, env=env,
                                     cwd=root, check=True).stdout)
    live, records = info["job_count"], info["records"]
    load_before = loadavg()

    run(argv_of("floor", d, tiny), root, env)            # warm the page cache
    rows: dict[str, dict] = {}
    for name in names:
        pairs = []
        for _ in range(a.repeat):
            f = run(argv_of("floor", d, tiny), root, env)
            m = run(argv_of(name, d, tiny), root, env)
            pairs.append((f, m))
        rows[name] = {
            "seconds": statistics.median(m[0] for _, m in pairs),
            "cpu": statistics.median(m[1] for _, m in pairs),
            "rss": statistics.median(m[2] for _, m in pairs),
            "floor": statistics.median(f[0] for f, _ in pairs),
            "x_floor": statistics.median(m[0] / f[0] for f, m in pairs),
            "exit": max(m[3] for _, m in pairs),
        }
    load_after = loadavg()

    print(f"\nworkq cmdlog (issue-14 shape, scale {scale:g}): {size / 1e6:.1f} MB, {records:,} records, {segs} "
          f"segment(s), {live:,} live jobs at {shapes.AS_OF}")
    print(f"wqtool at {check[0]} (kernel: {check[1]}); {os.cpu_count()} cores; load average {load_before} before, "
          f"{load_after} after; medians of {a.repeat} runs, each paired with a floor run")
    print(f"{'measure':<16} {'seconds':>8} {'cpu s':>7} {'MB/s':>8} {'x floor':>8} {'peak RSS':>10} exit")
    for name in names:
        r = rows[name]
        print(f"{name:<16} {r['seconds']:>8.2f} {r['cpu']:>7.2f} {size / r['seconds'] / 1e6:>8.1f} "
              f"{r['x_floor']:>8.1f} {r['rss'] / 2**20:>8.0f} MB {r['exit']}")
    print(f"floor: median {statistics.median(r['floor'] for r in rows.values()):.3f} s")
    goals = []

    def goal(text: str, ok: bool) -> None:
        goals.append((text, ok))

    def x(name: str) -> float | None:
        return rows[name]["x_floor"] if name in rows else None

    if x("replay-summary") is not None:
        goal(f"replay --summary {x('replay-summary'):.1f}x the floor (goal <= 30x)", x("replay-summary") <= 30)
        if "baseline" in rows:
            per = (rows["replay-summary"]["rss"] - rows["baseline"]["rss"]) / max(1, live)
            goal(f"replay --summary peak RSS {per:.0f} bytes per live job above the baseline's "
                 f"{rows['baseline']['rss'] / 2**20:.0f} MB (goal <= 500)", per <= 500)
    for name, flat_vs in (("replay-jsonl", "replay-summary"), ("dump-jsonl", "dump-limit")):
        if x(name) is not None:
            goal(f"{name.replace('-', ' -o ')} {x(name):.1f}x the floor (goal <= 60x)", x(name) <= 60)
            if flat_vs in rows:
                extra = (rows[name]["rss"] - rows[flat_vs]["rss"]) / 2**20
                goal(f"{name.replace('-', ' -o ')} RSS {extra:+.0f} MB vs {flat_vs} (the same work, ~no output; "
                     "goal: flat, <= 16 MB)", extra <= 16)
    if x("stats") is not None and x("replay-summary") is not None:
        q = x("stats") / x("replay-summary")      # each against its own floor: robust to load changes between them
        goal(f"stats {q:.2f}x the time of replay --summary ({x('stats'):.1f}x / {x('replay-summary'):.1f}x the "
             "floor; goal <= 1.5x)", q <= 1.5)
    if x("verify") is not None:
        goal(f"verify {x('verify'):.1f}x the floor (goal <= 12x)", x("verify") <= 12)
    for damaged, intact in (("verify-damaged", "verify"), ("verify-damaged-1p", "verify-1p")):
        if x(damaged) is not None and x(intact) is not None:
            q = x(damaged) / x(intact)
            cpu = rows[damaged]["cpu"] / max(rows[intact]["cpu"], 1e-9)   # robust to the load of a shared machine
            goal(f"{damaged.replace('verify-damaged', 'verify (damaged)')} {q:.2f}x {intact} on the intact log "
                 f"({x(damaged):.1f}x / {x(intact):.1f}x the floor; CPU time {cpu:.2f}x; issue 18 goal <= 1.5x)",
                 q <= 1.5)
    if "diff" in rows and "verify-1p" in rows:
        cpu = rows["diff"]["cpu"] / max(rows["verify-1p"]["cpu"], 1e-9)
        goal(f"diff of two logs differing in the last record: CPU {cpu:.2f}x verify-1p's ({rows['diff']['cpu']:.2f} s "
             f"/ {rows['verify-1p']['cpu']:.2f} s; wall {x('diff') / x('verify-1p'):.2f}x; issue 32 goal <= 2.5x)",
             cpu <= 2.5)
        if "replay-summary" in rows:
            m = rows["diff"]["rss"] / max(rows["replay-summary"]["rss"], 1)
            goal(f"diff peak RSS {m:.2f}x replay --summary's ({rows['diff']['rss'] / 2**20:.0f} MB; issue 32 goal "
                 "<= 2x)", m <= 2)
    for text, ok in goals:
        print(f"  {'PASS' if ok else 'MISS'}  {text}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"scale": scale, "bytes": size, "records": records, "live": live, "kernel": check[1],
                       "root": check[0], "load": [load_before, load_after], "repeat": a.repeat, "rows": rows,
                       "goals": goals}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
