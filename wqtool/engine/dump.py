"""dump's pass, for every format: the record selection (kinds --type, jobs, record time, offset range), the
limit, the choice of the format's encoder, and what a reader of the records is told (``records``): a command
renders what it yields and never runs the record loop itself."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from ..errors import UsageError
from ..offsets import At
from .findings import ERROR, Finding, Verdict, worst
from .format import Log, Options, RecordFacts, formats, settle_as_of
from .live import LiveWatch


def parse_kinds(values: list[str] | None, vocabulary, what: str) -> frozenset[str] | None:
    """--type values (repeatable, comma-separated, case- and _/- insensitive) -> the kind labels they name."""
    if not values:
        return None
    known = tuple(vocabulary)
    out = set()
    for v in values:
        for part in v.split(","):
            part = part.strip().lower().replace("_", "-")
            if not part:
                continue
            if part not in known:
                raise UsageError(f"--type: unknown {what} {part!r} (expected one of {', '.join(known)})")
            out.add(part)
    return frozenset(out)


def parse_jobs(values: list[str] | None) -> frozenset[bytes] | None:
    if not values:
        return None
    import uuid             # --job only: a plain dump does not load it (start-up)
    out = set()
    for v in values:
        for part in v.split(","):
            try:
                out.add(uuid.UUID(part.strip()).bytes)
            except ValueError:
                raise UsageError(f"--job: not a UUID: {part!r}") from None
    return frozenset(out)


@dataclass(slots=True, frozen=True)
class RecordFilter:
    facts: Callable[[object], RecordFacts]
    kinds: frozenset[str] | None = None
    jobs: frozenset[bytes] | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    from_offset: At | None = None
    to_offset: At | None = None
    #: the log's files in order, by base name: a bound that names a file (``000000001.log@0x194``) is a position
    #: in the log — the records of that file from the offset on, and of every file after it (``for_files``)
    order: dict[str, int] | None = None

    def for_files(self, files: list[str], what: str) -> "RecordFilter":
        """This filter for one log (``files``: its files in order); a bound naming a file it lacks is an error."""
        named = [b for b in (self.from_offset, self.to_offset) if b is not None and b.file is not None]
        if not named:
            return self
        order = {os.path.basename(f): i for i, f in enumerate(files)}
        for b, opt in ((self.from_offset, "--from-offset"), (self.to_offset, "--to-offset")):
            if b is not None and b.file is not None and b.file not in order:
                raise UsageError(f"{opt} {b}: {b.file} is not a file of {what} (its files: "
                                 f"{', '.join(order) or 'none'})")
        return replace(self, order=order)

    def at_or_after(self, path: str | None, offset: int, bound: At) -> bool:
        """``path``@``offset`` is at or after ``bound``."""
        if bound.file is None or self.order is None:
            return offset >= bound.offset
        return (self.order.get(os.path.basename(path or ""), -1), offset) >= (self.order[bound.file], bound.offset)

    def holds(self, f: Finding) -> bool:
        """Whether finding ``f`` lies inside the offset range (one without a place does)."""
        if f.path is None or f.offset is None:
            return True
        lo, hi = self.from_offset, self.to_offset
        return (lo is None or self.at_or_after(f.path, f.offset, lo)) and \
            (hi is None or not self.at_or_after(f.path, f.offset, hi))

    def selects_all(self) -> bool:
        """No selection at all: every record is kept."""
        return self.kinds is None and self.jobs is None and self.since_ns is None and self.until_ns is None \
            and self.from_offset is None and self.to_offset is None

    def match(self, rec) -> bool:
        if self.from_offset is not None and not self.at_or_after(rec.path, rec.offset, self.from_offset):
            return False
        if self.to_offset is not None and self.at_or_after(rec.path, rec.offset, self.to_offset):
            return False
        if self.kinds is None and self.jobs is None and self.since_ns is None and self.until_ns is None:
            return True
        f = self.facts(rec)
        if self.kinds is not None and f.kind not in self.kinds:
            return False
        if self.jobs is not None and f.job not in self.jobs:
            return False
        if self.since_ns is not None or self.until_ns is not None:
            t = f.time_ns
            if t is None:
                return False
            if self.since_ns is not None and t < self.since_ns:
                return False
            if self.until_ns is not None and t >= self.until_ns:
                return False
        return True


def selection(fmt, *, kinds: list[str] | None = None, jobs: frozenset[bytes] | None = None,
              since_ns: int | None = None, until_ns: int | None = None, from_offset: At | None = None,
              to_offset: At | None = None) -> RecordFilter:
    """One format's record filter for dump's options; a filter the format cannot apply is a usage error."""
    unsupported = [o for o, v, need in (("--job", jobs, "job"), ("--since", since_ns, "time"),
                                        ("--until", until_ns, "time")) if v is not None and need not in fmt.dump.filters]
    if unsupported:
        able = [f.about.plural for f in formats() if "job" in f.dump.filters]
        raise UsageError(f"{', '.join(unsupported)} apply to {' and '.join(able) or 'no format'} only, not to "
                         f"{fmt.about.plural}")
    return RecordFilter(fmt.facts, parse_kinds(kinds, fmt.dump.record_kinds, fmt.dump.kind_noun), jobs, since_ns, until_ns,
                        from_offset, to_offset)


@dataclass(frozen=True, slots=True)
class Encoded:
    """``n`` records the format's own encoder wrote as ``text`` (an intact log, nothing filtered: ``records``)."""

    n: int
    text: str


