"""orth_job_log tables on Spark: verify, replay and stats (the analytics) — the orth-joblog format's
``Spark.fleet`` (``JobLogFleet``), with the local engine's results. Engine code: every Spark call goes through
the ``wqtool.spark.cluster.Cluster`` it is handed (tasks, a JDBC table, a SQL query over frames, a collect).

Stage 1 (Python, one task per export file; a MySQL / MariaDB table through Spark's JDBC reader, partitioned by id)
runs the engine's reader (``TableReader`` / ``db_rows``; CSV and Parquet through its columnar fast path,
``fastpath``, when pyarrow and numpy import, as the local engine does). Two ways on from there:

* verify and stats, first (``_run_summaries``): each task replays its rows exactly as the local engine does
  (``JobLogReplay``: the first row of an id wins, the checks, the tally) and yields one summary: the findings
  (the first ``limit`` by position, all counted), the record statistics, the tally and the ids it saw. When no id
  is in two tasks — a table's ids are unique, so this is the usual case — the local replay of the whole table
  is the sum of the tasks' replays: the driver adds the summaries up (``Tally.merge``) and is done.
* otherwise, and for replay (which lists the rows): the tasks yield their typed rows too, with the per-row checks
  (``RowChecker``) and the sum of the rows' digest hashes; the rows are persisted; then, in Spark SQL:

  - duplicates: ids with more than one row (the first by file and position is the table's, as locally);
  - the analytics in one aggregation (GROUPING SETS) with the SQL generated from the format's declarations:
    status per job group (``status_sql``: §5.2's CASE), the daily report counts (``report_bucket_sql``: §5.3),
    statuses per executor and per handler, the trigger-to-handle latency histogram, and the lost-job monitor's
    condition (§6) against the registry at --as-of;

  the driver subtracts duplicates' check findings and digest hashes (re-checked with the engine), adds the
  duplicate findings and the closing notes (``replay.closing``) and assembles ``LogReport``s.
"""
from __future__ import annotations

import os
import pickle
from collections import Counter
from typing import Sequence

from ...formats.orth_joblog import (COLUMN_NAMES, COLUMNS, LOST_HANDLE_CODE, LOST_MESSAGES, REGISTRY_COLUMN_NAMES,
                                    rules_for_table)
from ..findings import Finding, QuotaCap, per_quota, worst
from ..fleet import TaskFindings, check_count
from ..run import LogReport
from ..stats import RecordStats
from . import dburl, fastpath
from .model import Row, day_of
from .reader import _header_findings, Source, TableLog, TableReader, db_rows, registry_rows
from .replay import (NO_ADDRESS, NO_HANDLER, CheckContext, IdSet, JobLogReplay, JobLogState, Registry, RowChecker,
                     Tally, closing, digest_line, duplicate_finding, line_hash, local_seconds, zone)
from .rules import report_bucket_sql, status_sql
from .verify import context

_ROW, _SUM = 0, 1
_MOD = 1 << 256
_SPARK_T = {"int": "int", "str": "string", "datetime": "bigint"}
_COLS = [(c.name, "bigint" if c.name == "id" else _SPARK_T[c.kind]) for c in COLUMNS]
_FIELDS = [("kind", "tinyint"), ("file", "int"), ("pos", "bigint"), ("seq", "bigint"), ("idx", "bigint"),
           ("length", "bigint"), *_COLS, ("blob", "binary")]
#: JDBC driver class per URL scheme (``-O jdbc_driver=`` overrides; ``-O jdbc_jar=`` adds the jar to the session)
JDBC_DRIVERS = {"mariadb": "org.mariadb.jdbc.Driver", "mysql": "org.mariadb.jdbc.Driver"}
DEFAULT_JARS = ("/usr/share/java/mariadb-java-client.jar",)


