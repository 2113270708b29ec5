"""Time series of one log, aggregated as its records stream: ``report``, ``stats --chart`` and ``stats --timeline``.

One pass, the format's fastest (``Passes.series``: the workq and Kestrel kernels bin them in C as they read,
both through engine/_series.h, ``series_of`` below) or the reference reader -> replay pass of the format
(``Format.run``), which is verify's and stats' pass:
``series_log`` returns that pass's ``LogReport`` (verdict, findings, replayed state), its ``RecordStats`` and a
``Series``. Memory does not grow with the log: records are counted into at most ``MAX_BINS`` time bins (a bin
starts at one second and widens along ``WIDTHS_S`` — 2 s, 10 s, 30 s, a minute, ... a day, then doubling —
merging neighbours, whenever the records span more bins, empty ones included: a page draws every bin of the span), live jobs per queue are
kept as one number per queue and sampled once per bin, durations go into fixed histogram buckets, and at most
``MAX_MARKS`` findings are kept as marks (every finding is counted per bin).

What a format contributes beyond ``Format.facts`` (kind, time, job of a record) is its ``Passes.series_probe``:
the live jobs per queue, wait and run times, read from its running replay around each record (the replay's rules
are never applied a second time).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from .findings import Finding
from .format import SeriesProbe, SeriesStep
from .stats import RecordStats

NS_PER_S = 1_000_000_000
DAY_NS = 86_400 * NS_PER_S
#: bin widths (s), each a multiple of the one before: a log starts in 1 s bins and moves up the ladder (neighbours
#: merged) whenever it spans more than MAX_BINS; past the ladder, widths double
WIDTHS_S = (1, 2, 10, 30, 60, 120, 600, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_BINS = 600                     # about a pixel a bin on the page; a terminal row merges them further
MAX_MARKS = 500                    # findings kept as marks on the time axis (all are counted per bin)

#: histogram bucket upper edges (ns) of wait and run times, and their labels; the last bucket is open
DURATION_EDGES = (10_000_000, 100_000_000, NS_PER_S, 10 * NS_PER_S, 60 * NS_PER_S, 600 * NS_PER_S,
                  3600 * NS_PER_S, 86400 * NS_PER_S)
DURATION_LABELS = ("<10ms", "10-100ms", "0.1-1s", "1-10s", "10s-1m", "1-10m", "10m-1h", "1h-1d", ">=1d")


@dataclass(slots=True)
class Histogram:
    """Durations in fixed buckets (``DURATION_EDGES``), with count, sum, min and max."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(DURATION_EDGES) + 1))
    count: int = 0
    total_ns: int = 0
    min_ns: int | None = None
    max_ns: int | None = None

    def add(self, ns: int) -> None:
        if ns < 0:
            ns = 0                   # a clock stepped back: counted as no time at all
        i = 0
        for edge in DURATION_EDGES:
            if ns < edge:
                break
            i += 1
        self.buckets[i] += 1
        self.count += 1
        self.total_ns += ns
        if self.min_ns is None or ns < self.min_ns:
            self.min_ns = ns
        if self.max_ns is None or ns > self.max_ns:
            self.max_ns = ns

    def to_jsonable(self) -> dict:
        return {"count": self.count, "sum_s": self.total_ns / NS_PER_S,
                "min_s": None if self.min_ns is None else self.min_ns / NS_PER_S,
                "max_s": None if self.max_ns is None else self.max_ns / NS_PER_S,
                "buckets": dict(zip(DURATION_LABELS, self.buckets))}


@dataclass(slots=True)
class Mark:
    """A finding on the time axis: at the time of the last record read before it (None: before any record)."""

    time_ns: int | None
    code: str
    severity: str
    path: str | None
    offset: int | None