@dataclass(frozen=True, slots=True)
class Told:
    """A finding for the reader (dump: stderr, at its offset). ``mark``: the bytes it covers lie in the selected
    range and are unreadable (a torn tail, corruption) or a record still in flight — ``-o hex`` shows them,
    marked, between the records around them. ``in_flight``: a live writer's record, not damage."""

    finding: Finding
    mark: bool = False
    in_flight: bool = False


class Records:
    """dump's pass over one log: iterating yields each record the filter keeps (the reader's own objects; at most
    ``limit``), ``Encoded`` chunks where the format's encoder stands in (``encode`` = (style, payload) asked, and
    the filter selects everything), and ``Told`` findings — the errors inside what was read, as they come; torn
    tails once the read is over (in flight when the log is live). ``verdict`` is that of what was read (settled for
    a live writer), once iterated; ``shown``: the records given; ``stopped``: (path, offset) where the read stopped
    before the log's end (the limit, --to-offset), else None.

    A selection (kinds, jobs, times, an offset range) goes to the format's ``select_records`` where it has one (the
    kernel: seeks, and tests in C); else the reference pass is read and filtered, and stops at the limit and at a
    --to-offset that names a file."""

    def __init__(self, log: Log, opts: Options, flt: RecordFilter, *, limit: int | None = None, live: bool = False,
                 encode: tuple[str, str] | None = None):
        self.log, self.opts, self.flt, self.limit, self.live, self.encode = log, opts, flt, limit, live, encode
        self.verdict: Verdict = Verdict.CLEAN
        self.shown = 0
        self.stopped: tuple[str, int] | None = None

    def __iter__(self) -> Iterator[Any]:
        log, fmt, flt = self.log, self.log.fmt, self.flt
        opts = settle_as_of(log, self.opts)
        if fmt.about.told_codes:       # what discovery says every reader must tell (an interrupted --apply), first
            for f in getattr(log.data, "findings", ()):
                if f.code in fmt.about.told_codes:
                    yield Told(f)
        if self.encode is not None and flt.selects_all():
            fast = fmt.dump.encoded_records(log.data, opts, style=self.encode[0], payload=self.encode[1],
                                       limit=self.limit)
            if fast is not None:   # the format's encoder (intact logs): rows as they come
                report, chunks = fast
                for n, text in chunks:
                    self.shown += n
                    yield Encoded(n, text)
                self.verdict = report.verdict
                self.stopped = getattr(chunks, "stopped", None)
                return
        watch = LiveWatch(log, live=self.live)
        verdicts: set = set()
        held: list[Finding] = []       # torn tails: in flight or damage, told once the read is over
        sel = fmt.dump.select_records(log.data, opts, flt)
        if sel is not None:
            for ev in sel.events(self.limit):
                if ev.__class__ is Finding:
                    if ev.verdict == Verdict.TORN_TAIL:
                        held.append(ev)
                    else:
                        verdicts.add(ev.verdict)
                        yield told(flt, ev)
                else:
                    self.shown += 1
                    yield ev
            self.stopped = sel.stopped
        else:
            yield from self._reference(fmt, opts, verdicts, held)
        for f in held:
            t = watch.torn_in_flight(f)
            if t is f:
                verdicts.add(f.verdict)
            yield told(flt, t, in_flight=t is not f)
        self.verdict = worst(v for v in verdicts if v)

    def _reference(self, fmt, opts: Options, verdicts: set, held: list) -> Iterator[Any]:
        """The format's reference pass, filtered: the records kept and the errors inside the range read."""
        flt = self.flt
        run = fmt.run(self.log.data, opts, limit=0)
        cls, hi = fmt.record_cls, flt.to_offset
        past = None              # a bound in every file: the file whose events past it are skipped
        for ev in run.events():
            if hi is not None and ev.path is not None and ev.offset is not None and \
                    flt.at_or_after(ev.path, ev.offset, hi) and \
                    (flt.from_offset is None or flt.at_or_after(ev.path, ev.offset, flt.from_offset)):
                if hi.file is not None:     # a bound in the log: reading stops there
                    self.stopped = (ev.path, ev.offset)
                    break
                if ev.path != past:
                    past, self.stopped = ev.path, (ev.path, ev.offset)
                continue
            if ev.__class__ is cls:
                if flt.match(ev):
                    if self.limit is not None and self.shown >= self.limit:
                        self.stopped = (ev.path, ev.offset)
                        break
                    self.shown += 1
                    yield ev
            elif ev.severity == ERROR and flt.holds(ev):
                if ev.verdict == Verdict.TORN_TAIL:
                    held.append(ev)
                else:
                    verdicts.add(ev.verdict)
                    yield told(flt, ev)
        run.sink.close()