def _arrow_schema():
    import pyarrow as pa
    t = {"tinyint": pa.int8(), "int": pa.int32(), "bigint": pa.int64(), "string": pa.string(),
         "binary": pa.binary()}
    return pa.schema([pa.field(n, t[k]) for n, k in _FIELDS])


class _Acc(TaskFindings):
    """Findings of one task: all counted, the first ``limit`` by key kept."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.kept: list[tuple[tuple, Finding]] = []
        self._cap = QuotaCap(limit)
        super().__init__()

    def add(self, key: tuple, f: Finding) -> None:
        self.count(key, f)
        if self._cap.take(f):     # the first ``limit`` of each quota (run.FindingSink's rule)
            self.kept.append((key, f))


class _Stage1:
    """One source file per task (``TableReader(file_index=i)``) or, for JDBC, the rows Spark read."""

    def __init__(self, log: TableLog, ctx: CheckContext, limit: int | None, jdbc_where=None, *,
                 summary_only: bool = False):
        self.log, self.ctx, self.limit, self.jdbc_where = log, ctx, limit, jdbc_where
        self.summary_only = summary_only

    def __call__(self, batches):        # run by the cluster in the driver's working directory
        if self.jdbc_where is None:
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    reader = TableReader(self.log, tz=zone(self.log.timezone), file_index=i)
                    yield from self._run(reader, fastpath.events(reader) if fastpath.available() else
                                         reader.events(), i)
        else:
            reader = TableReader(self.log, tz=zone(self.log.timezone))

            def rows():
                names = self.jdbc_where[1]
                for batch in batches:
                    cols = [batch.column(n).to_pylist() for n in names]
                    for k in range(batch.num_rows):
                        yield [c[k] for c in cols]
            events = db_rows(reader, rows(), self.jdbc_where[0], self.log.root, 0)
            yield from self._run(reader, events, 0)

    def _run(self, reader, events, file: int):
        if self.summary_only:
            yield from _summary_run(self, reader, events, file)
            return
        schema = _arrow_schema()
        names = schema.names
        checker = RowChecker(self.ctx)
        acc = _Acc(None if self.limit is None else self.limit + 1000)
        st = RecordStats()
        from .format import FORMAT
        facts = FORMAT.facts
        cols = {n: [] for n in names}
        digest = 0
        seq = 0
        alive = None
        for ev in events:
            if ev.__class__ is fastpath.Batch:     # n rows at once: the same columns, sums and findings
                if alive is None:
                    import pyarrow as pa
                    alive = pa.array(sorted(self.ctx.registry.alive), pa.string())
                yield _batch_rows(schema, ev, file, seq, checker, acc, st, alive)
                status = fastpath.status_index(ev.ints, self.ctx.rules)
                digest = (digest + fastpath.digest_sum(fastpath.digest_lines(ev, status))) % _MOD
                seq += ev.n
                continue
            seq += 1
            if ev.__class__ is Row:
                r = ev
                pos = r.offset if r.offset is not None else r.id
                for n, v in zip(("kind", "file", "pos", "seq", "idx", "length"),
                                (_ROW, file, pos, seq, r.index, r.length)):
                    cols[n].append(v)
                for n in COLUMN_NAMES:
                    cols[n].append(getattr(r, n))
                cols["blob"].append(None)
                st.add(facts(r))
                digest = (digest + line_hash(digest_line(r))) % _MOD
                found, _flags = checker.check(r)
                for k, f in enumerate(found, 1):
                    acc.add((file, pos, seq, k), f)
                if len(cols["kind"]) >= 8192:
                    yield _flush(schema, cols)
            else:
                pos = ev.offset if ev.offset is not None else -1
                acc.add((file, pos, seq, 0), ev)
        summary = {"file": file, "records": reader.records, "bytes": reader.bytes, "segments": reader.segments_read,
                   "acc": acc, "stats": st, "digest": digest}
        for n in names:
            cols[n].append(None)
        cols["kind"][-1], cols["file"][-1] = _SUM, file
        cols["blob"][-1] = pickle.dumps(summary, protocol=5)
        yield _flush(schema, cols)


def _summary_run(stage: _Stage1, reader, events, file: int):
    """The task's rows replayed as the local engine does (``JobLogReplay``: first row of an id wins, the checks,
    the tally; CSV / Parquet batches through ``fastpath.BatchReplay``), no rows out: one summary row with the
    findings (keyed by file, position, event, finding), the record statistics, the tally and the ids seen."""
    from .verify import row_facts
    replay = JobLogReplay(stage.ctx)
    st = RecordStats()
    acc = _Acc(None if stage.limit is None else stage.limit + 1000)
    batches = fastpath.BatchReplay(replay, st) if fastpath.available() else None
    rfind = replay.findings
    seq = 0
    for ev in events:
        cls = ev.__class__
        if cls is fastpath.Batch:
            per_row: dict[int, int] = {}
            for f in batches.apply(ev):
                i = f.record_index - ev.index0
                per_row[i] = per_row.get(i, 0) + 1
                acc.add((file, int(ev.offsets[i]), seq + 1 + i, per_row[i]), f)
            seq += ev.n
            continue
        seq += 1
        if cls is Row:
            replay.apply(ev)
            st.add(row_facts(ev))
            pos = ev.offset if ev.offset is not None else ev.id
            for k, f in enumerate(rfind, 1):
                acc.add((file, pos, seq, k), f)
            rfind.clear()
        else:
            acc.add((file, ev.offset if ev.offset is not None else -1, seq, 0), ev)
    summary = {"file": file, "records": reader.records, "bytes": reader.bytes, "segments": reader.segments_read,
               "acc": acc, "stats": st, "digest": replay.tally.digest_sum, "tally": replay.tally,
               "ids": replay.seen}
    schema = _arrow_schema()
    cols = {n: [None] for n in schema.names}
    cols["kind"], cols["file"], cols["blob"] = [_SUM], [file], [pickle.dumps(summary, protocol=5)]
    yield _flush(schema, cols)


def _index_base(sums) -> dict[int, int]:
    """file -> the log's record index of its first row: a task counts from 0, the local reader across the
    log's files (one JDBC table: file 0 only, its rows have no index)."""
    base, n = {}, 0
    for s in sorted(sums, key=lambda s: s["file"]):
        base.setdefault(s["file"], n)
        n += s["records"]
    return base


