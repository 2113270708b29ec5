"""The Format interface and its registry: the one contract every log format implements.

Commands, the server and the Spark layer call this interface and never name a format. A format is a package
``wqtool.engine.<name>`` whose ``format.py`` defines a ``Format`` subclass and registers one instance; the
registry imports the built-in packages lazily (``BUILTIN``) so that this module imports no format, and
``register()`` adds more at run time (a test registers a toy format in-process).

What a format supplies (see ``Format`` for the signatures):

* identity: ``name`` (``--format`` value, Spark source name), ``title``, ``codes`` (its finding codes),
  ``shares_dir_with`` (formats whose logs may live in the same directory: one PATH, a log of each),
  ``replay_codes`` (those only its replay raises), ``record_fields`` (its JSON row), ``record_kinds`` (the
  ``dump --type`` vocabulary);
* ``detect(path)``: evidence from the format's own declarations in ``wqtool.formats`` (magic, names); a PATH
  is one format's (the first strong claim), or, for a directory, several formats' when each claims it strongly
  and they declare ``shares_dir_with`` each other (``detect_all``);
* ``discover(paths, opts)``: the logs behind PATHs (a log = whatever the format reads as one unit);
* ``run(log, opts)``: the reader -> replay pass (``engine.run.ReplayPass``) over one log, ``run_log``,
  ``verify`` and ``stats_log`` (a hot path may stand in for the pass), ``replay_findings``;
* views for output: ``record_view`` (JSON row, table cells, hex title), ``state_view(state)`` (replayed state as
  rows, summary and text), ``new_stats()`` (per-record statistics), ``series_probe(replay)`` (optional: queue
  depth, wait and run times read from the running replay for ``engine.series``: report, stats --chart/--timeline);
* plans for the commands that change files: ``pack_plan`` (``engine.plan``), later ``repair_plan`` and
  ``clean_plan``;
* Spark: ``spark_source`` / ``spark_fleet``, dotted paths of classes in ``wqtool.spark`` (imported only there).
"""
from __future__ import annotations

import abc
import importlib
import os
import stat
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, Iterator, Sequence

from ..errors import UsageError, WqError
from .fileio import input_error, kind_of, listing_once, read_head
from .findings import Codes, Finding
from .options import Options, PackOptions, RepairOptions, Settings
from .run import LogReport, ReplayPass, VerifyReport
from .stats import RecordFacts, RecordStats

#: The packages of the formats that ship with wqtool, in detection order.
BUILTIN: tuple[str, ...] = ("wqtool.engine.workq", "wqtool.engine.kestrel", "wqtool.engine.orth_callbacks",
                           "wqtool.engine.orth_executor_logs", "wqtool.engine.orth_joblog",
                           "wqtool.engine.snaplist", "wqtool.engine.evtj", "wqtool.engine.fastjournal")


# ---------------------------------------------------------------- values passed to every format
@dataclass(frozen=True)
class Evidence:
    """Why a format claims a path. ``strong``: its own declarations match (magic bytes, the upstream naming
    rules and a first record that parses); weak evidence is a guess that read-only commands may act on, but a
    command that changes files refuses it unless ``--format`` names the format."""

    strong: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SeriesStep:
    """What one record did to the running replay, for the time series (``engine.series``): ``moves`` are
    (queue, change of its live jobs) pairs; ``wait_ns``: a job started after waiting this long; ``run_ns``: a job
    finished after running this long."""

    moves: tuple[tuple[str, int], ...] = ()
    wait_ns: int | None = None
    run_ns: int | None = None


class SeriesProbe:
    """A format's window into its running replay (``Format.series_probe``): ``before(rec)`` is called just before
    the replay applies a record, ``after(rec, token)`` just after, with what ``before`` returned. Both O(1): they
    read the replay's state, they never re-apply its rules."""

    def before(self, rec) -> Any:
        return None

    def after(self, rec, token) -> SeriesStep | None:
        raise NotImplementedError


@dataclass(slots=True)
class SendReport:
    """What ``replay --send TARGET`` did (or, ``dry_run``, would do): one line per item, and the counts. An item
    counts as sent only once the receiver acknowledged it; nothing is deleted or marked before that."""

    target: str
    dry_run: bool = False
    sent: int = 0              # delivered and acknowledged (dry run: would be sent)
    skipped: int = 0           # nothing to send for it (already delivered, not pending)
    failed: int = 0            # refused by the receiver or not delivered (kept, to be sent again)
    already: int = 0           # the receiver held it already (delivered before a crash): marked done, not resent
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Column:
    """A fixed-width text column: ``width`` None for the last, unpadded one; ``gap`` spaces before it."""

    title: str
    width: int | None
    align: str = "<"
    gap: int = 1


