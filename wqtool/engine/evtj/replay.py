"""EVTJ replay: the set of live events the loader indexes, in its time order.

The loader reads the files in order (``journal-0.events`` …) and each file's events in file order; READY,
FORWARDED and ACKNOWLEDGED events are indexed by request id (``f_event_locations[request_id] = l``: the last one
wins) and by time (``f_timebased_replay[event_time] = l``: the last one wins); COMPLETED and FAILED events are
skipped (the file can be compressed). Statuses only move forward (``update_event_status``); a request id whose
later event has an earlier status means the loader brings the event back to an earlier state.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from ...formats.evtj import LIVE_STATUSES, STATUS_RANK, Status
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .model import Event
from .reader import render_id

LIVE = frozenset(int(s) for s in LIVE_STATUSES)


def _where(ev: Event) -> str:
    return f"{os.path.basename(ev.path)}@0x{ev.offset:x}"


@dataclass(slots=True)
class EvtjState:
    as_of_ns: int
    live: dict[bytes, Event] = field(default_factory=dict)
    by_time: dict[int, bytes] = field(default_factory=dict)
    events: int = 0
    done: int = 0                       # completed + failed, skipped
    counter: int | None = None

    def sorted_events(self) -> list[Event]:
        return sorted(self.live.values(), key=lambda e: (e.time_ns, e.request_id))

    def counts_by_state(self) -> dict[str, int]:
        out = {Status(s).label: 0 for s in sorted(LIVE)}
        for e in self.live.values():
            out[Status(e.status).label] += 1
        return out

    def canonical_lines(self) -> list[bytes]:
        return [b"%s\t%d\t%d.%09d\t%s\t%s\n" % (e.request_id.hex().encode(), e.status, e.tv_sec, e.tv_nsec,
                                              ",".join(map(str, e.inline_sizes)).encode(),
                                              ",".join(map(str, e.external_ids)).encode())
                for e in self.sorted_events()]

    def digest(self) -> str:
        h = hashlib.sha256()
        for line in self.canonical_lines():
            h.update(line)
        return h.hexdigest()


class EvtjReplay:
    def __init__(self, as_of_ns: int, counter: int | None = None):
        self.state = EvtjState(as_of_ns, counter=counter)
        self.findings: list[Finding] = []
        self._last: dict[bytes, Event] = {}       # every event seen per id (for the history checks)

    def apply(self, ev: Event) -> None:
        s = self.state
        s.events += 1
        rid = ev.request_id
        prev = self._last.get(rid)
        self._last[rid] = ev
        if prev is not None:
            a, b = Status(prev.status), Status(ev.status)
            if STATUS_RANK[b] < STATUS_RANK[a] and ev.status in LIVE:
                self.findings.append(Finding(ERROR, "EVTJ-STATUS-BACKWARDS", f"{render_id(rid)}: {a.label} at "
                                             f"{_where(prev)}, then {b.label} here: the loader indexes this event, "
                                             f"so the status moves back from {a.label} to {b.label}", path=ev.path,
                                             offset=ev.offset, record_index=ev.index,
                                             verdict=Verdict.INVALID_HISTORY, job_id=render_id(rid)))
            else:
                keeps = ("this one" if ev.status in LIVE else
                         f"the {a.label} one at {_where(prev)}" if prev.status in LIVE else "none of them")
                self.findings.append(Finding(WARNING, "EVTJ-DUPLICATE-ID", f"{render_id(rid)}: also at "
                                             f"{_where(prev)} ({a.label}); here {b.label}; the loader keeps {keeps}",
                                             path=ev.path, offset=ev.offset, record_index=ev.index,
                                             job_id=render_id(rid)))
        if ev.status not in LIVE:
            s.done += 1
            return
        t = ev.time_ns
        other = s.by_time.get(t)
        if other is not None and other != rid and other in s.live:
            self.findings.append(Finding(WARNING, "EVTJ-DUPLICATE-TIME", f"{render_id(rid)} has the time of "
                                         f"{render_id(other)} ({_where(s.live[other])}): the time-ordered replay "
                                         "keeps only this one", path=ev.path, offset=ev.offset,
                                         record_index=ev.index))
        s.by_time[t] = rid
        s.live[rid] = ev

    def finish(self) -> EvtjState:
        s = self.state
        if s.done:
            self.findings.append(Finding(NOTE, "EVTJ-COMPRESSIBLE", f"{s.done} completed / failed event(s) skipped "
                                         "by the loader: their files can be compressed"))
        self.findings.append(Finding(NOTE, "EVTJ-NO-CHECKSUM", "EVTJ carries no checksum: only the loader's stop "
                                     "conditions are detectable; flipped bits inside ids, times or data go "
                                     "unnoticed"))
        return s
