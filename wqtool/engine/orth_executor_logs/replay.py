"""The executor logs' replay (``orth-executor-logs``): each log id's run (executor state, handleCode) and callback
state, and the admin status the files imply."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from ...formats.orth import CALLBACK_MARKERS, END_HANDLE_CODE, EXECUTOR_RELEASES, MARKERS, log_status
from ..findings import NOTE, WARNING, Finding
from .model import LogEntry

_END_FINISH = dict(MARKERS)["end-finish"]


@dataclass(slots=True)
class Run:
    log_id: int
    date_dir: str
    path: str
    runs: int = 0
    start_offset: int | None = None
    start_time: str | None = None
    end_time: str | None = None
    executor: str = "no-start"        # running | finished | failed | timeout | killed | no-start
    handle_code: int | None = None
    handle_msg: str | None = None
    callback: str = "none"            # success | failed | error | none
    callback_offset: int | None = None
    open_runs: list = field(default_factory=list)   # offsets of starts without an end
    ended_by: str | None = None       # the marker that ended the latest run (xxl-job writes a second one after it)
    release: int | None = None        # index in formats.orth.EXECUTOR_RELEASES of its most specific marker


class ExecutorReplay:
    def __init__(self):
        self.runs: dict[tuple[str, int], Run] = {}
        self.findings: list[Finding] = []

    def apply(self, e: LogEntry) -> None:
        key = (e.path, e.log_id)
        r = self.runs.get(key)
        if r is None:
            r = self.runs[key] = Run(e.log_id, e.date_dir, e.path)
        k = e.kind
        if k != "log":                # the most specific marker wins
            rel = next((i for i, (_, rx) in enumerate(EXECUTOR_RELEASES) if rx.match(e.message)), None)
            if rel is not None and (r.release is None or rel < r.release):
                r.release = rel
        if k == "start":
            r.ended_by = None
            r.runs += 1
            r.executor = "running"
            r.start_offset = e.offset
            r.start_time = e.time
            r.end_time = None
            r.handle_code = None
            r.handle_msg = None
            r.open_runs.append(e.offset)
        elif k in END_HANDLE_CODE or k == "end-finish":
            if k == "end-finish":
                r.handle_code = e.handle_code if e.handle_code is not None else 500
                r.executor = "finished" if r.handle_code == 200 else "failed"
                m = _END_FINISH.match(e.message)
                msg = None if m is None else m.group("msg") if m.group("code") is not None else m.group("rmsg")
                r.handle_msg = None if msg == "null" else msg
                if r.executor == "failed" and r.ended_by == "timeout":    # xxl-job: timeout, then end(finish) 502
                    r.executor = "timeout"
            elif k == "stopped":
                if r.executor != "running":
                    return                    # a stop after the end (or of a queued trigger): nothing changes
                r.handle_code, r.executor = 500, "killed"
            elif k == "end-error" and r.ended_by == "stopped" and not r.open_runs:
                r.ended_by = k                # xxl-job: toStop, then the interrupted run's end(error): killed
                return
            else:
                r.handle_code = END_HANDLE_CODE[k]
                r.executor = "timeout" if k == "timeout" else "failed"
            r.end_time = e.time
            r.ended_by = None if not r.open_runs else k
            if r.open_runs:
                r.open_runs.pop()
        elif k in CALLBACK_MARKERS:
            r.callback = k.split("-", 1)[1]
            r.callback_offset = e.offset

    def finish(self, retry: dict[int, list[tuple[str, int]]]) -> "ExecutorState":
        fs = self.findings
        for r in self.runs.values():
            held = retry.get(r.log_id, [])
            names = ", ".join(f"{os.path.basename(p)} (handleCode {c})" for p, c in held)
            if r.runs == 0:
                fs.append(Finding(WARNING, "OE-ORPHAN", f"log id {r.log_id}: no 'execute start' line — only "
                                  f"{'callback lines' if r.callback != 'none' else 'other lines'}: its run's log was "
                                  "cleaned and Orth re-created the file writing callback lines, or the trigger was "
                                  "killed while queued", path=r.path, offset=0))
            for off in r.open_runs:
                fs.append(Finding(WARNING, "OE-NO-END", f"log id {r.log_id}: a run started at "
                                  f"{r.start_time or '?'} has no end marker: still running, or the executor died "
                                  "(the admin shows Pending until its lost-job monitor fails it: 10 min after the "
                                  "trigger, and only when the executor is offline)", path=r.path, offset=off))
            if r.callback in ("failed", "error"):
                tail = (f"a retry file still holds it: {names} (pending)" if held else
                        "no retry file holds it: unless a later retry delivered it (no success line follows), "
                        "the admin never learns this result")
                fs.append(Finding(WARNING, "OE-CALLBACK-FAILED", f"log id {r.log_id}: the last callback attempt "
                                  f"{r.callback}; {tail}", path=r.path, offset=r.callback_offset))
            if held:
                fs.append(Finding(NOTE, "OE-RETRY-PENDING", f"log id {r.log_id}: its callback waits in {names}",
                                  path=r.path, offset=0))
        return ExecutorState(self.runs, retry)


ADMIN_STATES = ("Init", "Pending", "Success", "Timeout", "Trigger Failed", "Failed", "Unknown")


@dataclass
class ExecutorState:
    runs: dict
    retry: dict

    def rows(self) -> list[dict]:
        out = []
        for (path, lid) in sorted(self.runs, key=lambda k: (k[1], k[0])):
            r = self.runs[(path, lid)]
            code = r.handle_code
            held = self.retry.get(lid, [])
            if code is None and held:
                code = held[-1][1]          # an orphan whose retry file tells the result
            status = log_status(200, code) if code is not None else ("Pending" if r.runs else "Unknown")
            admin = status if r.callback == "success" else ("Pending" if r.runs or held else "Unknown")
            out.append({"log_id": lid, "date": r.date_dir, "executor": r.executor, "runs": r.runs,
                        "start_time": r.start_time, "end_time": r.end_time, "handle_code": code,
                        "status": status, "callback": r.callback, "admin_status": admin,
                        "retry_files": [os.path.basename(p) for p, _ in held], "file": path})
        return out

    def releases(self) -> list[str]:
        """The release lines whose markers the logs hold (``formats.orth.EXECUTOR_RELEASES``), in that order."""
        seen = {r.release for r in self.runs.values() if r.release is not None}
        if seen & {0, 1}:
            seen.discard(2)            # runs without end(finish) belong to the line the other runs name
        return [EXECUTOR_RELEASES[i][0] for i in sorted(seen)]

    def counts_by_state(self) -> dict[str, int]:
        c = {s: 0 for s in ADMIN_STATES}
        for row in self.rows():
            c[row["status"]] += 1
        return c

    def by_date(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for row in self.rows():
            d = out.setdefault(row["date"], {s: 0 for s in ADMIN_STATES})
            d[row["status"]] += 1
        return dict(sorted(out.items()))

    def digest(self) -> str:
        h = hashlib.sha256()
        for row in self.rows():
            row = dict(row, file=os.path.basename(row["file"]))
            h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
            h.update(b"\n")
        return h.hexdigest()
