"""The format-neutral halves of the stable JSON forms: bytes rendering and findings (verify -o json, Spark rows)."""
from __future__ import annotations

import base64

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


def finding_to_jsonable(f: Finding) -> dict:
    """A finding's stable JSON form; ``exit_class`` is the finding's verdict as a number (0, 1, 3, 4)."""
    return {
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "record_index": f.record_index, "last_good_offset": f.last_good_offset, "message": f.message,
        "upstream": f.upstream, "exit_class": int(f.verdict), "job_id": f.job_id, "resumes_at": f.resumes_at,
    } if f.count is None else {
        # a summary of the findings of one as-of code (docs/json.md: "Folded findings"): how many it stands for,
        # where the first (file, offset) and the last of them are
        "severity": f.severity, "code": f.code, "file": f.path, "offset": f.offset,
        "record_index": None, "last_good_offset": None, "message": f.message, "upstream": f.upstream,
        "exit_class": int(f.verdict), "job_id": None, "resumes_at": None,
        "count": f.count, "last_file": f.last_path, "last_offset": f.last_offset,
    }
