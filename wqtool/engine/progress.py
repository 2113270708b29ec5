"""Progress of long passes, for whoever listens: the engine says which pass it is in and how far it has got; it
never prints (``render.progress`` draws a bar on a terminal).

A command's work is one or more passes: reading the input (every command), then, for the commands that change
files, writing the new log and re-verifying it; a pass the engine adds on its own (the reference pass when the
kernel hands a log back) is announced the same way. ``begin(name, total, unit)`` starts a pass: what it is, how
much it will do (bytes, or jobs), and the count starts again at 0.

Every reader opens its files through ``fileio.FileView``, which reports each file as it is opened and closed;
the reference pass (``run.ReplayPass``) adds the offset of every 4096th record, so a bar moves inside a file too;
writers report the bytes they write (``advance``), loops over jobs their count (``at``).
Only the process that started listening reports (worker processes of a parallel pass do not).
"""
from __future__ import annotations

import os
from _collections_abc import Callable, Iterator   # (collections.abc's: serve imports this before its first reply,
                                                  # without typing, contextlib or the collections package)

#: The pass a format's engine adds when its kernel hands a log back to the reference reader and replay (only then:
#: with no kernel to run, the reference read is the command's own read, announced as "read" or "re-verify").
REFERENCE_PASS = "reference pass (the kernel handed the log back)"

_listener: Callable[[int], None] | None = None
_on_pass: Callable[[str, int | None, str], None] | None = None
_pid = 0
_done = 0        # bytes of the files closed so far (or units done) in this pass
_base = 0        # ... when the file being read was opened


def listen(callback: Callable[[int], None], on_pass: Callable[[str, int | None, str], None] | None = None):
    """A context manager: call ``callback(done)`` while the block runs (as files are read, bytes written, jobs
    planned), and ``on_pass(name, total, unit)`` when a new pass begins (``done`` then counts from 0 again)."""
    import contextlib               # (on use: not before serve's first reply)
    return contextlib.contextmanager(_listen)(callback, on_pass)


def _listen(callback: Callable[[int], None], on_pass: Callable[[str, int | None, str], None] | None) -> Iterator[None]:
    global _listener, _on_pass, _pid, _done, _base
    prev = (_listener, _on_pass, _pid, _done, _base)
    _listener, _on_pass, _pid, _done, _base = callback, on_pass, os.getpid(), 0, 0
    try:
        yield
    finally:
        _listener, _on_pass, _pid, _done, _base = prev


def _mine() -> bool:
    return _listener is not None and os.getpid() == _pid


def begin(name: str, total: int | None = None, unit: str = "bytes") -> None:
    """A new pass: ``name`` (what it does: "write", "re-verify", ...), ``total`` in ``unit`` (None: the listener
    keeps the command's total, e.g. the input's size for a second read of it)."""
    global _done, _base
    if _mine():
        _done = _base = 0
        if _on_pass is not None:
            _on_pass(name, total, unit)
        _listener(0)


def opened(size: int) -> None:
    global _base
    if _mine():
        _base = _done
        _listener(_done)


def closed(size: int) -> None:
    global _done
    if _mine():
        _done = _base + size
        _listener(_done)


def at(offset: int) -> None:
    """The reader is at ``offset`` of the file it has open (or a loop at item ``offset`` of its pass)."""
    if _mine():
        _listener(_base + offset)


def advance(n: int) -> None:
    """``n`` more bytes (or units) of the pass are done (a writer's)."""
    global _done, _base
    if _mine():
        _done += n
        _base = _done
        _listener(_done)


def active() -> bool:
    return _listener is not None
