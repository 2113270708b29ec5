"""Building valid workq segments from command values.

Used by fixtures, tests, the demo and the benchmark (and later pack / serve). Records come out byte-exact
as workq-server 0.2.0 writes them: 8-byte header per segment, FF FF zones, minimal varints, roll-over
before an append once the segment has reached the configured size ("minimum size" semantics).
"""
from __future__ import annotations

import os

from ...formats._common import GO_ZERO_TIME, GoTime
from ...formats.workq import DEFAULT_SEGMENT_SIZE, HEADER_BYTES, CmdType, segment_name  # (segment_name: re-exported)
from .fastpath import encode_payload, encode_record
from .model import Command


def add(job_id: bytes, name: str, *, ttr: int, ttl: int, created: GoTime, priority: int = 0,
        max_attempts: int = 0, max_fails: int = 0, payload: bytes = b"") -> Command:
    return Command(CmdType.ADD, job_id, name.encode("ascii"), ttr, ttl, priority, max_attempts, max_fails,
                   payload, GO_ZERO_TIME, created)


def schedule(job_id: bytes, name: str, *, ttr: int, ttl: int, time: GoTime, created: GoTime, priority: int = 0,
             max_attempts: int = 0, max_fails: int = 0, payload: bytes = b"") -> Command:
    return Command(CmdType.SCHEDULE, job_id, name.encode("ascii"), ttr, ttl, priority, max_attempts, max_fails,
                   payload, time, created)


def result(cmd: CmdType, job_id: bytes, result: bytes = b"") -> Command:
    return Command(cmd, job_id, result=result)


def simple(cmd: CmdType, job_id: bytes) -> Command:
    return Command(cmd, job_id)


class SegmentWriter:
    """Appends records to a workq log directory the way workq's appender does.

    ``append(command, time)`` builds one record; a new segment starts before an append once the current
    one has reached ``segment_size``. ``lock_files`` creates the two empty lock files upstream keeps.
    """

    def __init__(self, directory: str, *, segment_size: int = DEFAULT_SEGMENT_SIZE, first_seq: int = 1,
                 lock_files: bool = True, fsync: bool = False):
        self.directory = directory
        self.segment_size = segment_size
        self.seq = first_seq - 1
        self.fsync = fsync
        self._f = None
        self._size = 0
        os.makedirs(directory, exist_ok=True)
        if lock_files:
            for name in ("append.lock", "read.lock"):
                open(os.path.join(directory, name), "ab").close()

    def _roll(self) -> None:
        self.close()
        self.seq += 1
        self._f = open(os.path.join(self.directory, segment_name(self.seq)), "xb", buffering=1 << 20)
        self._f.write(HEADER_BYTES)
        self._size = len(HEADER_BYTES)

    def append_raw(self, record_bytes: bytes) -> None:
        if self._f is None or self._size >= self.segment_size:
            self._roll()
        self._f.write(record_bytes)
        self._size += len(record_bytes)

    def append(self, command: Command, time: GoTime) -> bytes:
        rec = encode_record(time, encode_payload(command))
        self.append_raw(rec)
        return rec

    def close(self) -> None:
        if self._f is not None:
            self._f.flush()
            if self.fsync:
                os.fsync(self._f.fileno())
            self._f.close()
            self._f = None

    def __enter__(self) -> "SegmentWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