@dataclass(slots=True)
class Series:
    """A log's series. Bin ``i`` covers ``[origin_ns + i * width_ns, origin_ns + (i + 1) * width_ns)``."""

    origin_ns: int | None = None                                     # midnight UTC before the first time
    width_ns: int = NS_PER_S
    records: dict[int, Counter] = field(default_factory=dict)      # bin -> records by kind
    kinds: list[str] = field(default_factory=list)                  # in order of first appearance
    untimed: Counter = field(default_factory=Counter)               # records without a time, by kind
    damage: Counter = field(default_factory=Counter)                # bin -> findings (error and warning)
    marks: list[Mark] = field(default_factory=list)                  # the first MAX_MARKS findings
    depth: dict[int, dict[str, int]] = field(default_factory=dict)  # bin -> live jobs of the queues that changed
    queues: list[str] = field(default_factory=list)                 # every queue that had a live job
    peak: Counter = field(default_factory=Counter)                  # queue -> most live jobs at once
    has_depth: bool = False                                         # the format's probe gives live jobs
    wait: Histogram = field(default_factory=Histogram)
    run: Histogram = field(default_factory=Histogram)
    first_ns: int | None = None
    last_ns: int | None = None

    # ---------------------------------------------------------------- reading it
    def bin_start(self, i: int) -> int:
        return self.origin_ns + i * self.width_ns

    def span(self) -> tuple[int, int] | None:
        """(first bin, last bin) holding anything, or None."""
        keys = set(self.records) | set(self.depth) | set(self.damage)
        return (min(keys), max(keys)) if keys else None

    def per_kind(self) -> dict[str, list[tuple[int, int]]]:
        """kind -> [(bin start ns, records)], every bin of the span (zeros included)."""
        sp = self.span()
        if sp is None:
            return {}
        rng = range(sp[0], sp[1] + 1)
        return {k: [(self.bin_start(i), self.records[i][k] if i in self.records else 0) for i in rng]
                for k in self.kinds}

    def depth_series(self) -> dict[str, list[tuple[int, int]]]:
        """queue -> [(bin end ns, live jobs at the last record of the bin)], every bin of the span (carried
        forward where the queue did not change)."""
        sp = self.span()
        if sp is None or not self.has_depth:
            return {}
        out: dict[str, list[tuple[int, int]]] = {q: [] for q in self.queues}
        now: dict[str, int] = {}
        for i in range(sp[0], sp[1] + 1):
            now.update(self.depth.get(i, ()))
            end = self.bin_start(i + 1)
            for q in self.queues:
                out[q].append((end, now.get(q, 0)))
        return out

    def to_jsonable(self) -> dict:
        return {"bin_seconds": self.width_ns // NS_PER_S, "kinds": list(self.kinds),
                "untimed": dict(self.untimed), "queues": list(self.queues), "peak": dict(self.peak),
                "findings_marked": len(self.marks), "wait": self.wait.to_jsonable(), "run": self.run.to_jsonable()}


class SeriesCollector:
    """Feeds a ``Series`` from one pass: ``record(facts, step)`` per record in stream order, ``finding(f)`` per
    finding, ``close()`` at the end."""

    def __init__(self, *, has_depth: bool = False, max_bins: int = MAX_BINS):
        if max_bins < 2:    # one bin: bins -1 and 0 (either side of the origin) would never merge
            raise ValueError(f"max_bins must be at least 2, not {max_bins}")
        self.series = Series(has_depth=has_depth)
        self.max_bins = max_bins
        self.now: Counter = Counter()           # queue -> live jobs now
        self.dirty: set[str] = set()            # queues changed since the last sample
        self.cur: int | None = None             # the bin of the depth clock
        self._clock: int | None = None          # the newest time read so far
        self._last_t: int | None = None         # the time of the last timed record (in stream order)
        self._kinds: set[str] = set()
        self._lo: int | None = None             # the first and last bins holding records: the span a page draws
        self._hi: int | None = None

    def _bin(self, t: int) -> int:
        s = self.series
        if s.origin_ns is None:
            s.origin_ns = t - t % DAY_NS
        return (t - s.origin_ns) // s.width_ns

    def _sample(self) -> None:
        if self.dirty and self.cur is not None:
            snap = self.series.depth.setdefault(self.cur, {})
            for q in self.dirty:
                snap[q] = self.now[q]
            self.dirty.clear()

    def record(self, kind: str, t: int | None, step: SeriesStep | None) -> None:
        s = self.series
        if kind not in self._kinds:
            self._kinds.add(kind)
            s.kinds.append(kind)
        if t is None:
            s.untimed[kind] += 1
        else:
            self._last_t = t
            if s.first_ns is None or t < s.first_ns:
                s.first_ns = t
            if s.last_ns is None or t > s.last_ns:
                s.last_ns = t
            i = self._bin(t)
            c = s.records.get(i)
            if c is None:
                c = s.records[i] = Counter()
                self._lo = i if self._lo is None or i < self._lo else self._lo
                self._hi = i if self._hi is None or i > self._hi else self._hi
                if self._hi - self._lo >= self.max_bins:
                    self._widen()
                    c = s.records[self._bin(t)]
            c[kind] += 1
            if self._clock is None or t > self._clock:
                # the depth is sampled on a clock that never goes back (the newest time read so far): records
                # written out of time order move the queues where the stream stands, so the last sample is the
                # replayed state's
                self._clock = t
                ci = self._bin(t)
                if ci != self.cur:
                    self._sample()
                    self.cur = ci
        if step is not None:
            for q, d in step.moves:
                n = self.now[q] = self.now[q] + d
                if q not in s.peak:
                    s.queues.append(q)
                    s.peak[q] = 0
                if n > s.peak[q]:
                    s.peak[q] = n
                self.dirty.add(q)
            if step.wait_ns is not None:
                s.wait.add(step.wait_ns)
            if step.run_ns is not None:
                s.run.add(step.run_ns)

    def _widen(self) -> None:
        """Widen the bins until the span from the first bin holding records to the last fits in ``max_bins``
        (neighbours merged; live jobs: the later sample wins). The span, not the bins holding records: a page
        draws every bin of the span, so a log of a few records a day apart in 1 s bins drew 86,400 of them."""
        s = self.series
        self._sample()
        while self._hi - self._lo >= self.max_bins:
            w_s = s.width_ns // NS_PER_S
            nxt = next((x for x in WIDTHS_S if x > w_s), None)
            new = (nxt if nxt is not None else 2 * w_s) * NS_PER_S
            old = s.width_ns

            def to(i: int) -> int:
                return i * old // new
            recs: dict[int, Counter] = {}
            for i in sorted(s.records):
                recs.setdefault(to(i), Counter()).update(s.records[i])
            s.records = recs
            dep: dict[int, dict[str, int]] = {}
            for i in sorted(s.depth):
                dep.setdefault(to(i), {}).update(s.depth[i])
            s.depth = dep
            dmg: Counter = Counter()
            for i, n in s.damage.items():
                dmg[to(i)] += n
            s.damage = dmg
            if self.cur is not None:
                self.cur = to(self.cur)
            self._lo, self._hi = to(self._lo), to(self._hi)
            s.width_ns = new

    def finding(self, f: Finding) -> None:
        if f.severity not in ("error", "warning"):
            return
        s = self.series
        t = self._last_t
        if t is not None:
            s.damage[self._bin(t)] += 1
        if len(s.marks) < MAX_MARKS:
            s.marks.append(Mark(t, f.code, f.severity, f.path, f.offset))

    def close(self) -> Series:
        self._sample()
        return self.series


