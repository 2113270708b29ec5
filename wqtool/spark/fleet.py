"""Fleet jobs on Spark for every format: verify, replay, stats and export over many logs, the same results as the
local engine.

Each format's logs go to its fleet strategy: the class its ``Spark.fleet`` names (workq: split by job,
``engine.workq.fleet.WorkqFleet``, run on a ``cluster.Cluster``), else ``PerLogFleet``: one Spark task per log runs the engine's reader -> replay
pass on it (biggest logs first) and ships the LogReport back — the local engine's report by construction; the
state whole for replay, as a ``StateSummary`` for verify / stats. Results come back in the commands' order.
Only this package imports pyspark.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
from dataclasses import dataclass
from typing import Callable, Sequence

from ..engine.findings import Finding, Verdict, verdict_of_label
from ..engine.format import Log, Options, load_object
from ..engine.run import LogReport, VerifyReport, files_size
from ..engine.stats import RecordStats
from ..engine.fileio import pinned
from ..engine.fleet import check_count, snapshot
from ..errors import SparkError
from .cluster import Cluster

_LOG = 2
_FIELDS = (("log", "int32"), ("kind", "int8"), ("part", "int32"), ("blob", "binary"))


def _strategy(fmt):
    return load_object(fmt.spark.fleet)() if fmt.spark.fleet else PerLogFleet(fmt)


def _cluster(spark, logs: Sequence[Log] = ()) -> Cluster:
    """The session as a fleet sees it, with what its tasks need to read ``logs``' staged copies of remote URIs
    wherever they run (``engine.uris.stage_plan``)."""
    if isinstance(spark, Cluster):
        return spark
    from ..engine.uris import stage_plan
    staged = stage_plan(logs)
    return Cluster(spark, staged, snapshot(logs, staged))


@contextlib.contextmanager
def one_snapshot(cluster: Cluster):
    """A job over ``cluster``'s snapshot: the driver's own reads (planning, assembling) inside it too, and every
    pinned file checked again once the job is done — a file replaced or shrunk meanwhile is a ``FileChanged``
    (exit 5) naming it, never an answer mixing two states of a log."""
    with pinned(cluster.snap):
        yield
    if cluster.snap:
        cluster.snap.check()


def _format(log: Log):
    """The log's format itself: a URI's log has a ``NamedFormat`` (whose ``name`` names paths: a method, one per
    URI — grouping by it made a Spark job per URI); the runner names the reports by the URI afterwards."""
    return getattr(log.fmt, "format", log.fmt)


def _by_format(logs: Sequence[Log]):
    """[(format, [(index, log data)])] in the order formats first appear."""
    groups: dict[str, tuple] = {}
    for i, log in enumerate(logs):
        fmt = _format(log)
        groups.setdefault(fmt.name, (fmt, []))[1].append((i, log.data))
    return list(groups.values())


def _calls(strategy, items: list, opts: Options | Sequence[Options]):
    """The strategy calls one format's logs need: [(indexes, datas, options, extra keywords)]. ``opts``: one
    Options for all the logs, or one each (``--as-of last``: each log's own time): a strategy whose jobs take each
    log's clock (``clocks = True``) runs them all in one call; else a call per distinct options."""
    per = [opts] * (max((i for i, _ in items), default=-1) + 1) if isinstance(opts, Options) else list(opts)
    groups: list[tuple[Options, list]] = []
    clocked = getattr(strategy, "clocks", False)
    for i, d in items:
        key = dataclasses.replace(per[i], as_of_ns=0) if clocked else per[i]
        for g, its in groups:
            if g == key:
                its.append((i, d))
                break
        else:
            groups.append((key, [(i, d)]))
    for key, its in groups:
        idx = [i for i, _ in its]
        extra = {"clocks": [per[i].as_of_ns for i in idx]} if clocked else {}
        yield idx, [d for _, d in its], per[idx[0]], extra


# ---------------------------------------------------------------- commands' entry points
def fleet_verify(spark, logs: Sequence[Log], opts: Options | Sequence[Options], *, max_findings: int | None = None,
                 progress=None) -> VerifyReport:
    """Every format's ``verify`` on Spark: the same reports (findings, counts, verdicts). ``opts``: for all the
    logs, or one each."""
    out: dict[int, LogReport] = {}
    cluster = _cluster(spark, logs)
    with one_snapshot(cluster):
        for fmt, items in _by_format(logs):
            strategy = _strategy(fmt)
            for idx, datas, o, extra in _calls(strategy, items, opts):
                reps = strategy.verify(cluster, datas, o, max_findings=max_findings, progress=progress, **extra)
                out.update(zip(idx, reps))
    return VerifyReport([out[i] for i in range(len(logs))])


def fleet_replay(spark, log: Log, opts: Options, *, limit: int | None = None, progress=None,
                 want_jobs: bool = True) -> LogReport:
    """``run_log`` on Spark (the first ``limit`` findings kept, all counted), with the replayed state whole;
    ``want_jobs=False`` (``replay --summary``): a strategy that can may ship the digest and counts only."""
    cluster = _cluster(spark, [log])
    with one_snapshot(cluster):
        return _strategy(_format(log)).replay(cluster, log.data, opts, limit=limit, progress=progress,
                                         want_jobs=want_jobs)


def fleet_replay_summaries(spark, logs: Sequence[Log], opts: Options | Sequence[Options], *,
                           limit: int | None = None, progress=None) -> list[LogReport]:
    """``replay --summary`` of several logs on Spark: each log's report (digest and counts, as ``fleet_replay``'s
    with ``want_jobs=False``), one job per format over all its logs (a strategy without ``replay_summaries``: a
    job per log), on one snapshot."""
    out: dict[int, LogReport] = {}
    cluster = _cluster(spark, logs)
    with one_snapshot(cluster):
        for fmt, items in _by_format(logs):
            strategy = _strategy(fmt)
            many = getattr(strategy, "replay_summaries", None)
            for idx, datas, o, extra in _calls(strategy, items, opts):
                reps = (many(cluster, datas, o, limit=limit, progress=progress, **extra) if many is not None else
                        [strategy.replay(cluster, d, o, limit=limit, progress=progress, want_jobs=False)
                         for d in datas])
                out.update(zip(idx, reps))
    return [out[i] for i in range(len(logs))]


def fleet_stats(spark, logs: Sequence[Log], opts: Options | Sequence[Options], *,
                progress=None) -> tuple[list[tuple], int]:
    """Per log: (LogReport whose state is a summary with the digest and counts, RecordStats, distinct jobs), and
    the number of distinct jobs over all logs."""
    out: dict[int, tuple] = {}
    total = 0
    cluster = _cluster(spark, logs)
    with one_snapshot(cluster):
        for fmt, items in _by_format(logs):
            strategy = _strategy(fmt)
            calls = list(_calls(strategy, items, opts))
            if len(calls) > 1:
                from ..errors import UsageError
                raise UsageError(f"--engine spark stats of {fmt.about.plural} takes one --as-of time for all (each log's "
                                 "own last/first: run the local engine, or one log at a time)")
            for idx, datas, o, extra in calls:
                per, n = strategy.stats(cluster, datas, o, progress=progress, **extra)
                out.update(zip(idx, per))
                total += n
    return [out[i] for i in range(len(logs))], total


# ---------------------------------------------------------------- the generic strategy: a task per log
@dataclass(slots=True)
class StateSummary:
    """What verify and stats need of a replayed state (its view's digest and counts), without the state."""

    state_digest: str
    by_state: dict
    by_queue: dict
    tables: dict | None = None
    chart_spec: dict | None = None

    @classmethod
    def of(cls, view) -> "StateSummary":
        return cls(view.digest(), view.counts_by_state(), view.queues(), view.analytics(), view.chart())

    def analytics(self) -> dict:
        return dict(self.tables or {})

    def chart(self) -> dict | None:
        return self.chart_spec

    def digest(self) -> str:
        return self.state_digest

    def counts_by_state(self) -> dict[str, int]:
        return dict(self.by_state)

    def queues(self) -> dict[str, dict[str, int]]:
        return {q: dict(c) for q, c in self.by_queue.items()}


class _LogTask:
    """Whole logs through the format's ``run`` (the reader and the replay state machine), one per task: the log
    is the unit. Ships the LogReport back — its state whole (``items``) or as a ``StateSummary`` — and, with
    ``stats``, the RecordStats of every record. Run by ``Cluster.tasks`` (the driver's working directory, the
    staged copies of remote logs made readable first)."""

    def __init__(self, fmt_name: str, datas: list, opts: list[Options], limit: int | None, items: bool,
                 stats: bool):
        self.fmt_name, self.datas, self.opts, self.limit = fmt_name, datas, opts, limit
        self.items, self.stats = items, stats

    def __call__(self, batches):
        import pyarrow as pa

        from ..engine.format import get
        fmt = get(self.fmt_name)
        schema = pa.schema([pa.field("log", pa.int32()), pa.field("kind", pa.int8()), pa.field("part", pa.int32()),
                            pa.field("blob", pa.binary())])
        for batch in batches:
            for li in batch.column(0).to_pylist():
                data = self.datas[li]
                acc = RecordStats() if self.stats else None
                run = fmt.run(data, self.opts[li], limit=self.limit)
                if acc is None:
                    for _ in run.events():
                        pass
                else:
                    rec_cls, facts = fmt.record_cls, fmt.facts
                    for ev in run.events():
                        if ev.__class__ is rec_cls:
                            acc.add(facts(ev))
                report = run.report
                if not self.items:
                    report.state = StateSummary.of(fmt.state_view(report.state, data))
                blob = pickle.dumps((report, acc), protocol=5)
                yield pa.RecordBatch.from_arrays([pa.array([li], pa.int32()), pa.array([_LOG], pa.int8()),
                                                  pa.array([li], pa.int32()), pa.array([blob], pa.binary())],
                                                 schema=schema)


class PerLogFleet:
    """One Spark task per log (biggest first), each the format's own pass: for formats whose state depends on
    every record of the log in order (a Kestrel queue)."""

    #: its tasks take each log's own --as-of time (``clocks=``)
    clocks = True

    def __init__(self, fmt):
        self.fmt = fmt

    def run(self, cluster, datas: Sequence, opts: Options, *, limit: int | None = None, items: bool = False,
            stats: bool = False, progress: Callable[[str], None] | None = None,
            clocks: Sequence[int] | None = None) -> list[tuple]:
        say = progress or (lambda _m: None)
        if not datas:
            return []
        sizes = [files_size(self.fmt.files(d)) for d in datas]
        order = sorted(range(len(datas)), key=lambda i: -sizes[i])   # partition k runs log order[k]
        say(f"spark: {len(datas)} {self.fmt.about.plural}, {sum(sizes)} bytes, a task per log")
        each = [opts if clocks is None else dataclasses.replace(opts, as_of_ns=clocks[i]) for i in order]
        cl = _cluster(cluster)
        rows = cl.run(len(datas), _LogTask(self.fmt.name, [datas[i] for i in order], each, limit, items, stats),
                      _FIELDS, what=lambda k: f"log {self.fmt.passes.log_name(datas[order[k]])}")
        out: dict[int, tuple] = {}
        for r in rows:
            out[order[r["log"]]] = pickle.loads(r["blob"])
        check_count(f"{self.fmt.about.plural}: a task per log", len(out), len(datas))
        return [out[i] for i in range(len(datas))]

    def verify(self, cluster, datas, opts, *, max_findings=None, progress=None, clocks=None) -> list[LogReport]:
        return [r for r, _ in self.run(cluster, datas, opts, limit=max_findings, progress=progress, clocks=clocks)]

    def replay(self, cluster, data, opts, *, limit=None, progress=None, want_jobs=True) -> LogReport:
        # the state whole either way: the format's state view renders it (a summary-only state is not one)
        return self.run(cluster, [data], opts, limit=limit, items=True, progress=progress)[0][0]

    def replay_summaries(self, cluster, datas, opts, *, limit=None, progress=None, clocks=None) -> list[LogReport]:
        return [r for r, _ in self.run(cluster, datas, opts, limit=limit, items=True, progress=progress,
                                       clocks=clocks)]

    def stats(self, cluster, datas, opts, *, progress=None, clocks=None):
        per = self.run(cluster, datas, opts, limit=0, stats=True, progress=progress, clocks=clocks)
        union: set = set()
        for _, st in per:
            union |= st.jobs
        return [(r, st, len(st.jobs)) for r, st in per], len(union)


# ---------------------------------------------------------------- export (dump --engine spark)
#: Error findings an export brings back to the driver (for stderr); all are counted, verdicts from all.
EXPORT_ERRORS_SHOWN = 1000


@dataclass(slots=True)
class ExportResult:
    errors: list[Finding]          # the first EXPORT_ERRORS_SHOWN error findings, by file and offset
    error_count: int               # every error finding
    verdicts: set[Verdict]         # the verdicts of every finding (worst() gives the command's)


def export_records(spark, paths: Sequence[str], out: str, *, fmt: str = "parquet", payload: str = "base64",
                   progress=None, source: str, opts: Options | None = None) -> ExportResult:
    """Write PATHs as the ``source`` format's data sources read them, as Parquet or JSON Lines files (null fields
    written, as ``dump -o jsonl`` does): the records (permissive: a ``_corrupt`` row per unreadable byte range)
    to ``out/records``, the findings verify reports at ``opts.as_of_ns`` (``<source>-findings``) to
    ``out/findings``. What comes back to the driver is bounded: the verdicts, the error count and the first
    errors — not the findings (a log read long after it was written can hold a warning per record)."""
    from .datasources import ensure_sources
    ensure_sources(spark)
    say = progress or (lambda _m: None)

    def reader(name: str, **options):
        r = spark.read.format(name).option("paths", json.dumps(list(paths)))
        for k, v in options.items():
            r = r.option(k, v)
        if opts is not None:
            for k, v in sorted(opts.settings.items()):
                r = r.option(k, str(v).lower() if isinstance(v, bool) else str(v))
        return r.load()

    def write(df, where: str) -> None:
        writer = df.write.mode("error")            # never overwrite; "errorifexists" is not a Spark Connect mode
        writer.parquet(where) if fmt == "parquet" else writer.option("ignoreNullFields", "false").json(where)

    as_of = {} if opts is None else {"as_of": f"@{opts.as_of_ns}ns"}
    records = reader(source, payload=payload, mode="permissive", **(as_of if _clocked(source, paths, opts) else {}))
    findings = reader(f"{source}-findings", **as_of)
    say(f"spark: writing {fmt} to {out}/records and {out}/findings")
    write(records, os.path.join(out, "records"))
    write(findings, os.path.join(out, "findings"))
    where = os.path.join(out, "findings")
    found = spark.read.parquet(where) if fmt == "parquet" else spark.read.schema(findings.schema).json(where)
    tally = found.groupBy("verdict", "severity").count().collect()   # one pass: verdicts and error count
    verdicts = {verdict_of_label(r["verdict"]) for r in tally}
    count = sum(r["count"] for r in tally if r["severity"] == "error")
    first = [] if not count else (found.where("severity = 'error'").orderBy("file", "offset", "record_index", "code")
                                  .limit(EXPORT_ERRORS_SHOWN).collect())
    return ExportResult([Finding(**_finding_kwargs(r.asDict())) for r in first], count, verdicts)


def _clocked(source: str, paths: Sequence[str], opts: Options | None) -> bool:
    """Whether ``source``'s records depend on the clock (its discovery records ``as_of_ns`` on the logs: a Snap!
    list journal's reading order, EVTJ's current file), so the export reads them at --as-of as the local dump
    does; the records source refuses as_of elsewhere."""
    if opts is None:
        return False
    from ..engine.format import get
    from ..engine.uris import resolve
    return any(hasattr(lg, "as_of_ns") for lg in get(source).discover([p for p, _ in resolve(paths).leaves], opts))


def _finding_kwargs(d: dict) -> dict:
    return {"severity": d["severity"], "code": d["code"], "message": d["message"], "path": d["file"],
            "offset": d["offset"], "record_index": d["record_index"], "last_good_offset": d["last_good_offset"],
            "upstream": d["upstream"], "verdict": verdict_of_label(d["verdict"]), "job_id": d["job_id"],
            "resumes_at": d["resumes_at"]}


# ---------------------------------------------------------------- the replayed state as a table
@dataclass(slots=True)
class FrozenView:
    """What ``replay --summary -o json`` and the export's checks need of a replayed state's view, computed in the
    task that replayed it (the state itself stays there): the summary document, the counts, the digest, and the
    rows the task wrote. Stands in for both the report's state and its view."""

    rows_key: str
    doc: dict
    extra: dict
    by_state: dict
    state_digest: str
    rows: int

    @classmethod
    def of(cls, view, rows: int) -> "FrozenView":
        return cls(view.rows_key, view.summary(), view.extra_doc(), view.counts_by_state(), view.digest(), rows)

    def summary(self) -> dict:
        return dict(self.doc)

    def extra_doc(self) -> dict:
        return dict(self.extra)

    def counts_by_state(self) -> dict[str, int]:
        return dict(self.by_state)

    def digest(self) -> str:
        return self.state_digest

    def job_count(self) -> int:
        return self.rows


class _StateTask:
    """One log per task, read ONCE: the engine's replay of it (``run_log``, the first ``limit`` findings kept),
    its rows as ``<format>-state`` reads them (Arrow batches, ``_report`` null), then one row more whose
    ``_report`` is the pickled LogReport with a ``FrozenView`` for its state — the table and the summary from the
    same bytes. Run in the driver's working directory, on the driver's snapshot (``Cluster.tasks``)."""

    def __init__(self, items: list, limit: int | None):
        self.items, self.limit = items, limit      # [(format name, log data, engine Options, the log's name)]

    def __call__(self, batches):
        import pyarrow as pa

        from ..engine.format import get
        from .datasources import _arrow_state_schema, state_batches
        for batch in batches:
            for i in batch.column(0).to_pylist():
                name, data, opts, log_name = self.items[i]
                fmt = get(name)
                report = fmt.passes.run_log(data, opts, limit=self.limit)
                schema = _arrow_state_schema(fmt)
                out = schema.append(pa.field("_report", pa.binary()))
                rows = 0
                for b in state_batches(fmt, data, log_name, opts, report=report):
                    rows += b.num_rows
                    yield pa.RecordBatch.from_arrays([*b.columns, pa.nulls(b.num_rows, pa.binary())], schema=out)
                view = fmt.state_view(report.state, data)
                report.state = FrozenView.of(view, rows)
                blob = pickle.dumps(report, protocol=5)
                yield pa.RecordBatch.from_arrays([pa.array([log_name], pa.string()),
                                                  *(pa.nulls(1, f.type) for f in list(schema)[1:]),
                                                  pa.array([blob], pa.binary())], schema=out)


def export_state(spark, logs: Sequence[Log], opts: Sequence[Options], out: str, *, limit: int | None = 1000,
                 progress=None) -> list[LogReport]:
    """``replay --engine spark -o parquet --out DIR``: each log's replayed state as rows (``<format>-state``'s
    columns: ``log`` and the fields of ``replay -o jsonl``) written to ``out/jobs`` partitioned by log, and each
    log's report (its state a ``FrozenView``: summary, counts, digest) — both from ONE pass over one snapshot of
    each log (``_StateTask``; a recomputed partition reads the same pinned bytes). The table is read back and
    checked against the reports before success: rows per log and per (log, state) equal the summary's; a
    mismatch, or a file replaced or shrunk meanwhile, is an error (exit 5) naming the log or file."""
    from pyspark.sql import functions as F

    from ..errors import UsageError
    from ..engine.uris import named_report
    from .datasources import state_columns, _struct
    say = progress or (lambda _m: None)
    fmts = {_format(lg).name: _format(lg) for lg in logs}
    missing = sorted(n for n, f in fmts.items() if not f.spark.state_types)
    if missing:
        raise UsageError(f"replay -o parquet: no state table for {', '.join(missing)} (its Spark part's state_types)")
    if len({tuple(state_columns(f)) for f in fmts.values()}) > 1:
        raise UsageError("replay -o parquet: one format per table (these logs' states have different columns)")
    names = [lg.fmt.passes.log_name(lg.data) for lg in logs]
    if len(set(names)) != len(names):
        raise UsageError(f"replay -o parquet: two PATHs name the same log ({_first_twice(names)}): its rows "
                         "would be written twice")
    columns = state_columns(next(iter(fmts.values())))
    schema = _struct(columns)
    where = os.path.join(out, "jobs")
    cluster = _cluster(spark, logs)
    say(f"spark: replaying {len(logs)} log(s) once each, writing their state to {where}")
    with one_snapshot(cluster):
        task = _StateTask([(_format(lg).name, lg.data, o, n) for lg, o, n in zip(logs, opts, names)], limit)
        df = cluster.persist(cluster.tasks(len(logs), task, [*columns, ("_report", "binary")]))
        try:
            with cluster.named_deaths(lambda k: f"log {names[k]}"):
                got = {r["log"]: pickle.loads(r["_report"])
                       for r in df.where("_report IS NOT NULL").select("log", "_report").collect()}
                check_count("the state table's reports (a task per log)", len(got), len(logs))
                df.where("_report IS NULL").drop("_report").write.mode("error").partitionBy("log").parquet(where)
        finally:
            cluster.unpersist(df)
        table = spark.read.schema(schema).parquet(where)
        state = "state" in table.columns
        keys = ["log", "state"] if state else ["log"]
        counted = table.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")).collect()
    per_log: dict[str, int] = {}
    per_state: dict[tuple, int] = {}
    for r in counted:
        per_log[r["log"]] = per_log.get(r["log"], 0) + r["n"]
        if state:
            per_state[r["log"], r["state"]] = r["n"]
    reports = []
    for lg, name in zip(logs, names):
        rep = got[name]
        view = rep.state
        check_count(f"the state table of {name}: rows", per_log.get(name, 0), view.job_count())
        if state:
            table_states = {s: n for (lname, s), n in per_state.items() if lname == name}
            want = {s: n for s, n in view.counts_by_state().items() if n}
            if table_states != want:
                raise SparkError(f"the state table's rows per state {dict(sorted(table_states.items()))} are not "
                                  f"the summary's {dict(sorted(want.items()))}: no table is reported that its "
                                  f"summary does not describe", path=name)
        reports.append(named_report(lg, rep))
    return reports


def _first_twice(names: Sequence[str]) -> str:
    seen: set = set()
    for n in names:
        if n in seen:
            return n
        seen.add(n)
    return ""
