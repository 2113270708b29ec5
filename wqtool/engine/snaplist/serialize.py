"""The list journal's stable JSON rows and table cells (dump, Spark rows) and replayed state (replay, stats)."""
from __future__ import annotations

from typing import Iterator

from ...offsets import at
from ...formats._common import format_unix_ns
from ..format import Column, RecordView, StateView
from ..serialize import render_bytes
from .model import KIND_ACKED, Line
from .replay import ListState

SNAPLIST_RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", "hour", "kind", "priority", "key_start_date",
                          "key_start_time", "uri", "line", "error")


def us_to_iso(us: int | None) -> str | None:
    return None if us is None else format_unix_ns(us * 1000)


def text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "backslashreplace")


def record_to_jsonable(rec: Line, payload: str = "text") -> dict:
    return {"file": rec.path, "offset": rec.offset, "at": at(rec.path, rec.offset), "length": rec.length, "record_index": rec.index, "hour": rec.hour,
            "kind": rec.kind, "priority": rec.priority, "key_start_date": rec.key_start_date,
            "key_start_time": us_to_iso(rec.key_start_date), "uri": text(rec.uri),
            "line": render_bytes(rec.raw, payload), "error": None}


class SnaplistRecordView(RecordView):
    fields = SNAPLIST_RECORD_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "hour": "int", "kind": "string",
             "priority": "int", "key_start_date": "long", "key_start_time": "string", "uri": "string",
             "line": "bytes", "error": "string"}
    columns = (Column("at", 17), Column("len", 6, ">"), Column("#", 6, ">"),
               Column("kind", 8, gap=2), Column("prio", 4, ">"), Column("key_start_date", 27, gap=2),
               Column("uri", None, gap=1))

    def row(self, rec: Line, payload: str) -> dict:
        return record_to_jsonable(rec, payload)

    def binary(self, rec: Line) -> dict:
        return {"line": rec.raw}

    def cells(self, rec: Line, payload: str) -> tuple:
        if rec.kind == KIND_ACKED:
            return (at(rec.path, rec.offset), rec.length, rec.index, rec.kind, "", "",
                    f"({rec.length} blank byte(s))")
        uri = text(rec.uri) if rec.uri is not None else "(" + (text(rec.raw) or "") + ")"
        return (at(rec.path, rec.offset), rec.length, rec.index, rec.kind,
                "" if rec.priority is None else rec.priority, us_to_iso(rec.key_start_date) or "-", uri)

    def hex_title(self, rec: Line) -> str:
        return f"{at(rec.path, rec.offset)} #{rec.index} {rec.kind} len={rec.length}"


def entry_rows(state: ListState) -> Iterator[dict]:
    for pos, e in enumerate(state.sorted_entries()):
        yield {"pos": pos, "domain": text(e.domain), "priority": e.priority, "key_start_date": e.key_start_date,
               "key_start_time": us_to_iso(e.key_start_date), "due": state.is_due(e), "uri": text(e.uri),
               "file": e.path, "offset": e.offset, "at": at(e.path, e.offset), "superseded": e.superseded}


def state_summary(state: ListState) -> dict:
    return {"entries": len(state.entries), "counts": state.counts_by_state(), "pending_lines": state.pending_lines,
            "superseded_lines": state.superseded, "invalid_lines": state.invalid_lines,
            "skipped_lines": state.skipped_lines, "acknowledged_runs": state.acked_runs,
            "acknowledged_bytes": state.acked_bytes, "pending_by_file": dict(state.files),
            "digest": state.digest()}


class SnaplistStateView(StateView):
    rows_key = "entries"

    def __init__(self, state: ListState):
        self.state = state

    def summary(self) -> dict:
        return state_summary(self.state)

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return entry_rows(self.state)

    def table_header(self) -> str:
        return f"{'pos':>6}  {'domain':<24} {'prio':>4}  {'key_start_date':<27} {'due':<7} uri"

    def table_lines(self) -> Iterator[str]:
        for r in entry_rows(self.state):
            yield (f"{r['pos']:>6}  {r['domain']:<24} {r['priority']:>4}  {r['key_start_time']:<27} "
                   f"{'due' if r['due'] else 'waiting':<7} {r['uri']}")

    def counts_matrix(self):
        return "entries per domain and state", ["due", "waiting"], sorted(self.queues().items())

    def summary_lines(self) -> list[str]:
        d = state_summary(self.state)
        return [f"as of {format_unix_ns(self.state.as_of_ns)}: {d['entries']} entries ({d['counts']['due']} due, "
                f"{d['counts']['waiting']} waiting) from {d['pending_lines']} pending line(s); "
                f"{d['superseded_lines']} superseded, {d['invalid_lines']} with bad values, {d['skipped_lines']} "
                f"skipped upstream; {d['acknowledged_bytes']} acknowledged byte(s) in {d['acknowledged_runs']} "
                "blank run(s)"]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for e in self.state.entries.values():
            c = out.setdefault(text(e.domain), {"due": 0, "waiting": 0})
            c["due" if self.state.is_due(e) else "waiting"] += 1
        return out

    def digest(self) -> str:
        return self.state.digest()
