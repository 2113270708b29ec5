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
from dataclasses import dataclass

from ..errors import FileChanged, InputError
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
    Inside ``pinned(snapshot)`` a file the snapshot pins is read up to its pinned size, and one that was replaced
    or shrank is an error (``Snapshot.size_of``).
    """

    def __init__(self, source):
        self.path = source.path
        self._f = os.fdopen(open_regular(source.path), "rb")
        try:
            size = os.fstat(self._f.fileno()).st_size
            pinned = getattr(source, "pinned_size", None)
            if pinned is not None:
                size = min(size, pinned)
            snap = _SNAPSHOT.get()
            if snap is not None:
                size = snap.size_of(source.path, os.fstat(self._f.fileno()), size)
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
        except InputError:
            self._f.close()
            raise
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


# ---------------------------------------------------------------- one snapshot per job
@dataclass(frozen=True, slots=True)
class Pin:
    """A file as the driver saw it when it planned a job: its size, and its identity (device, inode; None for a
    staged copy of a remote object, whose identity is its stamps — ``engine.uris.restage`` checks them — and
    whose inode differs on each machine that stages it). Not the mtime: an appended segment changes it
    legitimately; the bytes below the pinned size are the ones every pass reads."""

    size: int
    dev: int | None = None
    ino: int | None = None


class Snapshot:
    """The pinned files of one job, by absolute path: every task and every pass reads exactly those bytes (each
    file up to its pinned size, ``FileView`` inside ``pinned``); a file that was replaced (another inode) or shrank
    below its pinned size is a ``FileChanged`` naming it — in the task that opens it, and on the driver after the
    job (``check``). A writer appending meanwhile changes nothing a pass reads. Picklable (it travels with the
    tasks)."""

    __slots__ = ("pins",)

    def __init__(self, pins: dict[str, Pin] | None = None):
        self.pins = dict(pins or {})

    @classmethod
    def take(cls, paths, *, unstamped=()) -> "Snapshot":
        """Pin ``paths`` now (their size and identity); ``unstamped``: path prefixes (staged copies of remote
        objects) pinned by size only. A path that cannot be stat'ed is not pinned: its reader reports it."""
        pins: dict[str, Pin] = {}
        tops = tuple(os.path.abspath(u) for u in unstamped)
        for p in paths:
            key = os.path.abspath(p)
            try:
                st = os.stat(key)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            staged = any(key == t or key.startswith(t + os.sep) for t in tops)
            pins[key] = Pin(st.st_size) if staged else Pin(st.st_size, st.st_dev, st.st_ino)
        return cls(pins)

    def __bool__(self) -> bool:
        return bool(self.pins)

    def __reduce__(self):
        return (Snapshot, (self.pins,))

    def size_of(self, path: str, st: os.stat_result, size: int) -> int:
        """The size to read of ``path`` (``st``: its fstat, ``size``: what the caller would read): at most the pinned
        size; FileChanged when the file is not the one pinned or holds fewer bytes than were pinned."""
        pin = self.pins.get(os.path.abspath(path))
        if pin is None:
            return size
        _judge(path, pin, st)
        return min(size, pin.size)

    def check(self) -> None:
        """Every pinned file still the one pinned, with at least its pinned bytes (the driver, after a job)."""
        for path, pin in self.pins.items():
            try:
                st = os.stat(path)
            except OSError as exc:
                raise FileChanged(f"gone since the job was planned ({exc.strerror or exc}); its answer would not be "
                                  f"one state of the log: run the command again", path=path) from None
            _judge(path, pin, st)


def _judge(path: str, pin: Pin, st: os.stat_result) -> None:
    if pin.ino is not None and (st.st_dev, st.st_ino) != (pin.dev, pin.ino):
        raise FileChanged(f"replaced since the job was planned (inode {pin.ino}, now {st.st_ino}); its answer "
                          f"would not be one state of the log: run the command again", path=path)
    if st.st_size < pin.size:
        raise FileChanged(f"shrank since the job was planned ({pin.size} bytes, now {st.st_size}: truncated or "
                          f"rewritten); its answer would not be one state of the log: run the command again",
                          path=path)


_SNAPSHOT: contextvars.ContextVar[Snapshot | None] = contextvars.ContextVar("wqtool_snapshot", default=None)


@contextlib.contextmanager
def pinned(snapshot: Snapshot | None):
    """Within the block every ``FileView`` of a file ``snapshot`` pins reads the pinned bytes (None: no change)."""
    if snapshot is None:
        yield
        return
    token = _SNAPSHOT.set(snapshot)
    try:
        yield
    finally:
        try:
            _SNAPSHOT.reset(token)
        except ValueError:      # a task's generator closed in another context than it started in
            _SNAPSHOT.set(None)


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
