"""prinbee's event journal (EVTJ) behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.snap import EVENTS_FILE, EVTJ_MAGIC, JOURNAL_CONF, NATIVE_BYTE_ORDER, Status
from ..fileio import read_head
from ..format import Evidence, Format, Options, RecordFacts, register
from .codes import EVTJ_CODES, EVTJ_REPLAY_CODES
from .model import Event, EvtjJournal
from .reader import EvtjReader, discover
from .serialize import EvtjRecordView, EvtjStateView
from .verify import EvtjRun


def _order(opts: Options) -> str:
    v = str(opts.get("evtj_byte_order", "native")).lower()
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


class EvtjFormat(Format):
    name = "evtj"
    title = "prinbee event journal (EVTJ)"
    plural = "EVTJ journals"
    kind_noun = "event status"
    file_expected = "an EVTJ file (magic 'EVTJ' at offset 0)"
    dir_expected = "an event journal directory (no journal-N.events starting with 'EVTJ')"
    codes = EVTJ_CODES
    replay_codes = EVTJ_REPLAY_CODES
    record_kinds = tuple(s.label for s in Status if s != Status.UNKNOWN)
    filters = frozenset({"time"})
    options = {"evtj_byte_order": "evtj: the byte order the journal was written in (native, little, big; default "
                                  "native: the loader reads its own machine's order)"}
    record_cls = Event
    record_view = EvtjRecordView()

    def detect(self, path: str) -> Evidence | None:
        if os.path.isdir(path):
            try:
                names = sorted(os.listdir(path))
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
        return discover(paths, opts.as_of_ns, _order(opts))

    def files(self, log: EvtjJournal) -> list[str]:
        return [f.path for f in log.files]

    def file_events(self, log: EvtjJournal, i: int, start_index: int = 0) -> Iterator:
        return EvtjReader(log, first_index=start_index, with_discovery=False).file_events(log.files[i])

    def source_options(self, o: dict) -> dict:
        return {"evtj_byte_order": o["evtj_byte_order"]} if o.get("evtj_byte_order") else {}

    def run(self, log: EvtjJournal, opts: Options, *, limit: int | None = None) -> EvtjRun:
        return EvtjRun(log, limit=limit)

    def facts(self, rec: Event) -> RecordFacts:
        try:
            kind = Status(rec.status).label
        except ValueError:
            kind = str(rec.status)
        return RecordFacts(kind, rec.length, rec.time_ns, rec.request_id)

    def state_view(self, state, log: EvtjJournal | None = None) -> EvtjStateView:
        return EvtjStateView(state)


FORMAT = register(EvtjFormat())
