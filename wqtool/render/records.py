"""Record output for dump, for every format (through its ``RecordView``): a streaming text table, JSON Lines,
a JSON document, and hex."""
from __future__ import annotations

from .output import json_text
from typing import TextIO

import os

from ..engine.fileio import read_span
from ..engine.findings import Finding
from ..engine.format import RecordView


class _Writer:
    def damage(self, f: Finding, *, in_flight: bool = False) -> None:
        """Bytes no record covers (a finding's range): shown by ``-o hex`` only (the others: stderr says it)."""


def table_line(columns, cells) -> str:
    parts = []
    for i, (col, cell) in enumerate(zip(columns, cells)):
        if i:
            parts.append(" " * col.gap)
        parts.append(str(cell) if col.width is None else f"{cell:{col.align}{col.width}}")
    return "".join(parts)


class RecordTable(_Writer):
    """A streaming fixed-width table: one line per record, header once (works for millions of rows)."""

    def __init__(self, out: TextIO, payload: str, view: RecordView, doc=None):
        self.out = out
        self.payload = payload
        self.view = view
        self.started = False
        self._head = table_line(view.columns, [c.title for c in view.columns])

    def write(self, rec) -> None:
        if not self.started:
            self.out.write(self._head + "\n")
            self.started = True
        self.out.write(table_line(self.view.columns, self.view.cells(rec, self.payload)) + "\n")

    def close(self) -> None:
        if not self.started:
            self.out.write(self._head + "\n")


class RecordDocument:
    """What dump's JSON writers share: one document over every format's rows. ``-o json``: one object, the rows
    under ``records``, then the run's ``exit_code``, ``verdict``, how many rows were written (``shown``) and the
    findings dump told (``findings``, a list, with their ``counts`` by code); ``-o jsonl``: a row a line, then one
    ``{"summary": ...}`` line with the same fields."""

    def __init__(self, out: TextIO, output: str):
        self.out, self.output, self.n = out, output, 0

    def rows_written(self, n: int) -> str:
        """The text before the next ``n`` rows of ``-o json`` (the document's head, or the rows' separator)."""
        sep = '{"records": [\n  ' if self.n == 0 else ",\n  "
        self.n += n
        return sep

    def finish(self, run: dict, shown: int, told: list[Finding]) -> None:
        """The end of the document: ``run`` is ``{"exit_code", "verdict"}`` (``outcome.run_summary``)."""
        from collections import Counter

        from ..engine.serialize import finding_json
        summary = {**run, "shown": shown, "counts": dict(sorted(Counter(f.code for f in told).items())),
                   "findings": [finding_json(f) for f in told]}
        if self.output == "json":
            self.out.write(('{"records": [],' if self.n == 0 else "\n],") + json_text(summary, indent=2)[1:] + "\n")
        elif self.output == "jsonl":
            self.out.write(json_text({"summary": summary}) + "\n")


class RecordJsonl(_Writer):
    def __init__(self, out: TextIO, payload: str, view: RecordView, doc: RecordDocument | None = None):
        self.out = out
        self.payload = payload
        self.view = view
        self.doc = doc

    def write(self, rec) -> None:
        self.out.write(json_text(self.view.row(rec, self.payload), ensure_ascii=False) + "\n")

    def write_encoded(self, n: int, text: str) -> None:
        """``n`` rows a format encoded itself (``Dump.encoded_records``, style "jsonl")."""
        self.out.write(text)

    def close(self) -> None:
        pass


class RecordJsonArray(RecordJsonl):
    """The rows of ``-o json``'s ``records`` list, streamed element by element (memory stays flat); the
    document's head and end are its ``RecordDocument``'s."""

    def write(self, rec) -> None:
        self.out.write(self.doc.rows_written(1) + json_text(self.view.row(rec, self.payload), ensure_ascii=False))

    def write_encoded(self, n: int, text: str) -> None:
        """``n`` rows a format encoded itself (style "json": joined by ",\n  ")."""
        if n:
            self.out.write(self.doc.rows_written(n) + text)


def hexdump(data: bytes, base: int) -> list[str]:
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        hx = " ".join(f"{b:02x}" for b in chunk)
        asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"  {base + i:08x}  {hx:<47}  |{asc}|")
    return lines


#: the most bytes of one record a hex dump shows
HEX_MAX = 1 << 20


class RecordHex(_Writer):
    """Each record as a title line and a canonical hex dump of its bytes (offsets are file offsets)."""

    def __init__(self, out: TextIO, payload: str, view: RecordView, doc=None):
        self.out = out
        self.view = view

    def write(self, rec) -> None:
        self.out.write(self.view.hex_title(rec) + "\n")
        self.out.write("\n".join(hexdump(read_span(rec.path, rec.offset, min(rec.length, HEX_MAX)), rec.offset))
                       + "\n")

    def damage(self, f: Finding, *, in_flight: bool = False) -> None:
        """The bytes from the finding's offset to where records resume (or the end of the file), between the
        records around them, marked UNREADABLE (or IN FLIGHT: a record a live writer is appending)."""
        try:
            size = os.path.getsize(f.path)
        except OSError:
            size = f.offset
        end = f.resumes_at if f.resumes_at is not None else size
        n = max(0, end - f.offset)
        what = "IN FLIGHT (a record a live writer is appending, not damage)" if in_flight else "UNREADABLE"
        self.out.write(f"{os.path.basename(f.path)}@0x{f.offset:x}..0x{end:x} {what}: {n} bytes, {f.code}"
                       + (f" (first {HEX_MAX} shown)" if n > HEX_MAX else "") + "\n")
        data = read_span(f.path, f.offset, min(n, HEX_MAX)) if n else b""
        if data:
            self.out.write("\n".join(hexdump(data, f.offset)) + "\n")

    def close(self) -> None:
        pass


RECORD_WRITERS = {"table": RecordTable, "jsonl": RecordJsonl, "json": RecordJsonArray, "hex": RecordHex}