class RecordView:
    """How a format's records look in ``dump``'s outputs and in Spark rows."""

    fields: tuple[str, ...] = ()
    #: each field's type in Spark rows: string, long, int, u64 (any uint64: DECIMAL(20,0)), bool, bytes (the
    #: payload renderings: a string, or binary with the data source's ``payload=binary``)
    types: dict[str, str] = {}
    columns: tuple[Column, ...] = ()

    def row(self, rec, payload: str) -> dict:
        """The record's stable JSON row (``fields``, in order). Default: each field the record's attribute of that
        name (``file``: its ``path``; ``at``: its position as printed, ``offsets.at``; ``record_index``: its
        ``index``; ``error``: None, a record is no damage)."""
        from ..offsets import at

        def value(f):
            if f == "file":
                return rec.path
            if f == "at":
                return at(rec.path, rec.offset)
            return getattr(rec, "index" if f == "record_index" else f, None)
        return {f: value(f) for f in self.fields}

    def damage_row(self, f: Finding) -> dict:
        """A row for an error finding in the record stream (Spark permissive mode, exports)."""
        from ..offsets import at
        row = dict.fromkeys(self.fields)
        row.update(file=f.path, offset=f.offset, error=f"{f.code}: {f.message}")
        if "at" in row:
            row["at"] = at(f.path, f.offset) if f.path else None
        return row

    def binary(self, rec) -> dict:
        """The raw bytes of the record's ``bytes`` fields (Spark ``payload=binary``)."""
        return {}

    def cells(self, rec, payload: str) -> tuple:
        """The record's table cells, one per column (default: the row's field named by each column's title)."""
        row = self.row(rec, payload)
        return tuple(row[c.title] for c in self.columns)

    def hex_title(self, rec) -> str:
        """The line above a record's hex dump."""
        return f"{os.path.basename(rec.path)}@0x{rec.offset:x} #{rec.index} len={rec.length}"


class StateView:
    """How a format's replayed state looks in ``replay`` and ``stats`` (JSON and text)."""

    rows_key: str = "rows"      # the JSON key of the row list: "jobs", "items", ...

    def summary(self) -> dict:
        """The state's summary fields (replay -o json / jsonl), digest included."""
        raise NotImplementedError

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        """One JSON row per job / item, in the digest's order."""
        raise NotImplementedError

    def encoded_rows(self, style: str, payload: str = "base64") -> Iterator[str]:
        """``rows()`` already encoded as replay writes them, in chunks of whole rows (render writes them as they
        come: memory does not grow with the output). ``style`` "jsonl": ``json.dumps(row) + "\n"`` per row;
        "json": ``json.dumps(row, indent=2)`` as it nests two levels deep in ``replay -o json``'s document (every
        line indented by 4 more spaces), rows joined by ",\n" inside a chunk (and by the writer between chunks). A
        format may encode them faster (workq's C table does)."""
        import json         # here: replay only (start-up)
        if style == "jsonl":
            for row in self.rows(payload):
                yield json.dumps(row) + "\n"
        else:
            for row in self.rows(payload):
                yield "    " + json.dumps(row, indent=2).replace("\n", "\n    ")

    def table_header(self) -> str:
        """The table's title line (default: the row fields, two spaces apart)."""
        for row in self.rows("none"):
            return "  ".join(row)
        return ""

    def table_lines(self) -> Iterator[str]:
        """One line per row (default: the row's values, two spaces apart)."""
        for row in self.rows("none"):
            yield "  ".join("-" if v is None else str(v) for v in row.values())

    def counts_matrix(self) -> tuple[str, list[str], list[tuple[str, dict[str, int]]]] | None:
        """(title, state labels, [(group, counts per label)]) for a counts table, or None."""
        return None

    def summary_lines(self) -> list[str]:
        """The lines under the table (``replay``'s text output), without notes and digest."""
        return []

    def extra_doc(self) -> dict:
        """Fields ``replay -o json`` adds before ``exit_code`` (e.g. the queue's name)."""
        return {}

    # what stats asks of a state (the Spark fleet ships a summary with the same three answers)
    def counts_by_state(self) -> dict[str, int]:
        raise NotImplementedError

    def queues(self) -> dict[str, dict[str, int]]:
        """Live jobs / items by state per queue (default: the format has no queues)."""
        return {}

    def digest(self) -> str:
        raise NotImplementedError

    # analytics (stats): named tables of the state, and the chart of one of them
    def analytics(self) -> dict[str, list[dict]]:
        """Named tables ``stats`` prints, puts in its JSON and writes with ``--out DIR`` (rows of plain values)."""
        return {}

    def chart(self) -> dict | None:
        """What ``stats --chart FILE`` draws: ``{"table", "x", "series", "labels", "colors", "title"}`` naming one
        of ``analytics()``'s tables (a bar per ``x``, the series stacked), or None."""
        return None


