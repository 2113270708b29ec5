"""The Orth job-log table (``orth_job_log``) behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Sequence

from ...errors import InputError
from ...formats.orth_joblog import ALL_LABELS, COLUMN_NAMES, REGISTRY_TABLE_NAMES, TABLE_NAMES
from ..fileio import listdir, read_head
from ..caps import About, bound, Passes, Dump, Spark
from ..format import is_url, Evidence, Format, Options, RecordFacts, StateView, register
from ..run import LogReport, ReplayPass
from ..stats import RecordStats
from ..options import Settings, setting
from .codes import JOBLOG_CODES, JOBLOG_REPLAY_CODES, JOBLOG_EXPLAIN
from .model import Row

if TYPE_CHECKING:       # a type only: the reader is imported on first use
    from .reader import TableLog


_REQUIRED = {"id", "trigger_code", "handle_code"}


@dataclass(frozen=True)
class JobLogSettings(Settings):
    timezone: str = setting("UTC", help="orth-joblog: the zone the admin wrote datetimes in (Orth's default JDBC URL: "
                                        "Asia/Shanghai) [default: UTC]")
    registry: str | None = setting(help="orth-joblog: the orth_job_registry to check lost jobs against: an export "
                                        "file, a database URL, or none [default: beside the export / in the dump / "
                                        "the same database]")
    jdbc_driver: str | None = setting(help="orth-joblog --engine spark: the JDBC driver class Spark SQL reads the "
                                           "table with [default: by the URL's scheme]")
    jdbc_jar: str | None = setting(help="orth-joblog --engine spark: a JDBC driver jar to add to the session")


def _settings(opts: Options) -> dict:
    from .replay import zone
    s = opts.of(FORMAT)
    zone(s.timezone)
    return {"timezone": s.timezone, "registry": s.registry}


class JobLogPasses(Passes):
    def file_events(self, log: TableLog, i: int, start_index: int = 0) -> Iterator:
        from .reader import TableReader
        from .replay import zone
        return TableReader(log, tz=zone(log.timezone), file_index=i, start_index=start_index).events()

    def run_log(self, log: TableLog, opts: Options, *, limit: int | None = None, state: bool = True,
                workers: int | None = None) -> LogReport:
        from . import fastpath
        from .verify import JobLogFastRun
        if not state and fastpath.available():
            p = JobLogFastRun(log, opts.as_of_ns, limit=limit)
        else:
            p = self.fmt.run(log, opts, limit=limit, keep_rows=state)
        for _ in p.events():
            pass
        return p.report

    def stats_log(self, log: TableLog, opts: Options, *, ids: bool = True) -> tuple[LogReport, RecordStats]:
        from . import fastpath
        from .verify import JobLogFastRun
        if not fastpath.available():       # (the job ids are kept either way: ``ids`` allows, never requires, less)
            return super().stats_log(log, opts, ids=ids)
        p = JobLogFastRun(log, opts.as_of_ns, limit=0)
        for _ in p.events():
            pass
        return p.report, p.stats


class JobLogDump(Dump):
    kind_noun = "job-log status"
    record_kinds = ALL_LABELS  # Orth's labels, then xxl-job's own (running, success+fail)
    filters = frozenset()


class JobLogSpark(Spark):
    fleet = "wqtool.engine.orth_joblog.fleet:JobLogFleet"

    def options(self, o: dict) -> dict:
        from .replay import zone
        tz = str(o.get("timezone", "UTC"))
        try:
            zone(tz)
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"orth-joblog: option timezone: {e}") from None
        return {"timezone": tz, "registry": o.get("registry") or None}


class JobLogFormat(Format):
    name = "orth-joblog"
    title = "Orth job-log table (orth_job_log)"
    codes = JOBLOG_CODES
    about = About(
        reads_urls=True,
        plural="orth_job_log tables",
        file_expected="an orth_job_log export (.csv with a header naming id, trigger_code, handle_code; .jsonl; "
                     ".parquet; a mysqldump .sql)",
        dir_expected="an orth_job_log export directory (orth_job_log*.csv|jsonl|parquet|sql or part-* files)",
        manual="""The admin table orth_job_log of Orth (XXL-JOB 3.3): a CSV export with a header row (an unquoted empty field
or \\N is NULL, "" the empty string), JSON Lines, Parquet, a mysqldump file, a directory of export files, or a
database URL (sqlite:///FILE, mysql://, jdbc:mysql://, jdbc:mariadb://; ?table= another table). Spec:
docs/formats/orth-logs.md sections 5 and 6.

Each table is read by its own admin's rules. orth_job_log: Orth's combined status (init, pending, success, timeout,
trigger-failed, failed). xxl_job_log (named by ?table=, the file names, or the dump's statements): xxl-job's list
filters, a row's label being the filters that list it (running, success+fail, success, failed, init), and its
separate trigger and handle results in replay rows (trigger_result, handle_result; xxl-job 3.2.0
XxlJobLogMapper.xml:63-75, joblog.index.1.js:96-140; section 5.4).

Settings (-O KEY=VALUE): timezone=ZONE (the zone of the table's datetimes, default UTC), registry=FILE|URL|none (the
executor registry of the lost-job check), jdbc_jar=, jdbc_driver= (--engine spark). stats adds the admin's report
counts, failure rates per executor and handler, and trigger-to-handle latency percentiles; --out DIR writes them as
CSV or Parquet, --chart FILE draws the daily counts.""",
        explain=JOBLOG_EXPLAIN,
        replay_codes=JOBLOG_REPLAY_CODES | {"OJL-REGISTRY-ROW"})
    settings = JobLogSettings
    record_cls = Row

    passes = bound(JobLogPasses)
    dump = bound(JobLogDump)
    spark = bound(JobLogSpark)

    @cached_property
    def record_view(self):
        from .serialize import JobLogRecordView
        return JobLogRecordView()

    def detect(self, path: str) -> Evidence | None:
        if is_url(path):
            from . import dburl
            return Evidence(True, "a database URL") if dburl.is_db_url(path) else None
        from .reader import kind_of_file, split_csv
        if os.path.isdir(path):
            for name in sorted(listdir(path)):
                low = name.lower()
                if low.startswith(REGISTRY_TABLE_NAMES) or not (low.startswith(TABLE_NAMES) or
                                                                 low.startswith("part-")):
                    continue
                p = os.path.join(path, name)
                if os.path.isfile(p) and kind_of_file(p):
                    ev = self.detect(p)
                    if ev is not None and ev.strong:
                        return Evidence(True, f"{name}: {ev.reason}")
            return None
        kind = kind_of_file(path)
        if kind is None:
            return None
        try:
            head = read_head(path, 1 << 16 if kind != "sqldump" else 1 << 20)
        except InputError:
            return None
        if kind == "csv":
            line = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
            names = {(n or "").strip().lower() for n in (split_csv(line) or [])}
            if _REQUIRED <= names:
                return Evidence(True, "a CSV header naming orth_job_log's columns")
        elif kind == "jsonl":
            try:
                obj = json.loads(head.split(b"\n", 1)[0])
            except ValueError:
                obj = None
            if isinstance(obj, dict) and _REQUIRED <= set(obj):
                return Evidence(True, "a JSON object with orth_job_log's columns")
        elif kind == "parquet":
            if head[:4] != b"PAR1":
                return None
            try:
                import pyarrow.parquet as pq
                names = set(pq.read_schema(path).names)
            except Exception:  # noqa: BLE001 — no pyarrow, or not readable: a guess only
                return Evidence(False, "a Parquet file named like an export")
            if _REQUIRED <= names:
                return Evidence(True, "a Parquet schema with orth_job_log's columns")
        elif kind == "sqldump":
            if any(b"`" + t.encode() + b"`" in head for t in TABLE_NAMES):
                return Evidence(True, "a SQL dump naming `orth_job_log`")
            if re.search(rb"(?:COPY|INSERT\s+INTO)\s+(?:\"?[A-Za-z0-9_$]+\"?\.)?\"?(?:"
                         + b"|".join(t.encode() for t in TABLE_NAMES) + rb")\"?[\s(]", head, re.I):
                return Evidence(True, "a PostgreSQL dump (pg_dump) naming the job-log table")
            if head.startswith(b"PGDMP"):
                return Evidence(True, "a pg_dump custom-format archive (not read: unsupported dump dialect)")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[TableLog]:
        from .reader import discover
        s = _settings(opts)
        return discover(paths, timezone=s["timezone"], registry=s["registry"])

    def files(self, log: TableLog) -> list[str]:
        return log.files

    def run(self, log: TableLog, opts: Options, *, limit: int | None = None, keep_rows: bool = False) -> ReplayPass:
        from .verify import JobLogRun
        return JobLogRun(log, opts.as_of_ns, limit=limit, keep_rows=keep_rows)

    def facts(self, rec: Row) -> RecordFacts:
        from .verify import row_facts
        return row_facts(rec)

    def state_view(self, state, log: TableLog | None = None) -> StateView:
        from .serialize import JobLogStateView
        return JobLogStateView(state)


assert COLUMN_NAMES[0] == "id"
FORMAT = register(JobLogFormat())

