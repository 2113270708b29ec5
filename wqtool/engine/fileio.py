"""Reading input files safely: a read-only mmap view per file, and one OSError -> InputError mapping.

Every reader of every format opens its files through ``FileView``: memory stays bounded whatever the file size
(mmap for real files, bytes for tiny ones), and nothing is ever opened for writing.
"""
from __future__ import annotations

import errno
import mmap
import os

from ..errors import InputError


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
        try:
            self._f = open(source.path, "rb")
        except OSError as exc:
            raise input_error(source.path, exc) from None
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

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
        self._f.close()

    def __enter__(self) -> "FileView":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_span(path: str, offset: int, length: int) -> bytes:
    """``length`` bytes of ``path`` at ``offset`` (fewer at the end of the file), read-only."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise input_error(path, exc) from None
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)
