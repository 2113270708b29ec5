"""The WqError tree. Imports nothing (``wqtool.offsets``, which imports nothing from wqtool, when an error is shown:
serve's first replies import this module, not offsets' dataclass and ``re``).

Every error the tool means to report is a WqError; the CLI funnel (``wqtool._run.settle``) renders it as one line
(``<file>@0x<offset>: <message>``) and maps its class to an exit code once (``wqtool.exitcodes``). What a PATH that
failed with an error is called in reports ("not a log", "unreadable", ...) is the error's own ``label``
(``failure_label``), not the exit table's.
"""
from __future__ import annotations


class WqError(Exception):
    """Root of every error wqtool reports on purpose."""

    #: what a PATH that failed with this error is called in reports (``failure_label``)
    label = "CORRUPT"

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None,
                 field: str | None = None, record_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset
        self.field = field
        self.record_index = record_index

    def __str__(self) -> str:
        from .offsets import hex_offset, printable
        where = ""
        if self.path is not None:
            where = self.path
            if self.offset is not None:
                where += "@" + hex_offset(self.offset)
            where += ": "
        tail = []
        if self.field:
            tail.append(f"field {self.field}")
        if self.record_index is not None:
            tail.append(f"record {self.record_index}")
        return printable(where + self.message + (f" ({', '.join(tail)})" if tail else ""))


class UsageError(WqError):
    """The call's words are off (bad option value, incompatible options)."""

    label = "not a log"


class InputError(WqError):
    """A path that is missing, holds no log, or cannot be read."""

    label = "unreadable"


class LogBusy(InputError):
    """Another process uses the log: a lock file is held (a running server, a cleaner, another apply), or a
    process holds one of its files open, or a file changed while we worked. (Also ``engine.fsops.LogBusy``.)"""


class FileChanged(InputError):
    """A file pinned when a job was planned was replaced or shrank before a pass read it (exit 5): the passes of
    the job would not read the same bytes, so there is no answer (``engine.fileio.Snapshot``)."""


class SparkError(WqError):
    """--engine spark: the session could not start (no Java, no Connect server) or a Spark job failed. Not a
    finding. ``cause``: the class of the exception a failed task raised (a wqtool error, an OSError, any other
    Python exception), or None (no session, or a failure outside Python): the CLI maps it as it maps a local
    error, so a task's error keeps its exit code."""

    cause: type | None = None

    @property
    def label(self) -> str:
        """A failed task's error keeps its label (as it keeps its exit code); no session: unreadable."""
        if self.cause is None or issubclass(self.cause, SparkError):
            return "unreadable"
        return class_label(self.cause)


class FormatError(WqError):
    """Bytes that do not match the declared format."""


class UnknownOpcode(FormatError):
    pass


class InvalidPayload(FormatError):
    """A payload that ends inside a field, carries trailing bytes, or holds an out-of-range value."""


class PackRefused(FormatError):
    """pack / repair: the input has corruption or a history the server refuses, and no --salvage. ``verdict``
    is the input's (the engine's ``Verdict``: CORRUPT or INVALID_HISTORY; the edges map it to an exit code)."""

    def __init__(self, message: str, *, verdict: int, report=None, path: str | None = None,
                 offset: int | None = None):
        super().__init__(message, path=path, offset=offset)
        self.verdict = verdict
        self.report = report

    @property
    def label(self) -> str:
        """A refused corrupt input is CORRUPT; one refused for its history, "error" (the labels the exit table
        gave them: 3 CORRUPT, 4 no label of its own)."""
        return "CORRUPT" if getattr(self.verdict, "name", None) == "CORRUPT" else "error"


class PackMismatch(WqError):
    """pack: the packed output does not replay to the input's state (a bug in wqtool: nothing was installed)."""

    label = "internal error"

    def __init__(self, message: str, *, expected: str, actual: str, job_id: str | None = None,
                 path: str | None = None):
        super().__init__(message, path=path)
        self.expected = expected
        self.actual = actual
        self.job_id = job_id


class SendRefused(InputError):
    """replay --send: records the target refused (each one reported on stdout; exit 5, as an I/O error)."""


def class_label(cls: type) -> str:
    """What a PATH that failed with an error of class ``cls`` is called: a wqtool error's class ``label``, an
    OSError "unreadable", anything else (a bug) "internal error"."""
    if issubclass(cls, WqError):     # the nearest class that names it (a label made per error is no class's)
        return next(c.__dict__["label"] for c in cls.__mro__ if isinstance(c.__dict__.get("label"), str))
    if issubclass(cls, OSError):
        return "unreadable"
    return "internal error"


def failure_label(exc: BaseException) -> str:
    """What a PATH that failed with ``exc`` is called in reports ("not a log", "unreadable", "CORRUPT", ...)."""
    if isinstance(exc, WqError):
        return exc.label
    return class_label(type(exc))
