"""The JSON rows and text views of the Orth executor log folders (``orth-executor-logs``: dump, replay, stats, Spark
rows)."""
from __future__ import annotations

import os
from typing import Iterator

from ...offsets import at
from ..format import Column, RecordView, StateView
from .model import LogEntry
from .replay import ADMIN_STATES, ExecutorState

EXECUTOR_FIELDS = ("file", "offset", "at", "length", "record_index", "log_id", "date", "line", "lines", "time", "class", "method",
                   "src_line", "thread", "kind", "handle_code", "message", "utf8", "error")


class ExecutorRecordView(RecordView):
    fields = EXECUTOR_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "log_id": "long",
             "date": "string", "line": "long", "lines": "long", "time": "string", "class": "string",
             "method": "string", "src_line": "long", "thread": "string", "kind": "string", "handle_code": "int",
             "message": "string", "utf8": "bool", "error": "string"}
    columns = (Column("date", 10), Column("log_id", 10, ">"), Column("line", 6, ">"), Column("time", 19, gap=2),
               Column("kind", 16, gap=2), Column("thread", 28), Column("message", None))

    def row(self, rec: LogEntry, payload: str) -> dict:
        return {"file": rec.path, "offset": rec.offset, "at": at(rec.path, rec.offset), "length": rec.length, "record_index": rec.index,
                "log_id": rec.log_id, "date": rec.date_dir, "line": rec.line, "lines": rec.lines, "time": rec.time,
                "class": rec.cls, "method": rec.method, "src_line": rec.src_line, "thread": rec.thread,
                "kind": rec.kind, "handle_code": rec.handle_code, "message": rec.message, "utf8": rec.utf8,
                "error": None}

    def cells(self, rec: LogEntry, payload: str) -> tuple:
        first = rec.message.split("\n", 1)[0]
        more = f" (+{rec.lines - 1} lines)" if rec.lines > 1 else ""
        return (rec.date_dir, rec.log_id, rec.line, rec.time or "-", rec.kind, (rec.thread or "-")[:28],
                (first if len(first) <= 100 else first[:99] + "…") + more)

    def hex_title(self, rec: LogEntry) -> str:
        return f"{rec.date_dir}/{os.path.basename(rec.path)}@0x{rec.offset:x} line {rec.line} {rec.kind} len={rec.length}"


# ---------------------------------------------------------------- replayed state
class ExecutorStateView(StateView):
    rows_key = "log_ids"

    def __init__(self, state: ExecutorState):
        self.state = state

    def summary(self) -> dict:
        rows = self.state.rows()
        return {"log_ids": len(rows), "by_status": self.state.counts_by_state(),
                "callback_pending": sum(1 for r in rows if r["retry_files"]),
                "written_by": self.state.releases(), "digest": self.state.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return iter(self.state.rows())

    def table_header(self) -> str:
        return (f"{'date':<10} {'log_id':>10}  {'executor':<9} {'code':>4}  {'status':<8} {'callback':<8} "
                f"{'admin':<8} retry")

    def table_lines(self) -> Iterator[str]:
        for r in self.state.rows():
            code = "-" if r["handle_code"] is None else r["handle_code"]
            yield (f"{r['date']:<10} {r['log_id']:>10}  {r['executor']:<9} {code:>4}  {r['status']:<8} "
                   f"{r['callback']:<8} {r['admin_status']:<8} {', '.join(r['retry_files'])}")

    def counts_matrix(self):
        by = self.state.by_date()
        labels = [s for s in ADMIN_STATES if any(c[s] for c in by.values())]
        if not labels:
            return None
        return "log ids per date and status", labels, list(by.items())

    def summary_lines(self) -> list[str]:
        rows = self.state.rows()
        pending = sum(1 for r in rows if r["admin_status"] == "Pending" and r["executor"] not in ("running",))
        out = [f"{len(rows)} log id(s); {sum(1 for r in rows if r['executor'] == 'running')} without an end "
               f"marker; {pending} finished but not acknowledged by an admin as far as the files show"]
        rel = self.state.releases()
        if rel and rel != ["orth"]:
            out.append("written by " + ", ".join(rel) + " (their markers)")
        return out

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return self.state.by_date()

    def digest(self) -> str:
        return self.state.digest()
