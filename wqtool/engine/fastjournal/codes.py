"""Stable finding codes of wqtool's priority-FIFO journal (``FJJ-``), per the unimplemented libfastjournal design.

Framing damage (bad segment header, truncated record, bad size, CRC) is a torn tail at the end of the newest
segment when nothing valid follows (the server truncates it at start-up: such a record was never acknowledged),
else corrupt (the server refuses to start); a record that is intact but is not a change the FIFO applies at that
point is invalid history (the server journals only changes it applied).
"""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, Codes

FASTJOURNAL_CODES: Codes = {
    "FJJ-HEADER": (ERROR, "a segment header that is not FJJL version 1 with a valid CRC-32C and its own number"),
    "FJJ-TRUNCATED": (ERROR, "a record cut short by the end of the segment"),
    "FJJ-SIZE": (ERROR, "a record size too small for a request or beyond the 2 MiB cap (nothing allocated)"),
    "FJJ-CRC": (ERROR, "a record whose CRC-32C does not match"),
    "FJJ-BAD-REQUEST": (ERROR, "an intact record that is not a change the server journals (SET, DELETE, a GET "
                               "marking an entry worked on)"),
    "FJJ-NOT-APPLIED": (ERROR, "a journaled change that does not apply at its place in the history (an older SET, "
                               "a mark of a missing entry, ...): the server journals only changes it applied"),
    "FJJ-TIME-BACKWARDS": (WARNING, "a record applied earlier than the one before it (the server's clock went "
                                    "back)"),
    "FJJ-SUPERSEDED": (WARNING, "segments older than the newest snapshot (an interrupted pack): replayed from the "
                                "snapshot on; clean removes them"),
    "FJJ-SEGMENT-GAP": (WARNING, "segment numbers with a gap (a segment is missing)"),
    "FJJ-TEMP-FILE": (WARNING, "a temp file of an interrupted pack (clean removes it)"),
    "FJJ-FOREIGN-FILE": (WARNING, "a file that is no part of the journal directory"),
    "FJJ-LIVE": (NOTE, "journal.lock is held: a server is running and the journal may grow while it is read"),
    "FJJ-EMPTY": (NOTE, "no segment: an empty FIFO"),
}

FASTJOURNAL_REPLAY_CODES: frozenset[str] = frozenset({"FJJ-NOT-APPLIED", "FJJ-BAD-REQUEST", "FJJ-TIME-BACKWARDS"})

# --explain: per code (what the libfastjournal design's server does, whether data is at risk, which wqtool command
# fixes it); "what happened" is the code's meaning above. tests/engine/test_explain.py: all four for every code.
_DAMAGE = ("the server stops replay at the damage (a torn tail of the newest segment is cut at start)",
           "at the newest segment's end: the change being written, never acknowledged; elsewhere the records after it",
           "none in wqtool's plans for damage: fastjournal has pack and clean, which refuse it; cut the segment at "
           "verify's valid-up-to offset by hand, after a copy")
FASTJOURNAL_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "FJJ-HEADER": _DAMAGE, "FJJ-TRUNCATED": _DAMAGE, "FJJ-SIZE": _DAMAGE, "FJJ-CRC": _DAMAGE,
    "FJJ-BAD-REQUEST": ("the server never journals such a record: replay refuses it", "the record is not a change",
                        _DAMAGE[2]),
    "FJJ-NOT-APPLIED": ("replay refuses a change that does not apply", "the history after it is in doubt",
                        _DAMAGE[2]),
    "FJJ-TIME-BACKWARDS": ("replay applies it in log order", "no", "nothing to fix (check the server's clock)"),
    "FJJ-SUPERSEDED": ("replay starts at the newest snapshot and ignores them", "no",
                       "wqtool clean --apply removes them"),
    "FJJ-SEGMENT-GAP": ("replay cannot bridge the gap", "yes: the missing segment's changes",
                        "none: restore the segment from a backup"),
    "FJJ-TEMP-FILE": ("the server ignores it", "no", "wqtool clean --apply removes it"),
    "FJJ-FOREIGN-FILE": ("the server ignores it", "no", "none: move it out"),
    "FJJ-LIVE": ("the server is running and appending", "no", "nothing to fix"),
    "FJJ-EMPTY": ("the server starts with an empty FIFO", "no", "nothing to fix"),
}
