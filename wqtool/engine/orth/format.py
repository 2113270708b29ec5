"""The Orth executor-side formats behind the Format interface: ``orth-callbacks`` (retry files, JSON and legacy
Java) and ``orth-executor-logs`` (``{logPath}/{yyyy-MM-dd}/{logId}.log``). One package, two formats: the executor
logs' replay cross-references the retry files of the same ``logPath``."""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.orth import (CALLBACK_RELEASES, JACKSON_CALLBACK_FILE, ANY_CALLBACK_NAME, CALLBACK_DIR, DATE_DIR, ENTRY_KINDS, LEGACY_CALLBACK_DIR,
                             LINE_PREFIX, LOG_FILE, STREAM_HEAD, UTF8_BOM, HandleCode)
from ..fileio import listdir, read_head
from ..format import Evidence, Format, Options, RecordFacts, SendReport, register
from ..lazy import LazyInstance, lazy
from .codes import (CALLBACK_CODES, CALLBACK_EXPLAIN, CALLBACK_REPLAY_CODES, EXECUTOR_CODES, EXECUTOR_EXPLAIN,
                    EXECUTOR_REPLAY_CODES)
from .model import Callback, LogEntry

if TYPE_CHECKING:       # imported on first use (``engine.lazy``): a command loads only the format it runs
    import wqtool.engine.orth.callbacks  # noqa: F401
    import wqtool.engine.orth.executor  # noqa: F401
    import wqtool.engine.orth.serialize  # noqa: F401

discover_callbacks = lazy("wqtool.engine.orth.callbacks", "discover")
discover_executor = lazy("wqtool.engine.orth.executor", "discover")
CallbackReader = lazy("wqtool.engine.orth.callbacks", "CallbackReader")
CallbackRun = lazy("wqtool.engine.orth.callbacks", "CallbackRun")
CallbackSet = lazy("wqtool.engine.orth.callbacks", "CallbackSet")
ExecutorLogSet = lazy("wqtool.engine.orth.executor", "ExecutorLogSet")
ExecutorReader = lazy("wqtool.engine.orth.executor", "ExecutorReader")
ExecutorRun = lazy("wqtool.engine.orth.executor", "ExecutorRun")
is_log_path = lazy("wqtool.engine.orth.executor", "is_log_path")
zone = lazy("wqtool.engine.orth.executor", "zone")
CallbackStateView = lazy("wqtool.engine.orth.serialize", "CallbackStateView")
ExecutorStateView = lazy("wqtool.engine.orth.serialize", "ExecutorStateView")

