"""Reading an executor log "from line N" exactly as Orth does (spec §3.4).

``read_log(path, from_line)`` is ``OrthJobFileAppender.readLog``: lines split as ``BufferedReader.readLine`` does
(``\\n``, ``\\r``, ``\\r\\n``), 1-based; the lines numbered >= ``from_line``, each followed by the line separator;
``toLineNum`` the last line returned or 0; ``end`` false; a missing file answers ``Log file does not exist`` with
``end`` true. The decoder is strict UTF-8 and works in chunks of 8192 UTF-16 units (``Files.newBufferedReader``):
a malformed byte fails the whole chunk it falls in, so the content stops at the last line completed in the chunks
before it (the IOException is logged; the partial content is returned). ``viewer_lines(data)`` is how many lines
that is for given bytes (all of them when the bytes are UTF-8).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ...formats.orth import READLOG_CHUNK_UNITS, READLOG_MISSING

_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class LogResult:
    from_line: int
    to_line: int
    content: str
    end: bool


def _delivered(data: bytes) -> tuple[str, bool]:
    """The text the reader delivers before failing, and whether it failed."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError as exc:
        good = data[:exc.start].decode("utf-8")
    # walk the chunk boundaries (a supplementary character never straddles one)
    start = pos = 0
    cut = 0
    for i, ch in enumerate(good):
        w = 2 if ord(ch) > 0xFFFF else 1
        if pos - start + w > READLOG_CHUNK_UNITS:
            start, cut = pos, i
        pos += w
    if pos - start == READLOG_CHUNK_UNITS:   # the bad byte starts a new chunk
        cut = len(good)
    return good[:cut], True


def read_lines(data: bytes) -> list[str]:
    """The lines ``readLine`` returns for these bytes before the decoder fails (if it does)."""
    text, failed = _delivered(data)
    parts = _EOL.split(text)
    if failed:
        return parts[:-1]          # the line still open when the chunk failed is lost
    if parts and parts[-1] == "":
        parts.pop()                # text ending with a separator: no empty last line
    return parts


def viewer_lines(data: bytes) -> int:
    return len(read_lines(data))


def read_log(path: str, from_line: int, line_separator: str = "\n") -> LogResult:
    if not path or not os.path.exists(path):
        return LogResult(from_line, 0, READLOG_MISSING, True)
    with open(path, "rb") as f:
        data = f.read()
    lines = read_lines(data)
    out = []
    to_line = 0
    for n, line in enumerate(lines, 1):
        if n < from_line:
            continue
        to_line = n
        out.append(line + line_separator)
    return LogResult(from_line, to_line, "".join(out), False)
