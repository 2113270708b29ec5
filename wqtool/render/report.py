"""verify's output for every format: one verdict per PATH (table, JSON, JSON Lines) — a log's report, or the
error of a PATH that could not be read or is not a log."""
from __future__ import annotations

from .output import json_text
from typing import Sequence, TextIO

from ..engine.findings import Verdict
from ..engine.run import LogReport, VerifyReport
from ..engine.serialize import finding_json
from ..offsets import at
from .findings import findings_jsonl, findings_lines
from .outcome import Failed, Resolved


def log_json(lr: LogReport, resolved: Resolved, findings: bool = True, *, all_findings: bool = False,
             as_of: str | None = None) -> dict:
    shown, omitted = lr.shown(all_findings=all_findings, as_of=as_of)
    d = {"root": lr.root, "verdict": lr.verdict.label, "exit_code": resolved.of(lr.verdict),
         "segments": lr.segments, "records": lr.records, "bytes": lr.bytes, "counts": dict(sorted(lr.counts.items())),
         "last_good": None if lr.last_good is None else {"at": at(*lr.last_good), "file": lr.last_good[0],
                                                          "offset": lr.last_good[1]},
         "omitted_findings": omitted}
    if findings:
        d["findings"] = [finding_json(f) for f in shown]
    return d


def _items(report) -> list[LogReport | Failed]:
    return list(report.logs) if isinstance(report, VerifyReport) else list(report)


def write_verify(out: TextIO, report: VerifyReport | Sequence[LogReport | Failed], output: str, resolved: Resolved, *,
                 all_findings: bool = False, as_of: str | None = None) -> None:
    """Every PATH's verdict; each log's findings as ``LogReport.shown`` chooses them (as-of codes folded into a
    summary note unless ``all_findings``; ``as_of``: how --as-of was given, for the note)."""
    items = _items(report)
    kw = dict(all_findings=all_findings, as_of=as_of)
    run = resolved.summary
    if output == "json":
        doc = {**run, "logs": [resolved.fill(i.to_jsonable()) if isinstance(i, Failed) else log_json(i, resolved, **kw)
                               for i in items]}
        out.write(json_text(doc, indent=2) + "\n")
    elif output == "jsonl":     # each log's findings, a line each, then the run's summary line with every log's
        logs = []
        for i in items:
            if isinstance(i, Failed):
                logs.append(resolved.fill(i.to_jsonable()))
                continue
            findings_jsonl(out, i.shown(**kw)[0])
            logs.append(log_json(i, resolved, findings=False, **kw))
        out.write(json_text({"summary": {**run, "logs": logs}}) + "\n")
    else:
        for i in items:
            if isinstance(i, Failed):
                write_failed_line(out, i, resolved)
            else:
                write_log_table(out, i, resolved, **kw)


def write_failed_line(out: TextIO, f: Failed, resolved: Resolved) -> None:
    out.write(f"{f.root}: {f.label}: {f.message} (exit {resolved.of(f)})\n")


def write_log_table(out: TextIO, lr: LogReport, resolved: Resolved, *, all_findings: bool = False,
                    as_of: str | None = None) -> None:
    w = out.write
    shown, omitted = lr.shown(all_findings=all_findings, as_of=as_of)
    w(f"{lr.root}: {lr.segments} segment(s), {lr.records} records, {lr.bytes} bytes: "
      f"{lr.verdict.label} (exit {resolved.of(lr.verdict)})\n")
    if lr.last_good and lr.verdict == Verdict.TORN_TAIL:
        w(f"  valid up to {lr.last_good[0]}@0x{lr.last_good[1]:x} ({lr.last_good[1]}); "
          "truncating there loses no valid record\n")
    elif lr.last_good:   # a torn newest file behind damage: truncating it alone does not make the log valid
        w(f"  the newest file is torn at {lr.last_good[0]}@0x{lr.last_good[1]:x} ({lr.last_good[1]}), but the log "
          f"is {lr.verdict.label} before it: truncating there alone does not repair it (see the errors)\n")
    for line in findings_lines(shown):
        w(line + "\n")
    if omitted:
        w(f"  ... {omitted} more finding(s) not shown (--max-findings)\n")
    if lr.counts:
        w("  counts: " + ", ".join(f"{k} {v}" for k, v in sorted(lr.counts.items())) + "\n")
