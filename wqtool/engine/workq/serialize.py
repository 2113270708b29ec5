"""to_jsonable(): one stable JSON form for dump -o jsonl, the golden fixtures and Spark rows."""
from __future__ import annotations

from ...formats._common import format_unix_ns, format_uuid
from ..serialize import render_bytes
from .model import Record

#: The fields of a workq record row, in output order (Spark's schema uses the same list).
RECORD_FIELDS = ("file", "offset", "length", "index", "time", "cmd", "job_id", "name", "priority", "ttr_ms",
                 "ttl_ms", "max_attempts", "max_fails", "scheduled", "created", "payload_len", "payload",
                 "result_len", "result", "crc", "crc_ok", "error")

def record_to_jsonable(rec: Record, *, payload: str = "base64") -> dict:
    c = rec.command
    row = dict.fromkeys(RECORD_FIELDS)
    row.update(file=rec.path, offset=rec.offset, length=rec.length, index=rec.index, time=rec.time.isoformat(),
               crc=f"{rec.crc:08x}", crc_ok=True)
    if c is None:
        row["error"] = str(getattr(rec.payload_error, "message", rec.payload_error))
        row["payload_len"] = len(rec.raw_payload)
        row["payload"] = render_bytes(rec.raw_payload, payload)
        return row
    row["cmd"] = c.cmd.label
    row["job_id"] = format_uuid(c.job_id)
    if c.name is not None:
        row.update(name=c.name.decode("latin-1"), priority=c.priority, ttr_ms=c.ttr, ttl_ms=c.ttl,
                   max_attempts=c.max_attempts, max_fails=c.max_fails,
                   scheduled=None if c.time.is_zero else format_unix_ns(c.time.unix_ns),
                   created=format_unix_ns(c.created.unix_ns), payload_len=len(c.payload),
                   payload=render_bytes(c.payload, payload))
    if c.result is not None:
        row.update(result_len=len(c.result), result=render_bytes(c.result, payload))
    return row
