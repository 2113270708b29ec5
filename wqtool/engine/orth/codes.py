"""Stable finding codes of the Orth executor-side formats: OC- for retry files (``orth-callbacks``), OE- for executor
log folders (``orth-executor-logs``). Same shape as every format's: code -> (severity, meaning)."""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, Codes

CALLBACK_CODES: Codes = {
    # Orth cannot deliver what the file holds (exit 3)
    "OC-INVALID-UTF8": (ERROR, "not UTF-8: Orth's strict read fails (MalformedInputException) and keeps the file "
                               "forever, never resent"),
    "OC-REJECTED": (ERROR, "JSON Orth's Gson rejects: a poison file, its retry pass aborts here on every run and never "
                           "reaches the files listed after it"),
    "OC-TRUNCATED": (ERROR, "cut short (a non-atomic write interrupted): Orth rejects it, a poison file"),
    "OC-NULL": (ERROR, "a null batch or null entry: Orth deletes the file, then aborts on a NullPointerException "
                       "(the batch is lost when the admin does not accept it)"),
    "OC-JAVA-BAD": (ERROR, "a legacy Java-serialized file that is not ArrayList<HandleCallbackParam> as xxl-job "
                           "2.3-3.2 writes it (refused without instantiating anything)"),
    "OC-HESSIAN-BAD": (ERROR, "an xxl-job 2.0.2-2.1.x Hessian file that is not List<HandleCallbackParam> as "
                              "Hessian2Output writes it (refused without instantiating anything)"),
    "OC-NOT-A-DIR": (ERROR, "callbacklogs is not a directory: failed callbacks cannot be persisted (lost) until "
                            "Orth's retry thread deletes it"),
    # a history the admin should never receive (exit 4)
    "OC-BAD-HANDLE-CODE": (ERROR, "handleCode <= 0: executors never send it; the admin would store it and keep the "
                                  "row open (replay --send refuses the file)"),
    # Orth copes, but the file is not what it writes
    "OC-NAME-MD5": (ERROR, "the name's md5 (the file's only checksum) is not the md5 of its bytes: the file is not "
                           "what was written, and Orth resends it as it reads now (the entries that parse "
                           "differently are named where a single flipped bit explains the change)"),
    "OC-LENIENT-JSON": (WARNING, "JSON Orth's lenient Gson accepts but strict JSON does not"),
    "OC-UNKNOWN-HANDLE-CODE": (WARNING, "handleCode other than 200, 500, 502 (the admin stores it; the UI shows "
                                        "Failed)"),
    "OC-EMPTY": (WARNING, "empty, blank or an empty batch: Orth deletes it without sending anything"),
    "OC-FOREIGN-NAME": (WARNING, "a name Orth does not write (it still retries every file in callbacklogs/)"),
    "OC-NOT-A-FILE": (WARNING, "an entry of the retry directory that is not a regular file (Orth's read fails; it "
                               "stays)"),
    "OC-STRANDED": (WARNING, "a retry file of an older release line (callbacklog/: Java 2.2.0-3.2 or Hessian "
                             "2.0.2-2.1.x; {logPath}/xxl-job-callback.log: Jackson 2.0.0-2.0.1): the finding says "
                             "which releases read it and what they do; Orth and xxl-job >= 3.3 never read it "
                             "(replay --send delivers it)"),
    "OC-NOT-CANONICAL": (NOTE, "valid, but not the bytes Orth writes for these values (whitespace, key order, extra "
                               "keys, trailing bytes)"),
    "OC-DUPLICATE": (NOTE, "a log id in more than one retry file (the admin keeps the first result it receives)"),
}
CALLBACK_REPLAY_CODES: frozenset[str] = frozenset({"OC-DUPLICATE"})

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
_POISON = ("Orth's retry pass fails on the file (see the meaning); the results in it never reach the admin",
           "yes: the callbacks (job results) in the file",
           "wqtool repair --apply (moves the file to the quarantine; replay --send delivers what parses)")
_GONE = ("Orth deletes or never reads it (see the meaning)", "no", "wqtool clean --apply removes it")
CALLBACK_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "OC-INVALID-UTF8": _POISON, "OC-REJECTED": _POISON, "OC-TRUNCATED": _POISON, "OC-JAVA-BAD": _POISON,
    "OC-HESSIAN-BAD": _POISON,
    "OC-NULL": ("Orth deletes the file, then aborts on a NullPointerException", "yes: the batch, unless the admin "
                "accepted it", _POISON[2]),
    "OC-NOT-A-DIR": ("failed callbacks cannot be persisted until Orth's retry thread deletes it",
                     "yes: callbacks that fail meanwhile", "none: move the file away and create the directory"),
    "OC-BAD-HANDLE-CODE": ("the admin would store it and keep the row open", "the job's result is wrong",
                           "wqtool repair --apply (quarantines the file; replay --send refuses it)"),
    "OC-NAME-MD5": ("Orth resends the file as it reads now", "yes: the changed entries",
                    "wqtool repair --apply (quarantines it); compare with the admin's rows"),
    "OC-LENIENT-JSON": ("Orth's lenient Gson reads it", "no", "nothing to fix"),
    "OC-UNKNOWN-HANDLE-CODE": ("the admin stores it; the UI shows Failed", "no", "nothing to fix"),
    "OC-EMPTY": _GONE, "OC-FOREIGN-NAME": ("Orth retries every file in callbacklogs/, this one too",
                                           "no", "wqtool clean --apply removes it"),
    "OC-NOT-A-FILE": ("Orth's read fails; it stays", "no", "none: move it out by hand"),
    "OC-STRANDED": ("Orth and xxl-job >= 3.3 never read it", "yes: its callbacks are never delivered",
                    "wqtool replay --send URL delivers it (--dry-run first)"),
    "OC-NOT-CANONICAL": ("Orth reads it", "no", "nothing to fix"),
    "OC-DUPLICATE": ("the admin keeps the first result it receives", "no", "nothing to fix"),
}
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
