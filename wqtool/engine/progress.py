"""Progress of long passes, for whoever listens: the engine reports how many bytes it has read; it never prints
(``render.progress`` draws a bar on a terminal).

Every reader opens its files through ``fileio.FileView``, which reports each file as it is opened and closed;
the reference pass (``run.ReplayPass``) adds the offset of every 4096th record, so a bar moves inside a file too.
Only the process that started listening reports (worker processes of a parallel pass do not).
"""
from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator

_listener: Callable[[int], None] | None = None
_pid = 0
_done = 0        # bytes of the files closed so far
_base = 0        # ... when the file being read was opened


@contextlib.contextmanager
def listen(callback: Callable[[int], None]) -> Iterator[None]:
    """Call ``callback(bytes_done)`` while the block runs (as files are read)."""
    global _listener, _pid, _done, _base
    prev = (_listener, _pid, _done, _base)
    _listener, _pid, _done, _base = callback, os.getpid(), 0, 0
    try:
        yield
    finally:
        _listener, _pid, _done, _base = prev


def opened(size: int) -> None:
    global _base
    if _listener is not None and os.getpid() == _pid:
        _base = _done
        _listener(_done)


def closed(size: int) -> None:
    global _done
    if _listener is not None and os.getpid() == _pid:
        _done = _base + size
        _listener(_done)


def at(offset: int) -> None:
    """The reader is at ``offset`` of the file it has open."""
    if _listener is not None and os.getpid() == _pid:
        _listener(_base + offset)


def active() -> bool:
    return _listener is not None
