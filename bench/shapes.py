"""The workq log shapes the benchmarks run on, generated deterministically with wqtool's own codec.

``issue14`` is the log of issue 14 (146 MB, 3 segments of 64 MiB, 1.24 M records: 730 k adds with ~150-byte
command payloads over 16 queues, 219 k start-attempts and 219 k completes, 73 k deletes -> 657 k live jobs at
the bench's as-of). ``scale`` shrinks every count (``--quick`` uses 0.1).
"""
from __future__ import annotations

import os
import random

T0_NS = 1_795_302_000_000_000_000          # 2026-11-21T23:00:00Z
AS_OF = "2026-11-22T00:00:00Z"             # every TTL is longer than a day: nothing has expired at as-of
SEGMENT_SIZE = 64 * 1024 * 1024
_WORDS = [b"resize", b"thumbnail", b"email", b"invoice", b"report", b"sync", b"index", b"backup", b"webhook"]


def issue14(directory: str, scale: float = 1.0, seed: int = 14, step_ns: int = 1_000_000) -> dict:
    """Write the issue-14 shape into ``directory``; returns its counts. ``step_ns``: the mean gap between records is
    1.5 of it (1 ms: the log spans ~31 minutes; ``ensure(day=True)`` makes it span ~24 hours)."""
    from wqtool.engine.workq.fastpath import encode_payload, encode_record
    from wqtool.engine.workq.model import Command
    from wqtool.engine.workq.sample import v4_id
    from wqtool.engine.workq.writer import SegmentWriter
    from wqtool.formats._common import GO_ZERO_TIME, GoTime
    from wqtool.formats.workq import CmdType

    rng = random.Random(seed)
    n_add, n_start, n_complete, n_delete = (round(n * scale) for n in (730_000, 219_000, 219_000, 73_000))
    ops = [0] * n_add + [1] * n_start + [2] * n_complete + [3] * n_delete
    rng.shuffle(ops)
    names = [f"queue-{i:02d}".encode() for i in range(16)]
    queued: list[bytes] = []
    leased: list[bytes] = []
    done: list[bytes] = []
    deferred = [0, 0, 0, 0]
    t = T0_NS
    counts = [0, 0, 0, 0]
    size = 0
    ADD, START, COMPLETE, DELETE = CmdType.ADD, CmdType.START_ATTEMPT, CmdType.COMPLETE, CmdType.DELETE

    def pick(lst: list) -> bytes:
        i = rng.randrange(len(lst))
        lst[i], lst[-1] = lst[-1], lst[i]
        return lst.pop()

    with SegmentWriter(directory, segment_size=SEGMENT_SIZE) as w:
        i = 0
        while i < len(ops) or any(deferred):
            if i < len(ops):
                op = ops[i]
                i += 1
            else:                                    # what could not run when it came up, now
                op = next(k for k in range(4) if deferred[k])
                deferred[op] -= 1
            # an op whose job is not there yet waits until one is
            if (op == 1 and not queued) or (op == 2 and not leased) or (op == 3 and not done):
                if i >= len(ops):
                    break
                deferred[op] += 1
                continue
            t += step_ns + rng.randrange(step_ns)
            if op == 0:
                jid = v4_id(rng)
                body = b'{"task":"%s","n":%d,"pad":"' % (rng.choice(_WORDS), rng.randrange(1 << 20))
                body += b"x" * rng.randrange(18, 74) + b'"}'
                c = Command(ADD, jid, rng.choice(names), rng.randrange(1000, 60_000),
                            rng.randrange(2 * 86_400_000, 30 * 86_400_000), rng.randrange(-5, 6),
                            rng.choice((0, 0, 1, 3)), 0, body, GO_ZERO_TIME, GoTime.from_unix_ns(t - 100_000))
                queued.append(jid)
            elif op == 1:
                jid = pick(queued)
                leased.append(jid)
                c = Command(START, jid)
            elif op == 2:
                jid = pick(leased)
                done.append(jid)
                c = Command(COMPLETE, jid, result=b'{"ok":true,"ms":%d}' % rng.randrange(10_000))
            else:
                c = Command(DELETE, pick(done))
            rec = encode_record(GoTime.from_unix_ns(t), encode_payload(c))
            w.append_raw(rec)
            size += len(rec)
            counts[op] += 1
            # keep the deferred ops moving as soon as they can run
            for k, ok in ((1, queued), (2, leased), (3, done)):
                if deferred[k] and ok and i < len(ops):
                    deferred[k] -= 1
                    ops.insert(i, k)
                    break
    return {"bytes": size, "adds": counts[0], "starts": counts[1], "completes": counts[2], "deletes": counts[3],
            "records": sum(counts), "live": counts[0] - counts[3]}


#: the records of ``ensure(day=True)`` span about this long (the mean gap is 1.5 ``step_ns``)
DAY_NS = 86_400_000_000_000
#: an --as-of after the 24-hour log's last record (every TTL is longer than two days)
DAY_AS_OF = "2026-11-23T00:00:00Z"


def ensure(out: str, scale: float, *, day: bool = False) -> str:
    """The issue-14 log at ``scale`` under ``out`` (generated once, then cached); ``day``: its records spread over
    about 24 hours instead of 31 minutes (the time series' shape: hour bins, a day of depth)."""
    d = os.path.join(out, f"workq-issue14-{scale:g}" + ("-day" if day else ""))
    if not os.path.isdir(d):
        issue14(d + ".tmp", scale, step_ns=round(DAY_NS / (1.5 * 1_241_000 * scale)) if day else 1_000_000)
        os.rename(d + ".tmp", d)
    return d
