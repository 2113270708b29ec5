"""EVTJ's stable JSON rows and table cells (dump, Spark rows) and replayed state (replay, stats)."""
from __future__ import annotations

from typing import Iterator

from ...offsets import at
from ...formats._common import format_unix_ns
from ...formats.evtj import Status
from ..format import Column, RecordView, StateView
from .model import Event
from .reader import render_id
from .replay import EvtjState

EVTJ_RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", "file_number", "status", "request_id", "time",
                      "attachment_count", "inline_sizes", "external_ids", "error")


def _label(status: int) -> str:
    try:
        return Status(status).label
    except ValueError:
        return str(status)


def record_to_jsonable(ev: Event) -> dict:
    return {"file": ev.path, "offset": ev.offset, "at": at(ev.path, ev.offset), "length": ev.length, "record_index": ev.index,
            "file_number": ev.file_number, "status": _label(ev.status), "request_id": render_id(ev.request_id),
            "time": format_unix_ns(ev.time_ns), "attachment_count": len(ev.offsets),
            "inline_sizes": ",".join(map(str, ev.inline_sizes)),
            "external_ids": ",".join(map(str, ev.external_ids)), "error": None}


class EvtjRecordView(RecordView):
    fields = EVTJ_RECORD_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "file_number": "int",
             "status": "string", "request_id": "string", "time": "string", "attachment_count": "int",
             "inline_sizes": "string", "external_ids": "string", "error": "string"}
    columns = (Column("at", 26), Column("size", 6, ">"), Column("#", 6, ">"),
               Column("status", 12, gap=2), Column("time", 31), Column("attachments", 20), Column("request_id", None))

    def row(self, rec: Event, payload: str) -> dict:
        return record_to_jsonable(rec)

    def cells(self, rec: Event, payload: str) -> tuple:
        att = " ".join([f"{n}B" for n in rec.inline_sizes] + [f"{i}.bin" for i in rec.external_ids]) or "-"
        return (at(rec.path, rec.offset), rec.length, rec.index, _label(rec.status),
                format_unix_ns(rec.time_ns), att, render_id(rec.request_id))

    def hex_title(self, rec: Event) -> str:
        return f"{at(rec.path, rec.offset)} #{rec.index} {_label(rec.status)} size={rec.length}"


def event_rows(state: EvtjState) -> Iterator[dict]:
    for pos, e in enumerate(state.sorted_events()):
        row = record_to_jsonable(e)
        row.pop("error")
        row.pop("record_index")
        yield {"pos": pos, **row}


class EvtjStateView(StateView):
    rows_key = "events"

    def __init__(self, state: EvtjState):
        self.state = state

    def summary(self) -> dict:
        s = self.state
        return {"live_events": len(s.live), "counts": s.counts_by_state(), "events_read": s.events,
                "completed_or_failed": s.done, "counter": s.counter, "digest": s.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return event_rows(self.state)

    def table_header(self) -> str:
        return f"{'pos':>6}  {'status':<12} {'time':<31} {'at':<26}  request_id"

    def table_lines(self) -> Iterator[str]:
        for r in event_rows(self.state):
            yield f"{r['pos']:>6}  {r['status']:<12} {r['time']:<31} {at(r['file'], r['offset']):<26}  {r['request_id']}"

    def summary_lines(self) -> list[str]:
        s = self.state
        c = s.counts_by_state()
        return [f"as of {format_unix_ns(s.as_of_ns)}: {len(s.live)} live event(s) ({', '.join(f'{v} {k}' for k, v in c.items())}) "
                f"from {s.events} event(s) read; {s.done} completed or failed"
                + (f"; counters.seq: {s.counter}" if s.counter is not None else "")]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return {"events": self.state.counts_by_state()}

    def digest(self) -> str:
        return self.state.digest()
