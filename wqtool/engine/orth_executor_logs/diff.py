"""The executor side of ``wqtool diff EXECUTOR_DIR TABLE`` (engine/diff.py: ``across``): an Orth / XXL-JOB
executor's logPath against its admin's job-log table, run by run (log id).

The executor's outcome of a run is its replay row (the job log's end markers: finished / failed / timeout /
killed, the handleCode, whether the callback reached the admin, the retry files that hold it). The admin's view
is the table's replay row (``orth-joblog``: trigger and handle codes, the status the admin's UI shows, and
whether the lost-job monitor takes it at --as-of: OJL-LOST). The callback retry files are the logPath's other
log (``orth-callbacks``); the entry that holds a run's undelivered result is found through the registry (the
format's own ``files`` / ``file_events``): formats never import each other. Three kinds of run are named:

- ``stuck``: the admin shows it running (trigger_code 200, handle_code 0) although the executor finished it —
  with the retry file and entry holding the undelivered result and the ``wqtool replay --send`` line that
  delivers it (xxl-job issues #352, #2420, #2624, #3318);
- ``lost``: the admin's lost-job monitor marks it lost (OJL-LOST: handle_code 500) although the executor finished
  it;
- ``no-trace``: a triggered row (trigger_code 200) of a day the executor's logs cover, with no job log and no
  callback on the executor.
"""
from __future__ import annotations

import os
import struct

from ...errors import UsageError
from ..caps import Part
from ..diff import Change, JobDiff, JobSide
from ..read import Result

_KEY = struct.Struct(">q")
#: the release line that wrote a retry file (formats.orth.CALLBACK_RELEASES) -> the body its admin reads
#: (orth_callbacks' ``-O admin_release``; None: the default, Orth's); an admin of the executor's own line
_ADMIN_BODY = {"xxl-job-2.0.0": "xxl-job-2.0", "xxl-job-2.0.2": "xxl-job-2.0", "xxl-job-2.2.0": "xxl-job-2.2",
               "xxl-job-2.3": "xxl-job-2.3", "xxl-job-head": "xxl-job-head", "orth": None}
CALLBACKS = "orth-callbacks"
TABLE = "orth-joblog"


class ExecutorDiffer(Part):
    """``Format.diff`` of an executor logPath: only across sources (its admin's table)."""

    compares_with = (TABLE,)

    def changed(self, a: Result, b: Result) -> list[bytes]:
        raise UsageError("diff of two executor logPaths is not available: diff EXECUTOR_DIR TABLE compares an "
                         "executor with its admin's job-log table (--jdbc URL, a dump or an export)")

    def between(self, log, t1: int, t2: int, limit: int | None):
        raise UsageError("diff --from/--to is not available for Orth / XXL-JOB executor logs")

    def across(self, mine: Result, shared: list[Result], table: Result) -> list[JobDiff]:
        """The runs that differ, by log id (see the module's doc)."""
        ex = {r["log_id"]: r for r in mine.view().rows()}
        cb_results = [r for r in shared if r.log.fmt.name == CALLBACKS]
        cbs: dict = {}
        for r in cb_results:
            for row in r.view().rows():
                cbs.setdefault(row["log_id"], row)
        days = {r["date"] for r in ex.values() if r.get("date")}
        lost_at = {_id_of(f.message): f for f in table.report.findings if f.code == "OJL-LOST"}
        found = []
        for row in table.view().rows():
            lid = row["id"]
            e, c = ex.get(lid), cbs.get(lid)
            finished = (e is not None and e.get("handle_code") is not None) or c is not None
            waiting = row.get("trigger_code") == 200 and row.get("handle_code") == 0
            if row.get("lost_at_as_of") and finished:
                kind = "lost"
            elif waiting and finished:
                kind = "stuck"
            elif e is None and c is None and row.get("trigger_code") == 200 and \
                    str(row.get("trigger_time") or "")[:10] in days:
                kind = "no-trace"
            else:
                continue
            found.append((lid, kind, e, c, row, lost_at.get(str(lid))))
        where = entries(cb_results, {f[0] for f in found if f[1] != "no-trace"})
        root = cb_results[0].log.fmt.passes.log_name(cb_results[0].log.data) if cb_results else None
        return [_describe(lid, kind, e, c, row, lost, where.get(lid), root)
                for lid, kind, e, c, row, lost in sorted(found, key=lambda f: f[0])]

    def job_id(self, key: bytes) -> str:
        return str(_KEY.unpack(key)[0])


