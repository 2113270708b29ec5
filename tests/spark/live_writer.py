"""A live workq writer for the Spark tests: the project's own appender (``engine.workq.appender.Appender``, the one
``wqtool serve`` writes with) appending to DIR until it is killed.

``python -m tests.spark.live_writer DIR JOBS``: DIR already holds JOBS added jobs (``build``); the writer starts an
attempt on each in turn and completes it (a job moves from new to completed: the job count stays, the counts by
state change — what made the export's two passes disagree with exit 0 in issue 35); segments are small, so it
also rolls over. It prints ``ready`` once it holds the log open, then, after each batch, the records written so
far (the test polls them), and ``done`` once every job is completed. Paced at about RATE records a second, so it
writes throughout a job without starving it.
"""
from __future__ import annotations

import sys
import time

from wqtool.engine.workq import writer
from wqtool.engine.workq.appender import Appender
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

T = GoTime(63930899691, 0, -1)       # every record's time (2026-11-21): jobs live a day, so --as-of T+1h is stable
RATE = 8_000
SEGMENT = 256 << 10


def job_id(i: int) -> bytes:
    return (0x0123456789AB4DEF8000000000000000 | i).to_bytes(16, "big")


def add(i: int) -> bytes:
    return encode_record(T, encode_payload(writer.add(job_id(i), f"q{i % 3}", ttr=60_000, ttl=86_400_000,
                                                      created=T)))


def build(directory: str, jobs: int) -> None:
    """DIR with ``jobs`` added jobs, in small segments."""
    with writer.SegmentWriter(directory, segment_size=SEGMENT) as w:
        for i in range(jobs):
            w.append_raw(add(i))


def main(directory: str, jobs: int) -> None:
    app = Appender(directory, segment_size=SEGMENT)
    app.open()
    print("ready", flush=True)
    done = 0
    start = time.monotonic()
    for first in range(0, jobs, 50):
        batch: list[bytes] = []
        for k in range(first, min(first + 50, jobs)):
            jid = job_id(k)
            batch.append(encode_record(T, encode_payload(writer.simple(CmdType.START_ATTEMPT, jid))))
            batch.append(encode_record(T, encode_payload(writer.result(CmdType.COMPLETE, jid))))
        app.append(batch)
        done += len(batch)
        print(done, flush=True)
        ahead = done / RATE - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)     # pacing, not a wait for anything
    app.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
