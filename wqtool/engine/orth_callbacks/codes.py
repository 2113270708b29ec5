"""Stable finding codes of the Orth retry files (``orth-callbacks``): OC-. Same shape as every format's: code ->
(severity, meaning)."""
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
