"""Values the engine passes around: decoded commands and located records."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...formats._common import GoTime, format_uuid
from ...formats.workq import CmdType


@dataclass(slots=True, eq=True)
class Command:
    """One workq command, as the payload schema describes it (fields not carried by ``cmd`` stay None)."""

    cmd: CmdType
    job_id: bytes
    name: bytes | None = None
    ttr: int | None = None
    ttl: int | None = None
    priority: int | None = None
    max_attempts: int | None = None
    max_fails: int | None = None
    payload: bytes | None = None
    time: GoTime | None = None
    created: GoTime | None = None
    result: bytes | None = None

    @property
    def job_uuid(self) -> str:
        return format_uuid(self.job_id)


@dataclass(slots=True)
class Record:
    """One framed record where it lies: segment path, byte offset, length and index in the log."""

    path: str
    offset: int
    length: int
    index: int
    time: GoTime
    size: int
    crc: int
    command: Command | None = None
    #: A finding about the payload (unknown type, short, trailing bytes) when it could not be decoded.
    payload_error: "object | None" = None
    raw_payload: bytes = field(default=b"", repr=False)
    #: The whole record's bytes, only when the reader was asked for them (dump -o hex).
    raw: bytes | None = field(default=None, repr=False)