def _id_of(message: str) -> str | None:
    """The log id an OJL-LOST finding names ("id 101: ...")."""
    if message.startswith("id "):
        return message[3:].split(":", 1)[0]
    return None


def entries(cb_results: list[Result], wanted: set[int]) -> dict[int, tuple[Change, str]]:
    """{log id: (the retry file's entry that holds its callback, the release line that wrote it)} over the logPath's
    retry files (the last entry of a log id: the one a retry would send)."""
    out: dict[int, tuple[Change, str]] = {}
    for r in cb_results:
        fmt, log = r.log.fmt, r.log.data
        for i in range(len(fmt.files(log))):
            for ev in fmt.passes.file_events(log, i):
                lid = getattr(ev, "log_id", None)
                if lid in wanted:
                    code = getattr(ev, "handle_code", None)
                    out[lid] = (Change(ev.path, ev.offset, getattr(ev, "entry", getattr(ev, "index", None)),
                                       None, f"callback handleCode={code}"), getattr(ev, "release", "orth"))
    return out


def send_line(root: str, release: str) -> str:
    """The ``wqtool replay --send`` line that delivers a retry directory's results to its admin (URL and token
    are the operator's)."""
    body = _ADMIN_BODY.get(release)
    if body is None:
        return f"wqtool replay --send http://ADMIN:8080/orth-admin -O access_token=TOKEN {root}"
    return (f"wqtool replay --send http://ADMIN:8080/xxl-job-admin -O admin_release={body} "
            f"-O access_token_header=XXL-JOB-ACCESS-TOKEN -O access_token=TOKEN {root}")


def _describe(lid: int, kind: str, e: dict | None, c: dict | None, row: dict, lost, found: tuple | None,
              callbacks_root: str | None) -> JobDiff:
    """One run that differs: both sides, the retry entry (or job log) and the OJL-LOST place, and the note."""
    entry, release = found if found is not None else (None, "orth")
    ex_state = "no trace" if e is None else f"{e['executor']}" + (f" (handleCode {e['handle_code']})"
                                                                  if e.get("handle_code") is not None else "")
    a = None if e is None and c is None else JobSide(
        row.get("executor_handler") or "", e["status"] if e else c["status"], None, None, e or c,
        ex_state + (f"; callback {e['callback']}" if e else f"; callback {c['delivery']} in a retry file"))
    b = JobSide(row.get("executor_handler") or "", row["status"], None, None, row,
                f"{row['status']} (trigger_code {row.get('trigger_code')}, handle_code {row.get('handle_code')})"
                + ("; lost at --as-of (OJL-LOST)" if row.get("lost_at_as_of") else ""))
    a_change = entry if entry is not None else (Change(e["file"], 0, None, e.get("end_time"), "job log")
                                                if e and e.get("file") else None)
    b_change = None if lost is None else Change(lost.path, lost.offset, lost.record_index, None, "OJL-LOST")
    waits = "" if entry is None or not callbacks_root else (
        f"; its result waits in {os.path.basename(entry.path)} entry {entry.record_index}: "
        + send_line(callbacks_root, release))
    if kind == "stuck":
        note = "the admin shows it running; the executor finished it" + (waits or "; no retry file holds its result")
    elif kind == "lost":
        note = "the admin's lost-job monitor marks it lost (handle_code 500); the executor finished it" + waits
    else:
        note = "triggered, but the executor has no job log and no callback for it"
    return JobDiff(_KEY.pack(lid), str(lid), row.get("executor_handler") or "", a, b, a_change, b_change,
                   kind=kind, note=note)
