"""report / stats --chart / --timeline of a Kestrel file set in the C loop's one pass (``Passes.series``).

``_kernel.KQueue.scan`` feeds a ``_kernel.SeriesAcc`` (engine/_series.h: the binning the workq kernel shares) as it
replays — each record's opcode and add time, what it changed of the queue's and the open transactions' sizes — and
``fastreplay.fast_pass`` the findings the reference reader names and the closing ones, in stream order. The
reference is ``engine.series.reference_series``: ``KestrelRun`` with ``KestrelPasses.series_probe`` (a
``SizeProbe`` of ``len(replay.queue)`` and ``len(replay.open)``; Kestrel has no wait or run times: its histograms
stay empty) and ``KestrelFormat.facts`` (kind: the opcode's label; time: the add time, ms -> ns, none when 0).
tests/engine/kestrel/test_series_c.py holds them equal, every field, on random and damaged journals.
"""
from __future__ import annotations

from collections import Counter

from ...formats.kestrel import Opcode
from ..findings import ERROR
from ..series import DURATION_EDGES, MAX_MARKS, WIDTHS_S, series_of
from ..stats import RecordStats
from .reader import FileSet

#: a SeriesAcc's record kinds (the opcodes) -> the kind ``Format.facts`` names
_KINDS = {int(o): o.label for o in Opcode}


def fast_series(log: FileSet, as_of_ns: int, *, limit: int | None, keep_open: bool, max_bins: int):
    """``engine.series.series_log`` of one Kestrel file set in the kernel's one pass — (its LogReport as
    ``run_log`` gives it, its RecordStats, its Series) — or None when the kernel hands it back (no C kernel, a
    legacy opcode, a reused open xid, a libkestrel file, an add time beyond the bins): the reference pass then."""
    from . import fastreplay
    from .verify import NO_CHECKSUM
    if fastreplay.KERNEL != "c":
        return None
    acc = fastreplay._kernel.SeriesAcc(max_bins, MAX_MARKS, WIDTHS_S, DURATION_EDGES)
    try:
        report, ops, nbytes = fastreplay.fast_pass(log, as_of_ns, limit=limit, keep_open=keep_open,
                                                   no_checksum=NO_CHECKSUM, series=acc)
    except fastreplay.Bail:
        return None
    raw = acc.result()
    if raw is None:
        return None
    s = series_of(raw, _KINDS, has_depth=True)
    st = RecordStats(records=report.records, bytes=sum(nbytes), first_ns=s.first_ns, last_ns=s.last_ns)
    for k in raw[3]:            # the kinds in order of their first record (the reference's Counter order)
        st.by_type[_KINDS[k]] = ops[k]
        st.bytes_by_type[_KINDS[k]] = nbytes[k]
    errors = [f for f in report.findings if f.severity == ERROR]
    if len(errors) == report.severities.get(ERROR, 0):
        report.reuse = errors     # every error kept: what a repair would lose is told from them (repair_loss)
    return report, st, s
