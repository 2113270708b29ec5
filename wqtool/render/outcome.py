"""What a run says per PATH and in total: a PATH that failed (``Failed``) and the run's exit code — with the exit
codes the edge hands down (``ExitCodes``: ``wqtool.exitcodes.CODES``, which cli.py gives the commands and they
give the renderers; nothing here maps a verdict or an error to an exit code itself)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..engine.findings import Verdict
from ..errors import WqError
from ..offsets import printable


class ExitCodes(Protocol):
    """The exit codes as the edge hands them (``wqtool.exitcodes.Codes``)."""

    IO: int     # an I/O error's code (replay --send: a record the target refused)

    def of(self, verdict: Verdict) -> int: ...

    def of_error(self, exc: BaseException) -> int: ...

    def failure_label(self, exc: BaseException) -> str: ...

    def run(self, verdicts=(), errors=()) -> int: ...


def error_text(exc: BaseException) -> str:
    """An error as its one line, without the ``wqtool:`` prefix (an OSError as ``file: reason``)."""
    if isinstance(exc, WqError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return printable(f"{where}{exc.strerror or exc}")
    return printable(f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Failed:
    """A PATH (or a log behind it) that got no verdict: it could not be read, or it is not a log. Its exit code
    and label are the edge's (``failed_path()``)."""

    root: str
    error: BaseException
    exit_code: int
    label: str

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
        return {"root": printable(self.root), "verdict": self.label, "exit_code": int(self.exit_code), "error": self.message}


def failed_path(codes: ExitCodes, root: str, error: BaseException) -> Failed:
    """A failed PATH, with its exit code and label from ``codes``."""
    return Failed(root, error, codes.of_error(error), codes.failure_label(error))


def run_exit_code(codes: ExitCodes, verdicts=(), failed=()) -> int:
    """A run's exit code: the most severe of its logs' verdicts and its failed PATHs (``codes.run``: the one
    precedence table, ``exitcodes.PRECEDENCE``)."""
    return codes.run(verdicts, [f.error for f in failed])


def run_verdict(codes: ExitCodes, verdicts=(), failed=()) -> str:
    """A run's verdict in words, beside its exit code at the top of every JSON document: the label of what set the
    exit code (the worst log's verdict, or the label of the PATH that failed: "not a log", "unreadable", ...)."""
    code = run_exit_code(codes, verdicts, failed)
    for f in failed:
        if int(f.exit_code) == code:
            return f.label
    for v in sorted(verdicts, reverse=True):
        if codes.of(v) == code:
            return v.label
    return Verdict.CLEAN.label


def run_summary(codes: ExitCodes, verdicts=(), failed=()) -> dict:
    """``{"exit_code": N, "verdict": WORDS}`` of a run (``run_exit_code``, ``run_verdict``)."""
    verdicts, failed = list(verdicts), list(failed)
    return {"exit_code": int(run_exit_code(codes, verdicts, failed)),
            "verdict": run_verdict(codes, verdicts, failed)}
