"""What a run says per PATH and in total: an error's exit code (the one mapping, used by the CLI funnel too),
a PATH that failed (``Failed``), and the run's exit code by the documented precedence."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError, InputError, PackMismatch, PackRefused, SparkError, UsageError, WqError
from ..exitcodes import ExitCode, for_verdict, most_severe

#: Error classes to exit codes (the first class in an error's MRO that is listed wins).
_ERROR_EXIT = {
    UsageError: ExitCode.USAGE,
    InputError: ExitCode.IO,
    PackMismatch: ExitCode.INTERNAL,
    FormatError: ExitCode.CORRUPT,
    WqError: ExitCode.CORRUPT,
}

#: What a failed PATH is called in reports, by its exit code.
FAILURE_LABEL = {ExitCode.USAGE: "not a log", ExitCode.IO: "unreadable", ExitCode.CORRUPT: "CORRUPT",
                 ExitCode.INTERNAL: "internal error"}


def _class_exit(cls: type) -> ExitCode:
    for c in cls.__mro__:
        if c in _ERROR_EXIT:
            return _ERROR_EXIT[c]
    if issubclass(cls, OSError):
        return ExitCode.IO
    return ExitCode.INTERNAL


def exit_code_for(exc: BaseException) -> ExitCode:
    """The one mapping of an error to an exit code: wqtool errors by class (a refused pack by its input's
    verdict; a failed Spark job by the class of its task's error, 5 when it has none), OSError 5, anything else
    a bug (70)."""
    if isinstance(exc, PackRefused):
        return for_verdict(exc.verdict)
    if isinstance(exc, SparkError):
        return ExitCode.IO if exc.cause is None or issubclass(exc.cause, SparkError) else _class_exit(exc.cause)
    return _class_exit(type(exc))


def error_text(exc: BaseException) -> str:
    """An error as its one line, without the ``wqtool:`` prefix (an OSError as ``file: reason``)."""
    if isinstance(exc, WqError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Failed:
    """A PATH (or a log behind it) that got no verdict: it could not be read, or it is not a log."""

    root: str
    error: BaseException

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for(self.error)

    @property
    def label(self) -> str:
        return FAILURE_LABEL.get(self.exit_code, "error")

    @property
    def message(self) -> str:
        """The error without the path when the error names this root (the report line names it)."""
        e = self.error
        if isinstance(e, WqError) and e.path == self.root and e.offset is None:
            return e.message
        if isinstance(e, OSError) and e.filename == self.root:
            return e.strerror or str(e)
        return error_text(e)

    def to_jsonable(self) -> dict:
        return {"root": self.root, "verdict": self.label, "exit_code": int(self.exit_code), "error": self.message}


def run_exit_code(verdicts=(), failed=()) -> ExitCode:
    """A run's exit code: the most severe of its logs' verdicts and its failed PATHs (``exitcodes.PRECEDENCE``)."""
    return most_severe([*(for_verdict(v) for v in verdicts), *(f.exit_code for f in failed)])