# ---------------------------------------------------------------- the interface
class Format(abc.ABC):
    """A log format (subclass, set the class attributes, register an instance). The abstract methods are the
    contract's required part — detect, discover, files, run, facts, state_view; the rest have defaults a format
    overrides where it can do better (a hot path) or more (plans, send, Spark).

    A PATH is normally one format's: the first format in registry order whose ``detect`` gives strong evidence.
    Formats whose logs live side by side in one directory (an Orth logPath: the executor log folders and the
    callback retry files) each name the other in ``shares_dir_with``; a directory both claim strongly then
    resolves to a log of each (``detect_all``, ``resolve_each``), every command handles each log on its own (its
    own verdict, report, plan) and no command names a format. Each such format reads only its own files there, and
    a plan leaves the other's files to the other's plan (``Options.shared`` names the shared PATHs).
    """

    name: ClassVar[str]                         # --format value and Spark source name
    title: ClassVar[str]                        # "workq 0.2.0 command log"
    plural: ClassVar[str]                       # "workq logs", "Kestrel journals" (messages)
    file_expected: ClassVar[str]                # "a workq segment (expected magic ... at offset 0)"
    dir_expected: ClassVar[str]                 # "a workq log directory (no segments ..., no lock files)"
    #: the name one file of this format read from stdin (``dump -``, ``verify -``) is given, a name its reader
    #: takes ("000000001.log"); None: the format needs its directory (or its own file name) and cannot be read so
    stdin_name: ClassVar[str | None] = None
    #: the format in a few paragraphs for wqtool-formats(5): blank lines separate paragraphs; lines indented by two
    #: spaces are kept verbatim (byte layouts, examples)
    manual: ClassVar[str] = ""
    codes: ClassVar[Codes] = {}
    #: ``--explain CODE`` beyond the code's meaning: code -> (what upstream does with it, whether data is at risk,
    #: which wqtool command fixes it), kept beside ``codes`` in the format's codes.py (tests: every code, all four)
    explain: ClassVar[dict[str, tuple[str, str, str]]] = {}
    replay_codes: ClassVar[frozenset[str]] = frozenset()
    #: ``dump --type`` vocabulary: label -> the value ``RecordFacts.kind`` carries for it.
    record_kinds: ClassVar[tuple[str, ...]] = ()
    #: what one of ``record_kinds`` is called in messages ("command", "Kestrel opcode", ...)
    kind_noun: ClassVar[str] = "record kind"
    #: dump filters beyond --type and the offsets that this format supports: "job", "time".
    filters: ClassVar[frozenset[str]] = frozenset()
    #: extra dump views by option name (e.g. "qdump"): see ``special_dump``.
    special_dumps: ClassVar[frozenset[str]] = frozenset()
    #: the format's own settings, typed (``engine.options``): its fields with a help are its ``-O KEY=VALUE``
    #: options; the format reads them as ``opts.of(self)``
    settings: ClassVar[type[Settings]] = Settings
    #: the note a torn tail becomes when the log is being written (``engine.live``): "WQ-IN-FLIGHT", ...; None:
    #: the format cannot tell a record in flight from damage (its torn tails stay torn tails)
    in_flight_code: ClassVar[str | None] = None
    #: the code of "a record already expired at --as-of, so replay skips it" (replay's hint when nothing is live)
    expired_code: ClassVar[str | None] = None
    #: discovery warnings every reader tells, dump included (which otherwise tells errors only): an interrupted
    #: ``--apply`` of wqtool's own ("rerun it to finish")
    told_codes: ClassVar[frozenset[str]] = frozenset()
    #: formats that may read the same directory as this one, each its own log of its own files (an Orth logPath
    #: holds the executor log folders and the callback retry files): when auto-detection finds strong evidence of
    #: this format and of such a format in one directory, and both name each other here, the PATH resolves to a log
    #: of each (``detect_all``), each with its own verdict. ``--format`` still reads only the named format.
    shares_dir_with: ClassVar[frozenset[str]] = frozenset()
    #: ``wqtool.spark`` classes, by dotted path "module:Class" (None: the generic ones).
    spark_source: ClassVar[str | None] = None
    spark_fleet: ClassVar[str | None] = None
    #: the type of each field of replay's rows (``state_view(...).rows()``, in their order), as ``RecordView.types``
    #: names them: the columns of the Spark ``<name>-state`` source and of ``replay --engine spark -o parquet``;
    #: None: the format has no such table
    state_types: ClassVar[dict[str, str] | None] = None
    record_view: RecordView
    #: the record class the reader yields (events() tells records from findings by class)
    record_cls: ClassVar[type]

    # -- detection and discovery
    @abc.abstractmethod
    def detect(self, path: str) -> Evidence | None:
        """Evidence that ``path`` (an existing directory or regular file) is this format, or None."""
        raise NotImplementedError

    def fits(self, path: str) -> bool:
        """Whether ``--format <name>`` may read ``path`` (default: the format claims it). A format that reads
        a container other formats also claim (an Orth logPath holds the retry files and the executor logs) says so
        here."""
        return self.detect(path) is not None

    def missing(self, path: str) -> Exception | None:
        """For a PATH that does not exist: the error to report instead of "no such file or directory" when this
        format knows why it is missing (an interrupted ``--apply`` of its own between two renames), else None."""
        return None

    def detect_url(self, url: str) -> Evidence | None:
        """Evidence that a PATH given as a URL (``scheme://...``, ``jdbc:...``) is this format's (e.g. a database
        table); None: the format reads no URLs. ``discover`` then receives the URL as a path."""
        return None

    @abc.abstractmethod
    def discover(self, paths: Sequence[str], opts: Options) -> list[Any]:
        """The logs behind PATHs (each an object with ``.root``, ``.findings`` and ``.is_dir``)."""
        raise NotImplementedError

    @abc.abstractmethod
    def files(self, log) -> list[str]:
        """The files one log reads, in order (sizes, progress, --horizon)."""
        raise NotImplementedError

    def log_name(self, log) -> str:
        """What reports call the log (``LogReport.root``): its ``label`` where it has one (files named one by one
        are called by their names, not by their directory), else its root."""
        return getattr(log, "label", log.root)

    def file_events(self, log, i: int, start_index: int = 0) -> Iterator:
        """The records and row-level findings of the log's ``i``-th file, in file order, as the log's reader
        yields them for that file (record indexes from ``start_index``; the log's discovery findings are not
        repeated): what a Spark task reading one file yields."""
        raise NotImplementedError

    def file_batches(self, log, i: int, start_index: int, *, payload: str, schema, file_name: str,
                     values: dict) -> Iterator | None:
        """``file_events`` of the log's ``i``-th file with its records as Arrow batches made by the format's own
        fast reader: ``pyarrow.RecordBatch``es of ``schema`` (the ``record_view`` fields it names, rendered as
        ``record_view.row(rec, payload)``; ``file`` as ``file_name``; the names in ``values`` as those strings;
        other columns null), in file order with whatever records and findings the reference reader yields where
        the fast reader stops — the same rows as ``file_events``. None (the default): only ``file_events``. What
        a Spark task reading one file yields fast (workq: the C kernel's columns)."""
        return None

    def file_records(self, log, i: int) -> int:
        """How many records the reader reads from the log's ``i``-th file (the next file's ``start_index``)."""
        cls = self.record_cls
        return sum(1 for ev in self.file_events(log, i) if ev.__class__ is cls)

    def source_options(self, options: dict) -> dict:
        """A Spark data source's format-specific options (lower-cased keys) -> ``Options.settings``; a bad value is
        a ValueError naming the option."""
        return {}

    # -- reading
    @abc.abstractmethod
    def run(self, log, opts: Options, *, limit: int | None = None) -> ReplayPass:
        """The reference reader -> replay pass over one log: ``events()`` yields records and findings in file
        order; once exhausted, ``.report`` (a LogReport with the replayed state)."""
        raise NotImplementedError

    def run_log(self, log, opts: Options, *, limit: int | None = None, state: bool = True,
                workers: int | None = None) -> LogReport:
        """verify + replay of one log, as fast as the format can (a hot path may stand in for ``run``)."""
        p = self.run(log, opts, limit=limit)
        for _ in p.events():
            pass
        return p.report

    def verify(self, logs: Sequence[Any], opts: Options, *, max_findings: int | None = None,
               workers: int | None = None) -> VerifyReport:
        return VerifyReport([self.run_log(log, opts, limit=max_findings, state=False, workers=workers)
                             for log in logs])

    def replay_findings(self, log, opts: Options) -> Iterator[Finding]:
        """The findings only the replay of the whole log raises (``replay_codes``), streamed, in run order."""
        cls = self.record_cls
        for ev in self.run(log, opts, limit=0).events():
            if ev.__class__ is not cls and ev.code in self.replay_codes:
                yield ev

    def stats_log(self, log, opts: Options, *, ids: bool = True) -> tuple[LogReport, Any]:
        """``stats`` of one log in one pass: (its LogReport — verdict, finding counts, replayed state, no finding
        kept — and its ``RecordStats``). ``ids`` False: the distinct jobs may be only counted
        (``RecordStats.distinct``, ``job_count()``) instead of kept in ``RecordStats.jobs`` (needed only for a
        union over logs). The default drives ``run`` and feeds ``facts(record)`` of every record; a hot path may
        stand in for ``run`` (workq: the kernel's pass; orth-joblog: its columnar fast path): the same results."""
        run, st, facts, cls = self.run(log, opts, limit=0), RecordStats(), self.facts, self.record_cls
        for ev in run.events():
            if ev.__class__ is cls:
                st.add(facts(ev))
        return run.report, st

    def encoded_records(self, log, opts: Options, *, style: str, payload: str, limit: int | None = None):
        """``dump -o jsonl|json`` of a whole log (no filter), fast: ``(LogReport, chunks)`` where chunks yields
        ``(rows, text)``: ``record_view.row(rec, payload)`` of each record through ``json.dumps(row,
        ensure_ascii=False)``, each followed by "\n" (style "jsonl") or joined by ",\n  " within a chunk ("json");
        at most ``limit`` rows. None (the default): no such path for this log — dump runs the reference pass, as it
        must for a log with errors (they are printed among the rows)."""
        return None

    def select_records(self, log, opts: Options, flt):
        """dump's read of a log with a selection (``engine.dump.RecordFilter``: kinds, jobs, times, an offset
        range) in the format's fastest pass: an object whose ``events(limit)`` yields, in file order, the records
        ``flt`` keeps (at most ``limit``) and the error findings inside what was read, and whose ``stopped`` is
        (path, offset) where the read stopped before the log's end. None (the default): dump runs the reference
        pass and filters it."""
        return None

    # -- views
    @abc.abstractmethod
    def facts(self, rec) -> RecordFacts:
        raise NotImplementedError

    def fast_series(self, log, opts: Options, *, limit: int | None = None, max_bins: int) -> tuple | None:
        """``engine.series.series_log`` of one log in the format's own one pass — (LogReport, RecordStats,
        Series), proven equal to the reference pass with ``series_probe`` — or None (the default): the reference
        pass computes them (workq: its kernel bins them in C)."""
        return None

    def series_probe(self, replay) -> SeriesProbe | None:
        """Live jobs per queue, wait and run times, read from ``replay`` (a ``run(...)``'s ``.replay``) around each
        record (``report``, ``stats --chart|--timeline``); None (the default): the format's series are the records
        over time only (``facts``)."""
        return None

    @abc.abstractmethod
    def state_view(self, state, log=None) -> StateView:
        """The replayed ``state`` of ``log`` as rows, summary and text (``log``: what some views name, e.g. the
        queue; None where a caller has only the state)."""
        raise NotImplementedError

    def special_dump(self, which: str, logs: Sequence[Any], opts: Options, **kw) -> Iterator[tuple[str, Any]]:
        """An extra dump view (``special_dumps``): yields (stream, chunk), stream "out" | "err" (str) or
        "raw" (bytes)."""
        raise UsageError(f"--{which} does not apply to {self.plural}")

    # -- plans (commands that change files): each returns an engine.plan.Plan
    def pack_plan(self, log, opts: PackOptions):
        raise UsageError(f"pack is not available for {self.plural}")

    def repair_plan(self, log, opts: RepairOptions):
        raise UsageError(f"repair is not available for {self.plural}")

    def repair_loss(self, log, opts: RepairOptions, prior=None) -> dict:
        """What ``repair_plan(log, opts)`` states of the jobs or items it would lose: its ``report_doc``'s keys of
        ``LOSS_KEYS`` (nothing written). ``prior``: ``LogReport.reuse`` of this log at these options (the format's
        own pass, which ``report`` already made): a format that can tells it from there, reading the log no second
        time; by default, the plan."""
        return loss_of(self.repair_plan(log, opts).report_doc())

    def clean_plan(self, log, opts: Options):
        raise UsageError(f"clean is not available for {self.plural}")

    # -- comparison
    def differ(self):
        """``wqtool diff``'s part of the format: an ``engine.diff.Differ`` (the jobs whose replayed rows differ,
        how two logs relate, the records that changed a job)."""
        raise UsageError(f"diff is not available for {self.plural}")

    # -- delivery
    def send(self, log, target: str, opts: Options, *, dry_run: bool = False,
             progress: Callable[[str], None] | None = None) -> SendReport:
        """``replay --send TARGET``: deliver what the log holds pending to its receiver (an Orth admin, a
        fastjournal daemon, ...), marking or deleting an item only after the receiver acknowledged it."""
        raise UsageError(f"--send does not apply to {self.plural}")

    @property
    def can_send(self) -> bool:
        """Whether the format implements ``send`` (``replay --send`` on a shared directory sends the logs that can)."""
        return type(self).send is not Format.send

    def live_writer(self, log) -> str | None:
        """Who is writing this log right now, in words (a server holding its lock, a process holding a file open),
        or None. A partial last record of a live log is "in flight", not damage; commands that change files
        refuse a live log."""
        return None

    def live_files(self, log) -> list[str]:
        """The files a writer appends to (watched while a command reads the log: a change means a live writer);
        default: the log's last file."""
        return self.files(log)[-1:]

    def time_span(self, log, end: str | None = None) -> tuple[int | None, int | None]:
        """(first, newest) record time of the log in Unix ns, for ``--as-of first|last`` (None: no record carries
        a time). Default: the earliest time in the first file that has timed records and the latest in the last
        such file (``file_events`` + ``facts``: one file read from each end). ``end`` ``"first"`` or ``"last"``:
        only that end is needed (a format may then leave the other None and not read it)."""
        n = len(self.files(log))
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
        cls, facts = self.record_cls, self.facts
        return [t for ev in self.file_events(log, i) if ev.__class__ is cls
                for t in (facts(ev).time_ns,) if t is not None]

    def refresh(self, log, opts: Options):
        """The log discovered again (new files, rotations: ``dump --follow``). Default: its directory discovered
        again, the log of the same name taken; a log of files named one by one stays as it is."""
        if not getattr(log, "is_dir", False):
            return log
        name = self.log_name(log)
        for d in self.discover([log.root], opts):
            if self.log_name(d) == name:
                return d
        return log

    def follow(self, log, opts: Options, *, poll_s: float = 1.0, stop: Callable[[], bool] | None = None) -> Iterator:
        """``dump --follow``: the records and findings of the log as ``run`` yields them, then, as the log grows,
        the new ones (new files and rotations included), until ``stop()`` is true (checked every ``poll_s``).
        Default: re-discover the log each poll and read what each file gained since (``engine.follow``)."""
        from .follow import follow_log
        return follow_log(self, log, opts, poll_s=poll_s, stop=stop)

    def finish_interrupted(self, path: str) -> list[str]:
        """Before discovery for --apply: finish what a crashed apply left behind (a no-op by default)."""
        return []

    def __repr__(self) -> str:
        return f"<format {self.name}>"


