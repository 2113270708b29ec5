"""Filesystem primitives of the plan template: new files with every write checked (``write_new``, ``ranged``),
flocks with a timeout (``LockSet``), ``exchange`` / ``rename_noreplace`` (renameat2), free names for backups and
the quarantine (``Quarantine``), ``FileSig`` (a file changing under us). Who holds a file open is ``live.py``'s.
"""
from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import functools
import itertools
import os
import time
from collections.abc import Iterable, Iterator, Sequence   # (not typing: serve imports this before its first reply)

from ..errors import InputError, LogBusy, UsageError     # (LogBusy: errors.py's, re-exported)
from . import progress
from .fsync import fsync_dir        # (re-exported: serve's appender imports it from there, without this module)


def unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_all(fd: int, data, path: str) -> None:
    """Write all of ``data`` to ``fd``: a short write (a nearly full disk) goes on from where it stopped, and a
    write that takes nothing is ENOSPC (errors name ``path``)."""
    view = memoryview(data).cast("B")
    while view:
        try:
            n = os.write(fd, view[:1 << 30])
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, path) from None
        if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        view = view[n:]


def write_new(path: str, chunks: Iterable[bytes], *, fsync: bool = True, mode: int = 0o666) -> int:
    """Create ``path`` (O_EXCL: it must not exist), write ``chunks`` (1 MiB buffered), fsync; returns the bytes written.
    Every byte a plan writes goes through here: a short write (a nearly full disk) goes on from where it stopped,
    and a write that takes nothing is ENOSPC. On any error the partial file is removed, what is buffered dropped
    unwritten (a full disk would fail the flush again: the file must go all the same)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    size, buf = 0, bytearray()
    try:
        for c in chunks:
            size += len(c)
            if len(c) >= 1 << 20:
                data, buf = buf, bytearray()
                write_all(fd, data, path)
                write_all(fd, c, path)
                continue
            buf += c
            if len(buf) >= 1 << 20:
                data, buf = buf, bytearray()
                write_all(fd, data, path)
        write_all(fd, buf, path)
        if fsync:
            os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        unlink_quiet(path)
        raise
    os.close(fd)
    return size


def range_chunks(ranges: Iterable[tuple[str, int, int]], *, advance: bool = True) -> Iterator[bytes]:
    """The bytes of ``(path, offset, length)`` ranges, in order, read in 1 MiB chunks (one file open at a time);
    InputError when a file no longer holds its range (it changed since the plan)."""
    fd, open_path = None, None
    try:
        for path, off, ln in ranges:
            if path != open_path:
                if fd is not None:
                    os.close(fd)
                fd, open_path = None, path
                try:
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                except OSError as exc:
                    raise InputError(exc.strerror or str(exc), path=path) from None
            done = 0
            while done < ln:
                chunk = os.pread(fd, min(1 << 20, ln - done), off + done)
                if not chunk:
                    raise InputError("the file shrank since the plan was made; plan again", path=path,
                                     offset=off + done)
                yield chunk
                done += len(chunk)
                if advance:
                    progress.advance(len(chunk))
    finally:
        if fd is not None:
            os.close(fd)


def without(path: str, start: int, end: int, cuts: Iterable[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """The ranges of ``path`` in ``[start, end)`` that no ``(offset, length)`` of ``cuts`` covers."""
    out, pos = [], start
    for off, ln in sorted(cuts) + [(end, 0)]:
        if off > pos:
            out.append((path, pos, min(off, end) - pos))
        pos = max(pos, off + ln)
    return [r for r in out if r[2] > 0]


def ranged(ranges: Iterable[tuple[str, int, int]], *, head: bytes = b"") -> Iterator[bytes]:
    """``head``, then the bytes of ``ranges`` (``range_chunks``), each counted as progress."""
    if head:
        progress.advance(len(head))
        yield head
    yield from range_chunks(ranges)


def link_or_copy(src: str, dst: str, fsync: bool) -> None:
    """``dst`` a hard link to ``src`` (a file that is never written again), or a copy where links cannot be made."""
    try:
        os.link(src, dst)
        progress.advance(os.path.getsize(dst))
    except OSError:
        write_new(dst, range_chunks([(src, 0, os.path.getsize(src))]), fsync=fsync)


# ---------------------------------------------------------------- locks
class LockSet:
    """LOCK_EX on each of ``names`` in ``directory`` (created if missing), in order, non-blocking with a timeout.
    ``busy(name)`` says who probably holds a lock (for the LogBusy message). Closing the descriptors drops the
    flocks (also when the process dies)."""

    def __init__(self, directory: str, names: Sequence[str], timeout: float, *, busy=None):
        self.directory = directory
        self.fds: list[int] = []
        try:
            for name in names:
                path = os.path.join(directory, name)
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
                except OSError as exc:
                    raise InputError(exc.strerror or str(exc), path=path) from None
                self.fds.append(fd)
                who = busy(name) if busy is not None else "held by another process?"
                _flock(fd, fcntl.LOCK_EX, timeout, 0.02,
                       lambda: LogBusy(f"{name} is locked ({who}); waited {timeout:g} s for LOCK_EX", path=path))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)   # closing drops the flock
            except OSError:
                pass
        self.fds = []


# ---------------------------------------------------------------- renames
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.cache
def _renameat2():
    import ctypes             # the first exchange or no-replace rename only (start-up: readers never rename)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


class NoExchange(Exception):
    """renameat2 with this flag is not available here (libc or filesystem)."""


def _rename2(a: str, b: str, flag: int) -> None:
    fn = _renameat2()
    if fn is None:
        raise NoExchange
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), flag) != 0:
        import ctypes
        e = ctypes.get_errno()
        if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise NoExchange
        raise OSError(e, os.strerror(e), a, None, b)


def exchange(a: str, b: str) -> None:
    """Atomically swap two paths (renameat2 RENAME_EXCHANGE); NoExchange when the system cannot."""
    _rename2(a, b, _RENAME_EXCHANGE)


def rename_noreplace(a: str, b: str) -> None:
    """rename ``a`` to ``b`` unless ``b`` exists (atomically: renameat2 RENAME_NOREPLACE; where that is missing,
    a check then rename — racy, but only against a writer that the caller's other checks already look for).
    FileExistsError when ``b`` exists."""
    try:
        _rename2(a, b, _RENAME_NOREPLACE)
    except NoExchange:
        if os.path.lexists(b):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), b) from None
        os.rename(a, b)


_PROBE = ".wqtool-xchg-"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (someone else's counts: EPERM)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_probes(directory: str) -> None:
    """Remove the empty probe directories of an ``exchange_supported`` whose process died (a crash between its
    mkdir and rmdir); a live process's are left alone."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(_PROBE)]
    except OSError:
        return
    for n in names:
        pid = n.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            try:
                os.rmdir(os.path.join(directory, n))
            except OSError:
                pass


def exchange_supported(directory: str) -> bool:
    """Whether renameat2(RENAME_EXCHANGE) works in ``directory``'s filesystem (probed with two temp dirs; those a
    killed earlier probe left are removed first)."""
    remove_stale_probes(directory)
    a = os.path.join(directory, f"{_PROBE}a-{os.getpid()}")
    b = os.path.join(directory, f"{_PROBE}b-{os.getpid()}")
    try:
        os.mkdir(a)
        os.mkdir(b)
        exchange(a, b)
        return True
    except (NoExchange, OSError):
        return False
    finally:
        for p in (a, b):
            try:
                os.rmdir(p)
            except OSError:
                pass


def backup_name(parent: str, name: str, tag: str) -> str:
    """``parent/name.<tag>``, or ``.2``, ``.3``... after it if taken (nothing is ever overwritten)."""
    base = os.path.join(parent, f"{name}.{tag}")
    p = base
    for n in itertools.count(2):
        if not os.path.lexists(p):
            return p
        p = f"{base}.{n}"
    raise AssertionError


def _same_bytes(a: str, b: str, offset: int, n: int) -> bool:
    """The first ``n`` bytes of ``a`` are ``b``'s from ``offset``."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        fb.seek(offset)
        while n:
            x, y = fa.read(min(1 << 20, n)), fb.read(min(1 << 20, n))
            if x != y or not x:
                return False
            n -= len(x)
    return True


def same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` hold the same bytes (the same inode, or equal contents)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino) or \
        (sa.st_size == sb.st_size and _same_bytes(a, b, 0, sa.st_size))


def free_dir(path: str, ok, *, named: bool = False, refused: str = "the directory exists and holds other files; "
             "name a new one") -> str:
    """A directory to put files in: ``path`` when it is missing or empty, or when ``ok(name, file)`` holds for
    every file in it (an earlier run of the same plan got that far before it died: reused); otherwise the first
    such ``path.2``, ``path.3``..., or, for a directory the user named (``named``), UsageError ``refused``."""
    p = path
    for n in itertools.count(2):
        if _reusable(p, ok):
            return p
        if named:
            raise UsageError(refused, path=path)
        p = f"{path}.{n}"
    raise AssertionError


def _reusable(path: str, ok) -> bool:
    if not os.path.lexists(path):
        return True
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    for name in os.listdir(path):
        f = os.path.join(path, name)
        if not os.path.isfile(f) or os.path.islink(f) or not ok(name, f):
            return False
    return True


class Quarantine:
    """Where a repair keeps every byte range it cuts, one file per range named ``<file>@0x<offset>-0x<end>.bin``
    (the printed form: ``--from-offset`` takes it).

    ``ranges``: (source path, offset, length). The directory is ``free_dir``'s: reused when it holds only files of
    these ranges, each equal to its range or to a prefix of it (an earlier run died while writing it: the rest is
    written); nothing is ever overwritten."""

    def __init__(self, path: str, ranges: Sequence[tuple[str, int, int]], *, named: bool = False):
        self.ranges = [(src, off, ln) for src, off, ln in ranges if ln]
        self.names = {f"{os.path.basename(src)}@0x{off:x}-0x{off + ln:x}.bin": (src, off, ln)
                      for src, off, ln in self.ranges}
        self.path = free_dir(path, self._prefix_of_range, named=named, refused="the quarantine directory exists and "
                             "holds other files (not the ranges this repair cuts); name a new one")
        self.created = False     # by this run (``discard`` removes it then)

    def _prefix_of_range(self, name: str, f: str) -> bool:
        r = self.names.get(name)
        return r is not None and os.path.getsize(f) <= r[2] and _same_bytes(f, r[0], r[1], os.path.getsize(f))

    def write(self, fsync: bool = True) -> list[str]:
        """Write every range not yet there whole (a short file of an earlier run is written again); returns the
        quarantine's files."""
        if not os.path.lexists(self.path):
            os.makedirs(self.path)
            self.created = True
        out = []
        for name, (src, off, ln) in self.names.items():
            dst = os.path.join(self.path, name)
            out.append(dst)
            if os.path.lexists(dst):
                if os.path.getsize(dst) == ln:
                    continue
                os.unlink(dst)
            write_new(dst, range_chunks([(src, off, ln)]), fsync=fsync)
        if fsync:
            fsync_dir(self.path)
        return out


    def discard(self) -> None:
        """A failed apply before its point of no return: the log keeps every byte, so the quarantine's files
        go (and the directory, when nothing else is in it)."""
        for name in self.names:
            unlink_quiet(os.path.join(self.path, name))
        try:
            if self.created or not os.listdir(self.path):
                os.rmdir(self.path)
        except OSError:
            pass


class FileSig(collections.namedtuple("FileSig", "ino size mtime_ns")):
    """What tells a file changed under us: inode, size, modification time (None: the file is missing). A named
    tuple, not a dataclass (``dataclasses`` costs milliseconds of a command's start)."""

    __slots__ = ()

    @classmethod
    def of(cls, path: str) -> "FileSig":
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cls(None, None, None)
        return cls(st.st_ino, st.st_size, st.st_mtime_ns)


def flock_fd(fd: int, path: str, timeout: float, *, shared: bool = False) -> None:
    """``flock`` an open descriptor (LOCK_EX, or LOCK_SH), non-blocking, retried until ``timeout`` seconds: the
    lock a format's own writers take on the file itself (e.g. the list journal's hour files). LogBusy on
    timeout."""
    what = "LOCK_SH" if shared else "LOCK_EX"
    _flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, timeout, 0.01,
           lambda: LogBusy(f"locked by another process; waited {timeout:g} s for {what}", path=path))


def _flock(fd: int, mode: int, timeout: float, poll: float, busy) -> None:
    """``flock(fd, mode | LOCK_NB)``, retried every ``poll`` s until ``timeout``; then ``busy()`` is raised."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if time.monotonic() >= deadline:
                raise busy() from None
            time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
