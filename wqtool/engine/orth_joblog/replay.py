"""The table's history checks and state: each log id's status (the UI's precedence, §5.2), the lost-job
monitor's condition (§6), the report counts (§5.3) and the analytics, accumulated row by row in bounded memory.

``RowChecker.check(row)`` is the per-row part (the same code runs in the Spark tasks); ``Tally`` the mergeable
counts; ``JobLogReplay`` the state machine the ReplayPass drives (first occurrence of an id wins, as a primary key
does); ``closing`` the notes that end a pass.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...errors import UsageError
from ...formats.orth_joblog import COLUMN_NAMES as _COLS
from ...formats.orth_joblog import (HANDLE_MSG_MAX_CHARS, LOST_AFTER_S, LOST_HANDLE_CODE, LOST_MESSAGES,
                                    ORTH_RULES, REGISTRY_DEAD_TIMEOUT_S, RULE_SETS, AlarmStatus, HandleCode, RuleSet,
                                    Status, TriggerCode)
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .model import RegistryRow, Row, day_of, format_datetime
from .rules import report_bucket, status_of

_TRIGGER_CODES = frozenset(int(c) for c in TriggerCode)
_HANDLE_CODES = frozenset(int(c) for c in HandleCode)
_ALARM = frozenset(int(c) for c in AlarmStatus)
_LOST_MSGS = frozenset(LOST_MESSAGES.values())
STATUSES = tuple(s.value for s in Status)  # Orth's labels (a state's own: ``ctx.rules.labels``)
NO_ADDRESS = "(none)"
NO_HANDLER = "(none)"
_MOD = 1 << 256


def zone(name: str):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"-O timezone: unknown time zone {name!r} (an IANA name: UTC, Asia/Shanghai, ...)") from None


def local_seconds(as_of_ns: int, tz) -> int:
    """--as-of as the table's naive seconds in ``tz`` (floored to the second, as datetime columns are)."""
    s = as_of_ns // 1_000_000_000
    off = _dt.datetime.fromtimestamp(s, tz).utcoffset()
    return s + int(off.total_seconds())


@dataclass
class Registry:
    """The executors the lost-job monitor sees at --as-of: registry rows not yet removed as dead (update_time
    >= as-of - 90 s, or NULL)."""

    origin: str                     # where it came from ("" : none given)
    alive: frozenset[str] = frozenset()
    stale: int = 0                  # rows the registry monitor would have removed by --as-of
    rows: int = 0

    @classmethod
    def of(cls, origin: str, rows: list[RegistryRow], as_of_local: int) -> "Registry":
        cut = as_of_local - REGISTRY_DEAD_TIMEOUT_S
        alive = {r.registry_value for r in rows if r.update_time is None or r.update_time >= cut}
        stale = sum(1 for r in rows if r.update_time is not None and r.update_time < cut)
        return cls(origin, frozenset(alive), stale, len(rows))


@dataclass
class CheckContext:
    as_of_local: int
    registry: Registry
    timezone: str = "UTC"
    rules: RuleSet = ORTH_RULES     # the table's admin's status rules (``formats.orth_joblog.rules_for_table``)

    @property
    def lost_before(self) -> int:
        return self.as_of_local - LOST_AFTER_S


