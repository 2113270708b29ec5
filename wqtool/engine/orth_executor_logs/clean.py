"""``clean`` for Orth executor folders: the executor's log retention exactly as ``JobLogFileCleanThread`` applies it
(spec §4), plus retry files the admin already acknowledged — as a plan first, then steps on the plan framework.

Retention (``logretentiondays`` = ``-O retention_days=N``, default 30; below 3 the cleaner is disabled): every
direct child of ``logPath`` that is a directory, has ``-`` in its name and parses with lenient
``SimpleDateFormat("yyyy-MM-dd")`` (``reader.lenient_date``: ``2026-01-30.bak`` parses, ``2026-02-30`` is March 2nd) is
deleted when today's midnight is after the parsed date + N days (dates in the executor's zone, ``-O tz=``;
today = ``--as-of``). ``gluesource/`` and ``callbacklogs/`` have no ``-`` and are never touched.

Delivered retry files: a file in ``callbacklogs/`` or ``callbacklog/`` whose every entry's job log ends its
callback attempts with ``Orth callback success`` after a failed one (a later attempt got through, so the file is
a leftover — e.g. ``replay --send`` acknowledged it but was killed before deleting it). Anything less certain is
kept.

Apply: each date directory is first renamed to ``.wqtool-clean-<name>`` (atomic: Orth's viewer sees the whole
directory or nothing; the parent is fsynced), then removed file by file; a crash leaves that name, which the next
apply (``finish_interrupted``) removes first. Each retry file is unlinked and its directory fsynced. Every step
checks again that what it deletes is what the plan saw.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
from dataclasses import dataclass, field

from ...errors import InputError, UsageError
from ...formats.orth import (DAY_MS, DEFAULT_RETENTION_RULE, MIN_RETENTION_DAYS, RETENTION_RULES,
                             SAMPLE_RETENTION_DAYS)
from ..findings import Verdict
from ..fsops import FileSig, fsync_dir, rename_noreplace
from ..plan import ApplyResult, Plan, StepRunner, remove_seen
from .reader import lenient_date

QUARANTINE = ".wqtool-clean-"


def expired(parsed: dt.date, today: dt.date, days: int, rule: str = DEFAULT_RETENTION_RULE, tz=None) -> bool:
    """Whether the cleaner of ``rule`` (``formats.orth.RETENTION_RULES``) deletes a directory dated ``parsed``.
    orth: ``todayMidnight > addDays(parsed, days)`` (both local midnights: comparing the dates is the same).
    xxl-job-3.2: ``todayMidnight.getTime() - parsed.getTime() >= days * 86400000`` (milliseconds between the two
    local midnights in the executor's zone ``tz``)."""
    if rule == "xxl-job-3.2":
        if parsed in (dt.date.min, dt.date.max):
            return parsed == dt.date.min or days < 0
        a = dt.datetime.combine(today, dt.time(0), tzinfo=tz or dt.timezone.utc)
        b = dt.datetime.combine(parsed, dt.time(0), tzinfo=tz or dt.timezone.utc)
        return round((a.timestamp() - b.timestamp()) * 1000) >= days * DAY_MS
    try:
        return today > parsed + dt.timedelta(days=days)
    except OverflowError:
        return days < 0 or parsed == dt.date.min


def retention_rule(settings) -> str:
    """The cleaner's rule from an Orth logPath's settings (``ExecutorLogsSettings.retention_rule``)."""
    v = settings.retention_rule or DEFAULT_RETENTION_RULE
    if v not in RETENTION_RULES:
        raise UsageError(f"-O retention_rule: expected one of {', '.join(RETENTION_RULES)}, got {v!r}")
    return v


@dataclass(slots=True)
class DirAction:
    name: str
    path: str
    date: str
    files: int
    bytes: int
    sig: tuple


@dataclass(slots=True)
class FileAction:
    path: str
    reason: str
    sig: FileSig


@dataclass
class OrthCleanPlan(Plan):
    kind = "clean"
    input_verdict = Verdict.CLEAN     # retention reads dates, not damage: its exit code is 0
    log_path: str
    retention_days: int
    today: str
    tz: str
    dirs: list[DirAction] = field(default_factory=list)
    files: list[FileAction] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)        # why something that looks cleanable stays
    notes: list[str] = field(default_factory=list)
    fmt: str = "orth-executor-logs"      # the format whose log this plan cleans
    rule: str = DEFAULT_RETENTION_RULE   # formats.orth.RETENTION_RULES
    recovered: list[str] = field(default_factory=list)   # what an interrupted clean left, removed by apply

    @property
    def bytes_before(self) -> int:
        """The bytes the plan deletes."""
        return sum(a.bytes for a in self.dirs) + sum(a.sig.size for a in self.files)

    def report_doc(self) -> dict:
        return {"format": self.fmt, "root": self.log_path, "retention_days": self.retention_days,
                "retention_rule": self.rule, "retention_rule_text": RETENTION_RULES[self.rule][0],
                "retention_rule_upstream": RETENTION_RULES[self.rule][1], "today": self.today, "tz": self.tz,
                "delete_dirs": [{"path": a.path, "date": a.date, "files": a.files, "bytes": a.bytes}
                                for a in self.dirs],
                "delete_files": [{"path": a.path, "reason": a.reason} for a in self.files],
                "kept": self.kept, "notes": self.notes,
                "bytes": self.bytes_before, "steps": self.apply_steps(),
                # the shape every clean plan reports (wqtool clean's table and JSON)
                "reclaimed": {"bytes": self.bytes_before,
                              "files": sum(a.files for a in self.dirs) + len(self.files), "records": 0},
                "actions": [{"file": a.path, "action": "delete", "why": f"older than {self.retention_days} day(s) "
                             f"({a.files} file(s); rule {self.rule})"} for a in self.dirs]
                           + [{"file": a.path, "action": "delete", "why": a.reason} for a in self.files],
                "lines": list(self.notes)}

    def steps(self, run: StepRunner, out: dict, **_kw) -> None:
        out.update(path=self.log_path, bytes_before=self.bytes_before, bytes_after=0, removed=[],
                   recovered=self.recovered)
        for a in self.dirs:
            q = os.path.join(self.log_path, QUARANTINE + a.name)
            run(f"hide:{a.name}", lambda a=a, q=q: _hide(a, q), on_error=lambda a=a, q=q: _unhide(a, q))
            run(f"remove:{a.name}", lambda q=q, a=a: _remove_tree(q, run, f"remove:{a.name}", out))
        for f in self.files:
            run(f"delete:{os.path.basename(f.path)}", lambda f=f: remove_seen(f.path, f.sig, out["removed"]))

    def apply(self, **kw) -> ApplyResult:
        self.recovered = finish_interrupted(self.log_path)
        return Plan.apply(self, **kw)