def told(flt: RecordFilter, f: Finding, *, in_flight: bool = False) -> Told:
    """``f`` as dump tells it (``Told``), marked when its bytes lie in ``flt``'s range."""
    mark = f.path is not None and f.offset is not None and (in_flight or f.verdict in (Verdict.TORN_TAIL,
                                                                                         Verdict.CORRUPT))
    if mark:
        lo, hi = flt.from_offset, flt.to_offset
        end = f.resumes_at if f.resumes_at is not None else f.offset + 1
        mark = (lo is None or flt.at_or_after(f.path, end - 1, lo)) and \
            (hi is None or not flt.at_or_after(f.path, f.offset, hi))
    return Told(f, mark, in_flight)


def following(logs: list[tuple[Log, RecordFilter]], opts: Options, *, limit: int | None = None,
              poll_s: float = 1.0) -> Iterator[tuple[Log, Any] | None]:
    """dump --follow: (log, record) for each record a log's filter keeps and (log, ``Told``) for its errors —
    every log's records first, then what each gains — and None when a poll of every log is over (then it waits
    ``poll_s``); it ends after ``limit`` records, else never (the caller stops it)."""
    streams = [(log, flt, log.fmt.passes.follow(log.data, settle_as_of(log, opts), poll_s=0)) for log, flt in logs]
    shown = 0
    while True:
        for log, flt, events in streams:
            cls = log.fmt.record_cls
            for ev in events:
                if ev is None:      # this log's poll is over
                    break
                if ev.__class__ is cls:
                    if flt.match(ev):
                        if limit is not None and shown >= limit:
                            return
                        shown += 1
                        yield log, ev
                elif ev.severity == ERROR:
                    yield log, told(flt, ev)
        yield None
        time.sleep(poll_s)
