"""``engine.read``'s runner on Spark: ``--engine spark`` gives the same reports as the local runner, computed by
the fleet (``spark.fleet``). The commands pick the runner; everything else — settling --as-of per log, live
logs, one result per PATH — is ``engine.read``'s, the same for both engines."""
from __future__ import annotations

from typing import Callable, Sequence

from ..engine.format import Log, Options
from ..engine.read import each
from ..engine.uris import named_report
from .fleet import fleet_replay, fleet_replay_summaries, fleet_stats, fleet_verify


class SparkRunner:
    """The fleet over one Spark session. ``progress``: where the fleet's one-line progress goes (or None). Each
    method reads its logs in one Spark job per format, each log at its own settled --as-of (last / first: its own
    newest / first record time) where the format's fleet takes a clock per log, else a job per distinct time."""

    def __init__(self, spark, *, progress: Callable[[str], None] | None = None):
        self.spark = spark
        self.progress = progress

    def verify(self, logs: Sequence[Log], opts: Sequence[Options], *, max_findings=None, workers=None):
        reps = fleet_verify(self.spark, list(logs), list(opts), max_findings=max_findings,
                            progress=self.progress).logs
        return [named_report(lg, rep) for lg, rep in zip(logs, reps)]     # a URI's log: its reports name the URI

    def replay(self, logs: Sequence[Log], opts: Sequence[Options], *, limit=None, summary=False):
        """``summary``: the digests and counts of all the logs from one job (no job object comes back); else a
        job per log, the jobs of one log at a time on the driver."""
        if not summary:
            return each(lambda lg, o: named_report(lg, fleet_replay(self.spark, lg, o, limit=limit,
                                                                    progress=self.progress)), logs, opts)
        reps = fleet_replay_summaries(self.spark, list(logs), list(opts), limit=limit, progress=self.progress)
        return [named_report(lg, rep) for lg, rep in zip(logs, reps)]

    def stats(self, logs: Sequence[Log], opts: Sequence[Options], *, union=True):
        per_log, total = fleet_stats(self.spark, list(logs), list(opts), progress=self.progress)
        return [x if isinstance(x, BaseException) else (named_report(lg, x[0]), *x[1:])
                for lg, x in zip(logs, per_log)], total
