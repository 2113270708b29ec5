"""The Orth executor log folders behind the Format interface: ``orth-executor-logs``
(``{logPath}/{yyyy-MM-dd}/{logId}.log``). The retry files of the same ``logPath`` are the ``orth-callbacks`` format
(``wqtool.engine.orth_callbacks``): this package never imports it, and reads them through the registry where the
two meet (the replay's cross references, ``clean``'s delivered retry files)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Sequence

from ...errors import UsageError
from ...formats._common import long_key
from ...formats.orth import CALLBACK_DIR, DATE_DIR, ENTRY_KINDS, LEGACY_CALLBACK_DIR, LINE_PREFIX, LOG_FILE, UTF8_BOM
from ..fileio import head_or_none, listdir
from ..caps import About, bound, Passes, Dump, Plans, Spark
from ..format import Evidence, Format, Options, RecordFacts, StateView, register
from ..run import ReplayPass
from ..options import Settings, setting
from .codes import EXECUTOR_CODES, EXECUTOR_EXPLAIN, EXECUTOR_REPLAY_CODES
from .model import LogEntry

if TYPE_CHECKING:       # a type only: the reader is imported on first use
    from .reader import ExecutorLogSet


def _looks_like_log_file(path: str) -> bool:
    h = head_or_none(path, 4096)
    if h is None:
        return False
    if h.startswith(UTF8_BOM):
        return False
    first = h.split(b"\n", 1)[0].split(b"\r", 1)[0]
    return LINE_PREFIX.match(first) is not None


@dataclass(frozen=True)
class ExecutorLogsSettings(Settings):
    """An executor logPath's settings: its zone and its cleaner (the orth-callbacks format's ``clean`` of the same
    logPath reads them through this format)."""

    tz: str = setting("UTC", help="the executor JVM's time zone (IANA name; default UTC): log line times and date "
                                  "directories")
    retention_days: int | None = setting(expected="an integer", help="clean: orth.job.executor.logretentiondays "
                                                                     "(default 30; below 3 disables cleaning)")
    retention_rule: str | None = setting(help="clean: whose cleaner: orth (default; also xxl-job 3.3+: today > date "
                                              "+ N days) or xxl-job-3.2 (2.0-3.2: today - date >= N x 86,400,000 ms, "
                                              "one day earlier)")


def _mark_shared(logs: list, opts: Options) -> list:
    """Mark the logs resolved from a logPath that gave both Orth formats' logs (``Options.shared``)."""
    shared = {os.path.abspath(p) for p in opts.shared}
    for lg in logs:
        lg.shared = lg.is_dir and os.path.abspath(lg.root) in shared
    return logs


def _tz(opts: Options) -> str:
    from .reader import zone
    tz = opts.of(FORMAT).tz
    zone(tz)
    return tz


class OrthExecutorLogsPasses(Passes):
    def file_events(self, log: ExecutorLogSet, i: int, start_index: int = 0) -> Iterator:
        from .reader import ExecutorReader
        return ExecutorReader(log, only=i, start_index=start_index, discovery=False).events()


class OrthExecutorLogsDump(Dump):
    kind_noun = "log entry kind"
    record_kinds = ENTRY_KINDS
    filters = frozenset({"time"})


class OrthExecutorLogsPlans(Plans):
    def clean(self, log: ExecutorLogSet, opts: Options):
        from .reader import is_log_path, zone
        from .clean import clean_plan, default_retention, retention_rule
        from .delivered import delivered_files
        if not (log.is_dir and is_log_path(log.root) and not DATE_DIR.match(os.path.basename(
                os.path.normpath(log.root)))):
            raise UsageError("clean works on a whole executor logPath (the directory holding the date "
                             "directories)", path=log.root)
        tz = _tz(opts)
        plan = clean_plan(log.root, opts.as_of_ns, zone(tz), tz, default_retention(opts.of(self.fmt)),
                          [] if log.shared else delivered_files(log), rule=retention_rule(opts.of(self.fmt)))
        if log.shared:
            plan.notes.append("delivered retry files: the plan of this logPath's orth-callbacks log")
        return plan

    def finish_interrupted(self, path: str) -> list[str]:
        from .clean import finish_interrupted
        return finish_interrupted(path) if os.path.isdir(path) else []

    def repair(self, log: ExecutorLogSet, opts: Options):
        from .verify import ExecutorRun
        from .repair import NothingToRepair
        run = ExecutorRun(log)
        for _ in run.events():
            pass
        return NothingToRepair(log.root, input_verdict=run.report.verdict)


    def delivered(self, log: ExecutorLogSet, log_path: str, opts: Options, *, fmt: str):
        """The clean plan of a logPath's delivered retry files only, named ``fmt``'s: the orth-callbacks log's part
        of a logPath read as both formats' logs (the date directories are this format's plan); called by that
        format through the registry. The retention settings are this format's."""
        from .reader import zone
        from .clean import clean_plan, default_retention, retention_rule
        from .delivered import delivered_files
        tz = _tz(opts)
        return clean_plan(log_path, opts.as_of_ns, zone(tz), tz, default_retention(opts.of(self.fmt)),
                          delivered_files(log), dates=False, fmt=fmt, rule=retention_rule(opts.of(self.fmt)))

