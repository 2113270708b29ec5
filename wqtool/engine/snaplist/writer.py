"""Writing list journals the way upstream does (fixtures, tests, the forwarder's acknowledgements).

``append_request`` is ``list::on_modified_content``: ``key_start_date = start_date + offset`` (+1 h and priority
180 while the site is updating), the ``;`` of the uri replaced by ``%3A``, the line appended to
``<start hour>.msg`` opened ``O_WRONLY|O_APPEND|O_CREAT`` mode 0600, under ``flock(LOCK_EX)``, in one ``write()``.
``acknowledge`` is the reader's acknowledgement: the line and its ``\\n`` overwritten in place with as many
``\\n`` (``lseek`` + ``write``, without the lock: writers only append).
"""
from __future__ import annotations

import fcntl
import os

from ...formats.snaplist import (HOUR_FILE_MODE, LIST_PRIORITY_UPDATES, LIST_PROCESSING_LATENCY_US, UPDATING_DELAY_US,
                             hour_file, start_hour)
from .fastpath import encode_line, escape_uri

DEFAULT_PRIORITY = 10     # [inf] the list plugin's usual priority (any 0-255 is valid)


def request_line(uri: bytes, start_date_us: int, *, priority: int = DEFAULT_PRIORITY,
                 offset_us: int = LIST_PROCESSING_LATENCY_US, updating: bool = False) -> tuple[int, bytes]:
    """(hour, line) of a request, as the list plugin builds them."""
    ksd = start_date_us + offset_us
    if updating:
        ksd += UPDATING_DELAY_US
        priority = LIST_PRIORITY_UPDATES
    return start_hour(start_date_us), encode_line(priority, ksd, escape_uri(uri))


def append_raw(directory: str, hour: int, data: bytes) -> int:
    """Append ``data`` to ``<hour>.msg`` like the writer (create 0600, flock, one write). Returns its offset."""
    path = os.path.join(directory, hour_file(hour))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), HOUR_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        at = os.lseek(fd, 0, os.SEEK_END)
        if os.write(fd, data) != len(data):
            raise OSError(f"short write to {path} (upstream: 'list manager may be hosed now')")
        return at
    finally:
        os.close(fd)


def append_request(directory: str, uri: bytes, start_date_us: int, **kw) -> tuple[int, int, bytes]:
    """``list::on_modified_content``: returns (hour, offset, line)."""
    hour, line = request_line(uri, start_date_us, **kw)
    return hour, append_raw(directory, hour, line), line


def acknowledge(path: str, offset: int, length: int, *, fd: int | None = None) -> None:
    """Blank ``length`` bytes at ``offset`` (a line and its ``\\n``) with ``\\n``, in place."""
    own = fd is None
    if own:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if os.pwrite(fd, b"\n" * length, offset) != length:
            raise OSError(f"short write acknowledging {path}@{offset}")
    finally:
        if own:
            os.close(fd)