# ---------------------------------------------------------------- the registry
_REGISTRY: dict[str, Format] = {}
_next = 0       # how many of BUILTIN's packages are imported (in order: detection order is registry order)


def register(fmt: Format, *, replace: bool = False) -> Format:
    """Add a format (its name must be new unless ``replace``). Returns it. A format from outside ``BUILTIN``
    comes after every built-in one."""
    if type(fmt).__module__.rsplit(".", 1)[0] not in BUILTIN:
        _load()
    if fmt.name in _REGISTRY and not replace and _REGISTRY[fmt.name] is not fmt:
        raise ValueError(f"a format named {fmt.name!r} is already registered")
    clash = {c for f in _REGISTRY.values() if f.name != fmt.name for c in f.codes} & set(fmt.codes)
    if clash:
        raise ValueError(f"finding codes of {fmt.name!r} clash with another format's: {sorted(clash)}")
    _REGISTRY[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def _load_next() -> bool:
    """Import the next built-in format package (it registers itself); False when all are."""
    global _next
    if _next >= len(BUILTIN):
        return False
    _next += 1
    importlib.import_module(BUILTIN[_next - 1] + ".format")
    return True


def _load() -> None:
    while _load_next():
        pass


def in_order() -> Iterator[Format]:
    """The registered formats in detection order, each built-in package imported only when the iteration reaches
    it: detection that stops at the first strong claim (a workq log: the first format) loads no other format."""
    i = 0
    while True:
        found = list(_REGISTRY.values())
        if i < len(found):
            yield found[i]
            i += 1
        elif not _load_next():
            return


def formats() -> list[Format]:
    """Every registered format, in detection order."""
    _load()
    return list(_REGISTRY.values())


def names() -> list[str]:
    return [f.name for f in formats()]


def get(name: str) -> Format:
    for f in in_order():
        if f.name == name:
            return f
    raise UsageError(f"--format: unknown format {name!r} (expected one of auto, {', '.join(names())})")


def format_of_code(code: str) -> Format | None:
    """The format a finding code belongs to, or None; the formats loaded so far are asked first (a log's own
    codes: its format is loaded), the other packages imported only for a code none of them has."""
    for f in list(_REGISTRY.values()) or in_order():
        if code in f.codes:
            return f
    for f in in_order():
        if code in f.codes:
            return f
    return None


def load_object(dotted: str) -> Any:
    """``"package.module:Name"`` -> the object (for the Spark classes a format names)."""
    mod, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(mod), attr)