class RowChecker:
    """The per-row history checks, in a fixed order. ``check(row)`` -> (findings, flags) with flags a bit set:
    LOST, PENDING_ONLINE, MARKED_LOST, INIT_STUCK."""

    LOST, PENDING_ONLINE, MARKED_LOST = 1, 2, 4

    def __init__(self, ctx: CheckContext):
        self.ctx = ctx
        self.alive = ctx.registry.alive
        self.lost_before = ctx.lost_before
        self.now = ctx.as_of_local
        self.rules = ctx.rules

    def check(self, r: Row) -> tuple[list[Finding], int]:
        out: list[Finding] = []
        flags = 0
        tc, hc = r.trigger_code, r.handle_code

        def err(code, msg):
            out.append(Finding(ERROR, code, msg, path=r.path, offset=r.offset, record_index=r.index,
                               verdict=Verdict.INVALID_HISTORY, job_id=str(r.id)))

        def warn(code, msg):
            out.append(Finding(WARNING, code, msg, path=r.path, offset=r.offset, record_index=r.index,
                               job_id=str(r.id)))

        if r.id < 1:
            err("OJL-BAD-ID", f"id {r.id}: AUTO_INCREMENT ids start at 1")
        if r.trigger_time is None:
            err("OJL-NO-TRIGGER-TIME", f"id {r.id}: trigger_time is NULL; save() writes it with the row")
        if hc != 0 and r.handle_time is None:
            err("OJL-HANDLED-NO-TIME", f"id {r.id}: handle_code {hc} without handle_time")
        if tc == 200 and r.executor_address is None:
            err("OJL-QUEUED-NO-ADDRESS", f"id {r.id}: trigger_code 200 without executor_address")
        if r.handle_msg is not None and len(r.handle_msg) > HANDLE_MSG_MAX_CHARS and \
                _java_len(r.handle_msg) > HANDLE_MSG_MAX_CHARS:
            err("OJL-MSG-TOO-LONG", f"id {r.id}: handle_msg of {_java_len(r.handle_msg)} Java chars; the admin keeps "
                f"at most {HANDLE_MSG_MAX_CHARS}")
        if r.alarm_status not in _ALARM:
            err("OJL-ALARM-STATUS", f"id {r.id}: alarm_status {r.alarm_status} (the admin writes -1, 0, 1, 2, 3)")
        if tc not in _TRIGGER_CODES:
            warn("OJL-UNKNOWN-TRIGGER-CODE", f"id {r.id}: trigger_code {tc}")
        if hc not in _HANDLE_CODES:
            warn("OJL-UNKNOWN-HANDLE-CODE", f"id {r.id}: handle_code {hc}" + (" (negative: shown Failed, the row "
                 "still accepts callbacks)" if hc < 0 else ""))
        rules = self.rules
        status = status_of(tc, hc, rules)
        if tc == 0 and hc != 0:
            warn("OJL-INIT-HANDLED", f"id {r.id}: trigger_code 0, handle_code {hc}: "
                 + ("the UI shows Init" if rules.trigger_results is None else
                    f"the list shows no trigger result, handle result {rules.handle_result(hc)!r}"))
        if hc == 0 and r.handle_time is not None:
            warn("OJL-ZERO-CALLBACK", f"id {r.id}: handle_time {format_datetime(r.handle_time)} with handle_code 0")
        if r.handle_time is not None and r.trigger_time is not None and r.handle_time < r.trigger_time:
            warn("OJL-HANDLED-EARLY", f"id {r.id}: handle_time {format_datetime(r.handle_time)} before trigger_time "
                 f"{format_datetime(r.trigger_time)}")
        if r.alarm_status == -1:
            warn("OJL-ALARM-LOCKED", f"id {r.id}: alarm_status -1")
        elif r.alarm_status in (1, 2, 3) and status in rules.alarm_quiet:
            warn("OJL-ALARM-UNEXPECTED", f"id {r.id}: alarm_status {r.alarm_status} on a {rules.ui[status]} row")
        now = self.now
        future = [n for n, t in (("trigger_time", r.trigger_time), ("schedule_time", r.schedule_time),
                                 ("handle_time", r.handle_time)) if t is not None and t > now]
        if future:
            warn("OJL-FUTURE-TIME", f"id {r.id}: {', '.join(future)} after --as-of ({format_datetime(now)} "
                 f"{self.ctx.timezone})")
        tt = r.trigger_time
        if tc == 200 and hc == 0 and tt is not None and tt <= self.lost_before:
            addr = r.executor_address
            if addr is None or addr not in self.alive:
                flags |= self.LOST
                near = _near(addr, self.alive)
                warn("OJL-LOST", f"id {r.id}: {rules.pending_word} since {format_datetime(tt)}, executor {addr!r} "
                     "not registered"
                     + (f" (the registry has {near!r}: the address must match exactly)" if near else "")
                     + f": the monitor sets handle_code {LOST_HANDLE_CODE}")
            else:
                flags |= self.PENDING_ONLINE
        if tc == 0 and hc == 0 and tt is not None and tt <= self.lost_before:
            warn("OJL-INIT-STUCK", f"id {r.id}: {rules.init_word} since {format_datetime(tt)}")
        if hc == LOST_HANDLE_CODE and r.handle_msg in _LOST_MSGS:
            flags |= self.MARKED_LOST
        return out, flags


