"""dump's selection over a Kestrel journal in the C loop (``_kernel.walk``, kestrel/_kernel.c): the records framed
as the scan frames them, picked by opcode, and the reference reader (``decode_fields``, ``JournalReader._damage``)
at every spot the loop does not take (damage, a legacy opcode); driven by ``engine.walk.Selection`` (its doc says
what a seek reads and tells). A read from the start takes its error findings from the fast path's replay
(``fastreplay.fast_run``)."""
from __future__ import annotations

from ..fileio import FileView
from ..findings import ERROR, Finding
from . import fastreplay
from .fastpath import Damage, decode_fields
from .model import Record
from .reader import ROLE_EXPLICIT, ROLE_LIVE, FileSet, JournalReader


class KestrelWalker:
    """``engine.walk.Walker`` of a Kestrel file set."""

    def __init__(self, fileset: FileSet, as_of_ns: int, keep_open: bool, flt, labels: dict):
        self.fs, self.as_of_ns, self.keep_open = fileset, as_of_ns, keep_open
        self.files, self.findings = fileset.files, fileset.findings
        self.reader = JournalReader(fileset)
        self.kinds = sum(1 << int(op) for op, label in labels.items() if flt.kinds is None or label in flt.kinds)
        self.newest = fileset.files[-1] if fileset.files else None

    def _live(self, sd: FileView) -> bool:
        jf = self.newest
        return jf is not None and sd.path == jf.path and jf.role in (ROLE_LIVE, ROLE_EXPLICIT)

    def head(self, sd: FileView, index: int, is_newest: bool):
        if sd.size >= 4 and bytes(sd.data[:4]) in fastreplay._MAGICS:
            raise fastreplay.Bail          # a libkestrel file: the reference reads it
        return None, True, 0

    def walk(self, sd: FileView, pos: int, index: int, stop, want: int, pick: bool):
        index, pos, picked, _, _ = fastreplay._kernel.walk(sd.data, pos, sd.size, index, stop,
                                                           self.kinds if pick else 0, want if pick else -1)
        return index, pos, picked

    def _decode(self, sd: FileView, pos: int, index: int):
        op, xid, add_time, expiry, item, nxt = decode_fields(sd.data, pos, sd.size)
        return Record(sd.path, pos, nxt - pos, index, op, xid, add_time, expiry, item), nxt

    def record_at(self, sd: FileView, offset: int, index: int, is_newest: bool):
        return self._decode(sd, offset, index)[0]

    def spot(self, sd: FileView, pos: int, index: int, is_newest: bool) -> tuple[list, int]:
        try:
            rec, nxt = self._decode(sd, pos, index)
        except Damage as d:
            f = self.reader._damage(d, sd.data, pos, sd.size, sd.path, index, self._live(sd), self.newest)
            return [f], sd.size if f.resumes_at is None else f.resumes_at
        return [rec], nxt

    def errors(self) -> dict[int, list[Finding]]:
        report = fastreplay.fast_run(self.fs, self.as_of_ns, limit=None, keep_open=self.keep_open)
        order = {f.path: k for k, f in enumerate(self.files)}
        out: dict[int, list[Finding]] = {}
        for f in sorted((f for f in report.findings if f.severity == ERROR and f.path in order),
                        key=lambda f: (order[f.path], f.offset or 0)):
            out.setdefault(order[f.path], []).append(f)
        return out
