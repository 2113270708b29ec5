"""Findings as one-liners (stderr), tables and JSON."""
from __future__ import annotations

from .output import json_text
from typing import TextIO

from ..engine.findings import Finding
from ..engine.serialize import finding_json


def one_line(f: Finding) -> str:
    rec = f" (record {f.record_index})" if f.record_index is not None and f.offset is not None else ""
    up = f" [{f.upstream}]" if f.upstream and f.severity == "error" else ""
    return f"{f.severity}: {f.location()}: {f.code} {f.message}{rec}{up}"


def write_one_line(out: TextIO, f: Finding) -> None:
    out.write("wqtool: " + one_line(f) + "\n")


def findings_lines(findings: list[Finding]) -> list[str]:
    """One greppable line per finding: severity, code, file@offset, record, message, upstream reaction."""
    out = []
    for f in findings:
        rec = "" if f.offset is None else f" #{f.record_index}" if f.record_index is not None else \
            " #-" if f.next_index is not None else ""          # damage: an unreadable range has no record number
        out.append(f"  {f.severity:<7} {f.code:<20} {f.location()}{rec}: {f.message}")
        if f.upstream and f.severity == "error":
            out.append(f"  {'':<7} {'':<20} upstream: {f.upstream}")
    return out


def findings_jsonl(out: TextIO, findings: list[Finding]) -> None:
    for f in findings:
        out.write(json_text(finding_json(f), ensure_ascii=False) + "\n")
