"""A retry file's name is its only checksum: ``{prefix}-callback-{md5}.log`` where ``md5`` is the MD5 of the bytes
Orth (or xxl-job 3.3+) wrote (Orth ``TriggerCallbackThread.appendFailCallbackFile``; xxl-job 3.3.0
``TriggerCallbackThread.java``: ``Md5Tool.md5(callbackDataJson)``). Neither reads the name back, so a changed file
is resent as it now reads. This module tells what can be known about such a change:

* ``recover_flip``: the one bit whose flip gives bytes that hash to the name (a single-bit flip — a bad sector,
  a memory error — is found exactly; any other change is not guessed at). Bounded: files up to ``FLIP_SEARCH_MAX``
  bytes, one MD5 of the suffix per candidate (the prefix state is shared).
* ``entry_changes``: which entries of the original now parse differently, and how (a log id, a date, a code, a
  message; a key renamed so the value falls back to Java's default).
"""
from __future__ import annotations

import hashlib

#: Files up to this size are searched for a single flipped bit (8 x size MD5 updates of at most size bytes each:
#: 4 KiB is ~0.1 s; a retry file holds one batch, typically well under 1 KiB).
FLIP_SEARCH_MAX = 4096


def recover_flip(data: bytes, md5hex: str) -> tuple[int, int, bytes] | None:
    """(offset, bit, original bytes) when flipping exactly one bit of ``data`` gives bytes whose MD5 is
    ``md5hex``; None otherwise (or when the file is larger than ``FLIP_SEARCH_MAX``)."""
    if len(data) > FLIP_SEARCH_MAX or len(md5hex) != 32:
        return None
    try:
        want = bytes.fromhex(md5hex)
    except ValueError:
        return None
    prefix = hashlib.md5()
    for i, b in enumerate(data):
        rest = data[i + 1:]
        for bit in range(8):
            h = prefix.copy()
            h.update(bytes((b ^ (1 << bit),)))
            h.update(rest)
            if h.digest() == want:
                return i, bit, data[:i] + bytes((b ^ (1 << bit),)) + rest
        prefix.update(data[i:i + 1])
    return None


_FIELDS = (("log_id", "logId"), ("log_date_tim", "logDateTim"), ("handle_code", "handleCode"),
           ("handle_msg", "handleMsg"))


def _short(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        s = v if len(v) <= 40 else v[:37] + "..."
        return '"' + s.encode("unicode_escape").decode("ascii") + '"'
    return str(v)


def entry_changes(before, after) -> list[str]:
    """What differs between the entries the original bytes parse to (``before``) and those the file parses to now
    (``after``); both lists of ``gson.Entry`` (None entries allowed). One string per changed entry."""
    out = []
    for i in range(max(len(before), len(after))):
        a = before[i] if i < len(before) else None
        b = after[i] if i < len(after) else None
        if a is None and b is None:
            continue
        if a is None or b is None:
            out.append(f"entry {i}: {'added' if a is None else 'gone'}"
                       + (f" (log id {(a or b).log_id})" if (a or b) is not None else ""))
            continue
        diffs = [f"{key} {_short(getattr(a, attr))} -> {_short(getattr(b, attr))}"
                 for attr, key in _FIELDS if getattr(a, attr) != getattr(b, attr)]
        if diffs:
            out.append(f"entry {i} (log id {a.log_id}): " + ", ".join(diffs))
    return out
