"""Stable finding codes of the Orth executor log folders (``orth-executor-logs``): OE-. Same shape as every
format's: code -> (severity, meaning)."""
from __future__ import annotations

from ..findings import NOTE, WARNING, Codes

EXECUTOR_CODES: Codes = {
    "OE-BAD-DATE": (WARNING, "a child of logPath with '-' in its name that is not yyyy-MM-dd: retention reads it "
                             "leniently (as another date) or never cleans it"),
    "OE-STRAY-FILE": (WARNING, "a name Orth does not write in logPath or a date directory"),
    "OE-INVALID-UTF8": (WARNING, "bytes that are not UTF-8 (script output): Orth's log viewer stops before them"),
    "OE-UNPREFIXED": (WARNING, "text before the first prefixed line of a log file"),
    "OE-NO-END": (WARNING, "a run without an end marker: running, or lost"),
    "OE-CALLBACK-FAILED": (WARNING, "the run's last callback attempt failed (the admin may not know its result)"),
    "OE-ORPHAN": (WARNING, "a log file without an execute-start line (only callback lines: its run's log was "
                           "cleaned, Orth re-created it)"),
    "OE-RETRY-PENDING": (NOTE, "a log id a retry file still holds: its callback is pending"),
    "OE-PARTIAL-LINE": (NOTE, "the last line has no line separator (a write in progress)"),
}
EXECUTOR_REPLAY_CODES: frozenset[str] = frozenset({"OE-NO-END", "OE-CALLBACK-FAILED", "OE-ORPHAN",
                                                   "OE-RETRY-PENDING"})

# --explain: per code (what Orth's executor does, whether data is at risk, which wqtool command fixes it); "what
# happened" is the code's meaning above (it says Orth's reaction). tests/engine/test_explain.py: all four, every code.
EXECUTOR_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "OE-BAD-DATE": ("retention reads it as another date, or never cleans it", "the directory may be deleted early, "
                    "or kept forever", "none: rename or remove it by hand"),
    "OE-STRAY-FILE": ("Orth ignores it", "no", "none: move it out"),
    "OE-INVALID-UTF8": ("Orth's log viewer stops before the bytes", "no: the file keeps them", "nothing to fix"),
    "OE-UNPREFIXED": ("Orth shows it as is", "no", "nothing to fix"),
    "OE-NO-END": ("the run is still going, or was lost with the executor", "the run's result may be unknown",
                  "none: check the admin's row (wqtool verify of the orth-joblog table)"),
    "OE-CALLBACK-FAILED": ("Orth keeps the callback in callbacklogs/ and retries it", "the admin may not know the "
                           "result yet", "none: Orth retries; wqtool replay --send delivers a stranded one"),
    "OE-ORPHAN": ("Orth re-created the file for a callback line", "no", "wqtool clean --apply removes it"),
    "OE-RETRY-PENDING": ("Orth retries the callback", "no", "nothing to fix"),
    "OE-PARTIAL-LINE": ("Orth is writing the line", "no", "nothing to fix"),
}
