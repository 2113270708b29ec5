"""The JSON rows and text views of the Orth retry files (``orth-callbacks``: dump, replay, stats, Spark rows)."""
from __future__ import annotations

import json
import re
from typing import Iterator

from ...offsets import at
from ...formats._common import format_unix_ns
from ...formats.orth import RELEASE_TITLE
from ..format import Column, RecordView, StateView
from .model import Callback
from .replay import CallbackState

CALLBACK_FIELDS = ("file", "offset", "at", "length", "record_index", "entry", "source", "log_id", "log_date_tim", "log_date",
                   "handle_code", "handle_msg", "file_state", "release", "error")


def _iso_ms(ms: int) -> str | None:
    try:
        return format_unix_ns(ms * 1_000_000)
    except (OverflowError, ValueError, OSError):
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def text(s: str | None) -> str | None:
    """A string for output: lone surrogates (a Java ``\\ud800`` escape, or bytes that are not UTF-8) as U+FFFD."""
    return s if s is None or not _SURROGATE.search(s) else _SURROGATE.sub("\ufffd", s)


def _short(s: str | None, n: int = 60) -> str:
    if s is None:
        return "-"
    t = json.dumps(text(s), ensure_ascii=False)
    return t if len(t) <= n else t[:n - 1] + "…"


class CallbackRecordView(RecordView):
    fields = CALLBACK_FIELDS
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "entry": "long",
             "source": "string", "log_id": "long", "log_date_tim": "long", "log_date": "string", "handle_code": "int",
             "handle_msg": "string", "file_state": "string", "release": "string", "error": "string"}
    columns = (Column("at", 56), Column("#", 5, ">"), Column("src", 4, gap=2),
               Column("log_id", 12, ">"), Column("log_date", 24, gap=2), Column("code", 4, ">"),
               Column("state", 8, gap=2), Column("handle_msg", None, gap=2))

    def row(self, rec: Callback, payload: str) -> dict:
        return {"file": rec.path, "offset": rec.offset, "at": at(rec.path, rec.offset), "length": rec.length, "record_index": rec.index, "entry": rec.entry,
                "source": rec.source, "log_id": rec.log_id, "log_date_tim": rec.log_date_tim,
                "log_date": _iso_ms(rec.log_date_tim), "handle_code": rec.handle_code, "handle_msg": text(rec.handle_msg),
                "file_state": rec.file_state, "release": rec.release, "error": None}

    def cells(self, rec: Callback, payload: str) -> tuple:
        return (at(rec.path, rec.offset), rec.index, rec.source, rec.log_id,
                _iso_ms(rec.log_date_tim) or str(rec.log_date_tim), rec.handle_code, rec.file_state,
                _short(rec.handle_msg))

    def hex_title(self, rec: Callback) -> str:
        return f"{at(rec.path, rec.offset)} #{rec.index} log id {rec.log_id} len={rec.length}"


# ---------------------------------------------------------------- replayed state
class CallbackStateView(StateView):
    rows_key = "log_ids"

    def __init__(self, state: CallbackState):
        self.state = state

    def summary(self) -> dict:
        return {"log_ids": len(self.state.items), "callbacks": self.state.records,
                "by_delivery": self.state.counts_by_state(), "written_by": self.state.written_by(),
                "digest": self.state.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        return iter(self.state.rows())

    def table_header(self) -> str:
        return f"{'log_id':>12}  {'log_date':<24} {'code':>4}  {'status':<8} {'delivery':<9} files"

    def table_lines(self) -> Iterator[str]:
        for r in self.state.rows():
            yield (f"{r['log_id']:>12}  {r['log_date'] or '-':<24} {r['handle_code']:>4}  {r['status']:<8} "
                   f"{r['delivery']:<9} {', '.join(r['files'])}")

    def summary_lines(self) -> list[str]:
        s = self.state
        c = {k: v for k, v in s.counts_by_state().items() if v}
        out = [f"{len(s.items)} log id(s) in {s.records} callback(s) not yet acknowledged by an admin: "
               + (", ".join(f"{k} {v}" for k, v in c.items()) or "none")]
        rel = s.written_by()
        if rel and rel != [RELEASE_TITLE["orth"]]:
            out.append("written by " + ", ".join(rel))
        return out

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return {}

    def digest(self) -> str:
        return self.state.digest()
