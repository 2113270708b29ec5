"""Values the Kestrel engine passes around: one decoded journal operation, and one located record."""
from __future__ import annotations

from dataclasses import dataclass

from ...formats.kestrel import Opcode


@dataclass(slots=True, eq=True)
class Op:
    """One journal operation as the schema describes it; fields its opcode does not carry stay None.

    ``add_time`` and ``expiry`` are stored values: ms since epoch for ADDX / ADD_XID / CONTINUE (expiry 0 = never);
    for the legacy ADD (0) ``add_time`` is None and ``expiry`` is the stored i32 **seconds** (0 = never).
    """

    op: Opcode
    xid: int | None = None
    add_time: int | None = None
    expiry: int | None = None
    data: bytes | None = None


@dataclass(slots=True)
class Record:
    """One journal record where it lies: file path, byte offset, length and index in the file set."""

    path: str
    offset: int
    length: int
    index: int
    op: Opcode
    xid: int | None = None
    add_time: int | None = None
    expiry: int | None = None
    data: bytes | None = None
