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


def local_path(p: str) -> str:
    """A ``file:`` URI (``file:///srv/log``, ``file:/srv/log``, ``file://localhost/srv/log``) as the local path it
    names; any other scheme is an input error (the data sources read local files only, for now), a plain path
    is returned as it is."""
    if "://" not in p and not p.startswith("file:"):
        return p
    from urllib.parse import unquote, urlsplit
    u = urlsplit(p)
    if u.scheme != "file" or u.netloc not in ("", "localhost"):
        raise InputError(f"{u.scheme or 'this'}:// paths are not read here yet: give a local path or a file:// URI",
                         path=p)
    return unquote(u.path)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """``file:`` URIs become local paths; globs expand to their matches (sorted); a glob that matches nothing is
    an input error."""
    out: list[str] = []
    for p in map(local_path, paths):
        if _GLOB & set(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise InputError("no such file or directory (glob matched nothing)", path=p)
            out.extend(hits)
        else:
            out.append(p)
    return out

