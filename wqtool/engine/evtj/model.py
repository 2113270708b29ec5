"""Values the EVTJ engine passes around: an events file, a journal directory (the log), one event."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding


@dataclass(frozen=True, slots=True)
class EventsFile:
    path: str
    number: int                        # N of journal-N.events
    pinned_size: int | None = None


@dataclass(slots=True)
class EvtjJournal:
    root: str
    files: list[EventsFile]            # loaded in this order (N ascending, N < maximum_number_of_files)
    as_of_ns: int
    byteorder: str
    is_dir: bool = True
    conf: dict = field(default_factory=dict)
    max_files: int = 2
    attachments: set[int] = field(default_factory=set)     # ids of {id}.bin present
    findings: list[Finding] = field(default_factory=list)
    counter: int | None = None         # counters.seq index 0

    @property
    def label(self) -> str:
        """What reports call this journal: the directory, or the files named one by one (not their directory)."""
        return self.root if self.is_dir or not self.files else ", ".join(f.path for f in self.files)

    @property
    def segments(self) -> list[EventsFile]:
        return self.files


@dataclass(slots=True)
class Event:
    path: str
    offset: int
    length: int                        # the event's size field
    index: int
    file_number: int
    status: int
    request_id: bytes
    tv_sec: int
    tv_nsec: int
    offsets: tuple[int, ...]
    inline_sizes: tuple[int, ...]      # size of each inline attachment, in offset order
    external_ids: tuple[int, ...]

    @property
    def time_ns(self) -> int:
        return self.tv_sec * 1_000_000_000 + self.tv_nsec