def _batch_rows(schema, b, file: int, seq0: int, checker: RowChecker, acc: "_Acc", st: RecordStats, alive):
    """A fast-path Batch as rows of the stage's schema (``_run`` does the same a row at a time): its record
    statistics into ``st`` and the findings of its suspect rows (``fastpath.suspects``: the reference checks)
    into ``acc``."""
    import numpy as np
    import pyarrow as pa
    status = fastpath.status_index(b.ints, checker.ctx.rules)
    fastpath.stats_add(st, b, status)
    seqs = np.arange(seq0 + 1, seq0 + 1 + b.n, dtype=np.int64)
    for i in np.flatnonzero(fastpath.suspects(b, status, checker.ctx, alive)).tolist():
        found, _flags = checker.check(b.row(i))
        for k, f in enumerate(found, 1):
            acc.add((file, int(b.offsets[i]), int(seqs[i]), k), f)
    n = b.n
    cols = {"kind": np.full(n, _ROW, np.int8), "file": np.full(n, file, np.int32), "pos": b.offsets, "seq": seqs,
            "idx": np.arange(b.index0, b.index0 + n, dtype=np.int64), "length": b.lengths}
    arrays = []
    for f in schema:
        if f.name in cols:
            arrays.append(pa.array(cols[f.name], f.type))
        elif f.name in b.ints:
            arrays.append(pa.array(b.ints[f.name]).cast(f.type))
        elif f.name in b.strs:
            arrays.append(b.strs[f.name])
        elif f.name in b.dts:
            secs, valid = b.dts[f.name]
            arrays.append(pa.array(secs, f.type, mask=~valid))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _flush(schema, cols):
    import pyarrow as pa
    batch = pa.RecordBatch.from_arrays([pa.array(cols[f.name], f.type) for f in schema], schema=schema)
    for v in cols.values():
        v.clear()
    return batch


