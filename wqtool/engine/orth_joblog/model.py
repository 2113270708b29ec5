"""Rows of orth_job_log as the engine holds them, and the typed-value conversions every source shares.

A datetime is held as naive seconds: the ``datetime`` column's wall-clock value counted from 1970-01-01 00:00:00
as if it were UTC (MySQL stores no zone; ``-O timezone=`` says which zone the admin wrote in, for comparisons with
--as-of).
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from ...formats.orth_joblog import COLUMN_NAMES

_EPOCH_ORD = _dt.date(1970, 1, 1).toordinal()
_DT_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(0+))?\Z")
_DAY_CACHE: dict[str, int] = {}


@dataclass(slots=True)
class Row:
    """One row of orth_job_log (columns in DDL order) and where it was read: ``path`` (file or redacted URL),
    ``offset`` (byte offset of the row in its file; a Parquet / database row: its ordinal), ``length`` (bytes;
    0 where the source has no byte form), ``index`` (the row's index in its log), ``file`` (index of the file in
    the log), ``table`` (the log's table: ``orth_job_log`` or ``xxl_job_log``, whose admin's status rules apply)."""

    path: str
    offset: int
    length: int
    index: int
    file: int
    id: int
    job_group: int
    job_id: int
    executor_address: str | None
    executor_handler: str | None
    executor_param: str | None
    executor_sharding_param: str | None
    executor_fail_retry_count: int
    trigger_time: int | None
    schedule_time: int | None
    trigger_code: int
    trigger_msg: str | None
    handle_time: int | None
    handle_code: int
    handle_msg: str | None
    alarm_status: int
    table: str = "orth_job_log"  # the job-log table the row is of (its rule set: ``formats.orth_joblog.RULE_SETS``)

    def values(self) -> tuple:
        return tuple(getattr(self, n) for n in COLUMN_NAMES)


@dataclass(slots=True)
class RegistryRow:
    id: int | None
    registry_group: str | None
    registry_key: str | None
    registry_value: str | None
    update_time: int | None


def parse_datetime(s: str) -> int | None:
    """``YYYY-MM-DD HH:MM:SS`` (or ``T``, optional ``.000``) -> naive seconds; None if it is not one. MySQL's zero
    date and impossible dates are not datetimes."""
    m = _DT_RE.match(s)
    if m is None:
        return None
    day = s[:10]
    d = _DAY_CACHE.get(day)
    if d is None:
        try:
            d = _dt.date(int(m[1]), int(m[2]), int(m[3])).toordinal() - _EPOCH_ORD
        except ValueError:
            return None
        if len(_DAY_CACHE) > 100_000:
            _DAY_CACHE.clear()
        _DAY_CACHE[day] = d
    hh, mm, ss = int(m[4]), int(m[5]), int(m[6])
    if hh > 23 or mm > 59 or ss > 59:
        return None
    return d * 86400 + hh * 3600 + mm * 60 + ss


def from_datetime(v: _dt.datetime) -> int | None:
    """A datetime object (a database driver's, Arrow's) -> naive seconds; an aware one -> its UTC wall clock
    (callers convert zones first). Fractions must be zero (MySQL datetime has none)."""
    if v.microsecond:
        return None
    if v.tzinfo is not None:
        v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return (v.toordinal() - _EPOCH_ORD) * 86400 + v.hour * 3600 + v.minute * 60 + v.second


_DAY_TEXT: dict[int, str] = {}


def format_datetime(t: int | None) -> str | None:
    """Naive seconds -> ``YYYY-MM-DD HH:MM:SS`` (MySQL's text form)."""
    if t is None:
        return None
    days, secs = divmod(t, 86400)
    d = _DAY_TEXT.get(days)
    if d is None:
        x = _dt.date.fromordinal(days + _EPOCH_ORD)
        d = f"{x.year:04d}-{x.month:02d}-{x.day:02d}"
        if len(_DAY_TEXT) > 100_000:
            _DAY_TEXT.clear()
        _DAY_TEXT[days] = d
    return f"{d} {secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"


def day_of(t: int) -> str:
    """The local day of naive seconds, ``YYYY-MM-DD`` (the report's trigger_day)."""
    return _dt.date.fromordinal(t // 86400 + _EPOCH_ORD).isoformat()
