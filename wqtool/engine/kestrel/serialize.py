"""record_to_jsonable(): the stable JSON row of a Kestrel record (dump -o jsonl, golden fixtures, Spark rows).

``add_time`` / ``expiry`` are RFC 3339 UTC strings (ms precision): None for the legacy ADD's add time (none is
stored) and for an expiry of 0 (never); the legacy ADD's expiry is its stored seconds read as 2.x does (x 1000).
``payload`` is the item data rendered by ``payload=`` (text | hex | base64 | none), for item records only.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from ...offsets import at
from ...formats._common import format_unix_ns
from ...formats.kestrel import Opcode
from ..format import Column, RecordView, StateView
from ..serialize import render_bytes
from .model import Record

if TYPE_CHECKING:      # dump's record rows do not need the replay (nor hashlib): a seek never replays
    from .replay import KestrelState

#: The fields of a Kestrel record row, in output order (Spark's schema uses the same list).
KESTREL_RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", "op", "xid", "add_time", "expiry", "payload_len",
                         "payload", "error")

NS_PER_MS = 1_000_000


def ms_to_iso(ms: int | None) -> str | None:
    if ms is None or ms == 0:
        return None
    return format_unix_ns(ms * NS_PER_MS)


def record_to_jsonable(rec: Record, *, payload: str = "base64") -> dict:
    row = dict.fromkeys(KESTREL_RECORD_FIELDS)
    row.update(file=rec.path, offset=rec.offset, at=at(rec.path, rec.offset), length=rec.length, record_index=rec.index, op=Opcode(rec.op).label,
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
    row.update(file=f.path, offset=f.offset, at=at(f.path, f.offset), record_index=f.record_index, error=f"{f.code}: {f.message}")
    return row


# ---------------------------------------------------------------- dump: records as a table
def _preview(data: bytes | None, mode: str, limit: int = 48) -> str:
    if data is None or mode == "none":
        return ""
    s = render_bytes(data[:limit], mode)
    return "=" + (json.dumps(s, ensure_ascii=False) if mode == "text" else s) + ("…" if len(data) > limit else "")


class KestrelRecordView(RecordView):
    fields = KESTREL_RECORD_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "op": "string", "xid": "long",
             "add_time": "string", "expiry": "string", "payload_len": "long", "payload": "bytes", "error": "string"}
    columns = (Column("at", 27), Column("len", 7, ">"), Column("#", 7, ">"),
               Column("op", 21, gap=2), Column("xid", 10, ">"), Column("details", None, gap=2))

    def row(self, rec: Record, payload: str) -> dict:
        return record_to_jsonable(rec, payload=payload)

    def damage_row(self, f) -> dict:
        return damage_to_jsonable(f)

    def binary(self, rec: Record) -> dict:
        return {"payload": rec.data}

    def cells(self, rec: Record, payload: str) -> tuple:
        row = record_to_jsonable(rec, payload="none")
        details = ""
        if rec.data is not None:
            details = (f"add={row['add_time'] or '-'} exp={row['expiry'] or 'never'} "
                       f"data[{len(rec.data)}]{_preview(rec.data, payload)}")
        return (at(rec.path, rec.offset), rec.length, rec.index, row["op"],
                "" if rec.xid is None else str(rec.xid), details)

    def hex_title(self, rec: Record) -> str:
        return f"{at(rec.path, rec.offset)} #{rec.index} {rec.op.name} len={rec.length}"


# ---------------------------------------------------------------- replay: the queue
def iter_item_rows(state: KestrelState, payload: str = "base64") -> Iterator[dict]:
    """The items' rows one at a time (replay writes them as they come)."""
    as_of_ms = state.as_of_ms
    for pos, (st, xid, it) in enumerate(state.sorted_items()):
        yield {"pos": pos, "state": st, "xid": xid, "add_time": ms_to_iso(it.add_time),
               "expiry": ms_to_iso(it.expiry), "expired_at_as_of": it.expired_at(as_of_ms),
               "len": len(it.data), "data": render_bytes(it.data, payload), "file": it.path,
               "offset": it.offset, "at": at(it.path, it.offset)}


def state_summary(state: KestrelState) -> dict:
    return {"items": state.items, "bytes": state.data_bytes, "counts": state.counts_by_state(),
            "expired_at_as_of": state.expired_count(), "xid_counter": state.xid_counter,
            "records": state.records, "applied": state.applied, "version_guess": state.version_guess,
            "digest": state.digest()}


class KestrelStateView(StateView):
    """A ``KestrelState`` (or the Spark fleet's ``KestrelSummary``, for stats) of one queue."""

    rows_key = "items"

    def __init__(self, state, queue: str):
        self.state = state
        self.queue = queue

    def summary(self) -> dict:
        return state_summary(self.state)

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return iter_item_rows(self.state, payload)

    def extra_doc(self) -> dict:
        return {"queue": self.queue}

    def table_header(self) -> str:
        return f"{'pos':>6} {'state':<7} {'xid':>10}  {'add_time':<26} {'expiry':<26} {'len':>8}  data"

    def table_lines(self) -> Iterator[str]:
        state = self.state
        for row, (_, _, it) in zip(iter_item_rows(state, "none"), state.sorted_items()):
            exp = (row["expiry"] or "never") + (" (expired)" if row["expired_at_as_of"] else "")
            yield (f"{row['pos']:>6} {row['state']:<7} {'' if row['xid'] is None else row['xid']:>10}  "
                   f"{row['add_time'] or '-':<26} {exp:<26} {row['len']:>8}  {_preview(it.data, 'text')}")

    def summary_lines(self) -> list[str]:
        d = state_summary(self.state)
        counts = ", ".join(f"{n} {state}" for state, n in d["counts"].items())   # "1 queued, 0 open"
        return [f"queue {self.queue}: {d['items']} items ({d['bytes']} bytes): {counts}, "
                f"{d['expired_at_as_of']} expired at as-of, from {d['records']} records; "
                f"writer guess: {d['version_guess']}"]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return {self.queue: self.state.counts_by_state()}

    def digest(self) -> str:
        return self.state.digest()