# ---------------------------------------------------------------- logs: a format and one of its logs
@dataclass
class Log:
    """One log as a command sees it: its format and the format's own log object. ``weak``: auto-detected from
    weak evidence only (commands that change files refuse it unless --format names the format)."""

    fmt: Format
    data: Any
    weak: bool = False

    @property
    def root(self) -> str:
        return self.data.root

    @property
    def files(self) -> list[str]:
        return self.fmt.files(self.data)


def check_input(path: str) -> os.stat_result:
    """stat() a PATH and refuse what no format can read — anything but a directory or a regular file (FIFOs,
    devices, sockets) — without opening it: UsageError (exit 2)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            for f in in_order():
                why = f.missing(path)
                if why is not None:
                    raise why from None
        raise input_error(path, exc) from None
    if not is_regular_or_dir(st):
        raise UsageError(f"{kind_of(st.st_mode)}, not a log directory or file: refused without reading it",
                         path=path)
    return st


def detect(path: str, candidates: Sequence[Format] | None = None) -> tuple[Format, Evidence]:
    """The format of one existing PATH: the first strong claim in registry order, else the first weak one."""
    weak: tuple[Format, Evidence] | None = None
    for f in (candidates if candidates is not None else in_order()):
        ev = f.detect(path)
        if ev is None:
            continue
        if ev.strong:
            return f, ev
        if weak is None:
            weak = (f, ev)
    if weak is not None:
        return weak
    cands = list(candidates) if candidates is not None else formats()
    if len(cands) == 1:
        only = cands[0]
        if os.path.isdir(path):
            raise UsageError(f"not {only.dir_expected}", path=path)
        raise UsageError(f"cannot detect the log format: not {only.file_expected}, found "
                         f"{read_head(path, 4).hex()}; pass --format to force one", path=path)
    names = ", ".join(f.name for f in cands)
    if os.path.isdir(path):
        raise UsageError(f"no log found in this directory: none of the formats ({names}) finds its files here; "
                         "--format NAME says what that format expects", path=path)
    head = read_head(path, 4)
    if not head:      # an empty file is no log of any format until --format says which (as pg_waldump refuses one)
        raise UsageError("cannot detect the log format: an empty file (0 bytes) carries no format's evidence; pass "
                         "--format NAME to read it as one (an emptied Kestrel queue is found by its directory: only "
                         "empty journal names)", path=path)
    raise UsageError(f"cannot detect the log format: its first bytes {head.hex()} match none of the "
                     f"formats ({names}); pass --format NAME to read it as one (it says what that format expects; "
                     "man 5 wqtool-formats lists each format's evidence)", path=path)


def detect_all(path: str) -> list[tuple[Format, Evidence]]:
    """Every format one existing PATH resolves to: ``detect``'s claim, and, for a directory claimed strongly, every
    other format that claims it strongly too when the two name each other in ``shares_dir_with`` (each reads its
    own files there: one log each). Registry order."""
    first, ev = detect(path)
    if not ev.strong or not first.shares_dir_with or not os.path.isdir(path):
        return [(first, ev)]
    out = []
    for f in formats():
        if f is first:
            out.append((first, ev))
        elif f.name in first.shares_dir_with and first.name in f.shares_dir_with:
            e = f.detect(path)
            if e is not None and e.strong:
                out.append((f, e))
    return out


def detect_url(url: str) -> tuple[Format, Evidence]:
    for f in formats():
        ev = f.detect_url(url)
        if ev is not None:
            return f, ev
    raise UsageError("no format reads this URL", path=url)


@dataclass
class Unresolved:
    """A PATH that names no log: missing, unreadable, not a log, or not of the forced ``--format``. ``error`` is
    what ``resolve`` would have raised (a ``WqError`` or an ``OSError``)."""

    path: str
    error: Exception

    @property
    def root(self) -> str:
        return self.path


def resolve(paths: Sequence[str], fmt: str, opts: Options, *,
            on_detect: Callable[[str, Format, Evidence], None] | None = None,
            on_note: Callable[[str], None] | None = None) -> list[Log]:
    """The logs behind PATHs, each with its format: ``fmt`` "auto" detects each PATH (``detect_all``: a
    directory that formats share gives a log of each) and groups the PATHs by format; a named format takes them
    all. The first PATH that names no log raises its
    error (``resolve_each`` reports every PATH instead)."""
    out: list[Log] = []
    for entry in resolve_each(paths, fmt, opts, on_detect=on_detect, on_note=on_note):
        if isinstance(entry, Unresolved):
            raise entry.error
        out.append(entry)
    return out


def resolve_each(paths: Sequence[str], fmt: str, opts: Options, *,
                 on_detect: Callable[[str, Format, Evidence], None] | None = None,
                 on_note: Callable[[str], None] | None = None) -> list[Log | Unresolved]:
    """Like ``resolve``, but one bad PATH does not hide the others: a PATH that names no log (missing,
    unreadable, not a log, a forced format that does not fit) becomes an ``Unresolved`` entry carrying its error,
    and the other PATHs are resolved as usual. Entries come in PATH order (the logs of one format's PATHs
    together, where its first PATH stands; the logs of a shared directory in registry order). The formats'
    ``discover`` receives ``Options.shared``: the PATHs that resolved to several formats (so a format
    leaves the others' files to them, e.g. in a clean plan). What is wrong with the call itself (no PATH, an unknown ``-O``
    option, an unknown ``--format``) still raises. A file or directory named twice (the same PATH, another path
    to it, a symlink: the same st_dev and st_ino) is read once; ``on_note`` is told of each repeat. A URI
    (``file:``, ``s3://``, ...: ``engine.uris``) is read at its local path or staged copy, and named as given."""
    loc = None
    if any("://" in p or p.startswith("file:") for p in paths):   # URIs: local or staged, named as given
        from .uris import localize
        loc = localize(paths)
        paths = loc.paths
    with listing_once():        # detection and discovery list each directory once
        entries = _resolve_each(paths, fmt, opts, on_detect=on_detect, on_note=on_note)
    return entries if loc is None else loc.entries(entries)


def _resolve_each(paths: Sequence[str], fmt: str, opts: Options, *,
                 on_detect: Callable[[str, Format, Evidence], None] | None = None,
                 on_note: Callable[[str], None] | None = None) -> list[Log | Unresolved]:
    if not paths:
        raise UsageError("no PATH given")
    known = {k for f in formats() for k in f.settings.options()} if opts.given else set()
    for k in opts.given:
        if k not in known:
            raise UsageError(f"-O {k}: no format takes this option (known: {', '.join(sorted(known)) or 'none'})")
    paths = _once(paths, on_note)
    forced = get(fmt) if fmt != "auto" else None
    entries: list[tuple[int, Log | Unresolved]] = []
    groups: dict[str, list[tuple[int, str]]] = {}
    weak: set[str] = set()
    shared: set[str] = set()
    for i, p in enumerate(paths):
        try:
            claims = _claim(p, forced)
        except (WqError, OSError) as exc:
            entries.append((i, Unresolved(p, exc)))
            continue
        if len(claims) > 1:
            shared.add(p)
        for f, ev in claims:
            if on_detect is not None and ev is not None:
                on_detect(p, f, ev)
            groups.setdefault(f.name, []).append((i, p))
            if ev is not None and not ev.strong:
                weak.add(f.name)
    o = opts if forced is not None else replace(opts, detected=True, shared=frozenset(shared))
    for f in list(_REGISTRY.values()):     # a format with logs here was loaded to claim them
        if f.name not in groups:
            continue
        for i, datas in _discover_each(f, groups[f.name], o):
            entries += [(i, Log(f, d, f.name in weak)) if not isinstance(d, Unresolved) else (i, d) for d in datas]
    entries.sort(key=lambda e: e[0])   # stable: a group's logs stay in discovery order
    return [e for _, e in entries]


def _once(paths: Sequence[str], on_note: Callable[[str], None] | None) -> list[str]:
    """``paths`` with every file or directory kept once, at its first naming (st_dev, st_ino after symlinks:
    overlapping cron globs, ``seg ./seg``, a symlink to a log); a PATH that cannot be stat'ed is kept (its error is
    reported where it is read), and so is a URL."""
    seen: dict[tuple[int, int], str] = {}
    out = []
    for p in paths:
        try:
            st = None if is_url(p) else os.stat(p)
        except (OSError, ValueError):
            st = None
        if st is not None:
            key = (st.st_dev, st.st_ino)
            first = seen.get(key)
            if first is None:
                seen[key] = p
            else:
                if on_note is not None:
                    what = "directory" if stat.S_ISDIR(st.st_mode) else "file"
                    how = "twice" if first == p else f"again as {p} (the same {what})"
                    on_note(f"note: {first} named {how}: read once")
                continue
        out.append(p)
    return out


def _claim(path: str, forced: Format | None) -> list[tuple[Format, Evidence | None]]:
    """The formats of one PATH (forced: that one, checked to fit; auto: detected, several for a shared
    directory), or its error."""
    if forced is not None:
        if is_url(path):
            if forced.detect_url(path) is None:
                raise UsageError(f"{forced.plural} are not read from URLs", path=path)
        else:
            check_input(path)
            _fits(forced, path)
        return [(forced, None)]
    if is_url(path):
        return [detect_url(path)]
    check_input(path)
    return detect_all(path)


def _discover_each(f: Format, items: list[tuple[int, str]], opts: Options) -> list[tuple[int, list]]:
    """``f.discover`` over one format's PATHs together (files of one directory make one log), each log placed
    where its first PATH stands; when that fails, each PATH alone finds the ones at fault, and the others are
    discovered together again."""
    try:
        logs = f.discover([p for _, p in items], opts)
    except (WqError, OSError) as exc:
        if len(items) == 1:
            return [(items[0][0], [Unresolved(items[0][1], exc)])]
        together = exc
    else:
        return [(_first_path(d, items), [d]) for d in logs]
    good, bad = [], []
    for i, p in items:
        try:
            f.discover([p], opts)
        except (WqError, OSError) as exc:
            bad.append((i, [Unresolved(p, exc)]))
        else:
            good.append((i, p))
    if not good:
        return bad
    if len(good) == len(items):       # each alone is fine, together they are not: report it on the first
        return [(items[0][0], [Unresolved(items[0][1], together)])]
    return bad + _discover_each(f, good, opts)


def _first_path(log, items: list[tuple[int, str]]) -> int:
    """Where a discovered log stands among the PATHs: the first PATH that is its root or a file in it."""
    root = getattr(log, "root", None)
    if isinstance(root, str):
        r = os.path.abspath(root)
        for i, p in items:
            if not is_url(p) and (os.path.abspath(p) == r or os.path.dirname(os.path.abspath(p)) == r):
                return i
    return items[0][0]


def _fits(f: Format, path: str) -> None:
    """A forced --format must fit: refused (exit 2) when the format finds no evidence and another format claims
    the path with strong evidence (``--format kestrel`` on a workq log). Without evidence either way, the forced
    format reads it (a damaged log is still read as what the user says it is). A format that shares directories
    with ``f`` (``shares_dir_with``, both ways) is no evidence against it."""
    if f.fits(path):
        return
    for other in formats():
        if other is f or (other.name in f.shares_dir_with and f.name in other.shares_dir_with):
            continue
        ev = other.detect(path)
        if ev is not None and ev.strong:
            raise UsageError(f"this is a {other.title} ({ev.reason}), not a {f.title}: --format {f.name} does not "
                             f"fit; drop --format or pass --format {other.name}", path=path)


#: what a repair plan's report states of the jobs (workq) or items (Kestrel) it would lose (``Format.repair_loss``)
LOSS_KEYS = ("jobs_lost", "jobs_lost_more", "jobs_lost_unread", "items_lost", "items_lost_at", "items_lost_at_more",
             "items_lost_unread")


def loss_of(doc: dict) -> dict:
    return {k: doc[k] for k in LOSS_KEYS if k in doc}


#: ``--as-of`` words that name a time of the log itself (``settle_as_of``)
AS_OF_WORDS = ("last", "first")


def settle_as_of(log: Log, opts: Options) -> Options:
    """``opts`` with ``--as-of last|first`` made a time of this log: its newest (``last``) or first record's
    time (``Format.time_span``), so the result is the same whenever it is computed. A log with no timed record
    keeps the time the command started. Other options are returned as they are."""
    word = opts.as_of_word
    if word is None:
        return opts
    first, last = log.fmt.time_span(log.data, word)
    t = last if word == "last" else first
    return replace(opts, as_of_ns=opts.as_of_ns if t is None else t, as_of_word=None)


def is_url(path: str) -> bool:
    return "://" in path or path.startswith("jdbc:")


def is_regular_or_dir(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)