def series_of(raw, kinds, *, has_depth: bool) -> Series:
    """The ``Series`` of a kernel's ``SeriesAcc.result()`` (engine/_series.h, the C binning both kernels share;
    ``kinds``: the kind number -> the kind ``Format.facts`` names)."""
    origin, width, bins, knums, depth, queues, wait, run, first, last, marks, untimed = raw
    s = Series(origin_ns=origin, width_ns=width, has_depth=has_depth, first_ns=first, last_ns=last)
    s.kinds = [kinds[k] for k in knums]
    s.untimed = Counter({kinds[k]: n for k, n in untimed})
    for i, counts, damage in bins:
        s.records[i] = Counter({kinds[k]: n for k, n in enumerate(counts) if n})
        if damage:
            s.damage[i] = damage
    s.queues = [q for q, _ in queues]
    s.peak = Counter(dict(queues))
    for i, q, n in depth:
        s.depth.setdefault(i, {})[s.queues[q]] = n
    s.wait, s.run = Histogram(*wait), Histogram(*run)
    s.marks = [Mark(*m) for m in marks]
    return s


class SizeProbe(SeriesProbe):
    """The probe of a format whose replay keeps its live items in containers: ``sizes`` names each series and
    how to read its size from the running replay (``len`` of a dict, a deque); a record's step moves each series by
    the change in its size. E.g. Kestrel: ``SizeProbe({"queued": lambda: len(r.queue), "open": lambda:
    len(r.open)})``."""

    def __init__(self, sizes: dict[str, Callable[[], int]]):
        self.sizes = tuple(sizes.items())

    def before(self, rec):
        return tuple(f() for _, f in self.sizes)

    def after(self, rec, token) -> SeriesStep | None:
        moves = tuple((name, d) for (name, f), n in zip(self.sizes, token) for d in (f() - n,) if d)
        return SeriesStep(moves) if moves else None


class _Probed:
    """The replay of a pass, with the format's probe and the collector around ``apply`` (every other attribute is
    the replay's own)."""

    def __init__(self, replay, probe: SeriesProbe | None, facts, collector: SeriesCollector, stats: RecordStats):
        self._replay = replay
        self._probe = probe
        self._facts = facts
        self._col = collector
        self._stats = stats

    def __getattr__(self, name):
        return getattr(self._replay, name)

    def apply(self, rec) -> None:
        probe = self._probe
        if probe is None:
            self._replay.apply(rec)
            step = None
        else:
            token = probe.before(rec)
            self._replay.apply(rec)
            step = probe.after(rec, token)
        f = self._facts(rec)
        self._stats.add(f)
        self._col.record(f.kind, f.time_ns, step)


def series_log(fmt, log, opts, *, limit: int | None = None, max_bins: int = MAX_BINS):
    """One pass over one log: (its ``LogReport`` with the first ``limit`` findings and the replayed state, its
    ``RecordStats``, its ``Series``): the format's own (``Passes.series``: workq's and Kestrel's kernels), else
    the reference pass with the format's probe."""
    fast = fmt.passes.series(log, opts, limit=limit, max_bins=max_bins)
    if fast is not None:
        return fast
    return reference_series(fmt, log, opts, limit=limit, max_bins=max_bins)


def reference_series(fmt, log, opts, *, limit: int | None = None, max_bins: int = MAX_BINS):
    """``series_log`` in the reference reader -> replay pass (``Format.run``) with the format's probe."""
    run = fmt.run(log, opts, limit=limit)
    probe = fmt.passes.series_probe(run.replay)
    col = SeriesCollector(has_depth=probe is not None, max_bins=max_bins)
    st = RecordStats()
    run.replay = _Probed(run.replay, probe, fmt.facts, col, st)
    cls = fmt.record_cls
    for ev in run.events():
        if ev.__class__ is not cls:
            col.finding(ev)
    run.replay = run.replay._replay
    return run.report, st, col.close()
