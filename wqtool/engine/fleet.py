"""A Spark job's results are counted before a report is made of them: a driver that ran short of memory while
receiving them (PySpark's ``collect()`` then returns what arrived, with no error) must give an error, never a
report assembled from what is missing."""
from __future__ import annotations

from ..errors import SparkError

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
