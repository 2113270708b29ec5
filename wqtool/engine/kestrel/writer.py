"""Building Kestrel journals byte-exact (fixtures, tests, benchmark, pack).

``JournalWriter`` appends records the way Kestrel's ``Journal`` writes them (``QItem.pack`` layouts);
``rewrite_records(state)`` yields Kestrel 2.x's rewrite sequence (``Journal.dump``) for a replayed state.
A writer opens its file exclusively by default: a journal wqtool writes is always a new file.
"""
from __future__ import annotations

import os
from typing import Iterator

from ...formats.kestrel import Opcode
from .fastpath import (REMOVE_BYTES, REMOVE_TENTATIVE_BYTES, encode_addx, encode_legacy_add, encode_op,
                       encode_xid_item, encode_xid_op)
from .model import Op
from .replay import KestrelState

_RT_XID = int(Opcode.REMOVE_TENTATIVE_XID)


def rewrite_records(state: KestrelState, *, drop_expired_at_ms: int | None = None) -> Iterator[bytes]:
    """Kestrel 2.x ``Journal.dump``: for each open transaction in **descending** xid order ``ADDX`` +
    ``REMOVE_TENTATIVE_XID(xid)``, then ``ADDX`` per queued item head -> tail (original add and expiry times).
    ``drop_expired_at_ms`` leaves out queued items expired at that instant (open ones are kept)."""
    for xid in sorted(state.open, reverse=True):
        it = state.open[xid]
        yield encode_addx(it.data, it.add_time, it.expiry)
        yield encode_xid_op(_RT_XID, xid)
    if drop_expired_at_ms is None:
        for it in state.queue:
            yield encode_addx(it.data, it.add_time, it.expiry)
    else:
        for it in state.queue:
            if not it.expired_at(drop_expired_at_ms):
                yield encode_addx(it.data, it.add_time, it.expiry)


class JournalWriter:
    """Appends records to one journal file. ``mode='xb'`` (default) refuses an existing file."""

    def __init__(self, path: str, *, mode: str = "xb", fsync: bool = False, buffering: int = 1 << 20):
        if mode not in ("xb", "ab", "wb"):
            raise ValueError("mode must be xb, ab or wb")
        self.path = path
        self.fsync = fsync
        self._f = open(path, mode, buffering=buffering)
        self.size = self._f.tell() if mode == "ab" else 0
        self.records = 0

    def raw(self, b: bytes) -> bytes:
        self._f.write(b)
        self.size += len(b)
        self.records += 1
        return b

    def write(self, op: Op) -> bytes:
        return self.raw(encode_op(op))

    def add(self, data: bytes, add_time: int, expiry: int = 0) -> bytes:
        return self.raw(encode_addx(data, add_time, expiry))

    def remove(self) -> bytes:
        return self.raw(REMOVE_BYTES)

    def remove_tentative(self, xid: int) -> bytes:
        return self.raw(encode_xid_op(_RT_XID, xid))

    def unremove(self, xid: int) -> bytes:
        return self.raw(encode_xid_op(Opcode.UNREMOVE, xid))

    def confirm_remove(self, xid: int) -> bytes:
        return self.raw(encode_xid_op(Opcode.CONFIRM_REMOVE, xid))

    def continue_(self, xid: int, data: bytes, add_time: int, expiry: int = 0) -> bytes:
        return self.raw(encode_xid_item(Opcode.CONTINUE, xid, data, add_time, expiry))

    # legacy (1.x / starling) records, for fixtures and tests
    def legacy_add(self, data: bytes, expiry_s: int = 0) -> bytes:
        return self.raw(encode_legacy_add(data, expiry_s))

    def legacy_remove_tentative(self) -> bytes:
        return self.raw(REMOVE_TENTATIVE_BYTES)

    def save_xid(self, xid: int) -> bytes:
        return self.raw(encode_xid_op(Opcode.SAVE_XID, xid))

    def add_xid(self, xid: int, data: bytes, add_time: int, expiry: int = 0) -> bytes:
        return self.raw(encode_xid_item(Opcode.ADD_XID, xid, data, add_time, expiry))

    def flush(self) -> None:
        self._f.flush()
        if self.fsync:
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None and not self._f.closed:
            self.flush()
            self._f.close()

    def __enter__(self) -> "JournalWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
