"""The retry files' pass (``orth-callbacks``): the reader's records through the replay (``engine.run.ReplayPass``)."""
from __future__ import annotations

from ..run import ReplayPass
from .model import Callback
from .reader import CallbackReader, CallbackSet
from .replay import CallbackReplay


class CallbackRun(ReplayPass):
    record_cls = Callback

    def __init__(self, cs: CallbackSet, limit: int | None = None):
        super().__init__(cs.name, CallbackReader(cs), CallbackReplay(), limit)
        self.cs = cs

    def finish(self):
        state = self.replay.finish(self.cs, self.reader.poison)
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing
