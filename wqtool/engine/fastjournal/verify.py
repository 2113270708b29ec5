"""verify / replay of the priority-FIFO journal: the reader feeds the replay (``engine.run.ReplayPass``)."""
from __future__ import annotations

from ..run import LogReport, ReplayPass
from .fifo import Fifo
from .model import Change, FjjJournal
from .reader import FjjReader
from .replay import FifoReplay


class FjjRun(ReplayPass):
    record_cls = Change

    def __init__(self, journal: FjjJournal, as_of_ns: int, *, limit: int | None = None, fifo: Fifo | None = None):
        super().__init__(journal.label, FjjReader(journal), FifoReplay(as_of_ns, fifo=fifo), limit)

    def finish(self):
        state = self.replay.finish()
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing


def run_log(journal: FjjJournal, as_of_ns: int, *, limit: int | None = None) -> LogReport:
    run = FjjRun(journal, as_of_ns, limit=limit)
    for _ in run.events():
        pass
    return run.report
