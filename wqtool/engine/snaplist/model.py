"""Values the list-journal engine passes around: an hour file, a journal (the log), one line where it lies."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding

KIND_PENDING = "pending"     # a line upstream sends (all three fields non-empty)
KIND_ACKED = "acked"         # a run of '\n': acknowledged lines, overwritten in place
KIND_SKIPPED = "skipped"     # a line upstream skips (a required field is missing or empty)
KINDS = (KIND_PENDING, KIND_ACKED, KIND_SKIPPED)


@dataclass(frozen=True, slots=True)
class HourFile:
    path: str
    hour: int
    pinned_size: int | None = None     # FileView: read up to this size (None: the whole file)


@dataclass(slots=True)
class ListJournal:
    """One list client journal: the hour files in upstream's reading order at --as-of (hours ``E+1`` … ``E``),
    the current hour ``E``, and what discovery found (foreign names, temp files)."""

    root: str
    files: list[HourFile]
    current_hour: int
    as_of_ns: int
    is_dir: bool = True
    findings: list[Finding] = field(default_factory=list)
    temps: list[str] = field(default_factory=list)
    start_date_offset_us: int = 10_000_000

    @property
    def label(self) -> str:
        """What reports call this journal: the directory, or the files named one by one (not their directory)."""
        return self.root if self.is_dir or not self.files else ", ".join(f.path for f in self.files)

    @property
    def segments(self) -> list[HourFile]:
        return self.files

@dataclass(slots=True)
class Line:
    """One line (or blank run) of an hour file. ``uri`` / ``priority`` / ``key_start_date`` are what upstream's
    reader takes from it (``uri`` as bytes; the values as ints when they are valid, else None); ``raw`` is the line
    without its ``\\n`` (None for a blank run)."""

    path: str
    offset: int
    length: int          # bytes, the '\n' included (a blank run: its length)
    index: int
    hour: int
    kind: str
    raw: bytes | None = None
    uri: bytes | None = None
    priority: int | None = None
    key_start_date: int | None = None
    valid: bool = False  # pending, values valid: the replay takes it
