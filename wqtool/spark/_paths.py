"""Paths as the caller meant them, on the driver and on executors (no pyspark here)."""
from __future__ import annotations

import contextlib
import glob
import os
from typing import Sequence

from ..errors import InputError

_GLOB = set("*?[")


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


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Globs expand to their matches (sorted); a glob that matches nothing is an input error."""
    out: list[str] = []
    for p in paths:
        if _GLOB & set(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise InputError("no such file or directory (glob matched nothing)", path=p)
            out.extend(hits)
        else:
            out.append(p)
    return out