# ---------------------------------------------------------------- one log
class _LogJob:
    def __init__(self, cluster, log: TableLog, opts, limit: int | None, progress):
        self.cluster, self.log, self.opts, self.limit = cluster, log, opts, limit
        self.say = progress or (lambda _m: None)
        self.src_kind = log.sources[0].kind if log.sources else "csv"
        self.jdbc = self.src_kind == "mysql"

    # -- the rows DataFrame
    def rows_df(self, *, summary_only: bool = False):
        """Stage 1: the rows (persisted) and a summary per task; ``summary_only``: the summaries alone."""
        log = self.log
        if self.jdbc:
            self.ctx, self.reg_findings, self.head_findings, df = self._jdbc(summary_only)
        else:
            self.ctx, self.reg_findings = context(log, self.opts.as_of_ns)
            self.head_findings = []
            n = self.tasks = len(log.sources)
            self.say(f"spark: {log.root}: {n} file(s), a task per file")
            df = self.cluster.tasks(n, _Stage1(log, self.ctx, self.limit, summary_only=summary_only), _FIELDS)
        return df if summary_only else self.cluster.persist(df)

    def _jdbc_table(self, dbtable: str, partition: tuple[str, int, int, int] | None = None):
        """A table (or a subquery) of the log's database, read by Spark's JDBC source."""
        url, props = dburl.jdbc(self.log.sources[0].path)
        scheme = "mariadb" if url.startswith("jdbc:mariadb") else "mysql"
        from .format import FORMAT
        s = self.opts.of(FORMAT)
        jars = [s.jdbc_jar] if s.jdbc_jar else [p for p in DEFAULT_JARS if os.path.exists(p)]
        return self.cluster.jdbc(url, props["user"], props["password"], s.jdbc_driver or JDBC_DRIVERS[scheme], jars,
                                 dbtable, init="SET SESSION sql_mode=CONCAT(@@sql_mode, ',ANSI_QUOTES')",
                                 partition=partition)

    def _jdbc(self, summary_only: bool = False):
        log, cluster = self.log, self.cluster
        src = log.sources[0]
        tz = zone(log.timezone)
        now = local_seconds(self.opts.as_of_ns, tz)
        reg_rows, reg_findings = [], []
        if log.registry is not None:
            try:
                rdf = self._jdbc_table(log.registry.table)
                names = [c.lower() for c in cluster.columns(rdf)]
                idx = [names.index(c) if c in names else None for c in REGISTRY_COLUMN_NAMES]
                raw = [(None, [None if i is None else x[i] for i in idx]) for x in cluster.collect(rdf)]
                reg_rows, reg_findings = registry_rows(raw, log.root, tz)
            except Exception as e:  # noqa: BLE001 — no registry table: as locally, an empty registry
                if "exist" not in str(e).lower():
                    raise
        ctx = CheckContext(now, Registry.of(log.registry_origin if log.registry else "", reg_rows, now),
                           log.timezone, rules_for_table(log.table))
        table = src.table
        b = cluster.collect(self._jdbc_table(f"(SELECT MIN(`id`) AS lo, MAX(`id`) AS hi FROM `{table}`) b"))[0]
        slots = cluster.parallelism(2)
        self.tasks = 1
        partition = None
        if b["lo"] is not None and b["hi"] > b["lo"]:
            partition = ("id", b["lo"], b["hi"] + 1, slots)
            self.tasks = min(slots, b["hi"] + 1 - b["lo"])   # Spark's JDBC relation: at most upper - lower
        df = self._jdbc_table(table, partition)
        names = [c.lower() for c in cluster.columns(df)]
        df = cluster.rename(df, names)
        where, head = _header_findings(Source("db", log.root), names, None)
        for f in head:
            f.offset = None
        self.say(f"spark: {log.root}: JDBC, {slots} partition(s) by id")
        if where is None:
            df = cluster.where(df, "false")
            where = [0] * len(COLUMN_NAMES)
        out = cluster.over(df, _Stage1(log, ctx, self.limit, (where, names), summary_only=summary_only), _FIELDS)
        return ctx, reg_findings, head, out

    # -- the run
    def run(self, *, want_rows: bool = False, want_stats: bool = False):
        if not want_rows:
            got = self._run_summaries()
            if got is not None:
                return got
        df = self.rows_df()
        try:
            sums = self._sums(df)
            self.base = _index_base(sums)
            rows = self.cluster.where(df, f"kind = {_ROW}")
            dup_keys = self._duplicates(rows)
            report, stats, tally = self._assemble(sums, rows, dup_keys, want_rows)
            return report, stats
        finally:
            self.cluster.unpersist(df)

    def _run_summaries(self):
        """verify / stats when no id is in two tasks (the usual table): each task replayed its rows as the local
        engine does, so their findings, statistics and tallies add up to the local ones. None: some id is in
        two tasks (the rows path decides which row is the table's)."""
        df = self.rows_df(summary_only=True)
        sums = self._sums(df)
        ids = IdSet()
        for s in sorted(sums, key=lambda s: s["file"]):
            if not ids.absorb(s["ids"]):
                self.say(f"spark: {self.log.root}: ids in more than one file: duplicates resolved over the rows")
                return None
        self.base = _index_base(sums)
        m = self._merge(sums)
        tally = Tally(rules=self.ctx.rules)
        for s in sums:
            tally.merge(s["tally"])
        report = self._report(m, tally)
        report.state = JobLogState(tally, self.ctx, None)
        return report, m["stats"]

    def _sums(self, df) -> list[dict]:
        """Every task's summary, each task's exactly once (results lost on the way are an error)."""
        sums = [pickle.loads(r["blob"]) for r in self.cluster.collect(self.cluster.where(df, f"kind = {_SUM}"),
                                                                        columns=("blob",))]
        check_count(f"{self.log.root}: the tasks' summaries", len(sums), self.tasks)
        return sums

    def _duplicates(self, rows):
        """(file, pos, seq) of every row whose id an earlier row holds, with the row itself (engine Rows)."""
        dup = self.cluster.repeated(rows, "id", ("id", "file", "pos", "seq"))
        out, seen = {}, set()
        for r in dup:
            if r["id"] in seen:
                out[(r["file"], r["pos"], r["seq"])] = self._row(r)
            seen.add(r["id"])
        return out

    def _row(self, r) -> Row:
        src = self.log.sources[r["file"]] if not self.jdbc else None
        path = self.log.root if src is None or src.kind in ("sqlite", "mysql") else src.path
        db = src is None or src.kind in ("sqlite", "mysql")
        idx = r["idx"] if r["idx"] is None else r["idx"] + self.base.get(r["file"], 0)
        return Row(path, None if db else r["pos"], r["length"], idx, r["file"], *(r[n] for n in COLUMN_NAMES),
                   table=self.log.table)

    def _merge(self, sums) -> dict:
        """The tasks' summaries added up, findings' record indexes rebased to the log's."""
        counts, sev, exits = Counter(), Counter(), set()
        kept: list[tuple[tuple, Finding]] = []
        st = RecordStats()
        digest = 0
        torn = None
        records = nbytes = segments = 0
        for s in sorted(sums, key=lambda s: s["file"]):
            a = s["acc"]
            counts.update(a.counts)
            sev.update(a.severities)
            exits |= a.exits
            for key, f in a.kept:
                if f.record_index is not None:
                    f.record_index += self.base.get(key[0], 0)
                kept.append((key, f))
            st.merge(s["stats"])
            digest = (digest + s["digest"]) % _MOD
            records += s["records"]
            nbytes += s["bytes"]
            segments += s["segments"]
            if a.torn is not None and (torn is None or a.torn[0] > torn[0]):
                torn = a.torn
        return {"counts": counts, "sev": sev, "exits": exits, "kept": kept, "stats": st, "digest": digest,
                "torn": torn, "records": records, "bytes": nbytes, "segments": segments}

    def _report(self, m: dict, tally: Tally) -> LogReport:
        """The LogReport of merged summaries: discovery's findings first, the tasks' in file order, the closing
        notes of ``tally`` last."""
        log, ctx = self.log, self.ctx
        counts, sev, exits = m["counts"], m["sev"], m["exits"]
        kept = sorted(m["kept"], key=lambda kf: kf[0])
        closing_f = closing(tally, ctx)
        head = [*self.reg_findings, *log.findings, *self.head_findings]
        ordered = head + [f for _, f in kept] + closing_f
        for f in head + closing_f:
            counts[f.code] += 1
            sev[f.severity] += 1
            if f.verdict:
                exits.add(f.verdict)
        report = LogReport(root=log.root, segments=m["segments"], records=m["records"], bytes=m["bytes"],
                           findings=per_quota(ordered, self.limit),
                           counts=Counter({k: v for k, v in counts.items() if v}),
                           severities=Counter({k: v for k, v in sev.items() if v}), verdict=worst(exits))
        if m["torn"] is not None:
            report.last_good = (m["torn"][1], m["torn"][2])
        return report

    def _assemble(self, sums, rows, dups: dict, want_rows: bool):
        ctx = self.ctx
        checker = RowChecker(ctx)
        m = self._merge(sums)
        counts, sev, exits, kept, digest = m["counts"], m["sev"], m["exits"], m["kept"], m["digest"]
        for key, r in dups.items():       # a duplicate's checks never ran locally: its duplicate finding did
            found, _ = checker.check(r)
            for f in found:
                counts[f.code] -= 1
                sev[f.severity] -= 1
            kept = [(k, f) for k, f in kept if k[:3] != key]
            d = duplicate_finding(r)
            kept.append(((*key, 0), d))
            counts[d.code] += 1
            sev[d.severity] += 1
            exits.add(d.verdict)
            digest = (digest - line_hash(digest_line(r))) % _MOD
        m["kept"] = kept
        tally = self._tally(rows, dups)
        tally.digest_sum = digest
        tally.rows = sum(tally.by_status.values())
        report = self._report(m, tally)
        keep = None
        if want_rows:
            keep = {}
            for r in self.cluster.collect(rows, order=("file", "pos", "seq")):
                if (r["file"], r["pos"], r["seq"]) not in dups:
                    keep[r["id"]] = self._row(r)
        report.state = JobLogState(tally, ctx, keep)
        return report, m["stats"], tally

    def _tally(self, rows, dups: dict) -> Tally:
        """The analytics of the table's rows (duplicates left out) in one Spark SQL aggregation."""
        ctx, cluster = self.ctx, self.cluster
        if dups:
            rows = cluster.without(rows, [tuple(k) for k in dups], (("file", "int"), ("pos", "bigint"),
                                                                     ("seq", "bigint")))
        alive = cluster.frame([(a,) for a in sorted(ctx.registry.alive)], (("a", "string"),))
        view, aview = "{rows}", "{alive}"
        lost_msgs = ", ".join("'" + m.replace("'", "''") + "'" for m in LOST_MESSAGES.values())
        before = ctx.lost_before
        q = f"""
        WITH t AS (
          SELECT job_group, executor_address AS addr, executor_handler AS handler, trigger_time,
                 {status_sql(rules=ctx.rules)} AS status,
                 CASE WHEN trigger_time IS NULL THEN NULL ELSE floor(trigger_time / 86400) END AS day,
                 {report_bucket_sql()} AS bucket,
                 CASE WHEN handle_code > 0 AND handle_time IS NOT NULL AND trigger_time IS NOT NULL
                      THEN handle_time - trigger_time END AS lat,
                 (trigger_code = 200 AND handle_code = 0 AND trigger_time <= {before}) AS old_pending,
                 (a.a IS NOT NULL) AS registered,
                 (handle_code = {LOST_HANDLE_CODE} AND handle_msg IN ({lost_msgs})) AS marked
          FROM {view} r LEFT JOIN {aview} a ON r.executor_address = a.a)
        SELECT grouping_id() AS g, job_group, status, addr, handler, day, bucket, lat,
               (old_pending AND NOT registered) AS lost, (old_pending AND registered) AS online, marked,
               count(*) AS n, min(trigger_time) AS oldest
        FROM t
        GROUP BY GROUPING SETS ((job_group, status), (addr, status), (handler, status), (day, bucket), (lat),
                                (old_pending AND NOT registered, addr), (old_pending AND registered), (marked))
        """
        t = Tally(rules=ctx.rules)
        for r in cluster.sql(q, rows=rows, alive=alive):
            n = r["n"]
            if r["g"] == _gid(("job_group", "status")):
                t.by_status[r["status"]] += n
                t.by_group.setdefault(r["job_group"], Counter())[r["status"]] += n
            elif r["g"] == _gid(("addr", "status")):
                t.executors.setdefault(NO_ADDRESS if r["addr"] is None else r["addr"], Counter())[r["status"]] += n
            elif r["g"] == _gid(("handler", "status")):
                t.handlers.setdefault(NO_HANDLER if r["handler"] is None else r["handler"], Counter())[r["status"]] \
                    += n
            elif r["g"] == _gid(("day", "bucket")) and r["day"] is not None:
                t.daily.setdefault(day_of(int(r["day"]) * 86400), Counter())[r["bucket"]] += n
            elif r["g"] == _gid(("lat",)) and r["lat"] is not None:
                t.latency[int(r["lat"])] += n
            elif r["g"] == _gid(("lost", "addr")) and r["lost"]:
                t.lost[NO_ADDRESS if r["addr"] is None else r["addr"]] = [n, r["oldest"]]
            elif r["g"] == _gid(("online",)) and r["online"]:
                t.pending_online += n
            elif r["g"] == _gid(("marked",)) and r["marked"]:
                t.marked_lost += n
        return t


