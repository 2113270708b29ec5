"""verify / replay of a list journal: the reader feeds the replay (``engine.run.ReplayPass``)."""
from __future__ import annotations

from ..run import ReplayPass
from .model import Line, ListJournal
from .reader import ListReader
from .replay import ListReplay


class ListRun(ReplayPass):
    record_cls = Line

    def __init__(self, journal: ListJournal, *, limit: int | None = None):
        super().__init__(journal.label, ListReader(journal), ListReplay(journal.as_of_ns), limit)

    def finish(self):
        state = self.replay.finish()
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing


def run_log(journal: ListJournal, *, limit: int | None = None):
    run = ListRun(journal, limit=limit)
    for _ in run.events():
        pass
    return run.report
