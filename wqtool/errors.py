"""The WqError tree. Imports nothing from wqtool but ``wqtool.offsets`` (which imports nothing).

Every error the tool means to report is a WqError; the CLI funnel (``wqtool.cli``) renders it as one line
(``<file>@0x<offset>: <message>``) and maps its class to an exit code once.
"""
from __future__ import annotations

from .offsets import hex_offset, printable


class WqError(Exception):
    """Root of every error wqtool reports on purpose."""

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None,
                 field: str | None = None, record_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset
        self.field = field
        self.record_index = record_index

    def __str__(self) -> str:
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


class InputError(WqError):
    """A path that is missing, holds no log, or cannot be read."""


class FileChanged(InputError):
    """A file pinned when a job was planned was replaced or shrank before a pass read it (exit 5): the passes of
    the job would not read the same bytes, so there is no answer (``engine.fileio.Snapshot``)."""


class SparkError(WqError):
    """--engine spark: the session could not start (no Java, no Connect server) or a Spark job failed. Not a
    finding. ``cause``: the class of the exception a failed task raised (a wqtool error, an OSError, any other
    Python exception), or None (no session, or a failure outside Python): the CLI maps it as it maps a local
    error, so a task's error keeps its exit code."""

    cause: type | None = None


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


class PackMismatch(WqError):
    """pack: the packed output does not replay to the input's state (a bug in wqtool: nothing was installed)."""

    def __init__(self, message: str, *, expected: str, actual: str, job_id: str | None = None,
                 path: str | None = None):
        super().__init__(message, path=path)
        self.expected = expected
        self.actual = actual
        self.job_id = job_id
