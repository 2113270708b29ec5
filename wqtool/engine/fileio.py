"""Reading input files safely: a read-only mmap view per file, and one OSError -> InputError mapping.

Every reader of every format opens its files through ``FileView``: memory stays bounded whatever the file size
(mmap for real files, bytes for tiny ones), and nothing is ever opened for writing.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import mmap
import os
import stat

from ..errors import InputError
from . import progress

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def open_regular(path: str) -> int:
    """A read-only descriptor of ``path``, which must be a regular file: FIFOs, devices and sockets are refused
    without a blocking open or read (O_NONBLOCK, then fstat). InputError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise input_error(path, exc) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{kind_of(st.st_mode)}, not a regular file: refused without reading it", path=path)
    os.set_blocking(fd, True)
    return fd


def read_head(path: str, n: int) -> bytes:
    """The first ``n`` bytes of a regular file (detection); InputError for anything else."""
    fd = open_regular(path)
    try:
        return os.pread(fd, n, 0)
    finally:
        os.close(fd)


def head_or_none(path: str, n: int) -> bytes | None:
    """``read_head``, or None where it would raise (detection: a path that is no regular file is no evidence)."""
    try:
        return read_head(path, n)
    except InputError:
        return None


def input_error(path: str, exc: OSError) -> InputError:
    """An OSError on ``path`` as the one-line InputError every command reports (exit 5)."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOENT:
        reason = "no such file or directory"
    elif exc.errno == errno.EACCES:
        reason = "permission denied"
    return InputError(reason, path=path)


class FileView:
    """A read-only view of one file: mmap for real files, bytes for tiny ones. Use as a context manager.

    ``source`` is anything with ``.path`` and ``.pinned_size`` (None, or the size to read up to: --horizon).
    """

    def __init__(self, source):
        self.path = source.path
        self._f = os.fdopen(open_regular(source.path), "rb")
        try:
            size = os.fstat(self._f.fileno()).st_size
            pinned = getattr(source, "pinned_size", None)
            if pinned is not None:
                size = min(size, pinned)
            self.size = size
            self._mm = None
            if size >= 4096:
                self._mm = mmap.mmap(self._f.fileno(), size, access=mmap.ACCESS_READ)
                self.data = self._mm
            else:
                self.data = self._f.read(size)
        except OSError as exc:
            self._f.close()
            raise input_error(source.path, exc) from None
        progress.opened(size)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
        if not self._f.closed:
            progress.closed(self.size)
        self._f.close()

    def __enter__(self) -> "FileView":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_span(path: str, offset: int, length: int) -> bytes:
    """``length`` bytes of ``path`` at ``offset`` (fewer at the end of the file), read-only."""
    fd = open_regular(path)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- directory listings, once per resolve
_LISTINGS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("wqtool_listings", default=None)


def listdir(path: str) -> list[str]:
    """``os.listdir(path)``; inside ``listing_once()`` each directory is listed once (detection and discovery of
    the same PATH ask for it in turn) — a fresh list each call, errors never cached."""
    cache = _LISTINGS.get()
    if cache is None:
        return os.listdir(path)
    key = os.path.abspath(path)
    names = cache.get(key)
    if names is None:
        names = cache[key] = os.listdir(path)
    return list(names)


@contextlib.contextmanager
def listing_once():
    """Within the block, ``listdir`` lists each directory once (``format.resolve_each``)."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)
