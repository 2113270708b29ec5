"""A format's optional parts, each an object the format exposes (``Format.passes``, ``.dump``, ``.plans``, ``.live``,
``.spark``, ``.diff``) or leaves None; a caller asks for the part, never for one of many defaults on the format.

Each part is a class whose instance is bound to its format (``self.fmt``): a format subclasses the part it does
better or differently (a hot path, a plan) and names the subclass with ``bound`` (its methods import what they
use, so a part costs nothing until a command uses it: start-up). The bases give the
reference behaviour: ``Passes`` reads through ``Format.run``, ``Dump`` filters that pass, ``Spark`` reads one
file at a time through ``Passes.file_events``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from ..errors import UsageError
from .findings import Finding
from .options import Options, PackOptions, RepairOptions
from .run import LogReport, VerifyReport
from .stats import RecordStats

Format = Any    # ``engine.format.Format``, which imports this module (the registry is above its formats' parts)


class bound:
    """A format's part: ``passes = bound(MyPasses)``; the format's instance gets one instance of the class, made
    with the format on first use. (A part whose module is heavy is a ``cached_property`` that imports it.)"""

    def __init__(self, cls: type):
        self.cls = cls

    def __set_name__(self, _owner, name: str) -> None:
        self.name = name

    def __get__(self, fmt, _owner=None):
        if fmt is None:
            return self
        part = fmt.__dict__[self.name] = self.cls(fmt)
        return part


class Part:
    """A part of one format (``self.fmt``)."""

    def __init__(self, fmt: Format):
        self.fmt = fmt


@dataclass(frozen=True)
class About:
    """What a format says of itself in messages, ``--help``, ``--explain`` and wqtool-formats(5).

    ``stdin_name``: the name one file of this format read from stdin is given (``dump -``), a name its reader
    takes; None: the format needs its directory and cannot be read so. ``manual``: blank lines separate paragraphs,
    lines indented by two spaces are kept verbatim. ``explain``: code -> (what upstream does with it, whether data
    is at risk, which wqtool command fixes it). ``replay_codes``: the codes only its replay raises.
    ``expired_code``: "a record already expired at --as-of" (replay's hint when nothing is live). ``told_codes``:
    discovery warnings every reader tells, dump included (an interrupted ``--apply``: "rerun it to finish").
    ``shares_dir_with``: formats that may read the same directory, each its own log of its own files (an Orth
    logPath): a directory both claim strongly, naming each other here, resolves to a log of each. ``reads_urls``:
    ``Format.detect`` also takes URLs."""

    plural: str                                 # "workq logs", "Kestrel journals"
    file_expected: str                          # "a workq segment (expected magic ... at offset 0)"
    dir_expected: str                           # "a workq log directory (no segments ...)"
    stdin_name: str | None = None
    manual: str = ""
    explain: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    replay_codes: frozenset[str] = frozenset()
    expired_code: str | None = None
    told_codes: frozenset[str] = frozenset()
    shares_dir_with: frozenset[str] = frozenset()
    reads_urls: bool = False                    # ``detect`` also takes URLs (``scheme://``, ``jdbc:``: a database)


# ---------------------------------------------------------------- reading
class Passes(Part):
    """The passes over a log beyond ``Format.run``: each the reference pass by default, which a format replaces
    with its own fast one (a C kernel) proven equal to it."""

    def file_events(self, log, i: int, start_index: int = 0) -> Iterator:
        """The records and row-level findings of the log's ``i``-th file, in file order, as the log's reader yields
        them for that file (record indexes from ``start_index``; the log's discovery findings not repeated): what
        ``dump --follow``, ``--as-of first|last`` and a Spark task reading one file read."""
        raise NotImplementedError(f"{self.fmt.name}: reading one file on its own")

    def log_name(self, log) -> str:
        """What reports call the log: its ``label`` where it has one, else its root."""
        return getattr(log, "label", log.root)

    def run_log(self, log, opts: Options, *, limit: int | None = None, state: bool = True,
                workers: int | None = None) -> LogReport:
        """verify + replay of one log, as fast as the format can."""
        p = self.fmt.run(log, opts, limit=limit)
        for _ in p.events():
            pass
        return p.report

    def verify(self, logs: Sequence[Any], opts: Options, *, max_findings: int | None = None,
               workers: int | None = None) -> VerifyReport:
        return VerifyReport([self.run_log(log, opts, limit=max_findings, state=False, workers=workers)
                             for log in logs])

    def replay_findings(self, log, opts: Options) -> Iterator[Finding]:
        """The findings only the replay of the whole log raises (``About.replay_codes``), streamed, in run order."""
        cls, codes = self.fmt.record_cls, self.fmt.about.replay_codes
        for ev in self.fmt.run(log, opts, limit=0).events():
            if ev.__class__ is not cls and ev.code in codes:
                yield ev

    def stats_log(self, log, opts: Options, *, ids: bool = True) -> tuple[LogReport, Any]:
        """``stats`` of one log in one pass: (its LogReport — verdict, finding counts, replayed state, no finding
        kept — and its ``RecordStats``). ``ids`` False: the distinct jobs may be only counted."""
        fmt = self.fmt
        run, st, facts, cls = fmt.run(log, opts, limit=0), RecordStats(), fmt.facts, fmt.record_cls
        for ev in run.events():
            if ev.__class__ is cls:
                st.add(facts(ev))
        return run.report, st

    def series(self, log, opts: Options, *, limit: int | None = None, max_bins: int) -> tuple | None:
        """``engine.series.series_log`` of one log in the format's own one pass — (LogReport, RecordStats,
        Series) — or None: the reference pass computes them with ``series_probe``."""
        return None

    def series_probe(self, replay):
        """Live jobs per queue, wait and run times read from ``replay`` around each record (``SeriesProbe``), or
        None: the format's series are the records over time only."""
        return None

    def time_span(self, log, end: str | None = None) -> tuple[int | None, int | None]:
        """(first, newest) record time of the log in Unix ns, for ``--as-of first|last``: the earliest time in the
        first file with timed records and the latest in the last such file. ``end``: only that end is needed."""
        n = len(self.fmt.files(log))
        first = last = None
        for i in range(n):
            times = self._file_times(log, i)
            if times:
                first = min(times)
                break
        for i in reversed(range(n)):
            times = self._file_times(log, i)
            if times:
                last = max(times)
                break
        return first, last

    def _file_times(self, log, i: int) -> list[int]:
        cls, facts = self.fmt.record_cls, self.fmt.facts
        return [t for ev in self.file_events(log, i) if ev.__class__ is cls
                for t in (facts(ev).time_ns,) if t is not None]

    def refresh(self, log, opts: Options):
        """The log discovered again (new files, rotations: ``dump --follow``); a log of files named one by one
        stays as it is."""
        if not getattr(log, "is_dir", False):
            return log
        name = self.log_name(log)
        for d in self.fmt.discover([log.root], opts):
            if self.log_name(d) == name:
                return d
        return log

    def follow(self, log, opts: Options, *, poll_s: float = 1.0, stop: Callable[[], bool] | None = None) -> Iterator:
        """``dump --follow``: the records and findings as ``run`` yields them, then the new ones as the log grows,
        until ``stop()`` is true (checked every ``poll_s``)."""
        from .follow import follow_log
        return follow_log(self.fmt, log, opts, poll_s=poll_s, stop=stop)


class Dump(Part):
    """``dump``'s vocabulary and fast reads. ``record_kinds``: the ``--type`` vocabulary (labels
    ``RecordFacts.kind`` carries); ``kind_noun``: what one is called; ``filters``: filters beyond --type and the
    offsets ("job", "time"); ``special_dumps``: extra views by option name (``special``)."""

    record_kinds: tuple[str, ...] = ()
    kind_noun: str = "record kind"
    filters: frozenset[str] = frozenset()
    special_dumps: frozenset[str] = frozenset()

    def encoded_records(self, log, opts: Options, *, style: str, payload: str, limit: int | None = None):
        """``dump -o jsonl|json`` of a whole intact log, fast: ``(LogReport, chunks of (rows, text))``, or None:
        dump runs the reference pass (as it must for a log with errors)."""
        return None

    def select_records(self, log, opts: Options, flt):
        """dump's read with a selection (``engine.dump.RecordFilter``) in the format's fastest pass (an object whose
        ``events(limit)`` yields the kept records and the error findings, and whose ``stopped`` says where the read
        stopped), or None: dump filters the reference pass."""
        return None

    def special(self, which: str, logs: Sequence[Any], opts: Options, **kw) -> Iterator[tuple[str, Any]]:
        """An extra view (``special_dumps``): yields (stream, chunk), stream "out" | "err" (str) or "raw" (bytes)."""
        raise UsageError(f"--{which} does not apply to {self.fmt.about.plural}")


# ---------------------------------------------------------------- changing files
#: what a repair plan's report states of the jobs (workq) or items (Kestrel) it would lose (``Plans.repair_loss``)
LOSS_KEYS = ("jobs_lost", "jobs_lost_more", "jobs_lost_unread", "items_lost", "items_lost_at", "items_lost_at_more",
             "items_lost_unread")


def loss_of(doc: dict) -> dict:
    return {k: doc[k] for k in LOSS_KEYS if k in doc}


class Plans(Part):
    """The commands that change files: each returns an ``engine.plan.Plan``. What a format lacks says so (exit 2).
    ``Plans.of(fmt)``: the format's, or this base, which refuses each."""

    @classmethod
    def of(cls, fmt: Format) -> Plans:
        return fmt.plans if fmt.plans is not None else cls(fmt)

    @staticmethod
    def can(fmt: Format, command: str) -> bool:
        """Whether the format has the plan of ``command`` ("pack", "repair", "clean")."""
        return fmt.plans is not None and fmt.plans.has(command)

    def has(self, command: str) -> bool:
        return getattr(type(self), command) is not getattr(Plans, command)

    def pack(self, log, opts: PackOptions):
        raise UsageError(f"pack is not available for {self.fmt.about.plural}")

    def repair(self, log, opts: RepairOptions):
        raise UsageError(f"repair is not available for {self.fmt.about.plural}")

    def repair_loss(self, log, opts: RepairOptions, prior=None) -> dict:
        """What ``repair(log, opts)`` states of the jobs or items it would lose (its report's ``LOSS_KEYS``, nothing
        written). ``prior``: ``LogReport.reuse`` of this log (the format's own pass): a format that can tells it from
        there, reading the log no second time."""
        return loss_of(self.repair(log, opts).report_doc())

    def clean(self, log, opts: Options):
        raise UsageError(f"clean is not available for {self.fmt.about.plural}")

    def finish_interrupted(self, path: str) -> list[str]:
        """Before discovery for --apply: finish what a crashed apply left behind."""
        return []

    def missing(self, path: str) -> Exception | None:
        """For a PATH that does not exist: the error to report instead of "no such file or directory" when an
        interrupted ``--apply`` of this format between two renames explains it, else None."""
        return None


class Live(Part):
    """A log a process is writing: ``in_flight_code`` is the note a torn tail becomes then (``engine.live``)."""

    in_flight_code: str | None = None

    def writer(self, log) -> str | None:
        """Who is writing this log right now, in words, or None. Commands that change files refuse a live log."""
        return None

    def files(self, log) -> list[str]:
        """The files a writer appends to (watched while a command reads the log): the log's last file."""
        return self.fmt.files(log)[-1:]


class Spark(Part):
    """The Spark data sources' part. ``source`` / ``fleet``: ``wqtool.spark`` classes by dotted path (None: the
    generic ones); ``state_types``: the type of each field of replay's rows (the ``<name>-state`` source and
    ``replay --engine spark -o parquet``), None: no such table."""

    source: str | None = None
    fleet: str | None = None
    state_types: dict[str, str] | None = None

    def file_batches(self, log, i: int, start_index: int, *, payload: str, schema, file_name: str,
                     values: dict) -> Iterator | None:
        """``file_events`` of the log's ``i``-th file with its records as ``pyarrow.RecordBatch``es of ``schema``
        made by the format's own fast reader (the same rows), or None: only ``file_events``."""
        return None

    def file_batches_at(self, log, i: int, start_index: int, at: int, *, payload: str, schema, file_name: str,
                        values: dict) -> Iterator | None:
        """``file_batches`` from the first record at or after byte ``at`` (a later byte-range share of the records
        source; the records before it framed, not decoded, so the record numbers are the whole read's), or None:
        the share reads from the file's start."""
        return None

    def file_records(self, log, i: int) -> int:
        """How many records the reader reads from the log's ``i``-th file (the next file's ``start_index``)."""
        cls = self.fmt.record_cls
        return sum(1 for ev in self.fmt.passes.file_events(log, i) if ev.__class__ is cls)

    def options(self, options: dict) -> dict:
        """A data source's format-specific options (lower-cased keys) -> ``Options.settings``; a bad value is a
        ValueError naming the option."""
        return {}
