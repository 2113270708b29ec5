"""How orth_job_log rows look in dump (JSON rows, table cells) and the replayed table in replay and stats."""
from __future__ import annotations

import os
from typing import Iterator

from ...offsets import at
from ...formats.orth_joblog import COLUMN_NAMES, COLUMNS, RULE_SETS
from ..format import Column, RecordView, StateView
from .model import Row, format_datetime
from .replay import JobLogState, RowChecker
from .rules import status_of

JOBLOG_RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", *COLUMN_NAMES, "status", "error")
_TYPES = {"int": "long", "str": "string", "datetime": "string"}


def row_to_jsonable(r: Row) -> dict:
    d = {"file": r.path, "offset": r.offset, "at": at(r.path, r.offset), "length": r.length, "record_index": r.index}
    for c in COLUMNS:
        v = getattr(r, c.name)
        d[c.name] = format_datetime(v) if c.kind == "datetime" else v
    d["status"] = status_of(r.trigger_code, r.handle_code, RULE_SETS[r.table])
    d["error"] = None
    return d


def _results(d: dict, r: Row, rules) -> None:
    """The admin's separate trigger / handle result columns, where it has them (xxl-job: joblog.index.1.js). Replay
    rows only: a dump row's fields are the same for every table (its Parquet / Spark schema)."""
    if rules.trigger_results is not None:
        d["trigger_result"] = rules.trigger_result(r.trigger_code)
        d["handle_result"] = rules.handle_result(r.handle_code)


def _cut(s: str | None, n: int) -> str:
    if s is None:
        return "-"
    s = s.replace("\n", "\\n").replace("\r", "\\r")
    return s if len(s) <= n else s[:n - 1] + "…"


class JobLogRecordView(RecordView):
    fields = JOBLOG_RECORD_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long",
             **{c.name: _TYPES[c.kind] for c in COLUMNS}, "status": "string", "error": "string"}
    columns = (Column("at", 28), Column("id", 8, ">"), Column("group", 5, ">"),
               Column("job", 5, ">"), Column("status", 14, gap=2), Column("trigger_time", 19, gap=2),
               Column("codes", 7, ">"), Column("handle_time", 19, gap=2), Column("executor / handler", None, gap=2))

    def row(self, rec: Row, payload: str) -> dict:
        return row_to_jsonable(rec)

    def cells(self, r: Row, payload: str) -> tuple:
        return (at(r.path, r.offset), r.id, r.job_group, r.job_id,
                status_of(r.trigger_code, r.handle_code, RULE_SETS[r.table]), format_datetime(r.trigger_time) or "-",
                f"{r.trigger_code}/{r.handle_code}", format_datetime(r.handle_time) or "-",
                f"{r.executor_address or '-'} {r.executor_handler or '-'}")

    def hex_title(self, r: Row) -> str:
        where = "" if r.offset is None else f"@0x{r.offset:x} #{r.index}"
        return f"{os.path.basename(r.path)}{where} id={r.id} len={r.length}"


def state_rows(state: JobLogState) -> Iterator[dict]:
    checker = RowChecker(state.ctx)
    rules = state.ctx.rules
    for i in sorted(state.rows or {}):
        r = state.rows[i]
        st = status_of(r.trigger_code, r.handle_code, rules)
        _, flags = checker.check(r)
        d = {"id": r.id, "status": st, "ui_status": rules.ui[st], "lost_at_as_of": bool(flags & RowChecker.LOST)}
        _results(d, r, rules)
        for c in COLUMNS:
            v = getattr(r, c.name)
            d[c.name] = format_datetime(v) if c.kind == "datetime" else v
        yield d


class JobLogStateView(StateView):
    """A table's replayed state (``JobLogState``, or the Spark fleet's summary for stats)."""

    rows_key = "rows"

    def __init__(self, state):
        self.state = state

    def summary(self) -> dict:
        s = self.state
        counts = s.counts_by_state()
        lost = sum(r["lost"] for r in s.analytics().get("lost", []))
        return {"total_rows": sum(counts.values()), "counts": counts, "lost_at_as_of": lost,
                "as_of_table_time": format_datetime(s.ctx.as_of_local), "timezone": s.ctx.timezone,
                "registry": s.ctx.registry.origin or None, "digest": s.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return state_rows(self.state)

    def table_header(self) -> str:
        st = "status" if self.state.ctx.rules.trigger_results is None else "trigger/handle"
        return (f"{'id':>10} {'group':>5} {'job':>5}  {st:<16} {'trigger_time':<19}  {'handle_time':<19} "
                f"{'codes':>7}  {'lost':<4}  executor / handler")

    def table_lines(self) -> Iterator[str]:
        for d in state_rows(self.state):
            st = d["ui_status"] if "trigger_result" not in d else \
                f"{d['trigger_result'] or '-'}/{d['handle_result'] or '-'}"
            yield (f"{d['id']:>10} {d['job_group']:>5} {d['job_id']:>5}  {st:<16} "
                   f"{d['trigger_time'] or '-':<19}  {d['handle_time'] or '-':<19} "
                   f"{str(d['trigger_code']) + '/' + str(d['handle_code']):>7}  {'LOST' if d['lost_at_as_of'] else '':<4}"
                   f"  {d['executor_address'] or '-'} {_cut(d['executor_handler'], 40)}")

    def counts_matrix(self):
        return ("rows per job group and status", list(self.state.ctx.rules.labels), list(self.state.queues().items()))

    def summary_lines(self) -> list[str]:
        d = self.summary()
        c = d["counts"]
        return [f"as of {d['as_of_table_time']} ({d['timezone']}): {d['total_rows']} row(s): "
                + ", ".join(f"{self.state.ctx.rules.ui[k]} {v}" for k, v in c.items() if v)
                + f"; {d['lost_at_as_of']} lost at --as-of"]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return self.state.queues()

    def digest(self) -> str:
        return self.state.digest()

    def analytics(self) -> dict[str, list[dict]]:
        return self.state.analytics()

    def chart(self) -> dict | None:
        return {"table": "daily", "x": "trigger_day", "series": ["suc_count", "fail_count", "running_count"],
                "labels": ["success", "fail", "running"], "colors": ["#3a9a4a", "#d0453b", "#e0a030"],
                "title": "orth_job_log: rows per trigger day (JobLogReportHelper counts)"}
