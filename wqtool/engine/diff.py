"""``wqtool diff``: two views of a queue compared job by job (format-neutral; each format's part is its
``Format.diff``, e.g. ``engine/workq/diff.py``).

    d = diff([a, b], opts, limit=20, live=False)

Both logs are read through ``engine.read`` (``Want.REPLAY``: each format's fastest path, damage read through as
verify reads it, the findings kept) at ONE instant: ``--as-of last`` / ``first`` is settled over both logs (the
newer last record / the older first one), so the same job at the same place in both gives the same row. The
comparison is the format's, on its replayed state (workq: the two compact job tables merged by id in C); it names
every job whose replay row differs (all are counted, ``limit`` of them are described). The description of a job —
its queue and, on each side, its state, attempts and result and the record that last changed it — and the way the
two logs relate (one a prefix of the other, where they diverge, no common prefix) are the format's too.

Nothing here prints, and nothing here knows an exit code: ``Diff.equal`` and the reports' verdicts are what the
command turns into one.
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

from ..errors import UsageError
from .fileio import FileView
from .format import Log, Options, Unresolved, settle_as_of
from .read import Result, Want, read


@dataclass(frozen=True, slots=True)
class Change:
    """The record that last changed a job on one side: where it is, its number, its time and command."""

    path: str
    offset: int
    record_index: int | None
    time: str | None
    cmd: str | None


@dataclass(frozen=True, slots=True)
class Place:
    """A position in one log: the file and the offset (of the first record that differs)."""

    path: str
    offset: int


@dataclass(frozen=True, slots=True)
class Relation:
    """How two logs relate byte by byte: ``kind`` is "same" (byte-identical), "a+" (B is A plus ``records``
    records), "b+" (A is B plus ``records`` records), "diverge" (first differing record at ``a`` / ``b``) or
    "none" (no common prefix: they differ from their first record)."""

    kind: str
    records: int = 0
    a: Place | None = None
    b: Place | None = None


@dataclass(frozen=True, slots=True)
class JobSide:
    """A job as one side's replay shows it (``row``: replay's own row of it, the same fields)."""

    queue: str
    state: str
    attempts: int | None                # None: the format's items have none (Kestrel)
    result: bytes | None
    row: dict
    cell: str | None = None             # the table's words for it, where the format has its own


@dataclass(slots=True)
class JobDiff:
    """One job whose replayed rows differ: on each side its row (None: not live there) and the record that last
    changed it there (None: not changed on that side past where the two logs diverge)."""

    key: bytes
    job_id: str
    queue: str
    a: JobSide | None
    b: JobSide | None
    a_change: Change | None = None
    b_change: Change | None = None
    changes: list[Change] = field(default_factory=list)   # one log at two instants: its records in (from, to]
    expired: bool = False               # two instants: live at the first, gone at the second by time alone
    kind: str | None = None             # across sources: what differs (the format's word: stuck, lost, ...)
    note: str | None = None             # across sources: what it means, and what delivers it


@dataclass(slots=True)
class Diff:
    """What ``diff`` found: both reads (``a``, ``b``: ``read.Result``), the one instant, how the logs relate, the
    differing jobs described (at most ``limit``) and how many differ in all."""

    a: Result
    b: Result
    as_of_ns: int
    relation: Relation
    jobs: list[JobDiff] = field(default_factory=list)
    total: int = 0
    from_ns: int | None = None          # one log at two instants: the first (as_of_ns is the second)

    @property
    def equal(self) -> bool:
        return self.total == 0


def differ_of(fmt) -> Differ:
    """The format's part of ``diff`` (``Format.diff``), or exit 2 for a format without one."""
    if fmt.diff is None:
        raise UsageError(f"diff is not available for {fmt.about.plural}")
    return fmt.diff


class Differ(Protocol):
    """A format's part of ``diff`` (``Format.diff``)."""

    def changed(self, a: Result, b: Result) -> list[bytes]:
        """The keys (sorted) of the jobs whose replayed rows differ between the two settled reports."""

    def side(self, r: Result, key: bytes) -> JobSide | None:
        """The job as ``r``'s replay shows it, or None when it is not live there."""

    def job_id(self, key: bytes) -> str:
        """The key as printed (``job_id``)."""

    def relate(self, a: Result, b: Result, keys: Sequence[bytes]) -> tuple[Relation, dict, dict]:
        """How the two logs relate, and for each side {key: Change}: the record that last changed each of ``keys``
        past the point where the logs diverge (a second pass over only what follows that point)."""

    def between(self, log, t1: int, t2: int, limit: int | None) -> tuple:
        """One log at two instants: (report at t1, report at t2, the keys whose rows differ, {key: [Change]} of
        the records in (t1, t2], the keys that only expired by time, the records in (t1, t2])."""


