"""The priority-FIFO journal's stable JSON rows and table cells, and its replayed state (per the unimplemented
libfastjournal design)."""
from __future__ import annotations

from typing import Iterator

from ...offsets import at
from ...formats._common import format_unix_ns
from ..format import Column, RecordView, StateView
from ..serialize import render_bytes
from .model import Change
from .replay import FifoState

FJJ_RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", "applied_at", "op", "uri", "timestamp", "priority",
                     "key_start_date", "timeout_us", "flags", "request", "error")


def us_iso(us: int | None) -> str | None:
    return None if us is None else format_unix_ns(us * 1000)


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "backslashreplace")


def record_to_jsonable(rec: Change, payload: str = "base64") -> dict:
    return {"file": rec.path, "offset": rec.offset, "at": at(rec.path, rec.offset), "length": rec.length, "record_index": rec.index,
            "applied_at": us_iso(rec.applied_at), "op": rec.op, "uri": _text(rec.uri), "timestamp": rec.timestamp,
            "priority": rec.priority, "key_start_date": us_iso(rec.key_start_date), "timeout_us": rec.timeout,
            "flags": f"0x{rec.flags:04x}", "request": render_bytes(rec.request, payload if payload != "text" else "hex"),
            "error": None}


class FjjRecordView(RecordView):
    fields = FJJ_RECORD_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "applied_at": "string",
             "op": "string", "uri": "string", "timestamp": "u64", "priority": "int", "key_start_date": "string",
             "timeout_us": "u64", "flags": "string", "request": "bytes", "error": "string"}
    columns = (Column("at", 22), Column("len", 5, ">"), Column("#", 7, ">"),
               Column("applied_at", 27, gap=2), Column("op", 6), Column("details", None))

    def row(self, rec: Change, payload: str) -> dict:
        return record_to_jsonable(rec, payload)

    def binary(self, rec: Change) -> dict:
        return {"request": rec.request}

    def cells(self, rec: Change, payload: str) -> tuple:
        if rec.op == "set":
            d = f"prio={rec.priority} not-before={us_iso(rec.key_start_date)} ts={rec.timestamp}"
        elif rec.op == "mark":
            d = f"worked on for {rec.timeout} µs ts={rec.timestamp}"
        else:
            d = f"ts={rec.timestamp}" + (" complete" if rec.flags & (1 << 5) else "")
        return (at(rec.path, rec.offset), rec.length, rec.index, us_iso(rec.applied_at), rec.op,
                f"{_text(rec.uri)} {d}")

    def hex_title(self, rec: Change) -> str:
        return f"{at(rec.path, rec.offset)} #{rec.index} {rec.op} len={rec.length}"


def entry_rows(state: FifoState) -> Iterator[dict]:
    for pos, e in enumerate(state.sorted_entries()):
        st = state.state_of(e)
        yield {"pos": pos, "domain": _text(e.domain), "priority": e.priority,
               "key_start_date": us_iso(e.key_start_date), "state": st,
               "worked_until": us_iso(e.worked_until) if st == "worked-on" else None, "uri": _text(e.uri),
               "timestamp": e.timestamp}


class FjjStateView(StateView):
    rows_key = "entries"

    def __init__(self, state: FifoState):
        self.state = state

    def summary(self) -> dict:
        s = self.state
        return {"entries": len(s.fifo.entries), "tombstones": len(s.fifo.tombstones), "counts": s.counts_by_state(),
                "records": s.records, "applied": s.applied, "digest": s.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return entry_rows(self.state)

    def table_header(self) -> str:
        return f"{'pos':>6}  {'domain':<24} {'prio':>4}  {'not before':<27} {'state':<9} uri"

    def table_lines(self) -> Iterator[str]:
        for r in entry_rows(self.state):
            st = r["state"] + (f" until {r['worked_until']}" if r["worked_until"] else "")
            yield (f"{r['pos']:>6}  {r['domain']:<24} {r['priority']:>4}  {r['key_start_date']:<27} {st:<9} "
                   f"{r['uri']}")

    def counts_matrix(self):
        return "entries per domain and state", ["due", "waiting", "worked-on"], sorted(self.queues().items())

    def summary_lines(self) -> list[str]:
        d = self.summary()
        c = d["counts"]
        return [f"as of {format_unix_ns(self.state.as_of_ns)}: {d['entries']} entries ({c['due']} due, {c['waiting']} "
                f"waiting, {c['worked-on']} worked on), {d['tombstones']} tombstone(s), from {d['records']} "
                f"record(s) ({d['applied']} applied)"]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for e in self.state.fifo.entries.values():
            c = out.setdefault(_text(e.domain), {"due": 0, "waiting": 0, "worked-on": 0})
            c[self.state.state_of(e)] += 1
        return out

    def digest(self) -> str:
        return self.state.digest()
