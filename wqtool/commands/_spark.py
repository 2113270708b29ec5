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
