"""prinbee's event journal (EVTJ) behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.evtj import EVENTS_FILE, EVTJ_MAGIC, JOURNAL_CONF, NATIVE_BYTE_ORDER, Status
from ..fileio import listdir, read_head
from ..caps import About, bound, Passes, Dump, Plans, Live, Spark
from ..format import Evidence, Format, Options, PackOptions, RecordFacts, StateView, register
from ..run import ReplayPass
from ..options import Settings, setting
from .codes import EVTJ_CODES, EVTJ_REPLAY_CODES, EVTJ_EXPLAIN
from ..live import describe_holders, holders
from .model import Event, EvtjJournal


@dataclass(frozen=True)
class EvtjSettings(Settings):
    evtj_byte_order: str = setting("native", help="evtj: the byte order the journal was written in (native, little, "
                                   "big; default native: the loader reads its own machine's order)")


def _order(opts: Options) -> str:
    v = opts.of(FORMAT).evtj_byte_order.lower()
    if v == "native":
        return NATIVE_BYTE_ORDER
    if v not in ("little", "big"):
        raise UsageError(f"-O evtj_byte_order: expected native, little or big, got {v!r}")
    return v


def _magic(path: str) -> bool:
    try:
        return read_head(path, 4) == EVTJ_MAGIC
    except InputError:
        return False


class EvtjPasses(Passes):
    def file_events(self, log: EvtjJournal, i: int, start_index: int = 0) -> Iterator:
        from .reader import EvtjReader
        return EvtjReader(log, first_index=start_index, with_discovery=False).file_events(log.files[i])

    def series_probe(self, replay):
        """The live events after each record (``EvtjState.live``)."""
        from ..series import SizeProbe      # report and stats --chart|--timeline only
        return SizeProbe({"live events": lambda: len(replay.state.live)})


class EvtjDump(Dump):
    kind_noun = "event status"
    record_kinds = tuple(s.label for s in Status if s != Status.UNKNOWN)
    filters = frozenset({"time"})


class EvtjPlans(Plans):
    def pack(self, log: EvtjJournal, opts: PackOptions):
        from .pack import pack_plan
        return pack_plan(_at(log, opts), salvage=opts.salvage)


class EvtjLive(Live):
    def writer(self, log: EvtjJournal) -> str | None:
        found = holders(self.fmt.files(log), writing=True)
        return describe_holders(found) if found else None


class EvtjSpark(Spark):
    def options(self, o: dict) -> dict:
        return {"evtj_byte_order": o["evtj_byte_order"]} if o.get("evtj_byte_order") else {}


class EvtjFormat(Format):
    name = "evtj"
    title = "prinbee event journal (EVTJ)"
    codes = EVTJ_CODES
    about = About(
        plural="EVTJ journals",
        file_expected="an EVTJ file (magic 'EVTJ' at offset 0)",
        dir_expected="an event journal directory (no journal-N.events starting with 'EVTJ')",
        stdin_name="journal-0.events",
        manual="""prinbee's event journal (prinbee/journal/journal.cpp): a directory with journal.conf (advgetopt
name=value: maximum_number_of_files 2-255, maximum_file_size, maximum_events, inline_attachment_size_threshold,
sync, compress_when_full, file_management, attachment_copy_handling), journal-N.events files (N below
maximum_number_of_files; the loader reads them in order), {id}.bin external attachments and counters.seq.
Structures are written raw in the writer's native byte order (little-endian on amd64 and arm64;
-O evtj_byte_order= reads another); there is no checksum.

  header  "EVTJ" u8 major 1, u8 minor 0, u16 pad                                   8 bytes
  event   "ev" u8 status (1 READY, 2 FORWARDED, 3 ACKNOWLEDGED, 4 COMPLETED, 100 FAILED)
          u8 request_id_size, u32 size (the whole event), u64 tv_sec, u64 tv_nsec,
          u8 attachment_count, 7 pad bytes; u32 offset per attachment (bit 31: external
          {id}.bin), the request id, the inline attachments back to back

The loader stops reading a file at the first event with a bad magic ('00 00' ends a compressed file), an unknown
status, request_id_size 0, offset + size beyond the file, no inline data, or a time more than 5 s after --as-of;
it indexes READY, FORWARDED and ACKNOWLEDGED events by request id (the last wins) and skips the others. Statuses
only move forward. replay gives the live events in time order; pack is prinbee's compression done offline (the
live events kept byte for byte).""",
        explain=EVTJ_EXPLAIN,
        replay_codes=EVTJ_REPLAY_CODES)
    settings = EvtjSettings
    record_cls = Event

    passes = bound(EvtjPasses)
    dump = bound(EvtjDump)
    plans = bound(EvtjPlans)
    live = bound(EvtjLive)
    spark = bound(EvtjSpark)

    @cached_property
    def record_view(self):
        from .serialize import EvtjRecordView
        return EvtjRecordView()

    def detect(self, path: str) -> Evidence | None:
        if os.path.isdir(path):
            try:
                names = sorted(listdir(path))
            except OSError:
                return None
            for n in names:
                p = os.path.join(path, n)
                if EVENTS_FILE.match(n) and os.path.isfile(p) and _magic(p):
                    return Evidence(True, f"{n}: the EVTJ magic")
            if JOURNAL_CONF in names and any(EVENTS_FILE.match(n) for n in names):
                return Evidence(False, "journal.conf and journal-N.events names")
            return None
        if _magic(path):
            return Evidence(True, "the EVTJ magic")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[EvtjJournal]:
        from .reader import discover
        return discover(paths, opts.as_of_ns, _order(opts))

    def files(self, log: EvtjJournal) -> list[str]:
        return [f.path for f in log.files]

    def run(self, log: EvtjJournal, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import EvtjRun
        return EvtjRun(_at(log, opts), limit=limit)

    def facts(self, rec: Event) -> RecordFacts:
        try:
            kind = Status(rec.status).label
        except ValueError:
            kind = str(rec.status)
        return RecordFacts(kind, rec.length, rec.time_ns, rec.request_id)

    def state_view(self, state, log: EvtjJournal | None = None) -> StateView:
        from .serialize import EvtjStateView
        return EvtjStateView(state)


def _at(log: EvtjJournal, opts: Options) -> EvtjJournal:
    """The journal read at the command's --as-of, as settled for this log (``--as-of last`` is its newest
    event's time), not at the time it was discovered."""
    return log if log.as_of_ns == opts.as_of_ns else dataclasses.replace(log, as_of_ns=opts.as_of_ns)


FORMAT = register(EvtjFormat())