class OrthExecutorLogsSpark(Spark):
    def options(self, options: dict) -> dict:
        from .reader import zone
        tz = str(options.get("tz", "UTC"))
        try:
            zone(tz)
        except UsageError as exc:
            raise ValueError(f"orth-executor-logs: option tz: {exc.message}") from None
        return {"tz": tz}


class OrthExecutorLogsFormat(Format):
    name = "orth-executor-logs"
    title = "Orth / XXL-JOB executor log folders"
    codes = EXECUTOR_CODES
    about = About(
        plural="Orth executor logs",
        file_expected="an Orth executor log (<logId>.log whose first line is 'yyyy-MM-dd HH:mm:ss [class#method]-...')",
        dir_expected="an Orth executor logPath (yyyy-MM-dd/ date directories, callbacklogs/, gluesource/)",
        manual="""Executor log folders {logPath}/{yyyy-MM-dd}/{logId}.log (spec orth-logs.md sections 3 and 4): lines
"yyyy-MM-dd HH:mm:ss [class#method]-[line]-[thread] message" in the executor's zone (-O tz=), continuation lines
attached to the line before, bytes that are not UTF-8 tolerated; the markers of a run (execute start, end(finish)
with its handleCode, end(error), timeout, stopped) and of its callbacks.

replay derives each log id's executor state, callback state and status, cross-referenced with the retry files of the
same logPath. clean applies the executor's log retention exactly (-O retention_days=N, default 30, below 3 disabled;
lenient date names; gluesource/ and callbacklogs/ untouched) and removes retry files the job logs show were
acknowledged later.

xxl-job 2.0-3.x executor logs are read the same way: lines end \\r\\n (3.2.0 XxlJobFileAppender.java:110) and the
markers say xxl-job (3.2.0 JobThread.java:134 start, :157 timeout, :180 end(finish) "handleMsg = ", :195 "JobThread
toStop, stopReason:", :205 end(error); 2.0-2.2 end(finish) "ReturnT:ReturnT [code=C, msg=M, content=X]"); the
summary's written_by names the release line. clean -O retention_rule=orth (default; Orth and xxl-job 3.3+: today >
date + N days) or xxl-job-3.2 (2.0.0-3.2.0 JobLogFileCleanThread.java:77: today - date >= N x 86,400,000 ms, a day
earlier), named in the plan and its JSON.

A logPath holding callbacklogs/ (or callbacklog/) is read as two logs by every command: its retry files
(orth-callbacks, reported as LOGPATH/callbacklogs) and its executor logs (orth-executor-logs, reported as LOGPATH),
each with its own verdict; clean plans the retention with the executor logs and the delivered retry files with the
retry files. --format reads one of them.""",
        explain=EXECUTOR_EXPLAIN,
        replay_codes=EXECUTOR_REPLAY_CODES,
        shares_dir_with=frozenset({"orth-callbacks"}))
    settings = ExecutorLogsSettings
    record_cls = LogEntry

    passes = bound(OrthExecutorLogsPasses)
    dump = bound(OrthExecutorLogsDump)
    plans = bound(OrthExecutorLogsPlans)
    spark = bound(OrthExecutorLogsSpark)

    @cached_property
    def record_view(self):
        from .serialize import ExecutorRecordView
        return ExecutorRecordView()

    @cached_property
    def diff(self):          # wqtool diff only
        from .diff import ExecutorDiffer
        return ExecutorDiffer(self)

    def detect(self, path: str) -> Evidence | None:
        from .reader import is_log_path
        name = os.path.basename(os.path.normpath(path))
        if os.path.isdir(path):
            try:
                names = sorted(listdir(path))
            except OSError:
                return None
            if DATE_DIR.match(name):
                logs = [n for n in names if LOG_FILE.match(n)]
                if logs and _looks_like_log_file(os.path.join(path, logs[0])):
                    return Evidence(True, f"a date directory holding executor logs ({logs[0]}, ...)")
                return Evidence(False, "a directory named like a date") if not names else None
            if is_log_path(path):
                for d in names:
                    dd = os.path.join(path, d)
                    if DATE_DIR.match(d) and os.path.isdir(dd):
                        logs = sorted(n for n in listdir(dd) if LOG_FILE.match(n))
                        if logs and _looks_like_log_file(os.path.join(dd, logs[0])):
                            return Evidence(True, f"a logPath: {d}/{logs[0]} is an executor log")
                if any(n in (CALLBACK_DIR, "gluesource") for n in names):
                    return Evidence(True, "a logPath: it holds " + " and ".join(
                        n + "/" for n in names if n in (CALLBACK_DIR, LEGACY_CALLBACK_DIR, "gluesource")))
            return None
        if LOG_FILE.match(name):
            if _looks_like_log_file(path):
                return Evidence(True, "<logId>.log whose first line is an executor log line")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[ExecutorLogSet]:
        from .reader import discover as discover_executor
        return _mark_shared(discover_executor(paths, tz=_tz(opts)), opts)

    def files(self, log: ExecutorLogSet) -> list[str]:
        return [f.path for f in log.files]

    def run(self, log: ExecutorLogSet, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import ExecutorRun
        return ExecutorRun(log, limit)

    def facts(self, rec: LogEntry) -> RecordFacts:
        return RecordFacts(rec.kind, rec.length, rec.time_ns, long_key(rec.log_id))

    def state_view(self, state, log=None) -> StateView:
        from .serialize import ExecutorStateView
        return ExecutorStateView(state)


FORMAT = register(OrthExecutorLogsFormat())

