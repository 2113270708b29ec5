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
    "WQ-INTERRUPTED-APPLY": (WARNING, "an interrupted wqtool repair or pack --apply left its temp or new copy "
                                      "beside the log (the log itself is complete): rerun the same command to finish"),
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

# --explain: per code (what upstream does with it, whether data is at risk, which wqtool command fixes it); "what
# happened" is the code's meaning above. tests/engine/test_explain.py: every code of every format has all four.
_TAIL = ("workq-server refuses to start (Replay error) until the damage is gone",
         "no: a torn tail holds at most the record being written when the server stopped, which it never "
         "acknowledged; in the middle of the log, the records after the damage are at risk",
         "wqtool repair --apply (a torn tail is cut, the bytes kept in a quarantine file); damage with valid "
         "records after it: wqtool repair --salvage --apply")
_REFUSED = ("workq-server refuses to start (Replay error)",
            "the job's history as logged is impossible; the record itself is intact",
            "wqtool repair --drop-invalid --apply (removes exactly the records the server refuses, kept in the "
            "quarantine)")
_HDR = ("workq-server refuses to start: invalid segment header",
        "the segment's records are unreadable to the server (wqtool reads them when the header alone is wrong)",
        "wqtool repair --salvage --apply (rewrites the segment with a valid header, or cuts an empty one)")
_NONE = "nothing to fix"
EXPLAIN: dict[str, tuple[str, str, str]] = {
    "WQ-HDR-EMPTY": ("workq-server refuses to start: invalid segment header: EOF",
                     "no bytes to lose; as the newest segment a torn tail (created, never written), else the log "
                     "behind it is unreadable to the server", "wqtool repair --apply (removes the empty file)"),
    "WQ-HDR-SHORT": _HDR, "WQ-HDR-MAGIC": _HDR, "WQ-HDR-VERSION": _HDR,
    "WQ-TRUNCATED": _TAIL, "WQ-TIME-VERSION": _TAIL, "WQ-SIZE-OVERFLOW": _TAIL, "WQ-SIZE-TOO-LARGE": _TAIL,
    "WQ-CRC": _TAIL,
    "WQ-PAYLOAD-EMPTY": _REFUSED, "WQ-UNKNOWN-CMD": _REFUSED, "WQ-PAYLOAD-SHORT": _REFUSED,
    "WQ-PAYLOAD-TRAILING": _REFUSED, "WQ-PAYLOAD-BAD": _REFUSED, "WQ-DUPLICATE-JOB": _REFUSED,
    "WQ-INVALID-ID": _REFUSED, "WQ-INVALID-NAME": _REFUSED, "WQ-INVALID-TTR": _REFUSED, "WQ-INVALID-TTL": _REFUSED,
    "WQ-INVALID-PAYLOAD": _REFUSED, "WQ-INVALID-PRIORITY": _REFUSED, "WQ-INVALID-RESULT": _REFUSED,
    "WQ-ALREADY-LEASED": _REFUSED, "WQ-ALREADY-PROCESSED": _REFUSED, "WQ-MAX-ATTEMPTS": _REFUSED,
    "WQ-DUPLICATE-RESULT": _REFUSED,
    "WQ-UNKNOWN-JOB": ("workq-server ignores the record and starts",
                       "no: the job was never added (a run job), expired, or is gone",
                       "wqtool clean --apply drops records of jobs that are gone (none needed for safety)"),
    "WQ-ADD-EXPIRED": ("workq-server skips the add at replay (the job's TTL ran out before --as-of)",
                       "no: the job had expired; --as-of last shows the log as of its newest record",
                       "wqtool clean --apply drops expired adds (optional: they only take space)"),
    "WQ-MISSING-FIRST": ("workq-server starts from the first segment present",
                         "the records of the missing segments are gone (the cleaner removes segments it emptied: "
                         "usually nothing live)", "none: restore the missing segments from a backup if they held "
                         "live jobs (wqtool verify --as-of last shows what the present ones hold)"),
    "WQ-SEGMENT-GAP": ("workq-server replays the segments present, in order",
                       "the records of the missing segments; jobs added there and finished later leave "
                       "WQ-UNKNOWN-JOB", "none: restore the missing segments from a backup; wqtool pack --apply "
                       "renumbers a log without gaps"),
    "WQ-HEADER-ONLY": ("workq-server replays it as an empty segment", "no",
                       "wqtool clean --apply removes empty non-active segments (the newest one is the active one)"),
    "WQ-ZONE": ("workq-server reads the time with its zone offset", "no: the instant is the same",
                _NONE + " (wqtool pack --apply writes UTC times)"),
    "WQ-IGNORED-FILE": ("workq-server ignores the file", "no: it is not part of the log",
                        _NONE + " (remove the file by hand if it is stray)"),
    "WQ-FIELD-TRUNCATED": ("workq-server truncates the field (TTR to uint32 ms, max-attempts to uint8) at replay",
                           "the job runs with the truncated value", _NONE + " (the log records what was sent)"),
    "WQ-NO-SEGMENTS": ("workq-server creates 000000001.log on start", "no", _NONE),
    "WQ-LOCK-BUSY": ("a cleaner cycle holds read.lock; it rewrites segments meanwhile",
                     "no; a read now may see a segment mid-rewrite", "none: verify again when the cycle ends"),
    "WQ-INTERRUPTED-APPLY": ("workq-server reads only its log directory (cmd/workq-server/main.go:59-80) and "
                             "starts on whatever it holds; wqtool serve refuses to start until the rerun",
                             "no: by the directory swap's design the log directory always names a complete log, the "
                             "old one or the new one; the leftover is a copy",
                             "rerun the interrupted wqtool repair or pack --apply (it finishes the swap or removes the "
                             "copy first)"),
    "WQ-RESYNC": ("workq-server stops at the damage before it (refuses to start)",
                  "the records from here on are intact; the server cannot reach them",
                  "wqtool repair --salvage --apply (cuts only the damaged bytes, keeps these records)"),
    "WQ-IN-FLIGHT": ("the writer finishes the record (or truncates it at its next start)",
                     "no: the record is being written", _NONE + " (verify again, or pass --horizon)"),
    "WQ-TTL-RESET": ("at a restart workq-server gives add-jobs a fresh TTL (expires at restart+TTL)",
                     "no: jobs live longer than created+TTL", _NONE + " (the state shows expires vs log_expires)"),
    "WQ-LEASE-RESTORED": ("at a restart leased jobs come back leased with a fresh TTR",
                          "no: the worker's lease is restarted, the job may run twice", _NONE),
}
