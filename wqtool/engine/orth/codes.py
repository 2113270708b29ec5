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
