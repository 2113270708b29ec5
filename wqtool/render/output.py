"""What every writer of a file or a JSON document shares: JSON text that names any path (``json_text``) and a
file written whole or not at all, under the name the user gave (``write_file``).

A path that is not UTF-8 reaches Python with each undecodable byte as a lone surrogate (``surrogateescape``);
UTF-8 cannot encode it, so a writer that encodes it strictly dies (exit 70). Every writer shows such a byte the
same way, as ``\\xff`` (``wqtool.offsets.printable``, as ``ls -b`` does): in metrics labels, HTML, SVG and JSON
(where the string holds the four characters ``\\xff``, written ``"\\\\xff"``).
"""
from __future__ import annotations

import json
import os
import re

from ..offsets import printable

_LONE = re.compile("[\ud800-\udfff]")
#: ``json.dumps``' escape of a lone surrogate, not preceded by an escaped backslash
_LONE_ESCAPED = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89a-f][0-9a-f]{2})")


def _byte_escape(code: int) -> str:
    return f"\\\\x{code - 0xdc00:02x}" if 0xdc80 <= code <= 0xdcff else f"\\\\u{code:04x}"


def json_text(doc, **kw) -> str:
    """``json.dumps(doc, **kw)``, with every lone surrogate in a string as ``printable`` shows it."""
    text = json.dumps(doc, **kw)
    if kw.get("ensure_ascii", True):
        if "\\ud" not in text:
            return text
        return _LONE_ESCAPED.sub(lambda m: m[1] + _byte_escape(int(m[2], 16)), text)
    if text.isascii():
        return text
    return _LONE.sub(lambda m: _byte_escape(ord(m[0])), text)


def write_file(path: str, text: str, what: str, *, replace: bool = False, mode: int = 0o644,
               hint: str = "name a new file") -> None:
    """Write ``text`` (UTF-8, undecodable path bytes as ``printable`` shows them) to ``path`` whole or not at
    all: a hidden temp file beside it (``.NAME.PID.tmp``), fsync, rename into place, fsync of the directory.
    ``replace``: over an existing file (atomically: a reader sees the old file or the new one, never half of
    one); otherwise a file already there is a usage error and is never touched (RENAME_NOREPLACE). An OSError
    names ``path``, the name the user gave, never the temp file. ``hint``: what to do when it exists."""
    from ..engine.fsops import fsync_dir, rename_noreplace, unlink_quiet, write_new
    from ..errors import UsageError
    if not replace and os.path.lexists(path):
        raise UsageError(f"{what} {printable(path)}: already exists; never overwritten: {hint}")
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, os.strerror(21), path)
        unlink_quiet(tmp)
        write_new(tmp, [printable(text).encode("utf-8", "backslashreplace")], mode=mode)
        try:
            (os.replace if replace else rename_noreplace)(tmp, path)
        except BaseException:
            unlink_quiet(tmp)
            raise
        fsync_dir(d)
    except FileExistsError:
        raise UsageError(f"{what} {printable(path)}: already exists; never overwritten: {hint}") from None
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from None
