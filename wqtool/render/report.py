"""verify's output for every format: one verdict per log (table, JSON, JSON Lines)."""
from __future__ import annotations

import json
from typing import TextIO

from ..engine.run import LogReport, VerifyReport
from ..engine.serialize import finding_to_jsonable
from ..exitcodes import for_verdict
from .findings import findings_jsonl, findings_lines


def log_json(lr: LogReport, findings: bool = True) -> dict:
    d = {"root": lr.root, "verdict": lr.verdict.label, "exit_code": int(for_verdict(lr.verdict)),
         "segments": lr.segments, "records": lr.records, "bytes": lr.bytes, "counts": dict(sorted(lr.counts.items())),
         "last_good": None if lr.last_good is None else {"file": lr.last_good[0], "offset": lr.last_good[1]},
         "omitted_findings": lr.omitted}
    if findings:
        d["findings"] = [finding_to_jsonable(f) for f in lr.findings]
    return d


def write_verify(out: TextIO, report: VerifyReport, output: str) -> None:
    if output == "json":
        doc = {"exit_code": int(for_verdict(report.verdict)), "logs": [log_json(lr) for lr in report.logs]}
        out.write(json.dumps(doc, indent=2) + "\n")
    elif output == "jsonl":
        for lr in report.logs:
            findings_jsonl(out, lr.findings)
            out.write(json.dumps({"summary": log_json(lr, findings=False)}) + "\n")
    else:
        for lr in report.logs:
            write_log_table(out, lr)


def write_log_table(out: TextIO, lr: LogReport) -> None:
    w = out.write
    w(f"{lr.root}: {lr.segments} segment(s), {lr.records} records, {lr.bytes} bytes: "
      f"{lr.verdict.label} (exit {int(for_verdict(lr.verdict))})\n")
    if lr.last_good:
        w(f"  valid up to {lr.last_good[0]}@0x{lr.last_good[1]:x} ({lr.last_good[1]}); "
          "truncating there loses no valid record\n")
    for line in findings_lines(lr.findings):
        w(line + "\n")
    if lr.omitted:
        w(f"  ... {lr.omitted} more finding(s) not shown (--max-findings)\n")
    if lr.counts:
        w("  counts: " + ", ".join(f"{k} {v}" for k, v in sorted(lr.counts.items())) + "\n")
