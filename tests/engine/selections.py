"""What ``engine.dump.Records`` gives for one filter, through a format's kernel walk or its reference pass: the
walk tests (tests/engine/workq/test_walk.py, tests/engine/kestrel/test_walk.py) compare the two."""
from __future__ import annotations

from wqtool.engine.dump import Records, Told
from wqtool.engine.format import Log, get
from wqtool.engine.options import Options


def selected(fmt_name: str, kernel, log, as_of_ns: int, flt, limit, *, fast: bool, fields=("path", "offset", "index")):
    """(records as tuples of ``fields``, findings told as (code, path, offset, mark), stopped, verdict) of one dump
    read, with ``kernel`` (the format's fastreplay module) switched to C (``fast``) or to the reference."""
    saved = kernel.KERNEL
    kernel.KERNEL = "c" if fast else "python"
    try:
        recs = Records(Log(get(fmt_name), log), Options(as_of_ns=as_of_ns), flt, limit=limit)
        out, told = [], []
        for ev in recs:
            if ev.__class__ is Told:
                told.append((ev.finding.code, ev.finding.path, ev.finding.offset, ev.mark))
            else:
                out.append(tuple(getattr(ev, f) for f in fields))
        return out, told, recs.stopped, recs.verdict
    finally:
        kernel.KERNEL = saved
