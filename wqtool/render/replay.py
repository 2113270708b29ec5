"""replay's output for every format (through its ``StateView``): rows, counts, summary, notes, digest."""
from __future__ import annotations

from .output import json_text
from typing import TextIO

from ..engine.format import StateView
from ..engine.run import LogReport
from ..engine.serialize import finding_json
from .console import stdout_console
from .outcome import Resolved
from .state import counts_table, write_state_table


def _doc(report: LogReport, view: StateView, resolved: Resolved) -> dict:
    """One log's replay document: the state's summary (its jobs by state as ``by_state``, as stats has them),
    the log's exit code and verdict, its findings (a list, as verify's) and their ``counts`` by code."""
    doc = {("by_state" if k == "counts" else k): v for k, v in view.summary().items()}
    doc["root"] = report.root
    doc.update(view.extra_doc())
    doc.update(exit_code=resolved.of(report.verdict), verdict=report.verdict.label,
               counts=dict(sorted(report.counts.items())),
               findings=[finding_json(f) for f in report.shown(all_findings=True)[0]])
    return doc


#: stands for the rows in the document while it is encoded around them (no JSON value of a replay holds a NUL)
_ROWS = "\x00rows\x00"


def write_replay(out: TextIO, report: LogReport, view: StateView, output: str, summary: bool,
                 resolved: Resolved) -> None:
    if output == "json":    # json_text(doc, indent=2), with the rows streamed in place (memory stays flat)
        doc = _doc(report, view, resolved)
        doc[view.rows_key] = [] if summary else _ROWS
        head, _, tail = json_text(doc, indent=2).partition(json_text(_ROWS))
        out.write(head)
        if not summary:
            n = 0
            for chunk in view.encoded_rows("json"):
                if chunk:
                    out.write(",\n" if n else "[\n")
                    out.write(chunk)
                    n += 1
            out.write("\n  ]" if n else "[]")
        out.write(tail + "\n")
        return
    if output == "jsonl":
        if not summary:
            for chunk in view.encoded_rows("jsonl"):
                out.write(chunk)
        out.write(json_text({"summary": _doc(report, view, resolved)}) + "\n")
        return
    if not summary:
        write_state_table(out, view)
    table = counts_table(view)
    if table is not None:
        out.flush()
        stdout_console().print(table)
    for line in view.summary_lines():     # plain lines: never wrapped, never read as markup
        out.write(line + "\n")
    for f in report.findings:
        if f.severity == "note":
            out.write(f"note: {f.message}\n")
    out.write(f"digest sha256:{view.digest()}\n")


def nothing_live_hint(report: LogReport, view: StateView, expired_code: str | None) -> str | None:
    """When a replay at the wall clock leaves nothing live because every job had expired by then: say so, and
    how to see the state the log left (``--as-of last``)."""
    if expired_code is None or sum(view.counts_by_state().values()):
        return None
    n = report.counts.get(expired_code, 0)
    if not n:
        return None
    return (f"hint: 0 live jobs because all {n} added job(s) had expired at --as-of now ({expired_code}); "
            "replay --as-of last shows the state as of the newest record (reproducible)")


def write_send(out: TextIO, rep) -> None:
    """replay --send: one line per item, then the counts."""
    for line in rep.lines:
        out.write(line + "\n")
    what = "would send" if rep.dry_run else "sent"
    out.write(f"{rep.target}: {what} {rep.sent}, skipped {rep.skipped}, failed {rep.failed}"
              + (f", already delivered {rep.already}" if rep.already else "")
              + (" (dry run: nothing sent)" if rep.dry_run else "") + "\n")
