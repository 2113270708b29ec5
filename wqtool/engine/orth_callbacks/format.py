"""The Orth retry files behind the Format interface: ``orth-callbacks`` (an executor's ``callbacklogs/``, JSON, and
the older release lines' legacy Java, Hessian and Jackson files). The executor log folders of the same ``logPath``
are the ``orth-executor-logs`` format (``wqtool.engine.orth_executor_logs``): this package never imports it, and
reaches it through the registry where the two meet (``clean``: the logPath's retention is that format's)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, Sequence

from ...errors import UsageError
from ...formats._common import long_key
from ...formats.orth import (CALLBACK_RELEASES, JACKSON_CALLBACK_FILE, ANY_CALLBACK_NAME, CALLBACK_DIR, DATE_DIR,
                             LEGACY_CALLBACK_DIR, STREAM_HEAD, HandleCode)
from ..fileio import head_or_none, listdir
from ..caps import About, bound, Passes, Dump, Plans, Spark
from ..format import Evidence, Format, Options, RecordFacts, SendReport, StateView, get, register
from ..run import ReplayPass
from ..options import Settings, setting
from .codes import CALLBACK_CODES, CALLBACK_EXPLAIN, CALLBACK_REPLAY_CODES
from .model import Callback

if TYPE_CHECKING:       # a type only: the reader is imported on first use
    from .reader import CallbackSet


_CODE_KIND = {HandleCode.SUCCESS: "success", HandleCode.FAIL: "fail", HandleCode.TIMEOUT: "timeout"}
_JSON_START = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t\r\n]*(?:\[|null|/[/*]|#|\)\]\}')")


def _looks_like_retry_file(path: str) -> bool:
    h = head_or_none(path, 64)
    return h is not None and (h.startswith(STREAM_HEAD) or _JSON_START.match(h) is not None)


@dataclass(frozen=True)
class CallbacksSettings(Settings):
    """The retry files' own settings (``replay --send``, ``repair``). ``clean`` applies the executor's retention
    (``-O tz``, ``retention_days``, ``retention_rule``): those are the orth-executor-logs format's settings, read by
    it."""

    access_token: str | None = setting(help="replay --send: the admin's access token (default: $ORTH_ACCESS_TOKEN)")
    access_token_header: str | None = setting(help="replay --send: the token header (default ORTH-ACCESS-TOKEN; "
                                                   "xxl-job: XXL-JOB-ACCESS-TOKEN)")
    timeout: float = setting(10.0, expected="seconds",
                             help="replay --send: seconds to wait for the admin per request (default 10)")
    admin_release: str = setting("orth", help=(
        "replay --send: the body the admin reads: orth (default; also xxl-job 2.3-3.4), xxl-job-2.0 (2.0.0-2.1.0: "
        "xxl-rpc AdminBiz.callback, Hessian 2 to URL/api, the token inside), xxl-job-2.2 (executeResult {code, "
        "msg, content}; also 2.1.1-2.1.2 with -O access_token_header=XXL-RPC-ACCESS-TOKEN), xxl-job-2.3, "
        "xxl-job-head (logDateTime); any release's retry files can go to any of them"))
    md5_action: str | None = setting(help="repair: what to do with a file whose bytes do not hash to its name "
                                          "(OC-NAME-MD5): quarantine (default), restore (a single flipped bit undone), "
                                          "rename (to the content's md5), keep")


class OrthCallbacksPasses(Passes):
    def log_name(self, log: CallbackSet) -> str:
        return log.name

    def file_events(self, log: CallbackSet, i: int, start_index: int = 0) -> Iterator:
        from .reader import CallbackReader
        return CallbackReader(log, only=i, start_index=start_index, discovery=False).events()


class OrthCallbacksDump(Dump):
    kind_noun = "handle result"
    record_kinds = ("success", "fail", "timeout", "other")
    filters = frozenset({"time"})


class OrthCallbacksPlans(Plans):
    def clean(self, log: CallbackSet, opts: Options):
        if not log.log_path:
            raise UsageError("clean works on an executor logPath (it holds the job logs that tell which retry files "
                             "were delivered); name the logPath", path=log.root)
        executor = get("orth-executor-logs")      # the logPath's retention and job logs are that format's
        ex = executor.discover([log.log_path], replace(opts, shared=frozenset()))[0]
        if log.shared:   # the logPath's executor-log plan does the retention: this one, the delivered retry files
            return executor.plans.delivered(ex, log.log_path, opts, fmt=self.fmt.name)
        return executor.plans.clean(ex, opts)

    def finish_interrupted(self, path: str) -> list[str]:
        return get("orth-executor-logs").plans.finish_interrupted(path)     # what its clean left (.wqtool-clean-*)

    def repair(self, log: CallbackSet, opts: Options):
        from .verify import CallbackRun
        from .repair import repair_plan
        run = CallbackRun(log)
        for _ in run.events():
            pass
        rep = run.report
        return repair_plan(log, rep.findings, rep.verdict, rep.state.digest() if rep.state is not None else "",
                           opts.of(self.fmt).md5_action)


class OrthCallbacksSpark(Spark):
    def options(self, options: dict) -> dict:
        return {}


class OrthCallbacksFormat(Format):
    name = "orth-callbacks"
    title = "Orth / XXL-JOB callback retry files"
    codes = CALLBACK_CODES
    about = About(
        plural="Orth retry files",
        file_expected="an Orth retry file (orth-callback-<md5>.log holding a JSON array, or a legacy Java stream)",
        dir_expected="an Orth callbacklogs/ (or legacy callbacklog/) directory",
        manual="""What an Orth (XXL-JOB 3.3 derivative) executor leaves in its logPath when a callback to the admin fails
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

