"""record_to_jsonable(): the stable JSON row of a Kestrel record (dump -o jsonl, golden fixtures, Spark rows).

``add_time`` / ``expiry`` are RFC 3339 UTC strings (ms precision): None for the legacy ADD's add time (none is
stored) and for an expiry of 0 (never); the legacy ADD's expiry is its stored seconds read as 2.x does (x 1000).
``payload`` is the item data rendered by ``payload=`` (text | hex | base64 | none), for item records only.
"""
from __future__ import annotations

from ...formats._common import format_unix_ns
from ...formats.kestrel import Opcode
from ..serialize import finding_to_jsonable, render_bytes  # noqa: F401  (re-exported)
from .model import Record

#: The fields of a Kestrel record row, in output order (Spark's schema uses the same list).
KESTREL_RECORD_FIELDS = ("file", "offset", "length", "index", "op", "xid", "add_time", "expiry", "payload_len",
                         "payload", "error")

NS_PER_MS = 1_000_000


def ms_to_iso(ms: int | None) -> str | None:
    if ms is None or ms == 0:
        return None
    return format_unix_ns(ms * NS_PER_MS)


def record_to_jsonable(rec: Record, *, payload: str = "base64") -> dict:
    row = dict.fromkeys(KESTREL_RECORD_FIELDS)
    row.update(file=rec.path, offset=rec.offset, length=rec.length, index=rec.index, op=Opcode(rec.op).label,
               xid=rec.xid)
    if rec.data is not None:
        if rec.op == Opcode.ADD:
            row["expiry"] = ms_to_iso(rec.expiry * 1000 if rec.expiry else 0)
        else:
            row["add_time"] = ms_to_iso(rec.add_time)
            row["expiry"] = ms_to_iso(rec.expiry)
        row["payload_len"] = len(rec.data)
        row["payload"] = render_bytes(rec.data, payload)
    return row


def damage_to_jsonable(f) -> dict:
    """A row for a framing-damage finding in the record stream (Spark permissive mode, dump of damaged files):
    the record fields with ``error`` set (``<code>: <message>``)."""
    row = dict.fromkeys(KESTREL_RECORD_FIELDS)
    row.update(file=f.path, offset=f.offset, index=f.record_index, error=f"{f.code}: {f.message}")
    return row
