"""verify / replay / stats of one orth_job_log table: the reader feeds the replay (``ReplayPass``); the columnar
fast path (``fastpath``) stands in for it where no rows are kept (``JobLogFastRun``)."""
from __future__ import annotations

from ...formats._common import long_key
from ...formats.orth_joblog import RULE_SETS, rules_for_table
from ..findings import Finding
from ..format import RecordFacts
from ..run import ReplayPass
from ..stats import RecordStats
from .model import Row
from .reader import TableLog, TableReader, read_registry
from .replay import CheckContext, JobLogReplay, Registry, local_seconds, zone
from .rules import status_of


def context(log: TableLog, as_of_ns: int) -> tuple[CheckContext, list[Finding]]:
    """The checks' clock and registry for a log (reads the registry: I/O), and the registry's own findings."""
    tz = zone(log.timezone)
    now = local_seconds(as_of_ns, tz)
    found: list[Finding] = []
    rows = []
    if log.registry is not None:
        rows, found = read_registry(log.registry, tz)
    return CheckContext(now, Registry.of(log.registry_origin if log.registry else "", rows, now), log.timezone,
                        rules_for_table(log.table)), found


def row_facts(rec: Row) -> RecordFacts:
    """What dump filters and stats need of a row: its status, bytes, no time, its job_id."""
    return RecordFacts(status_of(rec.trigger_code, rec.handle_code, RULE_SETS[rec.table]), rec.length, None,
                       long_key(rec.job_id))


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


class JobLogFastRun(JobLogRun):
    """``JobLogRun`` (counts only) on the columnar fast path: ``events()`` yields the same findings in the same
    order and leaves the same ``report``; rows are applied, not yielded. ``stats``: the RecordStats of every row
    (``row_facts``), as ``stats`` collects them from the reference pass."""

    def __init__(self, log: TableLog, as_of_ns: int, *, limit: int | None = None,
                 ctx: tuple[CheckContext, list[Finding]] | None = None):
        super().__init__(log, as_of_ns, limit=limit, keep_rows=False, ctx=ctx)
        self.stats = RecordStats()

    def events(self):
        from . import fastpath
        add, replay, stats = self.sink.add, self.replay, self.stats
        batches = fastpath.BatchReplay(replay, stats)
        rfind = replay.findings
        for f in self._reg_findings:
            add(f)
            yield f
        for ev in fastpath.events(self.reader):
            cls = ev.__class__
            if cls is fastpath.Batch:
                for f in batches.apply(ev):
                    add(f)
                    yield f
            elif cls is Row:
                replay.apply(ev)
                stats.add(row_facts(ev))
                if rfind:
                    for f in rfind:
                        add(f)
                        yield f
                    rfind.clear()
            else:
                add(ev)
                yield ev
        yield from self.close()
