"""The record of the Orth executor log folders (``orth-executor-logs``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class LogEntry:
    """One prefixed line of an executor log and its continuation lines (or text before the first prefixed line)."""

    path: str
    offset: int
    length: int                 # bytes, line separators included
    index: int
    log_id: int
    date_dir: str
    line: int                   # 1-based, as Orth's readLog counts (\n, \r, \r\n)
    lines: int                  # lines in this entry
    time: str | None            # "yyyy-MM-dd HH:mm:ss", executor's zone, no designator
    cls: str | None
    method: str | None
    src_line: int | None
    thread: str | None
    kind: str                   # formats.orth.ENTRY_KINDS
    message: str                # the message and its continuation lines ("\n"-joined; bad bytes as U+FFFD)
    handle_code: int | None = None   # end(finish)'s handleCode
    utf8: bool = True           # every byte of the entry is UTF-8
    time_ns: int | None = None  # ``time`` read in the executor's zone (-O tz=, default UTC)