_CODE_KIND = {HandleCode.SUCCESS: "success", HandleCode.FAIL: "fail", HandleCode.TIMEOUT: "timeout"}
_JSON_START = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t\r\n]*(?:\[|null|/[/*]|#|\)\]\}')")


def _job(log_id: int) -> bytes:
    return log_id.to_bytes(8, "big", signed=True)


def _head(path: str, n: int) -> bytes | None:
    try:
        return read_head(path, n)
    except InputError:
        return None


def _looks_like_retry_file(path: str) -> bool:
    h = _head(path, 64)
    return h is not None and (h.startswith(STREAM_HEAD) or _JSON_START.match(h) is not None)


def _looks_like_log_file(path: str) -> bool:
    h = _head(path, 4096)
    if h is None:
        return False
    if h.startswith(UTF8_BOM):
        return False
    first = h.split(b"\n", 1)[0].split(b"\r", 1)[0]
    return LINE_PREFIX.match(first) is not None


# ---------------------------------------------------------------- orth-callbacks
class OrthCallbacksFormat(Format):
    name = "orth-callbacks"
    title = "Orth / XXL-JOB callback retry files"
    plural = "Orth retry files"
    kind_noun = "handle result"
    file_expected = "an Orth retry file (orth-callback-<md5>.log holding a JSON array, or a legacy Java stream)"
    dir_expected = "an Orth callbacklogs/ (or legacy callbacklog/) directory"
    manual = """What an Orth (XXL-JOB 3.3 derivative) executor leaves in its logPath when a callback to the admin fails
(default /data/applogs/orth/jobhandler; spec orth-logs.md sections 1, 2 and 7).

callbacklogs/orth-callback-{md5}.log (also xxl-job-callback-{md5}.log): the Gson JSON array
[{"logId":N,"logDateTim":MS,"handleCode":C[,"handleMsg":S]}], compact, keys in that order, a null handleMsg
omitted, <>&=' raw, control characters and U+2028/U+2029 escaped, UTF-8, no trailing newline; {md5} is the lowercase
MD5 of the file's bytes. Legacy XXL-JOB <= 3.2 files callbacklog/xxl-job-callback-{ms}[-i].log hold
ObjectOutputStream.writeObject(ArrayList<HandleCallbackParam>); wqtool reads exactly that stream shape with a
bounded parser and never instantiates a class.

replay lists each log id with its status (the UI's precedence) and its delivery state (pending, blocked by a poison
file, stuck, stranded, refused). replay --send URL posts each file to URL/api/callback and deletes it only after the
admin answered {"code":200,...}; settings -O access_token= (or $ORTH_ACCESS_TOKEN), -O access_token_header=,
-O timeout=, -O admin_release= (the body that admin reads). An xxl-job 2.0.0-2.1.0 admin
(-O admin_release=xxl-job-2.0) is called over xxl-rpc instead: AdminBiz.callback as a Hessian 2 XxlRpcRequest
posted to URL/api, the token inside, accepted on an XxlRpcResponse without errorMsg and a ReturnT of code 200.

A name's md5 is the file's only checksum: bytes that do not hash to it are OC-NAME-MD5, an error; when one flipped
bit explains the change, the finding names it and the entries that now parse differently. repair -O md5_action=
quarantine (default), restore, rename or keep plans the fix.

Release lines (auto-detected from the files, named in dump rows as release and in summaries as written_by; spec
orth-logs.md section 2a):

""" + "\n".join(f"  {title}: {where}\n    {enc}\n    upstream: {src}" for _, title, where, enc, src in CALLBACK_RELEASES)
    codes = CALLBACK_CODES
    explain = CALLBACK_EXPLAIN
    replay_codes = CALLBACK_REPLAY_CODES
    record_kinds = ("success", "fail", "timeout", "other")
    filters = frozenset({"time"})
    options = {"access_token": "replay --send: the admin's access token (default: $ORTH_ACCESS_TOKEN)",
               "access_token_header": "replay --send: the token header (default ORTH-ACCESS-TOKEN; xxl-job: "
                                      "XXL-JOB-ACCESS-TOKEN)",
               "timeout": "replay --send: seconds to wait for the admin per request (default 10)",
               "admin_release": "replay --send: the body the admin reads: orth (default; also xxl-job 2.3-3.4), "
                                "xxl-job-2.0 (2.0.0-2.1.0: xxl-rpc AdminBiz.callback, Hessian 2 to URL/api, the "
                                "token inside), xxl-job-2.2 (executeResult {code, msg, content}; also 2.1.1-2.1.2 "
                                "with -O access_token_header=XXL-RPC-ACCESS-TOKEN), xxl-job-2.3, xxl-job-head "
                                "(logDateTime); any release's retry files can go to any of them",
               "md5_action": "repair: what to do with a file whose bytes do not hash to its name (OC-NAME-MD5): "
                             "quarantine (default), restore (a single flipped bit undone), rename (to the "
                             "content's md5), keep"}
    record_cls = Callback
    record_view = LazyInstance("wqtool.engine.orth.serialize", "CallbackRecordView")
    shares_dir_with = frozenset({"orth-executor-logs"})     # a logPath: its retry files and its job logs

    def detect(self, path: str) -> Evidence | None:
        name = os.path.basename(os.path.normpath(path))
        if os.path.isdir(path):
            try:
                names = sorted(listdir(path))
            except OSError:
                return None
            named = [n for n in names if ANY_CALLBACK_NAME.match(n)]
            good = [n for n in named if _looks_like_retry_file(os.path.join(path, n))]
            if name in (CALLBACK_DIR, LEGACY_CALLBACK_DIR):
                if good:
                    return Evidence(True, f"a {name}/ directory holding retry files ({good[0]}, ...)")
                return Evidence(False, f"a directory named {name}/ (no retry file in it to confirm)")
            if good and len(named) == len(names):
                return Evidence(True, f"every file is named like a retry file and holds one ({good[0]}, ...)")
            retry = [n for n in names if n in (CALLBACK_DIR, LEGACY_CALLBACK_DIR, JACKSON_CALLBACK_FILE)]
            if retry and not DATE_DIR.match(name) and is_log_path(path):
                return Evidence(True, f"a logPath holding the retry directory {retry[0]}/")
            return None
        if name == CALLBACK_DIR:
            return Evidence(True, "a file named callbacklogs (Orth's retry directory must be a directory)")
        if name == JACKSON_CALLBACK_FILE:
            h = _head(path, 64)
            if h is not None and h.lstrip()[:1] == b"[":
                return Evidence(True, "xxl-job 2.0.0-2.0.1's retry file (Jackson JSON lines)")
            return Evidence(False, "named like xxl-job 2.0.0-2.0.1's retry file")
        if ANY_CALLBACK_NAME.match(name):
            if _looks_like_retry_file(path):
                return Evidence(True, "named like a retry file and starts like one (a JSON array or a Java stream)")
            return Evidence(False, "named like a retry file")
        return None

    def fits(self, path: str) -> bool:
        """--format orth-callbacks also reads a whole executor logPath (its callbacklogs/ and callbacklog/, which
        exist only once a callback failed)."""
        return self.detect(path) is not None or (os.path.isdir(path) and is_log_path(path))

    def discover(self, paths: Sequence[str], opts: Options) -> list[CallbackSet]:
        return _mark_shared(discover_callbacks(paths), opts)

    def log_name(self, log: CallbackSet) -> str:
        return log.name

    def files(self, log: CallbackSet) -> list[str]:
        return [f.path for f in log.files]

    def file_events(self, log: CallbackSet, i: int, start_index: int = 0) -> Iterator:
        return CallbackReader(log, only=i, start_index=start_index, discovery=False).events()

    def run(self, log: CallbackSet, opts: Options, *, limit: int | None = None) -> CallbackRun:
        return CallbackRun(log, limit)

    def facts(self, rec: Callback) -> RecordFacts:
        return RecordFacts(_CODE_KIND.get(rec.handle_code, "other"), rec.length, rec.log_date_tim * 1_000_000,
                           _job(rec.log_id))

    def state_view(self, state, log=None) -> CallbackStateView:
        return CallbackStateView(state)

    def source_options(self, options: dict) -> dict:
        return {}

    def send(self, log: CallbackSet, target: str, opts: Options, *, dry_run: bool = False,
             progress=None, hook=None, fail_at: str | None = None) -> SendReport:
        from .send import TOKEN_ENV, TOKEN_HEADER, send
        token = opts.get("access_token") or os.environ.get(TOKEN_ENV) or None
        try:
            timeout = float(opts.get("timeout", 10))
        except ValueError:
            raise UsageError(f"-O timeout: expected seconds, got {opts.get('timeout')!r}") from None
        if not target.startswith(("http://", "https://")):
            raise UsageError(f"--send: expected the admin's http(s):// address, got {target!r}")
        from .send import ADMIN_BODIES
        admin = str(opts.get("admin_release", "orth"))
        if admin not in ADMIN_BODIES:
            raise UsageError(f"-O admin_release: expected one of {', '.join(ADMIN_BODIES)}, got {admin!r}")
        return send(log, target, token=token, header=opts.get("access_token_header", TOKEN_HEADER),
                    timeout=timeout, dry_run=dry_run, progress=progress, hook=hook, fail_at=fail_at, admin=admin)

    def clean_plan(self, log: CallbackSet, opts: Options):
        if not log.log_path:
            raise UsageError("clean works on an executor logPath (it holds the job logs that tell which retry files "
                             "were delivered); name the logPath", path=log.root)
        if log.shared:   # the logPath's executor-log plan does the retention: this one, the delivered retry files
            from .delivered import delivered_files
            from .retention import clean_plan, default_retention, retention_rule
            tz = _tz(opts)
            ex = discover_executor([log.log_path], tz=tz)[0]
            return clean_plan(log.log_path, opts.as_of_ns, zone(tz), tz, default_retention(opts), delivered_files(ex),
                              dates=False, fmt=self.name, rule=retention_rule(opts))
        from ..format import get
        return get("orth-executor-logs").clean_plan(discover_executor([log.log_path], tz=_tz(opts))[0], opts)

    def finish_interrupted(self, path: str) -> list[str]:
        from .retention import finish_interrupted
        return finish_interrupted(path) if os.path.isdir(path) else []

    def repair_plan(self, log: CallbackSet, opts: Options):
        from .repair import repair_plan
        run = CallbackRun(log)
        for _ in run.events():
            pass
        rep = run.report
        return repair_plan(log, rep.findings, rep.verdict, rep.state.digest() if rep.state is not None else "",
                           opts.get("md5_action"))


# ---------------------------------------------------------------- orth-executor-logs
def _mark_shared(logs: list, opts: Options) -> list:
    """Mark the logs resolved from a logPath that gave both Orth formats' logs (``Options.extra["_shared"]``)."""
    shared = {os.path.abspath(p) for p in opts.extra.get("_shared", ())}
    for lg in logs:
        lg.shared = lg.is_dir and os.path.abspath(lg.root) in shared
    return logs


def _tz(opts: Options) -> str:
    tz = str(opts.get("tz", "UTC"))
    zone(tz)
    return tz


class OrthExecutorLogsFormat(Format):
    name = "orth-executor-logs"
    title = "Orth / XXL-JOB executor log folders"
    plural = "Orth executor logs"
    kind_noun = "log entry kind"
    file_expected = "an Orth executor log (<logId>.log whose first line is 'yyyy-MM-dd HH:mm:ss [class#method]-...')"
    dir_expected = "an Orth executor logPath (yyyy-MM-dd/ date directories, callbacklogs/, gluesource/)"
    manual = """Executor log folders {logPath}/{yyyy-MM-dd}/{logId}.log (spec orth-logs.md sections 3 and 4): lines
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
retry files. --format reads one of them."""
    codes = EXECUTOR_CODES
    explain = EXECUTOR_EXPLAIN
    replay_codes = EXECUTOR_REPLAY_CODES
    record_kinds = ENTRY_KINDS
    filters = frozenset({"time"})
    options = {"tz": "the executor JVM's time zone (IANA name; default UTC): log line times and date directories",
               "retention_days": "clean: orth.job.executor.logretentiondays (default 30; below 3 disables cleaning)",
               "retention_rule": "clean: whose cleaner: orth (default; also xxl-job 3.3+: today > date + N days) or "
                                 "xxl-job-3.2 (2.0-3.2: today - date >= N x 86,400,000 ms, one day earlier)"}
    record_cls = LogEntry
    record_view = LazyInstance("wqtool.engine.orth.serialize", "ExecutorRecordView")
    shares_dir_with = frozenset({"orth-callbacks"})

    def detect(self, path: str) -> Evidence | None:
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
        return _mark_shared(discover_executor(paths, tz=_tz(opts)), opts)

    def files(self, log: ExecutorLogSet) -> list[str]:
        return [f.path for f in log.files]

    def file_events(self, log: ExecutorLogSet, i: int, start_index: int = 0) -> Iterator:
        return ExecutorReader(log, only=i, start_index=start_index, discovery=False).events()

    def run(self, log: ExecutorLogSet, opts: Options, *, limit: int | None = None) -> ExecutorRun:
        return ExecutorRun(log, limit)

    def facts(self, rec: LogEntry) -> RecordFacts:
        return RecordFacts(rec.kind, rec.length, rec.time_ns, _job(rec.log_id))

    def state_view(self, state, log=None) -> ExecutorStateView:
        return ExecutorStateView(state)

    def source_options(self, options: dict) -> dict:
        tz = str(options.get("tz", "UTC"))
        try:
            zone(tz)
        except UsageError as exc:
            raise ValueError(f"orth-executor-logs: option tz: {exc.message}") from None
        return {"tz": tz}

    def clean_plan(self, log: ExecutorLogSet, opts: Options):
        from .retention import clean_plan, default_retention, retention_rule
        from .delivered import delivered_files
        if not (log.is_dir and is_log_path(log.root) and not DATE_DIR.match(os.path.basename(
                os.path.normpath(log.root)))):
            raise UsageError("clean works on a whole executor logPath (the directory holding the date "
                             "directories)", path=log.root)
        tz = _tz(opts)
        plan = clean_plan(log.root, opts.as_of_ns, zone(tz), tz, default_retention(opts),
                          [] if log.shared else delivered_files(log), rule=retention_rule(opts))
        if log.shared:
            plan.notes.append("delivered retry files: the plan of this logPath's orth-callbacks log")
        return plan

    def finish_interrupted(self, path: str) -> list[str]:
        from .retention import finish_interrupted
        return finish_interrupted(path) if os.path.isdir(path) else []

    def repair_plan(self, log: ExecutorLogSet, opts: Options):
        from .repair import NothingToRepair
        run = ExecutorRun(log)
        for _ in run.events():
            pass
        return NothingToRepair(log.root, input_verdict=run.report.verdict)


CALLBACKS = register(OrthCallbacksFormat())
FORMAT = register(OrthExecutorLogsFormat())
