"""Kestrel's window into its running replay for the time series (``Format.series_probe``, ``engine.series``):
the items queued and the items open (removed, not yet confirmed) after each record, read from ``KestrelReplay``'s
queue and open table. Only adds carry a time in a journal: what removes and confirms change is drawn at the time
of the last add before them."""
from __future__ import annotations

from ..format import SeriesProbe, SeriesStep


class KestrelProbe(SeriesProbe):
    def __init__(self, replay):
        self.replay = replay

    def before(self, rec):
        r = self.replay
        return len(r.queue), len(r.open)

    def after(self, rec, token) -> SeriesStep | None:
        r = self.replay
        q, o = len(r.queue) - token[0], len(r.open) - token[1]
        if not q and not o:
            return None
        return SeriesStep(tuple(m for m in (("queued", q), ("open", o)) if m[1]))
