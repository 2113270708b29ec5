"""Instants on the command line and in data source options: RFC 3339, epoch seconds, '@<n>ns' or 'now' → Unix ns."""
from __future__ import annotations

import datetime as _dt
import re
import time

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
EXPECTED = "RFC 3339 (2026-11-21T23:30:00Z), epoch seconds or 'now'"


def parse_instant(value: str) -> int:
    """RFC 3339, epoch seconds (int or decimal) or 'now' → Unix nanoseconds; ValueError names what was expected."""
    v = value.strip()
    if v == "now":
        return time.time_ns()
    if re.fullmatch(r"@-?\d+ns", v):      # exact nanoseconds, as format_unix_ns writes instants beyond RFC 3339
        return int(v[1:-2])
    if re.fullmatch(r"-?\d+(\.\d+)?", v):
        whole, _, frac = v.partition(".")
        return int(whole) * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0) * (-1 if v.startswith("-") else 1)
    if _RFC3339.match(v):
        frac = ""
        m = re.search(r"\.(\d+)", v)
        if m:
            frac = m.group(1)
            v = v.replace(m.group(0), "")
        d = _dt.datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
        secs = int(d.timestamp())
        return secs * 1_000_000_000 + int((frac + "000000000")[:9])
    raise ValueError(f"expected {EXPECTED}, got {value!r}")