def _one_instant(logs: Sequence[Log], opts: Options) -> Options:
    """``opts`` at one instant for both logs: ``last`` the later of their newest records, ``first`` the earlier
    of their first ones (a log with no timed record gives none)."""
    word = opts.as_of_word
    if word is None:
        return opts
    times = [settle_as_of(lg, opts).as_of_ns for lg in logs]
    t = max(times) if word == "last" else min(times)
    return replace(opts, as_of_ns=t, as_of_word=None)


def diff(entries: Sequence[Log | Unresolved], opts: Options, *, limit: int | None = None, live: bool = False,
         max_findings: int | None = None) -> Diff:
    """Compare two logs job by job (see the module's doc). Raises the error of an entry that could not be read,
    and ``UsageError`` for logs of two formats or a format without a diff."""
    if len(entries) != 2:
        raise UsageError(f"diff compares two logs; these paths name {len(entries)}")
    for e in entries:
        if isinstance(e, Unresolved):
            raise e.error
    a_log, b_log = entries
    if a_log.fmt is not b_log.fmt:
        raise UsageError(f"diff compares two logs of one format: {a_log.root} is {a_log.fmt.title}, "
                         f"{b_log.root} is {b_log.fmt.title}")
    differ = differ_of(a_log.fmt)
    o = _one_instant(entries, opts)
    ra, rb = read(entries, o, want=Want.REPLAY, live=live, max_findings=max_findings)
    for r in (ra, rb):
        if r.error is not None:
            raise r.error
    keys = differ.changed(ra, rb)
    shown = keys if limit is None else keys[:limit]
    relation, a_changes, b_changes = differ.relate(ra, rb, shown)
    jobs = []
    for k in shown:
        sa, sb = differ.side(ra, k), differ.side(rb, k)
        queue = (sa or sb).queue if (sa or sb) is not None else ""
        jobs.append(JobDiff(k, differ.job_id(k), queue, sa, sb, a_changes.get(k), b_changes.get(k)))
    return Diff(ra, rb, o.as_of_ns, relation, jobs, len(keys))


def paths(a: Sequence[Log | Unresolved], b: Sequence[Log | Unresolved], opts: Options, *,
          limit: int | None = None, live: bool = False, max_findings: int | None = None) -> Diff:
    """``wqtool diff A B`` with the logs each PATH names: one log of one format each (``diff``), or two sources of
    one system (a format of A's whose differ ``compares_with`` B's format: an Orth / XXL-JOB executor logPath
    against its admin's table, ``across``)."""
    for e in (*a, *b):
        if isinstance(e, Unresolved):
            raise e.error
    if len(a) == 1 and len(b) == 1 and a[0].fmt is b[0].fmt:
        return diff([a[0], b[0]], opts, limit=limit, live=live, max_findings=max_findings)
    for x in a:
        d = x.fmt.diff if len(b) == 1 else None
        if d is not None and b[0].fmt.name in getattr(d, "compares_with", ()):
            return across(x, [y for y in a if y is not x], b[0], opts, limit=limit, live=live,
                          max_findings=max_findings)
    what = lambda logs: " and ".join(lg.fmt.title for lg in logs)       # noqa: E731
    raise UsageError(f"diff compares two logs of one format (or an executor logPath with its admin's table): "
                     f"A is {what(a)}, B is {what(b)}")


def across(mine: Log, shared: Sequence[Log], other: Log, opts: Options, *, limit: int | None = None,
           live: bool = False, max_findings: int | None = None) -> Diff:
    """Two sources of one system compared run by run (``mine``'s differ ``across``; ``shared``: the other logs of
    ``mine``'s PATH, e.g. the retry files beside an executor's job logs). ``Diff.a`` is ``mine``, ``Diff.b`` the
    other source; ``Relation("across")``."""
    o = _one_instant([mine, other], opts)
    results = read([mine, *shared, other], o, want=Want.REPLAY, live=live, max_findings=max_findings)
    for r in results:
        if r.error is not None:
            raise r.error
    ra, *rs, rb = list(results)
    jobs = differ_of(mine.fmt).across(ra, rs, rb)
    return Diff(ra, rb, o.as_of_ns, Relation("across"), jobs if limit is None else jobs[:limit], len(jobs))


