"""Helpers for the Kestrel tests: the spec's time constant, journal builders, a directory snapshot."""
from __future__ import annotations

import hashlib
import os

import pytest

from wqtool.engine.kestrel.reader import FileSet, discover
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.kestrel.writer import JournalWriter

#: T = 1300000000000 ms (spec §13.1): LE bytes 00 c8 09 ae 2e 01 00 00.
T = 1_300_000_000_000
T_BYTES = bytes.fromhex("00c809ae2e010000")
ZERO8 = bytes(8)
AS_OF_NS = (T + 3_600_000) * 1_000_000   # an hour after T


def write_journal(path: str, build) -> str:
    """``build(writer)`` writes records into a new file at ``path``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with JournalWriter(path) as w:
        build(w)
    return path


def one_set(d: str, **kw) -> FileSet:
    sets = discover([d], **kw)
    assert len(sets) == 1, sets
    return sets[0]


def dir_snapshot(d: str) -> dict[str, str]:
    out = {}
    for n in sorted(os.listdir(d)):
        with open(os.path.join(d, n), "rb") as f:
            out[n] = hashlib.sha256(f.read()).hexdigest()
    return out


def replay_dir(d: str, queue: str = "q", *, as_of_ns: int = AS_OF_NS, keep_open: bool = True, **kw):
    sets = discover([d], queue=queue)
    return run_log(sets[0], as_of_ns, keep_open=keep_open, **kw)


@pytest.fixture
def qdir(tmp_path):
    d = tmp_path / "spool"
    d.mkdir()
    return str(d)


def write_ops(w, ops) -> None:
    """Write hypothesis-drawn ops ((kind, args...) tuples) with a JournalWriter: the Kestrel replay and fast-path
    property tests share them."""
    for o in ops:
        kind = o[0]
        if kind == "add":
            w.add(o[1], T, o[2])
        elif kind == "remove":
            w.remove()
        elif kind == "rt":
            w.remove_tentative(o[1])
        elif kind == "unremove":
            w.unremove(o[1])
        elif kind == "confirm":
            w.confirm_remove(o[1])
        elif kind == "continue":
            w.continue_(o[1], o[2], T)
        elif kind == "add_xid":
            w.add_xid(o[1], o[2], T)
        elif kind == "save":
            w.save_xid(o[1])
        elif kind == "legacy_add":
            w.legacy_add(o[1], o[2])
        else:
            w.legacy_remove_tentative()
