"""--engine spark: one session per command (wqtool.spark is imported only here, and only when asked for)."""
from __future__ import annotations

import contextlib
import sys


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextlib.contextmanager
def session(master, spark_conf, remote, *, quiet: bool = False):
    from ..spark.session import open_session
    with open_session(master, spark_conf, remote, progress=None if quiet else say) as spark:
        yield spark


@contextlib.contextmanager
def runner(spark_engine: bool, logs, master, spark_conf, remote, *, quiet: bool = False):
    """``engine.read``'s runner for a command: None (the local engine) unless ``spark_engine``; then the fleet over
    a session held for the command (none is started when there is no log to read)."""
    if not spark_engine or not logs:
        yield None
        return
    from ..spark.runner import SparkRunner
    with session(master, spark_conf, remote, quiet=quiet) as spark:
        yield SparkRunner(spark, progress=None if quiet else say)