def between(entry: Log | Unresolved, first: Options, second: Options, *, limit: int | None = None,
            max_findings: int | None = None) -> Diff:
    """One log at two instants (``wqtool diff --from T1 --to T2``): the log as it stood at each (its records up
    to that instant, replayed at it), compared job by job; each differing job with the records in (T1, T2] that
    changed it, or marked as only expired by time. ``Relation("instants", records=N)``: N records in (T1, T2]."""
    if isinstance(entry, Unresolved):
        raise entry.error
    t1, t2 = settle_as_of(entry, first).as_of_ns, settle_as_of(entry, second).as_of_ns
    if t1 > t2:
        raise UsageError("diff --from T1 --to T2: T1 is after T2")
    differ = differ_of(entry.fmt)
    rep1, rep2, keys, window, expired, n = differ.between(entry.data, t1, t2, max_findings)
    ra = Result(entry.root, log=entry, report=rep1, as_of_ns=t1)
    rb = Result(entry.root, log=entry, report=rep2, as_of_ns=t2)
    jobs = []
    for k in (keys if limit is None else keys[:limit]):
        sa, sb = differ.side(ra, k), differ.side(rb, k)
        queue = (sa or sb).queue if (sa or sb) is not None else ""
        ch = window.get(k, [])
        jobs.append(JobDiff(k, differ.job_id(k), queue, sa, sb, None, ch[-1] if ch else None, list(ch),
                            k in expired))
    return Diff(ra, rb, t2, Relation("instants", n), jobs, len(keys), from_ns=t1)


def relation(end_a: bool, end_b: bool, at_start: bool, pa: Place | None, pb: Place | None, records_a: int,
             records_b: int) -> Relation:
    """How two logs relate, from where they diverge: ``end_a`` / ``end_b``: nothing of that log follows the
    divergence; ``at_start``: the divergence is at the first record of the first file."""
    if end_a and end_b:
        return Relation("same")
    if end_a:
        return Relation("a+", records_b - records_a, pa, pb)
    if end_b:
        return Relation("b+", records_a - records_b, pa, pb)
    return Relation("none" if at_start else "diverge", 0, pa, pb)


#: the bytes compared at a time (their mapped pages dropped after)
CHUNK = 16 << 20


def drop_pages(data, start: int, upto: int) -> None:
    """Let the kernel drop the mapped pages of ``data`` in [start, upto) (they were read: RSS stays flat)."""
    if isinstance(data, mmap.mmap):
        page = mmap.PAGESIZE
        a, b = start // page * page, min(upto, len(data)) // page * page
        if b > a:
            data.madvise(mmap.MADV_DONTNEED, a, b - a)


def first_difference(a, b) -> int:
    """The first offset at which two buffers differ (min of their lengths when one begins the other)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n                   # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def divergence(files_a: Sequence, files_b: Sequence, first=None) -> tuple[int, int | None]:
    """Where two logs' files first differ, in their reading order: (file number, offset) of the first byte that
    differs (offset 0: the files' names differ); (n, None) past the last file of both when they are byte-identical.
    ``files_*``: what ``FileView`` opens (``.path``, ``.pinned_size``); ``first``: a faster ``first_difference``
    (workq's kernel: memcmp). The mapped files are compared a window at a time, its pages dropped after it."""
    first = first or first_difference
    for i, (sa, sb) in enumerate(zip(files_a, files_b)):
        if os.path.basename(sa.path) != os.path.basename(sb.path):
            return i, 0
        with FileView(sa) as va, FileView(sb) as vb:      # the sizes a read sees (--horizon pins them)
            na, nb = va.size, vb.size
            n = min(na, nb)
            ma, mb = memoryview(va.data), memoryview(vb.data)
            try:
                for pos in range(0, n, CHUNK):
                    stop = min(n, pos + CHUNK)
                    k = first(ma[pos:stop], mb[pos:stop])
                    if pos + k < stop:
                        return i, pos + k
                    drop_pages(va.data, pos, stop)
                    drop_pages(vb.data, pos, stop)
            finally:
                ma.release()
                mb.release()
        if na != nb:
            return i, min(na, nb)
    return min(len(files_a), len(files_b)), None


__all__ = ["Change", "Diff", "Differ", "JobDiff", "JobSide", "Place", "Relation", "across", "between", "relation", "diff", "divergence", "paths",
           "drop_pages", "first_difference"]
