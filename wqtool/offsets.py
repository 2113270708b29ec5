"""Byte offsets, one way in and out (issue 20 item 3).

Every table, report and message shows a position in a log as findings do: the file's name, ``@``, the offset in
hex — ``000000001.log@0x11c`` (``at``); an offset alone is ``0x11c`` (``hex_offset``). Every option that takes an
offset reads that same form back (``parse_at``), and also ``0x11c``, ``@0x11c`` and plain decimal ``284``.
JSON keeps offsets as integers (jq: ``select(.offset >= 284)``) beside the file's path; the display form is for
people and for pasting back into an option. Like pg_waldump's ``0/16B3748`` and journalctl's cursors, one form
goes both ways."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

EXPECTED = "a byte offset as wqtool prints it (000000001.log@0x11c, 0x11c or @0x11c) or in decimal (284)"


def printable(text: str) -> str:
    """A name as every writer shows it: a byte that is not UTF-8 (a path as the OS hands it over, each such byte
    a lone surrogate in Python's ``surrogateescape``) as ``\\xff``, as ``ls -b`` does; any other lone surrogate
    as ``\\udcxx``. Text that is valid Unicode comes back unchanged (the same object)."""
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def hex_offset(offset: int) -> str:
    return f"0x{offset:x}"


def at(path: str | None, offset: int | None) -> str:
    """``000000001.log@0x11c`` (the file's name, not its directory); ``-`` for no file, no ``@`` for no offset."""
    where = printable(os.path.basename(path)) if path else "-"
    return where if offset is None else f"{where}@0x{offset:x}"


@dataclass(frozen=True, slots=True)
class At:
    """A position an option names: ``offset`` in the file called ``file`` (a base name), or in every file."""
    file: str | None
    offset: int

    def __str__(self) -> str:
        return hex_offset(self.offset) if self.file is None else f"{self.file}@{hex_offset(self.offset)}"


_FORM = re.compile(r"(?:(?P<file>[^@]*)@)?(?P<num>[+]?0[xX][0-9a-fA-F_]+|[+]?[0-9_]+)")


def parse_at(text: str) -> At:
    """``000000001.log@0x11c`` / ``0x11c`` / ``@0x11c`` / ``284`` -> At; ValueError (EXPECTED) otherwise. A file
    named with a directory is taken by its base name (the form tables print)."""
    m = _FORM.fullmatch(str(text).strip())
    if m is None:
        raise ValueError(f"expected {EXPECTED}, got {text!r}")
    num = m["num"].replace("_", "").lstrip("+")
    offset = int(num, 16) if num[:2].lower() == "0x" else int(num)
    file = m["file"]
    return At(os.path.basename(file.rstrip("/")) or None if file else None, offset)
