"""The format-neutral halves of the stable JSON forms: bytes rendering and findings (verify -o json, Spark rows)."""
from __future__ import annotations

import base64

from ..offsets import at
from .findings import Finding

PAYLOAD_MODES = ("text", "hex", "base64", "none")


def render_bytes(b: bytes | None, mode: str) -> str | None:
    """Binary-safe rendering of a payload or result: text (UTF-8, undecodable bytes as \\xNN), hex, base64."""
    if b is None or mode == "none":
        return None
    if mode == "hex":
        return b.hex()
    if mode == "base64":
        return base64.b64encode(b).decode("ascii")
    return b.decode("utf-8", errors="backslashreplace")


def finding_json(f: Finding) -> dict:
    """A finding as every command's JSON writes it: its ``severity`` (never an exit code), its position as an
    integer ``offset`` beside ``file`` and in the printed form under ``at`` (``000000001.log@0x11c``, what every
    option that takes an offset reads back), the record it concerns (``record_index``) and job (``job_id``)."""
    return {
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "at": at(f.path, f.offset) if f.path else None, "record_index": f.record_index,
        "last_good_offset": f.last_good_offset, "message": f.message, "upstream": f.upstream, "job_id": f.job_id,
        "resumes_at": f.resumes_at,
    } if f.count is None else {
        # a summary of the findings of one as-of code (docs/json-output.md: "Folded findings"): how many it stands
        # for, where the first (file, offset) and the last of them are
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "at": at(f.path, f.offset) if f.path else None, "record_index": None, "last_good_offset": None,
        "message": f.message, "upstream": f.upstream, "job_id": None, "resumes_at": None,
        "count": f.count, "last_file": f.last_path, "last_offset": f.last_offset,
    }


def finding_to_jsonable(f: Finding) -> dict:
    """A finding's row in the Spark data sources' ``_corrupt`` struct and ``<name>-findings`` tables: the fields
    of the table's schema, with ``verdict``, the label of what the finding says of the log (``Verdict.label``:
    "clean", "torn tail", "INVALID HISTORY", "CORRUPT"), from which the driver reads an export's verdict back
    (``verdict_of_label``). An exit code is the edge's, never a row's. The commands' JSON is ``finding_json``."""
    return {
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "record_index": f.record_index, "last_good_offset": f.last_good_offset, "message": f.message,
        "upstream": f.upstream, "verdict": f.verdict.label, "job_id": f.job_id, "resumes_at": f.resumes_at,
    } if f.count is None else {
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "record_index": None, "last_good_offset": None, "message": f.message, "upstream": f.upstream,
        "verdict": f.verdict.label, "job_id": None, "resumes_at": None,
        "count": f.count, "last_file": f.last_path, "last_offset": f.last_offset,
    }


def _beside(doc, extra):
    """``doc`` (lists and nested objects too) with, after each key, what ``extra(obj, key, value)`` adds beside
    it — a (name, value) pair, or None — unless the object already has that name."""
    if isinstance(doc, list):
        return [_beside(v, extra) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for k, v in doc.items():
        out[k] = _beside(v, extra)
        more = extra(doc, k, v)
        if more is not None and more[0] not in doc:
            out[more[0]] = more[1]
    return out


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _position(obj: dict, key, value):
    if key == "offset" and isinstance(obj.get("file"), str) and _is_int(value):
        return "at", at(obj["file"], value)
    return None


def _instant(obj: dict, key, value):
    if isinstance(key, str) and key.endswith("_ns") and key[:-3] and _is_int(value):
        from ..formats._common import format_unix_ns
        try:
            return key[:-3], format_unix_ns(value)
        except (ValueError, OverflowError):
            return key[:-3], None
    return None


def with_positions(doc):
    """The JSON convention for positions: an object with a ``file`` (a path) and an integer ``offset`` gets
    ``at`` beside them, the same position as every table prints it and every option reads it back
    (``000000001.log@0x11c``, ``offsets.at``); a key already there is kept. Lists and nested objects too."""
    return _beside(doc, _position)


def with_times(doc):
    """The JSON convention for instants: an integer ``<name>_ns`` (Unix nanoseconds, exact: integers stay
    integers for jq) gets ``<name>`` beside it, the same instant in RFC 3339 — values above 2^53 are rounded by
    jq 1.6 and JavaScript, the string is not. Applied to every document a command writes as JSON (a key already
    there is kept); lists and nested objects too."""
    return _beside(doc, _instant)
