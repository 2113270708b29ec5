"""The WqError tree. Imports nothing from wqtool.

Every error the tool means to report is a WqError; the CLI funnel renders it as one line
(``<file>@0x<offset>: <message>``) and maps it to an exit code once.
"""
from __future__ import annotations



class WqError(Exception):
    """Root of every error wqtool reports on purpose."""

    exit_code: int = 3  # ExitCode.CORRUPT; kept as an int so this module imports nothing

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
                where += f"@0x{self.offset:x}"
            where += ": "
        tail = []
        if self.field:
            tail.append(f"field {self.field}")
        if self.record_index is not None:
            tail.append(f"record {self.record_index}")
        return where + self.message + (f" ({', '.join(tail)})" if tail else "")


class UsageError(WqError):
    """The call's words are off (bad option value, incompatible options)."""
    exit_code = 2


class InputError(WqError):
    """A path that is missing, holds no log, or cannot be read."""
    exit_code = 5


class SparkError(WqError):
    """--engine spark: the session could not start (no Java, no Connect server) or a Spark job failed. Exit 5,
    or the code the failing task's own exception means (a wqtool error's, 70 for a bug). Not a finding."""
    exit_code = 5


class FormatError(WqError):
    """Bytes that do not match the declared format."""
    exit_code = 3


class BadMagic(FormatError):
    pass


class TruncatedRecord(FormatError):
    pass


class ChecksumMismatch(FormatError):
    pass


class UnknownOpcode(FormatError):
    pass


class RecordTooLarge(FormatError):
    pass


class InvalidPayload(FormatError):
    """A payload that ends inside a field, carries trailing bytes, or holds an out-of-range value."""


class InvalidHistory(WqError):
    """Intact bytes describing a history the upstream server refuses."""
    exit_code = 4


class PackRefused(FormatError):
    """pack: the input has corruption (exit 3) or a history the server refuses (exit 4), and no --salvage."""

    def __init__(self, message: str, *, exit_code: int, report=None, path: str | None = None,
                 offset: int | None = None):
        super().__init__(message, path=path, offset=offset)
        self.exit_code = exit_code
        self.report = report


class PackMismatch(WqError):
    """pack: the packed output does not replay to the input's state (a bug in wqtool: nothing was installed)."""

    exit_code = 70  # ExitCode.INTERNAL

    def __init__(self, message: str, *, expected: str, actual: str, job_id: str | None = None,
                 path: str | None = None):
        super().__init__(message, path=path)
        self.expected = expected
        self.actual = actual
        self.job_id = job_id
