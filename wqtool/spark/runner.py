"""``engine.read``'s runner on Spark: ``--engine spark`` gives the same reports as the local runner, computed by
the fleet (``spark.fleet``). The commands pick the runner; everything else — settling --as-of per log, live
logs, one result per PATH — is ``engine.read``'s, the same for both engines."""
from __future__ import annotations

from typing import Callable, Sequence

from ..engine.format import Log, Options
from ..engine.read import each
from ..engine.uris import named_report
from ..errors import UsageError
from .fleet import fleet_replay, fleet_replay_summaries, fleet_stats, fleet_verify


class SparkRunner:
    """The fleet over one Spark session. ``progress``: where the fleet's one-line progress goes (or None)."""

    def __init__(self, spark, *, progress: Callable[[str], None] | None = None):
        self.spark = spark
        self.progress = progress

    def verify(self, logs: Sequence[Log], opts: Sequence[Options], *, max_findings=None, workers=None):
        out: list = [None] * len(logs)
        for o, idx in _same_options(opts):       # one Spark job per --as-of (each log's own with last / first)
            reps = fleet_verify(self.spark, [logs[i] for i in idx], o, max_findings=max_findings,
                                progress=self.progress).logs
            for i, rep in zip(idx, reps):
                out[i] = named_report(logs[i], rep)     # a URI's log: its reports name the URI
        return out

    def replay(self, logs: Sequence[Log], opts: Sequence[Options], *, limit=None, summary=False):
        """``summary``: one Spark job per --as-of over all the logs (the digests and counts come back, no job);
        else a job per log, the jobs of one log at a time on the driver."""
        if not summary:
            return each(lambda lg, o: named_report(lg, fleet_replay(self.spark, lg, o, limit=limit,
                                                                    progress=self.progress)), logs, opts)
        out: list = [None] * len(logs)
        for o, idx in _same_options(opts):
            reps = fleet_replay_summaries(self.spark, [logs[i] for i in idx], o, limit=limit, progress=self.progress)
            for i, rep in zip(idx, reps):
                out[i] = named_report(logs[i], rep)
        return out

    def stats(self, logs: Sequence[Log], opts: Sequence[Options], *, union=True):
        groups = _same_options(opts)
        if len(groups) > 1:
            raise UsageError("--engine spark stats over several logs takes one --as-of time for all (each log's "
                             "own last/first: run the local engine, or one log at a time)")
        per_log, total = fleet_stats(self.spark, list(logs), groups[0][0], progress=self.progress)
        return [x if isinstance(x, BaseException) else (named_report(lg, x[0]), *x[1:])
                for lg, x in zip(logs, per_log)], total


def _same_options(opts: Sequence[Options]) -> list[tuple[Options, list[int]]]:
    """The logs' indexes grouped by equal options, in first-seen order."""
    groups: list[tuple[Options, list[int]]] = []
    for i, o in enumerate(opts):
        for g, idx in groups:
            if g == o:
                idx.append(i)
                break
        else:
            groups.append((o, [i]))
    return groups
