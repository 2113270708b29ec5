"""Paths as the caller meant them on Spark's Python workers (no pyspark here). URIs, the staging cache and
partitioned folders are the engine's (``engine.uris``), shared with the local engine's commands."""
from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def working_dir(path: str | None):
    """Run with the driver's working directory, so relative PATHs mean what they meant to the caller and every
    path the engine prints (records, findings) is the string the caller gave, as with the local engine.

    Spark starts Python workers in a scratch directory; a task runs alone in its worker, so a temporary chdir is
    safe. On a cluster whose executors lack that directory, nothing changes (pass absolute paths there).
    """
    old = os.getcwd()
    if not path or path == old or not os.path.isdir(path):
        yield
        return
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)
