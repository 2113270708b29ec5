"""Deterministic synthetic workq logs with valid histories (demo, fixtures, tests, benchmarks).

Everything is derived from ``seed``: the same arguments always give byte-identical segments.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from ...formats._common import GoTime
from ...formats.workq import CmdType
from .fastpath import encode_payload, encode_record
from .model import Command
from .writer import SegmentWriter

T0_NS = 1_795_302_000_000_000_000  # 2026-11-21T23:00:00Z


_WORDS = [b"resize", b"thumbnail", b"email", b"invoice", b"report", b"sync", b"index", b"backup", b"webhook"]


def _payload(rng: random.Random, limit: int) -> bytes:
    """A JSON-ish job body of up to ``limit`` bytes (text, so the demo output reads well)."""
    body = b'{"task":"%s","n":%d,"pad":"' % (rng.choice(_WORDS), rng.randrange(1 << 20))
    body += b"x" * rng.randrange(max(1, limit - len(body) - 2)) + b'"}'
    return body[:limit]


def v4_id(rng: random.Random) -> bytes:
    b = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return bytes(b)


@dataclass
class SampleSpec:
    records: int = 400
    queues: int = 4
    payload_max: int = 64
    segment_size: int = 4096
    seed: int = 1
    t0_ns: int = T0_NS
    step_ns: int = 1_000_000          # time between records
    ttl_ms: tuple[int, int] = (3_600_000, 2_592_000_000)
    reuse_ids: float = 0.0            # chance that an add reuses the id of a job that is gone (valid upstream)


def generate(directory: str, spec: SampleSpec = SampleSpec()) -> int:
    """Write a log of ``spec.records`` records into ``directory``; returns the bytes written.

    The history is one workq-server would accept: adds and schedules, leases of queued jobs, completes,
    fails, timeouts, deletes and expires of live jobs only, with created times inside the record times.
    """
    rng = random.Random(spec.seed)
    names = [f"q{i}".encode() for i in range(spec.queues)]
    queued: list[bytes] = []
    leased: list[bytes] = []
    attempts: dict[bytes, tuple[int, int]] = {}   # id -> (attempts, max_attempts)
    done: list[bytes] = []
    gone: list[bytes] = []
    t = spec.t0_ns
    written = 0
    with SegmentWriter(directory, segment_size=spec.segment_size) as w:
        for _ in range(spec.records):
            t += spec.step_ns + rng.randrange(spec.step_ns)
            now = GoTime.from_unix_ns(t)
            r = rng.random()
            if r < 0.36 or not (queued or leased):
                jid = (gone.pop(rng.randrange(len(gone))) if spec.reuse_ids and gone and rng.random() < spec.reuse_ids
                       else v4_id(rng))
                max_att = rng.choice((0, 0, 1, 3))
                ttl = rng.randrange(*spec.ttl_ms)
                body = _payload(rng, spec.payload_max)
                if rng.random() < 0.1:
                    when = GoTime.from_unix_ns(t + rng.randrange(1, 3_600) * 1_000_000_000)
                    c = Command(CmdType.SCHEDULE, jid, rng.choice(names), rng.randrange(1000, 60_000), ttl,
                                rng.randrange(-5, 6), max_att, 0, body, when, GoTime.from_unix_ns(t - 100_000))
                else:
                    c = Command(CmdType.ADD, jid, rng.choice(names), rng.randrange(1000, 60_000), ttl,
                                rng.randrange(-5, 6), max_att, 0, body, GoTime(0, 0, -1),
                                GoTime.from_unix_ns(t - 100_000))
                queued.append(jid)
                attempts[jid] = (0, max_att)
            elif r < 0.62 and queued:
                jid = queued.pop(rng.randrange(len(queued)))
                a, m = attempts[jid]
                if m and a >= m:
                    continue
                attempts[jid] = (a + 1, m)
                leased.append(jid)
                c = Command(CmdType.START_ATTEMPT, jid)
            elif r < 0.86 and leased:
                jid = leased.pop(rng.randrange(len(leased)))
                kind = CmdType.COMPLETE if rng.random() < 0.8 else CmdType.FAIL
                c = Command(kind, jid, result=b"ok" if kind is CmdType.COMPLETE else b"error: " + rng.choice(_WORDS))
                done.append(jid)
            elif r < 0.93 and leased:
                jid = leased.pop(rng.randrange(len(leased)))
                a, m = attempts[jid]
                c = Command(CmdType.TIMEOUT_ATTEMPT, jid)
                if m and a >= m:
                    done.append(jid)
                else:
                    queued.append(jid)
            elif done:
                jid = done.pop(rng.randrange(len(done)))
                c = Command(rng.choice((CmdType.DELETE, CmdType.EXPIRE)), jid)
                gone.append(jid)
            elif queued:
                jid = queued.pop(rng.randrange(len(queued)))
                c = Command(CmdType.DELETE, jid)
                gone.append(jid)
            else:
                continue
            rec = encode_record(now, encode_payload(c))
            w.append_raw(rec)
            written += len(rec)
    return written
