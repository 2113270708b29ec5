"""verify / replay of an EVTJ journal: the reader feeds the replay (``engine.run.ReplayPass``)."""
from __future__ import annotations

from ..run import ReplayPass
from .model import Event, EvtjJournal
from .reader import EvtjReader
from .replay import EvtjReplay


class EvtjRun(ReplayPass):
    record_cls = Event

    def __init__(self, journal: EvtjJournal, *, limit: int | None = None):
        super().__init__(journal.label, EvtjReader(journal), EvtjReplay(journal.as_of_ns, journal.counter), limit)

    def finish(self):
        state = self.replay.finish()
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing
