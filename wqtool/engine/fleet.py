"""A Spark job's results are counted before a report is made of them: a driver that ran short of memory while
receiving them (PySpark's ``collect()`` then returns what arrived, with no error) must give an error, never a
report assembled from what is missing."""
from __future__ import annotations

from collections import Counter

from ..errors import SparkError
from .fileio import Snapshot
from .findings import Finding, Verdict

#: What to change when results go missing; named in every such error.
FIX = ("give the driver more memory (--spark-conf spark.driver.memory=8g); spark.driver.maxResultSize caps what "
       "the tasks may send it (0: no cap)")


class ResultsLost(SparkError):
    """A Spark job returned fewer results than it planned (exit 5): the report would be wrong, so there is none."""


def lost(what: str, got: int, want: int, detail: str = "") -> ResultsLost:
    more = f" ({detail})" if detail else ""
    return ResultsLost(f"--engine spark: {what}: {got} of {want} result(s) reached the driver{more}; results "
                       f"were lost (the driver likely ran out of memory while receiving them): no report is made "
                       f"of a partial result; {FIX}")


def check_count(what: str, got: int, want: int, detail: str = "") -> None:
    if got != want:
        raise lost(what, got, want, detail)


def snapshot(logs, staged=()) -> Snapshot:
    """One snapshot of a job over ``logs`` (``Log`` handles), taken when the driver plans it: every file of every
    log (``Format.files``) pinned at its size and identity (``fileio.Snapshot``). ``staged``: the job's
    ``engine.uris.stage_plan``; a staged copy of a remote object is pinned by size only (its stamps are its
    identity, checked by ``restage`` wherever it is staged)."""
    paths = [p for lg in logs for p in lg.fmt.files(lg.data)]
    return Snapshot.take(paths, unstamped=[entry[3] for entry in staged])


class TaskFindings:
    """What a fleet task tells the driver of its findings besides the ones it keeps: every one counted by code and
    severity, the verdicts they carry, and the last torn tail (by the caller's sort key: its path and last good
    offset), as the local report counts them."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.severities: Counter = Counter()
        self.exits: set[Verdict] = set()     # the verdicts of its findings (a severity each; worst() of them)
        self.torn: tuple | None = None       # (key, path, last_good_offset) of the last torn-tail finding

    def count(self, key: tuple, f: Finding) -> None:
        self.counts[f.code] += 1
        self.severities[f.severity] += 1
        if f.verdict:
            self.exits.add(f.verdict)
            if f.verdict == Verdict.TORN_TAIL and (self.torn is None or key > self.torn[0]):
                self.torn = (key, f.path, f.last_good_offset)
