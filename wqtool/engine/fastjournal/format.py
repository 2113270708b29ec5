"""wqtool's priority-FIFO journal behind the Format interface — per the unimplemented libfastjournal design: the
journal of ``wqtool serve --fastjournal`` (``wqtool.server.fastjournal``); no upstream file or daemon exists."""
from __future__ import annotations

import os
from functools import cached_property
from typing import Iterator, Sequence

from ...errors import InputError
from ...formats.fastjournal import FJJ_LOCK, FJJ_MAGIC, FJJ_SEGMENT
from ..fileio import listdir, read_head
from ..caps import About, bound, Passes, Dump, Plans, Live
from ..format import Evidence, Format, Options, PackOptions, RecordFacts, StateView, register
from ..run import ReplayPass
from ..live import is_locked
from .codes import FASTJOURNAL_CODES, FASTJOURNAL_REPLAY_CODES, FASTJOURNAL_EXPLAIN
from .model import KINDS, Change, FjjJournal


def _magic(path: str) -> bool:
    try:
        return read_head(path, 4) == FJJ_MAGIC
    except InputError:
        return False


class FastjournalPasses(Passes):
    def file_events(self, log: FjjJournal, i: int, start_index: int = 0) -> Iterator:
        from .reader import FjjReader
        return FjjReader(log, first_index=start_index, with_discovery=False).file_events(
            log.segments[i], newest=i == len(log.segments) - 1)

    def series_probe(self, replay):
        """The FIFO's entries after each change (``FifoState.fifo.entries``)."""
        from ..series import SizeProbe      # report and stats --chart|--timeline only
        return SizeProbe({"entries": lambda: len(replay.state.fifo.entries)})


class FastjournalDump(Dump):
    kind_noun = "change"
    record_kinds = KINDS
    filters = frozenset({"time"})


class FastjournalPlans(Plans):
    def pack(self, log: FjjJournal, opts: PackOptions):
        from .pack import pack_plan
        return pack_plan(log, opts.as_of_ns, salvage=opts.salvage)

    def clean(self, log: FjjJournal, opts: Options):
        from .pack import clean_plan
        return clean_plan(log, opts.as_of_ns)


class FastjournalLive(Live):
    def writer(self, log: FjjJournal) -> str | None:
        return "a fastjournal server holds journal.lock" if log.is_dir and is_locked(
            os.path.join(log.root, FJJ_LOCK)) else None


class FastjournalFormat(Format):
    name = "fastjournal"
    title = "fastjournal priority FIFO journal (wqtool's, per the unimplemented libfastjournal design)"
    codes = FASTJOURNAL_CODES
    about = About(
        plural="fastjournal journals",
        file_expected="a fastjournal segment (magic 'FJJL' at offset 0)",
        dir_expected="a fastjournal journal directory (no NNNNNNNNN.fjj segment)",
        stdin_name="000000001.fjj",
        manual="""Per the unimplemented libfastjournal design: m2osw/fastjournal holds a README only; no upstream file,
message or daemon exists. This is the journal of wqtool's own implementation of the design's priority FIFO
(wqtool serve --fastjournal): a directory of segments NNNNNNNNN.fjj read in numeric order, and journal.lock
(flock held by the running server; pack --apply and clean take it). Big-endian:

  segment header  "FJJL" u16 version 1, u16 flags (bit 0: snapshot), u32 segment number,
                  u32 CRC-32C of the first 12 bytes                                    16 bytes
  record          u32 size, u64 applied_at (server clock, µs), one FJ request message
                  (size - 8 bytes), u32 CRC-32C of size .. request

Each record is a change the server applied, stored as the design's own FJ request: SET (key: the uri; value:
type BUFFER, u8 priority + u64 key_start_date µs; timestamp: the newest wins; flag bit 5: overwrite), DELETE
(timestamp; bit 5: complete, else a tombstone remains), GET with a timeout (the entry marked worked on until
applied_at + timeout; its timestamp names the version handed out). The newest snapshot segment holds the whole
state; segments before it are superseded. replay gives the FIFO at --as-of in NEXT order (domain, priority,
key_start_date) with each entry due, waiting or worked on; pack writes a snapshot; clean removes superseded
segments and temp files.""",
        explain=FASTJOURNAL_EXPLAIN,
        replay_codes=FASTJOURNAL_REPLAY_CODES)
    record_cls = Change

    passes = bound(FastjournalPasses)
    dump = bound(FastjournalDump)
    plans = bound(FastjournalPlans)
    live = bound(FastjournalLive)

    @cached_property
    def record_view(self):
        from .serialize import FjjRecordView
        return FjjRecordView()

    def detect(self, path: str) -> Evidence | None:
        if os.path.isdir(path):
            try:
                names = sorted(listdir(path))
            except OSError:
                return None
            for n in names:
                if FJJ_SEGMENT.match(n) and _magic(os.path.join(path, n)):
                    return Evidence(True, f"{n}: the FJJL magic")
            if FJJ_LOCK in names and any(FJJ_SEGMENT.match(n) for n in names):
                return Evidence(False, "journal.lock and NNNNNNNNN.fjj names")
            return None
        if _magic(path):
            return Evidence(True, "the FJJL magic")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[FjjJournal]:
        from .reader import discover
        return discover(paths)

    def files(self, log: FjjJournal) -> list[str]:
        return [s.path for s in log.segments]

    def run(self, log: FjjJournal, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import FjjRun
        return FjjRun(log, opts.as_of_ns, limit=limit)

    def facts(self, rec: Change) -> RecordFacts:
        return RecordFacts(rec.op, rec.length, rec.applied_at * 1000, rec.uri)

    def state_view(self, state, log: FjjJournal | None = None) -> StateView:
        from .serialize import FjjStateView
        return FjjStateView(state)


FORMAT = register(FastjournalFormat())