def _java_len(s: str) -> int:
    """Length in UTF-16 code units (Java's String.length())."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _near(addr: str | None, alive: frozenset[str]) -> str | None:
    if not addr:
        return None
    key = addr.rstrip("/").lower()
    for a in alive:
        if a.rstrip("/").lower() == key:
            return a
    return None


# ---------------------------------------------------------------- the state's counts (mergeable)
def digest_line(r: Row, rules: RuleSet | None = None) -> str:
    """A row's canonical line: [id, status, the 16 columns (datetimes as text)]; the status by ``rules``, else
    by the rules of the row's table."""
    vals = [format_datetime(v) if n.endswith("_time") else v for n, v in zip(_COLS, r.values())]
    st = status_of(r.trigger_code, r.handle_code, rules or RULE_SETS[r.table])
    return json.dumps([r.id, st, *vals], ensure_ascii=False,
                      separators=(",", ":"))


def line_hash(line: str) -> int:
    return int.from_bytes(hashlib.sha256(line.encode("utf-8", "surrogatepass")).digest(), "big")


@dataclass
class Tally:
    """Everything stats and replay say about the rows, as counts: merge two with ``merge``."""

    rows: int = 0
    digest_sum: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_group: dict = field(default_factory=dict)          # job_group -> Counter(status)
    daily: dict = field(default_factory=dict)             # day -> Counter(running, suc, fail)
    executors: dict = field(default_factory=dict)         # address -> Counter(status)
    handlers: dict = field(default_factory=dict)          # handler -> Counter(status)
    latency: Counter = field(default_factory=Counter)     # seconds trigger -> handle -> rows
    lost: dict = field(default_factory=dict)              # address -> [rows, oldest trigger_time]
    marked_lost: int = 0
    pending_online: int = 0
    rules: RuleSet = ORTH_RULES                           # whose status labels these are

    def add(self, r: Row, flags: int) -> None:
        self.rows += 1
        self.digest_sum = (self.digest_sum + line_hash(digest_line(r, self.rules))) % _MOD
        st = status_of(r.trigger_code, r.handle_code, self.rules)
        self.by_status[st] += 1
        _bump(self.by_group, r.job_group, st)
        if r.trigger_time is not None:
            _bump(self.daily, day_of(r.trigger_time), report_bucket(r.trigger_code, r.handle_code))
        _bump(self.executors, r.executor_address if r.executor_address is not None else NO_ADDRESS, st)
        _bump(self.handlers, r.executor_handler if r.executor_handler is not None else NO_HANDLER, st)
        if r.handle_code > 0 and r.handle_time is not None and r.trigger_time is not None:
            self.latency[r.handle_time - r.trigger_time] += 1
        if flags & RowChecker.LOST:
            a = r.executor_address if r.executor_address is not None else NO_ADDRESS
            e = self.lost.get(a)
            if e is None:
                self.lost[a] = [1, r.trigger_time]
            else:
                e[0] += 1
                e[1] = min(e[1], r.trigger_time)
        if flags & RowChecker.PENDING_ONLINE:
            self.pending_online += 1
        if flags & RowChecker.MARKED_LOST:
            self.marked_lost += 1

    def merge(self, o: "Tally") -> None:
        """Add the counts of ``o`` (rows disjoint from these, e.g. another file's with no id in common)."""
        self.rows += o.rows
        self.digest_sum = (self.digest_sum + o.digest_sum) % _MOD
        self.by_status.update(o.by_status)
        for mine, theirs in ((self.by_group, o.by_group), (self.daily, o.daily), (self.executors, o.executors),
                             (self.handlers, o.handlers)):
            for k, c in theirs.items():
                mine.setdefault(k, Counter()).update(c)
        self.latency.update(o.latency)
        for a, (n, t) in o.lost.items():
            e = self.lost.get(a)
            if e is None:
                self.lost[a] = [n, t]
            else:
                e[0] += n
                e[1] = min(e[1], t)
        self.marked_lost += o.marked_lost
        self.pending_online += o.pending_online

    def digest(self) -> str:
        return hashlib.sha256(f"orth-joblog-state/1 {self.rows} {self.digest_sum:064x}".encode()).hexdigest()

    # -- analytics tables (``StateView.analytics``)
    def analytics(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        rules = self.rules
        out["status"] = [{"status": s, "ui": rules.ui[s], "rows": self.by_status.get(s, 0)} for s in rules.labels]
        out["daily"] = [{"trigger_day": d, "running_count": c["running"], "suc_count": c["suc"],
                         "fail_count": c["fail"], "total": c["running"] + c["suc"] + c["fail"]}
                        for d, c in sorted(self.daily.items())]
        out["executors"] = [dict(executor_address=a, **_rates(c, rules)) for a, c in sorted(self.executors.items())]
        out["handlers"] = [dict(executor_handler=h, **_rates(c, rules)) for h, c in sorted(self.handlers.items())]
        out["latency"] = [latency_row(self.latency)]
        out["lost"] = [{"executor_address": a, "lost": n, "oldest_trigger_time": format_datetime(t)}
                       for a, (n, t) in sorted(self.lost.items())]
        return out


def _bump(d: dict, key, label: str) -> None:
    c = d.get(key)
    if c is None:
        c = d[key] = Counter()
    c[label] += 1


def _rates(c: Counter, rules: RuleSet) -> dict:
    """Per executor / handler: rows by outcome and the failure rate over finished rows (the rule set says which
    labels are which outcome; timeout and trigger_failed are Orth's labels, 0 for xxl-job's table)."""
    suc = sum(c.get(s, 0) for s in rules.success)
    fail = sum(c.get(s, 0) for s in rules.failed)
    running = sum(c.get(s, 0) for s in rules.running)
    return {"rows": suc + fail + running, "success": suc, "failed": fail, "timeout": c.get("timeout", 0),
            "trigger_failed": c.get("trigger-failed", 0), "running": running,
            "failure_rate": round(fail / (suc + fail), 6) if suc + fail else None}


PERCENTILES = (0.5, 0.9, 0.95, 0.99)


def latency_row(hist: Counter) -> dict:
    """Trigger-to-handle latency (seconds) over handled rows: count, min, percentiles (linear interpolation
    between closest ranks, as numpy's default and Spark's ``percentile``), max, mean."""
    n = sum(hist.values())
    row = {"rows": n, "min_s": None, **{f"p{int(p * 100)}_s": None for p in PERCENTILES}, "max_s": None,
           "mean_s": None}
    if not n:
        return row
    keys = sorted(hist)
    row["min_s"], row["max_s"] = keys[0], keys[-1]
    row["mean_s"] = round(sum(k * v for k, v in hist.items()) / n, 3)
    for p in PERCENTILES:
        row[f"p{int(p * 100)}_s"] = round(_percentile(keys, hist, n, p), 3)
    return row


def _percentile(keys: list[int], hist: Counter, n: int, p: float) -> float:
    pos = p * (n - 1)
    lo = int(pos)
    frac = pos - lo

    def at(k: int) -> int:
        acc = 0
        for key in keys:
            acc += hist[key]
            if k < acc:
                return key
        return keys[-1]
    a = at(lo)
    if frac == 0:
        return float(a)
    b = at(lo + 1)
    return a + (b - a) * frac


# ---------------------------------------------------------------- the state and the state machine
@dataclass
class JobLogState:
    tally: Tally
    ctx: CheckContext
    rows: dict[int, Row] | None = None      # kept for replay's list (None: counts only)

    def digest(self) -> str:
        return self.tally.digest()

    def counts_by_state(self) -> dict[str, int]:
        return {s: self.tally.by_status.get(s, 0) for s in self.ctx.rules.labels}

    def queues(self) -> dict[str, dict[str, int]]:
        labels = self.ctx.rules.labels
        return {f"group {g}": {s: c.get(s, 0) for s in labels} for g, c in sorted(self.tally.by_group.items())}

    def analytics(self) -> dict[str, list[dict]]:
        return self.tally.analytics()


class IdSet:
    """Ids seen, in bounded memory for auto-increment ids: pages of 65,536 ids, a set while a page is sparse and a
    bitmap (8 KiB) once it holds 256 ids."""

    _SHIFT, _DENSE = 16, 256

    def __init__(self):
        self.pages: dict[int, object] = {}

    def absorb(self, other: "IdSet") -> bool:
        """Add every id of ``other``; False if one of them was here already (nothing is added then)."""
        for k, q in other.pages.items():
            p = self.pages.get(k)
            if p is not None and _page_int(p) & _page_int(q):
                return False
        for k, q in other.pages.items():
            p = self.pages.get(k)
            if p is None:
                self.pages[k] = set(q) if q.__class__ is set else bytearray(q)
            else:
                self.pages[k] = bytearray((_page_int(p) | _page_int(q)).to_bytes(8192, "little"))
        return True

    def add(self, i: int) -> bool:
        """Add ``i``; False if it was there already."""
        k, low = i >> self._SHIFT, i & 0xFFFF
        p = self.pages.get(k)
        if p is None:
            self.pages[k] = {low}
            return True
        if p.__class__ is set:
            if low in p:
                return False
            p.add(low)
            if len(p) >= self._DENSE:
                bm = bytearray(8192)
                for x in p:
                    bm[x >> 3] |= 1 << (x & 7)
                self.pages[k] = bm
            return True
        byte, bit = low >> 3, 1 << (low & 7)
        if p[byte] & bit:
            return False
        p[byte] |= bit
        return True


def _page_int(p) -> int:
    """An IdSet page as an int of 65,536 bits (bit i: low id i)."""
    if p.__class__ is set:
        v = 0
        for x in p:
            v |= 1 << x
        return v
    return int.from_bytes(p, "little")


class JobLogReplay:
    """Rows in order: the first row of an id is the table's (a primary key), later ones are OJL-DUPLICATE-ID."""

    def __init__(self, ctx: CheckContext, *, keep_rows: bool = False):
        self.ctx = ctx
        self.checker = RowChecker(ctx)
        self.tally = Tally(rules=ctx.rules)
        self.seen = IdSet()
        self.rows: dict[int, Row] | None = {} if keep_rows else None
        self.findings: list[Finding] = []

    def apply(self, r: Row) -> None:
        if not self.seen.add(r.id):
            self.findings.append(duplicate_finding(r))
            return
        found, flags = self.checker.check(r)
        if found:
            self.findings.extend(found)
        self.tally.add(r, flags)
        if self.rows is not None:
            self.rows[r.id] = r

    def finish(self) -> tuple[JobLogState, list[Finding]]:
        return JobLogState(self.tally, self.ctx, self.rows), closing(self.tally, self.ctx)


def duplicate_finding(r: Row) -> Finding:
    return Finding(ERROR, "OJL-DUPLICATE-ID", f"id {r.id} again: the primary key holds one row per id (the first "
                   "is kept)", path=r.path, offset=r.offset, record_index=r.index, verdict=Verdict.INVALID_HISTORY,
                   job_id=str(r.id))


def closing(t: Tally, ctx: CheckContext) -> list[Finding]:
    """The notes that end a pass: the registry used, rows already marked lost, Pending rows never marked lost."""
    reg = ctx.registry
    if reg.origin:
        msg = (f"registry from {reg.origin}: {len(reg.alive)} executor address(es) registered at --as-of"
               + (f", {reg.stale} row(s) older than {REGISTRY_DEAD_TIMEOUT_S} s left out (the registry monitor "
                  "removes them)" if reg.stale else ""))
    else:
        msg = ("no orth_job_registry given: every executor counts as offline for the lost-job check (-O registry=FILE"
               "|URL names one)")
    out = [Finding(NOTE, "OJL-REGISTRY", msg + f"; table times read in {ctx.timezone}, --as-of "
                   f"{format_datetime(ctx.as_of_local)} there")]
    if t.marked_lost:
        out.append(Finding(NOTE, "OJL-MARKED-LOST", f"{t.marked_lost} row(s) already marked failed by the lost-job "
                           f"monitor (handle_code {LOST_HANDLE_CODE}, its message)"))
    if t.pending_online:
        out.append(Finding(NOTE, "OJL-PENDING-ONLINE", f"{t.pending_online} Pending row(s) triggered 10+ min before "
                           "--as-of on a registered executor: the monitor never marks them lost"))
    return out
