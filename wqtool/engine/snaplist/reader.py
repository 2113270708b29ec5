"""List-journal discovery and the streaming reader.

Discovery: a directory is one journal — its ``<0-23>.msg`` files in upstream's reading order at --as-of (hours
``E+1`` … 23, 0 … ``E``, ``E`` the current UTC hour), other names reported (``SL-FOREIGN-FILE``, ``SL-TEMP-FILE``);
hour files named one by one form a journal per directory holding just those files. Nothing is created, locked or
unlinked while reading (upstream's reader takes ``flock`` to measure the size and unlinks exhausted files: wqtool
reports what it would do).

The reader reads each file through a read-only ``FileView`` and yields, in file order, a ``Line`` per line and
per run of ``\\n`` (acknowledged lines), with findings where upstream would skip, misread or lose something.
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.snaplist import (HOUR_FILE, LIST_PRIORITY_UPDATES, PRIORITY_MAX, UPDATING_DELAY_US, kept_hours,
                             reading_order, start_hour)
from ..fileio import FileView, input_error, listdir
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .fastpath import int_value, parse_canonical, tokenize
from .model import KIND_ACKED, KIND_PENDING, KIND_SKIPPED, HourFile, Line, ListJournal

TEMP_MARK = ".wqtool-pack"      # .<H>.msg.wqtool-pack: a pack --apply in progress (never an hour file's name)
INT64_MAX = (1 << 63) - 1


def temp_name(hour: int) -> str:
    return f".{hour}.msg{TEMP_MARK}"


def hour_of_name(name: str) -> int | None:
    m = HOUR_FILE.match(name)
    return int(m.group(1)) if m else None


def current_hour(as_of_ns: int) -> int:
    return start_hour(as_of_ns // 1000)


def discover(paths: Sequence[str], as_of_ns: int, *, start_date_offset_us: int = 10_000_000) -> list[ListJournal]:
    if not paths:
        raise UsageError("no PATH given")
    e = current_hour(as_of_ns)
    order = {h: i for i, h in enumerate(reading_order(e))}
    out: list[ListJournal] = []
    explicit: dict[str, ListJournal] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError as exc:
            raise input_error(p, exc) from None
        if os.path.isdir(p):
            out.append(_discover_dir(p, e, as_of_ns, order, start_date_offset_us))
            continue
        name = os.path.basename(p)
        h = hour_of_name(name)
        if h is None:
            raise InputError("not a list journal hour file (expected <0-23>.msg)", path=p)
        if not os.access(p, os.R_OK):
            raise InputError("permission denied", path=p)
        d = os.path.dirname(p) or "."
        key = os.path.abspath(d)
        if key not in explicit:
            explicit[key] = ListJournal(root=d, files=[], current_hour=e, as_of_ns=as_of_ns, is_dir=False,
                                        start_date_offset_us=start_date_offset_us)
            out.append(explicit[key])
        if all(f.path != p for f in explicit[key].files):
            explicit[key].files.append(HourFile(p, h))
        del st
    for j in explicit.values():
        j.files.sort(key=lambda f: order[f.hour])
    return out


def _discover_dir(d: str, e: int, as_of_ns: int, order: dict, offset_us: int) -> ListJournal:
    try:
        names = sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None
    j = ListJournal(root=d, files=[], current_hour=e, as_of_ns=as_of_ns, start_date_offset_us=offset_us)
    for name in names:
        path = os.path.join(d, name)
        h = hour_of_name(name)
        if h is not None and os.path.isfile(path):
            j.files.append(HourFile(path, h))
        elif name.endswith(TEMP_MARK) and name.startswith("."):
            j.temps.append(path)
            j.findings.append(Finding(WARNING, "SL-TEMP-FILE", "leftover temp file of an interrupted wqtool pack "
                                      "--apply (the hour file it was made from is intact); wqtool clean removes "
                                      "it", path=path))
        else:
            j.findings.append(Finding(WARNING, "SL-FOREIGN-FILE", f"'{name}' is not an hour file <0-23>.msg: the "
                                      "list plugin never reads it", path=path))
    j.files.sort(key=lambda f: order[f.hour])
    if not j.files:
        j.findings.append(Finding(NOTE, "SL-EMPTY", "no hour file: nothing pending", path=d))
    return j


def expected_hours(key_start_date: int, priority: int | None, offset_us: int) -> tuple[int, ...]:
    """The hour files a line may be in: the hour of ``key_start_date - offset`` (the start date), and one hour
    earlier when the line has priority 180 (written while the site was updating: +1 h)."""
    hs = (start_hour(key_start_date - offset_us),)
    if priority == LIST_PRIORITY_UPDATES:
        hs += (start_hour(key_start_date - offset_us - UPDATING_DELAY_US),)
    return hs


class ListReader:
    """Streams the lines of a journal's hour files (``events()``: ``Line`` and ``Finding``, in file order)."""

    def __init__(self, journal: ListJournal, *, first_index: int = 0, with_discovery: bool = True):
        self.journal = journal
        self.records = 0
        self.bytes = 0
        self.segments_read = 0
        self._index = first_index
        self._with_discovery = with_discovery

    def events(self) -> Iterator:
        j = self.journal
        if self._with_discovery:
            yield from j.findings
        for hf in j.files:
            yield from self.file_events(hf)

    def file_events(self, hf: HourFile) -> Iterator:
        j = self.journal
        with FileView(hf) as view:
            data = bytes(view.data)
        self.segments_read += 1
        self.bytes += len(data)
        path = hf.path
        n = len(data)
        pos = 0
        pending_before = False       # a pending line earlier in this file that is still there
        pending = skipped = 0
        wrong = 0
        first_wrong: tuple[int, int, int] | None = None
        find = data.find
        while pos < n:
            if data[pos] == 10:
                end = pos
                while end < n and data[end] == 10:
                    end += 1
                rec = Line(path, pos, end - pos, self._index, hf.hour, KIND_ACKED)
                self._index += 1
                self.records += 1
                yield rec
                if pending_before:
                    yield Finding(WARNING, "SL-ACK-OUT-OF-ORDER", f"{end - pos} blank byte(s) after a pending line: "
                                  "acknowledged out of order; upstream logs 'required message parameter is "
                                  "missing' for each", path=path, offset=pos, record_index=rec.index)
                pos = end
                continue
            nl = find(b"\n", pos)
            if nl < 0:
                yield Finding(ERROR, "SL-TORN-LINE", f"final line of {n - pos} byte(s) without '\\n' (a torn "
                              f"write); upstream discards it when the file is unlinked; torn tail: the file is "
                              f"valid up to 0x{pos:x}", path=path, offset=pos, record_index=self._index,
                              last_good_offset=pos, verdict=Verdict.TORN_TAIL,
                              upstream="never sent; lost when the reader unlinks the file")
                break
            raw = data[pos:nl]
            rec = Line(path, pos, nl + 1 - pos, self._index, hf.hour, KIND_PENDING, raw)
            self._index += 1
            self.records += 1
            findings = []
            canon = parse_canonical(raw)
            if canon is not None:
                prio, ksd, uri = canon
                rec.uri = uri
                rec.priority = prio if 0 <= prio <= PRIORITY_MAX else None
                rec.key_start_date = ksd if 0 <= ksd <= INT64_MAX else None
                bad = [] if rec.priority is not None and rec.key_start_date is not None else \
                    _bad_values(rec, raw.split(b";")[0][9:], raw.split(b";")[1][15:])
            else:
                t = tokenize(raw)
                if t.missing:
                    rec.kind = KIND_SKIPPED
                    findings.append(Finding(ERROR, "SL-MISSING-FIELD", f"{', '.join(t.missing)} missing or empty: "
                                            "upstream skips the line ('required message parameter is missing') and "
                                            "it is lost when the file is unlinked", path=path, offset=pos,
                                            record_index=rec.index, verdict=Verdict.INVALID_HISTORY,
                                            upstream="skipped, never acknowledged; lost with the file"))
                    bad = []
                else:
                    rec.uri = t.uri
                    rec.priority = int_value(t.priority, 0, PRIORITY_MAX)
                    rec.key_start_date = int_value(t.key_start_date, 0, INT64_MAX)
                    bad = _bad_values(rec, t.priority, t.key_start_date)
                    if t.after_uri:
                        findings.append(Finding(WARNING, "SL-URI-SEMICOLON", f"a raw ';' in the uri: upstream reads "
                                                f"uri={_show(t.uri)} and ignores ';{_show(t.after_uri)}' (the "
                                                "writer replaces ';' with %3A)", path=path, offset=pos,
                                                record_index=rec.index))
                    elif not bad:
                        findings.append(Finding(NOTE, "SL-NONCANONICAL", "not the list plugin's own form "
                                                f"(priority=…;key_start_date=…;uri=…); upstream reads priority="
                                                f"{_show(t.priority)} key_start_date={_show(t.key_start_date)} uri="
                                                f"{_show(t.uri)}" + (f"; {t.unknown} unknown token(s) ignored"
                                                                     if t.unknown else "")
                                                + (f"; {t.repeated} repeated name(s): the last wins"
                                                   if t.repeated else ""), path=path, offset=pos,
                                                record_index=rec.index))
            for what in bad:
                findings.append(Finding(ERROR, "SL-BAD-VALUE", what + "; upstream forwards it as text — the list "
                                        "plugin never writes it", path=path, offset=pos, record_index=rec.index,
                                        verdict=Verdict.INVALID_HISTORY))
            if any(b >= 0x7F or b < 0x20 for b in raw):
                findings.append(Finding(WARNING, "SL-NON-ASCII", "bytes outside printable ASCII "
                                        f"({_nonascii(raw)}); the list plugin writes ASCII lines (a UTF-8 page key "
                                        "is passed through)", path=path, offset=pos, record_index=rec.index))
            rec.valid = rec.kind == KIND_PENDING and not bad
            if rec.kind == KIND_PENDING:
                pending += 1
                pending_before = True
                if rec.valid:
                    hs = expected_hours(rec.key_start_date, rec.priority, j.start_date_offset_us)
                    if hf.hour not in hs:
                        wrong += 1
                        if first_wrong is None:
                            first_wrong = (pos, rec.index, hs[0])
            else:
                skipped += 1
            yield rec
            yield from findings
            pos = nl + 1
        if wrong:
            off, idx, h = first_wrong
            yield Finding(WARNING, "SL-WRONG-HOUR", f"{wrong} line(s) of {os.path.basename(path)} have a "
                          f"key_start_date whose start date (minus {j.start_date_offset_us} µs) is not in hour "
                          f"{hf.hour} (the first: hour {h}); the list plugin writes a request to the file of its "
                          "start date's UTC hour", path=path, offset=off, record_index=idx)
        kept = kept_hours(j.current_hour)
        if hf.hour not in kept:
            what = (f"still holds {pending} pending line(s), overdue" if pending else
                    f"is exhausted but for {skipped} skipped line(s) upstream would lose" if skipped else
                    "is exhausted (every line acknowledged): left over")
            yield Finding(WARNING, "SL-STALE-FILE", f"hour {hf.hour} is neither the current ({j.current_hour}) nor "
                          f"the previous hour at --as-of: upstream's reader unlinks it once read; it {what}",
                          path=path, upstream="read, then unlinked (pending lines are sent first)")


def _bad_values(rec: Line, prio_text: bytes, ksd_text: bytes) -> list[str]:
    out = []
    if rec.priority is None:
        out.append(f"priority {_show(prio_text)} is not an integer 0-{PRIORITY_MAX}")
    if rec.key_start_date is None:
        out.append(f"key_start_date {_show(ksd_text)} is not an integer >= 0 (µs since the epoch)")
    return out


def _show(b: bytes, limit: int = 60) -> str:
    s = b[:limit].decode("ascii", "backslashreplace")
    return repr(s)[1:-1] + ("…" if len(b) > limit else "")


def _nonascii(raw: bytes) -> str:
    try:
        raw.decode("utf-8")
        return "valid UTF-8"
    except UnicodeDecodeError:
        return "not UTF-8"
