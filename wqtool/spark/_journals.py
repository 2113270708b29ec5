"""Per-file and per-queue work on Kestrel journals, shared by the ``kestrel`` data source and the fleet jobs.

No pyspark here: plain functions over ``wqtool.engine.kestrel``, run on executors and in the planner. A task
that reads one journal file runs the engine's ``JournalReader`` over a file set holding just that file: the
framing of a file does not depend on the others; only the torn-tail-vs-corrupt call does (damage at the end of
the *live* file — the set's last — is a torn tail), so the planner passes ``is_live`` along. Record indexes run
across the queue's files: a task is told the index of its file's first record (``start_index``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from ..engine import kestrel
from ..engine.kestrel.reader import (
    ROLE_EXPLICIT,
    ROLE_LIVE,
    ROLE_ROTATED,
    FileSet,
    JournalFile,
)
from ._segments import expand_paths


def plan_queues(paths: Sequence[str], kestrel_version: str = "auto", queue: str | None = None) -> list[FileSet]:
    """The queues behind PATHs (directories, journal files, globs), files in Kestrel's replay order."""
    return kestrel.discover(expand_paths(paths), kestrel_version, queue=queue)


def is_live(fs: FileSet, jf: JournalFile) -> bool:
    """What ``JournalReader.events()`` decides for ``jf`` inside ``fs``: the set's last file, if live."""
    return bool(fs.files) and jf is fs.files[-1] and jf.role in (ROLE_LIVE, ROLE_EXPLICIT)


def file_events(fs: FileSet, jf: JournalFile, live: bool, start_index: int = 0) -> Iterator[object]:
    """The records and findings of one journal file, in file order, exactly as ``JournalReader(fs).events()``
    yields them for this file (without the file set's discovery findings)."""
    one = FileSet(root=fs.root, queue=fs.queue, files=[dataclasses.replace(jf, role=ROLE_LIVE if live
                                                                           else ROLE_ROTATED)],
                  is_dir=fs.is_dir, kestrel_version=fs.kestrel_version)
    Record = kestrel.Record
    for ev in kestrel.JournalReader(one).events():
        if start_index:
            if ev.__class__ is Record:
                ev.index += start_index
            elif ev.record_index is not None:
                ev.record_index += start_index
        yield ev


def count_records(fs: FileSet, jf: JournalFile, live: bool) -> int:
    """How many records the engine reads from this file (for the next file's ``start_index``)."""
    Record = kestrel.Record
    return sum(1 for ev in file_events(fs, jf, live) if ev.__class__ is Record)
