"""Exit codes: one table for every command (README, --help and man pages document it)."""
from __future__ import annotations

from enum import IntEnum, unique


@unique
class ExitCode(IntEnum):
    OK = 0               # clean (warnings allowed)
    TORN_TAIL = 1        # valid up to offset X of the newest segment, nothing valid after X
    USAGE = 2            # bad command line
    CORRUPT = 3          # damage with valid data after it, bad header in a non-tail segment
    INVALID_HISTORY = 4  # intact bytes, history upstream refuses
    IO = 5               # unreadable path, permission
    INTERNAL = 70        # a bug in wqtool (rerun with --traceback)
    INTERRUPTED = 130    # SIGINT


EXIT_TABLE = [
    (ExitCode.OK, "clean: every segment parses, every CRC holds, replay meets no impossible history (warnings allowed)"),
    (ExitCode.TORN_TAIL, "torn tail only: valid up to offset X of the newest segment and nothing valid follows X; "
                         "truncating at X loses no valid record"),
    (ExitCode.USAGE, "usage error"),
    (ExitCode.CORRUPT, "corrupt: damage with valid data after it, or a bad header / wrong version in a segment "
                       "that is not the newest one's empty tail"),
    (ExitCode.INVALID_HISTORY, "invalid history: bytes intact but a history workq-server 0.2.0 refuses"),
    (ExitCode.IO, "I/O error (unreadable path, permission; --engine spark: no session, or a Spark job lost to "
                  "something outside wqtool — a task's own error keeps its code)"),
    (ExitCode.INTERNAL, "internal error: a bug in wqtool (rerun with --traceback and report it)"),
    (ExitCode.INTERRUPTED, "interrupted"),
]


#: The engine's verdicts, by their stable number (wqtool.engine.findings.Verdict), to exit codes.
_FOR_VERDICT = {0: ExitCode.OK, 1: ExitCode.TORN_TAIL, 3: ExitCode.CORRUPT, 4: ExitCode.INVALID_HISTORY}


def for_verdict(verdict: int) -> ExitCode:
    """The exit code a verdict means (verify, and every command that reads a log)."""
    return _FOR_VERDICT[int(verdict)]
