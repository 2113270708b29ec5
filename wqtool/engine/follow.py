"""``dump --follow``: records of a log as it grows, for every format (``Passes.follow``'s default).

Each poll discovers the log again (``Passes.refresh``: new files, rotations) and reads, file by file in the
log's order, what is new: a file is known by its identity (device, inode), not its name, so a rotation that
renames the live file (Kestrel's ``q`` -> ``q.<ms>``) does not show its records twice and the new live file
is read from its start. A file that grew is read again and the records before the end of the last one shown
are skipped (the format's reader stays the only place bytes become records). A partial record at the end of
the newest file is in flight: it is not reported, and the next poll reads it once complete. Damage before it
is reported once, at its offset. Files rewritten under a new identity (a Kestrel pack, a workq cleaner
rewrite) are new files: their records are shown again.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from .findings import Finding, Verdict


@dataclass(slots=True)
class _Seen:
    size: int = -1              # the file's size when it was last read
    end: int = 0                # offset after the last record (or damage) reported
    records: int = 0            # records of this file before ``end``


@dataclass
class Follower:
    """The state of one followed log: ``poll()`` yields what is new since the last poll."""

    fmt: object
    log: object
    opts: object
    seen: dict = field(default_factory=dict)

    def poll(self) -> Iterator:
        fmt = self.fmt
        self.log = fmt.passes.refresh(self.log, self.opts)
        files = fmt.files(self.log)
        cls = fmt.record_cls
        index = 0
        for i, path in enumerate(files):
            try:
                st = os.stat(path)
            except OSError:
                continue             # gone since discovery (rotated away, cleaned): the next poll sees where
            key = (st.st_dev, st.st_ino)
            s = self.seen.get(key)
            if s is None:
                s = self.seen[key] = _Seen()
            if st.st_size == s.size:
                index += s.records
                continue
            newest = i == len(files) - 1
            count = 0
            for ev in fmt.passes.file_events(self.log, i, index):
                if ev.__class__ is cls:
                    count += 1
                    if ev.offset < s.end:
                        continue
                    s.end = ev.offset + ev.length
                    yield ev
                elif isinstance(ev, Finding):
                    if ev.offset is None or ev.offset < s.end:
                        continue
                    if newest and ev.verdict == Verdict.TORN_TAIL:
                        break         # in flight: read again at the next poll
                    if ev.severity != "error":
                        continue
                    s.end = ev.resumes_at if ev.resumes_at is not None else st.st_size
                    yield ev
            s.size = st.st_size
            s.records = count
            index += count


def follow_log(fmt, log, opts, *, poll_s: float = 1.0, stop: Callable[[], bool] | None = None) -> Iterator:
    """Everything the log holds, then what it gains, poll after poll, until ``stop()`` (None: never)."""
    f = Follower(fmt, log, opts)
    while True:
        yield from f.poll()
        yield None                    # a poll ended: the caller flushes its output
        if stop is not None and stop():
            return
        time.sleep(poll_s)
