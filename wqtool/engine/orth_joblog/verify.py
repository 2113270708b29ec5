"""verify / replay / stats of one orth_job_log table: the reader feeds the replay (``ReplayPass``)."""
from __future__ import annotations

from ..findings import Finding
from ..run import ReplayPass
from .model import Row
from .reader import TableLog, TableReader, read_registry
from .replay import CheckContext, JobLogReplay, Registry, local_seconds, zone


def context(log: TableLog, as_of_ns: int) -> tuple[CheckContext, list[Finding]]:
    """The checks' clock and registry for a log (reads the registry: I/O), and the registry's own findings."""
    tz = zone(log.timezone)
    now = local_seconds(as_of_ns, tz)
    found: list[Finding] = []
    rows = []
    if log.registry is not None:
        rows, found = read_registry(log.registry, tz)
    return CheckContext(now, Registry.of(log.registry_origin if log.registry else "", rows, now), log.timezone), found


class JobLogRun(ReplayPass):
    """One pass over one table. ``keep_rows``: the state keeps every row (replay's list); else counts only."""

    record_cls = Row

    def __init__(self, log: TableLog, as_of_ns: int, *, limit: int | None = None, keep_rows: bool = False,
                 ctx: tuple[CheckContext, list[Finding]] | None = None):
        ctx_, reg_findings = ctx if ctx is not None else context(log, as_of_ns)
        super().__init__(log.root, TableReader(log, tz=zone(log.timezone)), JobLogReplay(ctx_, keep_rows=keep_rows),
                         limit)
        self._reg_findings = reg_findings

    def events(self):
        for f in self._reg_findings:
            self.sink.add(f)
            yield f
        yield from super().events()

    def finish(self):
        return self.replay.finish()
