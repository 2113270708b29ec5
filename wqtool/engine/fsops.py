"""Filesystem primitives for everything that changes files (the plan framework's steps use only these).

* ``fsync_dir``; ``write_new`` (a new file: O_EXCL, written, fsynced); ``unlink_quiet``;
* ``LockSet``: LOCK_EX|LOCK_NB flocks on lock files, retried until a timeout (``LogBusy``);
* ``exchange`` (``renameat2(RENAME_EXCHANGE)``: two paths swapped atomically) and ``rename_noreplace``
  (``RENAME_NOREPLACE``: never clobbers a path that appeared meanwhile), with ``exchange_supported`` probing;
* ``backup_name``: a free sibling name for what is kept aside;
* live-writer detection: ``holders(paths)`` (other processes holding a file open, from ``/proc/*/fd``) and
  ``FileSig`` (inode, size, mtime: a file changing under us).
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import itertools
import os
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import InputError


class LogBusy(InputError):
    """Another process uses the log: a lock file is held (a running server, a cleaner, another apply), or a
    process holds one of its files open, or a file changed while we worked."""


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_new(path: str, chunks: Iterable[bytes], *, fsync: bool = True, mode: int = 0o666) -> int:
    """Create ``path`` (it must not exist), write ``chunks``, fsync; returns the bytes written. On any error the
    partial file is removed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    total = 0
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            for c in chunks:
                f.write(c)
                total += len(c)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    except BaseException:
        unlink_quiet(path)
        raise
    return total


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
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as exc:
                        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                            raise
                        if time.monotonic() >= deadline:
                            who = busy(name) if busy is not None else "held by another process?"
                            raise LogBusy(f"{name} is locked ({who}); waited {timeout:g} s for LOCK_EX",
                                          path=path) from None
                        time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
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


def is_locked(path: str) -> bool:
    """True when another process holds a flock on ``path`` (probed with LOCK_SH|LOCK_NB, released at once).
    A missing file is not locked."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- renames
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


class NoExchange(Exception):
    """renameat2 with this flag is not available here (libc or filesystem)."""


def _rename2(a: str, b: str, flag: int) -> None:
    if _RENAMEAT2 is None:
        raise NoExchange
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), flag) != 0:
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


def exchange_supported(directory: str) -> bool:
    """Whether renameat2(RENAME_EXCHANGE) works in ``directory``'s filesystem (probed with two temp dirs)."""
    if _RENAMEAT2 is None:
        return False
    a = os.path.join(directory, f".wqtool-xchg-a-{os.getpid()}")
    b = os.path.join(directory, f".wqtool-xchg-b-{os.getpid()}")
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


# ---------------------------------------------------------------- live writers
@dataclass(frozen=True, slots=True)
class FileSig:
    """What tells a file changed under us: inode, size, modification time (None: the file is missing)."""

    ino: int | None
    size: int | None
    mtime_ns: int | None

    @classmethod
    def of(cls, path: str) -> "FileSig":
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return cls(None, None, None)
        return cls(st.st_ino, st.st_size, st.st_mtime_ns)


def holders(paths: Iterable[str]) -> list[tuple[int, str, str]]:
    """Other processes holding any of ``paths`` open: [(pid, path, command line)], from ``/proc/*/fd`` (Linux;
    elsewhere, or for processes we may not inspect, nothing is found — callers also watch the files change).
    Matching is by (device, inode), so renamed or hard-linked names are found too."""
    want: dict[tuple[int, int], str] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        want[(st.st_dev, st.st_ino)] = p
    if not want or not os.path.isdir("/proc"):
        return []
    me = os.getpid()
    out: list[tuple[int, str, str]] = []
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            hit = want.get((st.st_dev, st.st_ino))
            if hit is not None:
                out.append((pid, hit, _cmdline(pid)))
                break
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or "?"


def describe_holders(found: list[tuple[int, str, str]]) -> str:
    return "; ".join(f"pid {pid} ({cmd[:80]}) holds {os.path.basename(path)} open" for pid, path, cmd in found[:3]) \
        + (f"; and {len(found) - 3} more" if len(found) > 3 else "")


def flock_fd(fd: int, path: str, timeout: float, *, shared: bool = False) -> None:
    """``flock`` an open descriptor (LOCK_EX, or LOCK_SH), non-blocking, retried until ``timeout`` seconds: the
    lock a format's own writers take on the file itself (e.g. the list journal's hour files). LogBusy on
    timeout."""
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, mode)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if time.monotonic() >= deadline:
                raise LogBusy(f"locked by another process; waited {timeout:g} s for "
                              f"{'LOCK_SH' if shared else 'LOCK_EX'}", path=path) from None
            time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))


def fd_holders(fd: int) -> list[tuple[int, str, str]]:
    """Other processes holding open the file behind our descriptor ``fd`` (even once it is renamed over or
    unlinked): ``holders`` of ``/proc/self/fd/<fd>``."""
    return holders([f"/proc/self/fd/{fd}"])
