"""Instants on the command line and in data source options → Unix ns.

Accepted: RFC 3339 (``2026-11-21T23:15:00Z``, ``...+01:00``, fractions to the nanosecond); the same without a zone,
``T`` or a space between date and time, or a date alone (``2026-11-21 23:15:00``, ``2026-11-21``: UTC); epoch
seconds (int or decimal); ``@<n>ns`` (exact nanoseconds, as ``format_unix_ns`` writes instants beyond RFC 3339);
``now``; and a time relative to now (``-2h``, ``-30m``, ``-1d``, ``-1h30m``, ``+15m``; units s, m, h, d, w).

Every instant is bounded: Unix nanoseconds in a signed 64-bit integer (1677-09-21T00:12:43Z to
2262-04-11T23:47:16Z, Go's ``time.Time.UnixNano`` range, which the logs' own times share), which also keeps it
inside RFC 3339's years 0000-9999. Beyond that is an error, never a clock that expires every job. An epoch number
too large for seconds that reads as milliseconds, microseconds or nanoseconds says so, with the instant it would
be and the seconds to give instead.
"""
from __future__ import annotations

import re
import time

_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}:\d{2}(?::\d{2})?)(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?)?$")
_RELATIVE = re.compile(r"^([+-])((?:\d+(?:\.\d+)?[smhdw])+)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_NS = {"s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9, "w": 7 * 86400 * 10**9}
EXPECTED = ("RFC 3339 (2026-11-21T23:30:00Z), '2026-11-21 23:30:00' (UTC), epoch seconds, 'now', "
            "or relative to now (-2h, -30m, -1d)")
MIN_NS, MAX_NS = -(1 << 63), (1 << 63) - 1          # int64 Unix nanoseconds
_UNITS = ((3, "milliseconds"), (6, "microseconds"), (9, "nanoseconds"))


def _iso(ns: int) -> str:
    import datetime as _dt      # here, not at import (start-up: most runs parse no date)
    d = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=ns // 1000)
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _bounded(ns: int, value: str) -> int:
    """``ns`` if it fits int64 Unix nanoseconds; ValueError in plain words (with a hint for an epoch number in a
    smaller unit) otherwise."""
    if MIN_NS <= ns <= MAX_NS:
        return ns
    msg = (f"expected an instant from {_iso(MIN_NS)} to {_iso(MAX_NS)} (64-bit Unix nanoseconds), got {value!r}, "
           f"{'after' if ns > MAX_NS else 'before'} that")
    v = value.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?", v):
        n = int(v.partition(".")[0])
        for k, unit in _UNITS:
            if MIN_NS <= n * 10 ** (9 - k) <= MAX_NS:
                msg += (f"; it reads as epoch {unit} ({_iso(n * 10 ** (9 - k))}): as seconds that is "
                        f"{n // 10 ** k}")
                break
    raise ValueError(msg)


def parse_instant(value: str, *, now_ns: int | None = None) -> int:
    """A time in any accepted form (module docstring) → Unix nanoseconds; ValueError names what was expected.
    ``now_ns``: the clock for 'now' and relative times (default: the wall clock)."""
    v = value.strip()
    if v == "now":
        return time.time_ns() if now_ns is None else now_ns
    if re.fullmatch(r"@-?\d+ns", v):
        return _bounded(int(v[1:-2]), value)
    if re.fullmatch(r"-?\d+(\.\d+)?", v):
        if len(v) > 400:      # int() of a longer string is refused by Python (CVE-2020-10735), and far beyond
            raise ValueError(f"expected an instant up to {_iso(MAX_NS)}, got a number of {len(v)} digits")
        whole, _, frac = v.partition(".")
        return _bounded(int(whole) * 1_000_000_000 + (int((frac + "000000000")[:9]) if frac else 0)
                        * (-1 if v.startswith("-") else 1), value)
    m = _RELATIVE.match(v)
    if m:
        delta = 0
        for num, unit in _PART.findall(m.group(2)):
            whole, _, frac = num.partition(".")
            delta += int(whole) * _UNIT_NS[unit] + (int(frac) * _UNIT_NS[unit] // 10 ** len(frac) if frac else 0)
        base = time.time_ns() if now_ns is None else now_ns
        return _bounded(base + (delta if m.group(1) == "+" else -delta), value)
    m = _DATE_TIME.match(v)
    if m:
        date, clock, frac, zone = m.groups()
        clock = clock or "00:00:00"
        if len(clock) == 5:
            clock += ":00"
        import datetime as _dt
        tz = _dt.timezone.utc
        if zone and zone not in "Zz":
            sign = -1 if zone[0] == "-" else 1
            hh, mm = int(zone[1:3]), int(zone[-2:])
            tz = _dt.timezone(sign * _dt.timedelta(hours=hh, minutes=mm))
        try:
            d = _dt.datetime.fromisoformat(f"{date}T{clock}").replace(tzinfo=tz)
        except ValueError:
            raise ValueError(f"expected {EXPECTED}, got {value!r} (no such date or time)") from None
        ns = int((frac or ".")[1:].ljust(9, "0")[:9] or 0)
        return _bounded(_seconds(d) * 1_000_000_000 + ns, value)
    raise ValueError(f"expected {EXPECTED}, got {value!r}")


def _seconds(d: "datetime.datetime") -> int:
    """Whole seconds since the epoch, exactly (no float)."""
    import datetime as _dt
    delta = d - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return delta.days * 86400 + delta.seconds


def from_datetime(d: "datetime.datetime") -> int:
    """A ``datetime`` → Unix ns, exactly (microseconds kept); a naive datetime is UTC."""
    import datetime as _dt
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return _seconds(d) * 1_000_000_000 + d.microsecond * 1000