""" + "\n".join(f"  {title}: {where}\n    {enc}\n    upstream: {src}" for _, title, where, enc, src in CALLBACK_RELEASES),
        explain=CALLBACK_EXPLAIN,
        replay_codes=CALLBACK_REPLAY_CODES,
        shares_dir_with=frozenset({"orth-executor-logs"}))
    settings = CallbacksSettings
    record_cls = Callback

    passes = bound(OrthCallbacksPasses)
    dump = bound(OrthCallbacksDump)
    plans = bound(OrthCallbacksPlans)
    spark = bound(OrthCallbacksSpark)

    @cached_property
    def record_view(self):
        from .serialize import CallbackRecordView
        return CallbackRecordView()

    def detect(self, path: str) -> Evidence | None:
        from .reader import is_log_path
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
            h = head_or_none(path, 64)
            if h is not None and h.lstrip()[:1] == b"[":
                return Evidence(True, "xxl-job 2.0.0-2.0.1's retry file (Jackson JSON lines)")
            return Evidence(False, "named like xxl-job 2.0.0-2.0.1's retry file")
        if ANY_CALLBACK_NAME.match(name):
            if _looks_like_retry_file(path):
                return Evidence(True, "named like a retry file and starts like one (a JSON array or a Java stream)")
            return Evidence(False, "named like a retry file")
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[CallbackSet]:
        from .reader import discover as discover_callbacks
        return _mark_shared(discover_callbacks(paths), opts)

    def files(self, log: CallbackSet) -> list[str]:
        return [f.path for f in log.files]

    def run(self, log: CallbackSet, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import CallbackRun
        return CallbackRun(log, limit)

    def facts(self, rec: Callback) -> RecordFacts:
        return RecordFacts(_CODE_KIND.get(rec.handle_code, "other"), rec.length, rec.log_date_tim * 1_000_000,
                           long_key(rec.log_id))

    def state_view(self, state, log=None) -> StateView:
        from .serialize import CallbackStateView
        return CallbackStateView(state)

    def send(self, log: CallbackSet, target: str, opts: Options, *, dry_run: bool = False,
             progress=None, hook=None, fail_at: str | None = None) -> SendReport:
        from .send import TOKEN_ENV, TOKEN_HEADER, send
        s = opts.of(self)
        token = s.access_token or os.environ.get(TOKEN_ENV) or None
        timeout = s.timeout
        if not target.startswith(("http://", "https://")):
            raise UsageError(f"--send: expected the admin's http(s):// address, got {target!r}")
        from .send import ADMIN_BODIES
        admin = s.admin_release
        if admin not in ADMIN_BODIES:
            raise UsageError(f"-O admin_release: expected one of {', '.join(ADMIN_BODIES)}, got {admin!r}")
        return send(log, target, token=token, header=s.access_token_header or TOKEN_HEADER,
                    timeout=timeout, dry_run=dry_run, progress=progress, hook=hook, fail_at=fail_at, admin=admin)


def _mark_shared(logs: list, opts: Options) -> list:
    """Mark the logs resolved from a logPath that gave both Orth formats' logs (``Options.shared``)."""
    shared = {os.path.abspath(p) for p in opts.shared}
    for lg in logs:
        lg.shared = lg.is_dir and os.path.abspath(lg.root) in shared
    return logs


FORMAT = register(OrthCallbacksFormat())