def _dir_sig(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_ino, st.st_dev)


def _hide(a: DirAction, q: str) -> None:
    if not os.path.isdir(a.path):
        return                                   # already gone (another cleaner, Orth's own)
    if _dir_sig(a.path) != a.sig:
        raise InputError("changed since the plan (a different directory now has this name): nothing deleted",
                         path=a.path)
    os.rename(a.path, q)
    fsync_dir(os.path.dirname(q) or ".")


def _unhide(a: DirAction, q: str) -> None:
    """The hide step failed after its rename (EIO on the fsync): the directory gets its name back (a failed apply
    leaves nothing of its own behind)."""
    if os.path.isdir(q) and not os.path.lexists(a.path):
        rename_noreplace(q, a.path)
        fsync_dir(os.path.dirname(q) or ".")


def _remove_tree(q: str, run: StepRunner, label: str, out: dict) -> None:
    if not os.path.lexists(q):
        return
    entries = []
    for dp, dns, fns in os.walk(q, topdown=False):
        entries += [os.path.join(dp, n) for n in fns]
    for i, p in enumerate(entries):
        if run.during(label) and i == len(entries) // 2:
            run.crash(label)
        os.unlink(p)
    shutil.rmtree(q)
    fsync_dir(os.path.dirname(q) or ".")
    out["removed"].append(q)


def finish_interrupted(log_path: str) -> list[str]:
    """Remove what a crashed clean left hidden (``.wqtool-clean-*``); returns the paths removed."""
    done = []
    try:
        names = os.listdir(log_path)
    except OSError:
        return done
    for n in sorted(names):
        if n.startswith(QUARANTINE) and os.path.isdir(os.path.join(log_path, n)):
            p = os.path.join(log_path, n)
            shutil.rmtree(p)
            fsync_dir(log_path)
            done.append(p)
    return done


def _tree_size(path: str) -> tuple[int, int]:
    files = size = 0
    for dp, _, fns in os.walk(path):
        for n in fns:
            try:
                size += os.lstat(os.path.join(dp, n)).st_size
                files += 1
            except OSError:
                pass
    return files, size


def clean_plan(log_path: str, as_of_ns: int, tz, tz_name: str, retention_days: int,
               delivered: list[tuple[str, str]], *, dates: bool = True,
               fmt: str = "orth-executor-logs", rule: str = DEFAULT_RETENTION_RULE) -> OrthCleanPlan:
    """The plan for one ``logPath``. ``delivered``: (retry file, why it counts as delivered); ``dates`` False:
    the date directories are left to another log's plan (a logPath read as two logs: the retry files' plan)."""
    if not os.path.isdir(log_path):
        raise UsageError("clean needs an Orth executor logPath directory", path=log_path)
    today = dt.datetime.fromtimestamp(as_of_ns / 1e9, tz).date()
    plan = OrthCleanPlan(log_path, retention_days, today.isoformat(), tz_name, fmt=fmt, rule=rule)
    if not dates:
        plan.files += [FileAction(path, why, FileSig.of(path)) for path, why in delivered]
        return plan
    if retention_days < MIN_RETENTION_DAYS:
        plan.notes.append(f"retention_days {retention_days} < {MIN_RETENTION_DAYS}: Orth's cleaner is disabled, so no "
                          "date directory is deleted")
    plan.notes.append(f"retention rule {rule}: {RETENTION_RULES[rule][0]} ({RETENTION_RULES[rule][1]}); "
                      f"N = {retention_days}")
    for n in sorted(os.listdir(log_path)):
        p = os.path.join(log_path, n)
        if n.startswith(QUARANTINE):
            plan.notes.append(f"{n}: left by an interrupted clean; removed first")
            continue
        if not os.path.isdir(p) or "-" not in n:
            continue
        d = lenient_date(n)
        if d is None:
            plan.kept.append(f"{n}: Orth cannot parse it as a date, never cleaned")
            continue
        if retention_days < MIN_RETENTION_DAYS:
            continue
        if expired(d, today, retention_days, rule, tz):
            files, size = _tree_size(p)
            plan.dirs.append(DirAction(n, p, d.isoformat(), files, size, _dir_sig(p)))
        elif d.isoformat() != n:
            plan.kept.append(f"{n}: read as {d.isoformat()}, not expired yet")
    for path, why in delivered:
        plan.files.append(FileAction(path, why, FileSig.of(path)))
    return plan


def default_retention(settings) -> int:
    """The retention in days from an Orth logPath's settings (``ExecutorLogsSettings.retention_days``)."""
    v = settings.retention_days
    return SAMPLE_RETENTION_DAYS if v is None else v

