"""Stable finding codes of workq command logs: code -> (severity, meaning).

Framing and header codes are errors whose verdict depends on where they are (torn tail at the end of the newest
segment with nothing valid after it, else corrupt); payload and history codes are invalid history.
"""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, AsOfRule, Codes, as_of_rules

# The stable finding codes, their severity and meaning (man page and `wqtool verify --explain` list them).
CODES: Codes = {
    # framing and headers (exit 1 when the newest segment's tail, else 3)
    "WQ-HDR-EMPTY": (ERROR, "0-byte segment (no header)"),
    "WQ-HDR-SHORT": (ERROR, "segment shorter than its 8-byte header"),
    "WQ-HDR-MAGIC": (ERROR, "segment header magic is not 'wqwq'"),
    "WQ-HDR-VERSION": (ERROR, "segment header version is not 1"),
    "WQ-TRUNCATED": (ERROR, "record cut short by the end of the segment"),
    "WQ-TIME-VERSION": (ERROR, "record TIME does not start with Go time version 1 (junk or damage)"),
    "WQ-SIZE-OVERFLOW": (ERROR, "record SIZE varint overflows 64 bits"),
    "WQ-SIZE-TOO-LARGE": (ERROR, "record SIZE beyond any valid command (refused before allocating)"),
    "WQ-CRC": (ERROR, "record CRC-32C mismatch"),
    # payloads and history (exit 4)
    "WQ-PAYLOAD-EMPTY": (ERROR, "record with an empty payload"),
    "WQ-UNKNOWN-CMD": (ERROR, "unknown command type"),
    "WQ-PAYLOAD-SHORT": (ERROR, "payload ends inside a field"),
    "WQ-PAYLOAD-TRAILING": (ERROR, "payload has bytes after the command"),
    "WQ-PAYLOAD-BAD": (ERROR, "payload field undecodable (varint overflow, bad time version)"),
    "WQ-DUPLICATE-JOB": (ERROR, "add/schedule of a job id that is already live"),
    "WQ-INVALID-ID": (ERROR, "job id is not a v4 (RFC 4122) UUID"),
    "WQ-INVALID-NAME": (ERROR, "queue name not [A-Za-z0-9_.-]{1,255}"),
    "WQ-INVALID-TTR": (ERROR, "TTR outside 1..86400000 ms"),
    "WQ-INVALID-TTL": (ERROR, "TTL outside 1..2592000000 ms"),
    "WQ-INVALID-PAYLOAD": (ERROR, "job payload larger than 1 MiB"),
    "WQ-INVALID-PRIORITY": (ERROR, "priority outside int32"),
    "WQ-INVALID-RESULT": (ERROR, "result larger than 1 MiB"),
    "WQ-ALREADY-LEASED": (ERROR, "start-attempt on a job that is already leased"),
    "WQ-ALREADY-PROCESSED": (ERROR, "start-attempt on a completed or failed job"),
    "WQ-MAX-ATTEMPTS": (ERROR, "start-attempt beyond max-attempts"),
    "WQ-DUPLICATE-RESULT": (ERROR, "second complete/fail for one job"),
    # warnings (exit unchanged)
    "WQ-UNKNOWN-JOB": (WARNING, "record for a job that is not live (never added, a run job, or already gone)"),
    "WQ-ADD-EXPIRED": (WARNING, "add/schedule already expired at --as-of (upstream skips it)"),
    "WQ-MISSING-FIRST": (WARNING, "the first segment is not 000000001.log"),
    "WQ-SEGMENT-GAP": (WARNING, "segment numbers have a gap"),
    "WQ-HEADER-ONLY": (WARNING, "header-only (empty) segment"),
    "WQ-ZONE": (WARNING, "a Go time with a zone offset other than FF FF (UTC)"),
    "WQ-IGNORED-FILE": (WARNING, "a file in the log directory that upstream ignores"),
    "WQ-FIELD-TRUNCATED": (WARNING, "a field upstream truncates (TTR to uint32, max-attempts to uint8)"),
    "WQ-NO-SEGMENTS": (WARNING, "log directory with lock files but no segment yet"),
    "WQ-LOCK-BUSY": (WARNING, "read.lock is held exclusively (a cleaner cycle is running)"),
    "WQ-RESYNC": (NOTE, "valid records resume after damage"),
    "WQ-IN-FLIGHT": (NOTE, "a partial last record while the log is being written (append.lock held, the newest "
                           "segment changed during the read, or --live): a record in flight, not a torn tail"),
    "WQ-TTL-RESET": (NOTE, "upstream gives add-jobs a fresh TTL at restart"),
    "WQ-LEASE-RESTORED": (NOTE, "leased jobs come back leased with a fresh TTR at restart"),
}

#: Codes only the replay state machine raises — on decoded records, whose meaning depends on the job's earlier
#: records anywhere in the log, and at the end (closing notes). The others come from discovery, the reader
#: (framing, CRC) and the payload decoder: what a reader of one segment reports on its own (the Spark data source's
#: row-level findings). tests/engine/test_replay_findings.py proves the split against where each finding arises.
REPLAY_CODES: frozenset[str] = frozenset({
    "WQ-DUPLICATE-JOB", "WQ-INVALID-ID", "WQ-INVALID-NAME", "WQ-INVALID-TTR", "WQ-INVALID-TTL",
    "WQ-INVALID-PAYLOAD", "WQ-INVALID-PRIORITY", "WQ-INVALID-RESULT", "WQ-ALREADY-LEASED", "WQ-ALREADY-PROCESSED",
    "WQ-MAX-ATTEMPTS", "WQ-DUPLICATE-RESULT", "WQ-UNKNOWN-JOB", "WQ-ADD-EXPIRED", "WQ-FIELD-TRUNCATED",
    "WQ-TTL-RESET", "WQ-LEASE-RESTORED",
})

#: The codes that follow only from --as-of (``findings.AsOfRule``): one summary note each unless --all-findings.
#: WQ-UNKNOWN-JOB folds only beside WQ-ADD-EXPIRED: records of jobs whose add was skipped as expired at --as-of.
AS_OF: dict[str, AsOfRule] = {
    "WQ-ADD-EXPIRED": AsOfRule("add/schedule record(s) of jobs already expired", "their TTLs ran out"),
    "WQ-UNKNOWN-JOB": AsOfRule("record(s) concern jobs not live", requires="WQ-ADD-EXPIRED",
                               why="most of them jobs whose add expired at --as-of; else never added, or gone"),
}
as_of_rules(AS_OF)
