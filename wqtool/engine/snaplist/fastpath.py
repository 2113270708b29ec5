"""The list journal's line codec: the hot path for the writer's own form (proven equal to
``wqtool.formats.snaplist.list_line`` by hypothesis, both directions) and upstream's lenient tokenizer.

``parse_canonical(line)`` accepts exactly what ``list_line`` parses (``line + b"\\n"``) and returns the same
values; ``encode_line`` builds the same bytes. ``tokenize(line)`` is what ``listdata_connection::process_data``
does with any line: split on ``;`` (``snap::tokenize_string``: empty tokens dropped, spaces trimmed [inf: the
helper's documented behaviour]), ``name=value`` at the first ``=`` — a token without ``=`` is read with its whole
text as both name and value (``substr(npos + 1)`` is ``substr(0)``) — known names kept, the last one winning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_CANON = re.compile(rb"priority=(-?[0-9]+);key_start_date=(-?[0-9]+);uri=([^;\n]+)\Z")
_INT = re.compile(rb"-?[0-9]+\Z")
_KNOWN = (b"uri", b"priority", b"key_start_date")


def parse_canonical(line: bytes) -> tuple[int, int, bytes] | None:
    """(priority, key_start_date, uri) of a line (without its ``\\n``) in the writer's own form, else None."""
    m = _CANON.match(line)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def encode_line(priority: int, key_start_date: int, uri: bytes) -> bytes:
    """The line ``list::on_modified_content`` writes (the uri must already have its ``;`` replaced)."""
    return b"priority=%d;key_start_date=%d;uri=%s\n" % (priority, key_start_date, uri)


def escape_uri(uri: bytes) -> bytes:
    """The writer's ``canonicalized_key.replace(";", "%3A")``."""
    return uri.replace(b";", b"%3A")


@dataclass(slots=True)
class Tokens:
    """What upstream's reader takes from a line: the three values as text (b"" = missing), and what tells the
    line from the writer's own form."""

    uri: bytes = b""
    priority: bytes = b""
    key_start_date: bytes = b""
    unknown: int = 0            # tokens with another name (ignored upstream)
    repeated: int = 0           # known names given more than once (the last wins)
    after_uri: bytes = b""      # the text after the last uri token when unknown tokens follow it (a raw ';')

    @property
    def missing(self) -> list[str]:
        return [n for n, v in (("uri", self.uri), ("priority", self.priority),
                               ("key_start_date", self.key_start_date)) if not v]


def tokenize(line: bytes) -> Tokens:
    t = Tokens()
    seen: set[bytes] = set()
    parts = line.split(b";")
    uri_at = -1
    for i, part in enumerate(parts):
        tok = part.strip(b" ")
        if not tok:
            continue
        eq = tok.find(b"=")
        name, value = (tok, tok) if eq < 0 else (tok[:eq], tok[eq + 1:])
        if name in _KNOWN:
            if name in seen:
                t.repeated += 1
            seen.add(name)
            if name == b"uri":
                t.uri = value
                uri_at = i
            elif name == b"priority":
                t.priority = value
            else:
                t.key_start_date = value
        else:
            t.unknown += 1
    if uri_at >= 0 and uri_at < len(parts) - 1:
        rest = parts[uri_at + 1:]
        known_after = any(p.strip(b" ").partition(b"=")[0] in _KNOWN for p in rest if p.strip(b" "))
        if not known_after:
            t.after_uri = b";".join(rest)
    return t


def int_value(text: bytes, lo: int, hi: int) -> int | None:
    """A decimal integer in [lo, hi], else None (what the list plugin writes: ``std::to_string``)."""
    if not _INT.match(text):
        return None
    v = int(text)
    return v if lo <= v <= hi else None
