"""Build the README's incident demo log (docs/demo/incident-cmdlog) with wqtool's own writer, deterministically:
six hours of traffic on four queues; the workers stop for 40 minutes at 12:00 (the queues fill up), come back and
catch up; one byte of a record written at 13:1x is flipped (a WQ-CRC in the middle of the log).

    python scripts/make_incident_demo.py docs/demo/incident-cmdlog
"""
import argparse
import os
import random
import shutil

from wqtool.engine.workq.model import Command
from wqtool.engine.workq.sample import v4_id
from wqtool.engine.workq.writer import SegmentWriter
from wqtool.formats._common import GO_ZERO_TIME, GoTime
from wqtool.formats.workq import CmdType

T0 = 1_795_251_600_000_000_000          # 2026-11-21T09:00:00Z
S = 1_000_000_000
QUEUES = ("email", "thumbnail", "invoice", "webhook")
WEIGHTS = (5, 3, 1, 2)


def build(d: str) -> None:
    rng = random.Random(22)
    if os.path.exists(d):
        shutil.rmtree(d)
    waiting: list[tuple[bytes, int]] = []       # (job, queue index)
    running: list[bytes] = []
    flip_at = None
    with SegmentWriter(d, segment_size=96 * 1024) as w:
        t = T0
        end = T0 + 6 * 3600 * S
        while t < end:
            minute = (t - T0) // (60 * S)
            hour = 9 + minute / 60
            rate = 6 + 4 * (10.5 <= hour < 11.5) + 3 * (14 <= hour)      # adds a minute, a morning peak
            workers_up = not (12 <= hour < 12 + 40 / 60)
            for ts in sorted(t + rng.randrange(45 * S) for _ in range(rng.randrange(rate - 2, rate + 3))):
                q = rng.choices(range(len(QUEUES)), WEIGHTS)[0]
                jid = v4_id(rng)
                w.append(Command(CmdType.ADD, jid, QUEUES[q].encode(), 30_000, 7 * 86_400_000, 0, 3, 0,
                                 b'{"n":%d}' % rng.randrange(1 << 20), GO_ZERO_TIME, GoTime.from_unix_ns(ts)),
                         GoTime.from_unix_ns(ts))
                waiting.append((jid, q))
            if workers_up:
                take = min(len(waiting), rng.randrange(5, 9) + (12 if 12.66 <= hour < 13.5 else 0))
                for _ in range(take):
                    jid, q = waiting.pop(0)
                    w.append(Command(CmdType.START_ATTEMPT, jid), GoTime.from_unix_ns(t + 50 * S))
                    running.append(jid)
                while len(running) > 3:
                    jid = running.pop(0)
                    cmd = CmdType.FAIL if rng.random() < 0.04 else CmdType.COMPLETE
                    w.append(Command(cmd, jid, result=b'{"ok":%s}' % (b"false" if cmd is CmdType.FAIL else b"true")),
                             GoTime.from_unix_ns(t + 59 * S))
            if flip_at is None and hour >= 13.25:
                flip_at = (w.seq, w._size + 40)       # 40 bytes into the next record of this segment
            t += 60 * S
    seq, off = flip_at
    path = os.path.join(d, f"{seq:09d}.log")
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x20]))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir")
    build(ap.parse_args().dir)