_GROUP_COLS = ("job_group", "status", "addr", "handler", "day", "bucket", "lat", "lost", "online", "marked")


def _gid(present: tuple[str, ...]) -> int:
    """Spark's grouping_id() for a grouping set: bit i (from the left, over the SELECT's grouping columns) set
    when that column is NOT in the set."""
    g = 0
    for c in _GROUP_COLS:
        g = (g << 1) | (0 if c in present else 1)
    return g


# ---------------------------------------------------------------- the strategy
class JobLogFleet:
    """The orth-joblog format's fleet strategy (``wqtool.spark.fleet`` calls it)."""

    def verify(self, cluster, logs: Sequence[TableLog], opts, *, max_findings: int | None = None,
               progress=None) -> list[LogReport]:
        return [_LogJob(cluster, log, opts, max_findings, progress).run()[0] for log in logs]

    def replay(self, cluster, log: TableLog, opts, *, limit: int | None = None, progress=None,
               want_jobs: bool = True) -> LogReport:
        return _LogJob(cluster, log, opts, limit, progress).run(want_rows=True)[0]

    def stats(self, cluster, logs: Sequence[TableLog], opts, *, progress=None):
        out, union = [], set()
        for log in logs:
            report, st = _LogJob(cluster, log, opts, 0, progress).run(want_stats=True)
            out.append((report, st, len(st.jobs)))
            union |= st.jobs
        return out, len(union)

