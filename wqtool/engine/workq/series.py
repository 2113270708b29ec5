"""workq's window into its running replay for the time series (``Passes.series_probe``, ``engine.series``).

Read around each record the replay applies (``WorkqReplay.jobs``, never a rule of its own). A queue's depth is its
jobs not finished yet (new, pending, leased): a job enters it when the replay adds it and leaves it when it
completes, fails or is deleted / expired first. A job that goes to leased on its first attempt waited since its add
(or its schedule time); a leased job that completes or fails ran since its start-attempt (the start times of the
jobs leased now are kept, one entry a leased job).
"""
from __future__ import annotations

from ...formats.workq import CmdType
from ..format import SeriesProbe, SeriesStep
from ..series import Series, series_of as _series_of
from .replay import JobState

_LEASED = JobState.LEASED
_DONE = (JobState.COMPLETED, JobState.FAILED)


class WorkqProbe(SeriesProbe):
    def __init__(self, replay):
        self.jobs = replay.jobs
        self.leased_at: dict[bytes, int] = {}

    def before(self, rec):
        c = rec.command
        if c is None:
            return None
        j = self.jobs.get(c.job_id)
        return None if j is None else (j, j.state)

    def after(self, rec, token) -> SeriesStep | None:
        c = rec.command
        if c is None:
            return None
        jid = c.job_id
        j = self.jobs.get(jid)
        if token is None:
            return None if j is None or j.state in _DONE else SeriesStep(((j.name, 1),))
        j0, s0 = token
        was = s0 not in _DONE
        if j is not j0:          # gone (delete, expire), or replaced
            self.leased_at.pop(jid, None)
            moves = ((j0.name, -1),) if was else ()
            if j is not None and j.state not in _DONE:
                moves += ((j.name, 1),)
            return SeriesStep(moves) if moves else None
        s1 = j.state
        if s1 is s0:
            return None
        t = rec.time.unix_ns
        if s1 is _LEASED:
            self.leased_at[jid] = t
            if j.attempts == 1:
                return SeriesStep(wait_ns=t - (j.scheduled_ns if j.scheduled_ns is not None else j.created_ns))
            return None
        start = self.leased_at.pop(jid, None) if s0 is _LEASED else None
        now = s1 not in _DONE
        moves = ((j.name, -1),) if was and not now else ((j.name, 1),) if now and not was else ()
        run = t - start if start is not None and s1 in _DONE else None
        return SeriesStep(moves, run_ns=run) if moves or run is not None else None


#: a SeriesAcc's record kinds -> the kind ``Format.facts`` names (0: an undecodable record)
_KINDS = {0: "(undecodable)", **{int(c): c.label for c in CmdType}}


def series_of(raw) -> Series:
    """The ``Series`` of a ``_kernel.SeriesAcc``'s ``result()``."""
    return _series_of(raw, _KINDS, has_depth=True)


def fast_series(log, as_of_ns: int, *, limit: int | None, max_bins: int):
    """``engine.series.series_log`` of one workq log in the kernel's one pass: (its LogReport as ``run_log``
    gives it, its RecordStats as ``stats`` gives them — the distinct jobs counted —, its Series), or None when the
    kernel hands the log back (the reference pass then)."""
    from ..findings import ERROR
    from .fastreplay import Bail, fast_run
    from .verify import fast_report, scan_stats
    try:
        res = fast_run(log, as_of_ns, keep=True, limit=limit, stats=True, through=True, series=max_bins)
    except Bail:
        return None
    raw = None if res.series is None else res.series.result()
    if raw is None:           # no C kernel, or a time beyond the bins' int64 ns
        return None
    report = fast_report(log, res, limit)
    if not any(sev == ERROR or code == "WQ-UNKNOWN-JOB" for code, sev in res.overflow):
        report.reuse = res    # every finding a repair plan reads was kept: report plans from this pass
    return report, scan_stats(res.records, res.stats, ids=False), series_of(raw)
