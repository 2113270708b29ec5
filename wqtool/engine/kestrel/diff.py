"""Kestrel's part of ``wqtool diff`` (engine/diff.py): the items of a queue compared, with the journal position
of each differing item's add and remove.

A Kestrel item has no id. An item is named by what it holds — its add time, its expiry and its data (sha256),
and, among the items of one side that hold the same, its rank in replay order — so the same item in two
journals is the same key, wherever it sits in the queue. Two items with one key are compared by replay's row
without the position: its state (queued / open) and xid. An item that moved only because items ahead of it
left is not a difference. The replays are the format's (``run_log``: the fused fast path where it takes the
journal).

Where each differing item was added is the item's own (``Item.path``/``offset``). Where it was removed is found
by a second pass over the side that removed it: the reference reader and replay, watching which item each
REMOVE, CONFIRM_REMOVE or CONTINUE takes. This pass is not the kernel: it costs a reference read of that side.
"""
from __future__ import annotations

import hashlib
import struct
from typing import Sequence

from ...errors import UsageError
from ...formats._common import format_unix_ns
from ...formats.kestrel import Opcode
from ..caps import Part
from ..diff import Change, JobSide, Place, Relation, divergence, relation
from ..fileio import FileView
from ..read import Result
from .model import Record
from .replay import NS_PER_MS

_KEY = struct.Struct(">qq16sI")
_REMOVES = frozenset((Opcode.REMOVE, Opcode.CONFIRM_REMOVE, Opcode.CONTINUE))
_TOUCH_OPEN = frozenset((Opcode.REMOVE_TENTATIVE, Opcode.REMOVE_TENTATIVE_XID, Opcode.UNREMOVE,
                         Opcode.CONFIRM_REMOVE, Opcode.CONTINUE))


def _content(it) -> tuple:
    return it.add_time, it.expiry, hashlib.sha256(it.data).digest()[:16]


def _items(state) -> dict[bytes, tuple[str, int | None, int, object]]:
    """key -> (state, xid, position, Item) of every item of a replayed queue."""
    out, seen = {}, {}
    pos = {}
    for st, xid, it in state.sorted_items():
        c = _content(it)
        n = seen.get(c, 0)
        seen[c] = n + 1
        p = pos.get(st, 0)
        pos[st] = p + 1
        out[_KEY.pack(*c, n)] = (st, xid, p, it)
    return out


class KestrelDiffer(Part):
    """``Format.diff`` of Kestrel journals."""

    def __init__(self, fmt):
        super().__init__(fmt)
        self._cache: dict[int, tuple[object, dict]] = {}     # the two sides of the diff being made

    def _of(self, r: Result) -> dict:
        st = r.report.state
        hit = self._cache.get(id(st))
        if hit is None or hit[0] is not st:
            if len(self._cache) >= 2:
                self._cache.pop(next(iter(self._cache)))
            hit = self._cache[id(st)] = (st, _items(st))
        return hit[1]

    def changed(self, a: Result, b: Result) -> list[bytes]:
        ia, ib = self._of(a), self._of(b)
        return sorted(k for k in set(ia) | set(ib) if k not in ia or k not in ib or ia[k][:2] != ib[k][:2])

    def side(self, r: Result, key: bytes) -> JobSide | None:
        hit = self._of(r).get(key)
        if hit is None:
            return None
        st, xid, pos, it = hit
        row = it.canonical(pos, st, xid)
        row.update(add_file=it.path, add_offset=it.offset)
        cell = f"{st:<7} pos {pos}" + (f" xid {xid}" if xid is not None else "") + f", {len(it.data)} bytes"
        return JobSide(r.log.data.queue, st, None, None, row, cell)

    def between(self, log, t1: int, t2: int, limit: int | None):
        raise UsageError("diff --from/--to is not available for Kestrel journals: their records carry no time of "
                         "their own (compare two copies of the journal instead)")

    def job_id(self, key: bytes) -> str:
        add, expiry, digest, n = _KEY.unpack(key)
        when = format_unix_ns(add * NS_PER_MS) if add else "-"
        return f"{when}/{digest.hex()[:12]}" + (f"#{n}" if n else "")

    def relate(self, a: Result, b: Result, keys: Sequence[bytes]) -> tuple[Relation, dict, dict]:
        la, lb = a.log, b.log
        i, d = divergence(la.data.files, lb.data.files)
        pa, pb = _place(la, i, d), _place(lb, i, d)
        rel = relation(_ends(la, i, d), _ends(lb, i, d), i == 0 and max(pa.offset, pb.offset) <= _first_record(la),
                       pa, pb, a.report.records, b.report.records)
        want = set(keys)
        return rel, self._changes(a, want), self._changes(b, want)

    def _changes(self, r: Result, want: set[bytes]) -> dict:
        """{key: Change} on one side: the add of each wanted item live there, the remove of each one gone."""
        items = self._of(r)
        out = {}
        adds = {(it.path, it.offset): k for k, (_, _, _, it) in items.items() if k in want}
        gone = {_KEY.unpack(k)[:3]: k for k in want if k not in items}
        if not adds and not gone:
            return out
        log = r.log
        run = log.fmt.run(log.data, _opts_at(r))
        rp = run.replay
        head, opened = None, {}
        for ev in run.events():
            if ev.__class__ is not Record:
                continue
            op = ev.op
            k = adds.get((ev.path, ev.offset))
            if k is not None:
                out[k] = _change(ev, "add")
            taken = None
            if op is Opcode.REMOVE:
                taken = head
            elif op in _REMOVES:
                taken = opened.get(ev.xid)
            if taken is not None:
                k = gone.get(_content(taken))
                if k is not None:
                    out[k] = _change(ev, op.label)
            head = rp.queue[0] if rp.queue else None
            if op in _TOUCH_OPEN:
                opened = dict(rp.open)
        return out


def _opts_at(r: Result):
    from ..format import Options
    return Options(r.as_of_ns)


def _change(rec: Record, cmd: str) -> Change:
    when = format_unix_ns(rec.add_time * NS_PER_MS) if cmd == "add" and rec.add_time else None
    return Change(rec.path, rec.offset, rec.index, when, cmd)


def _ends(log, i: int, d: int | None) -> bool:
    """Whether nothing of ``log`` follows the divergence (file ``i``, byte ``d``): the other log goes on."""
    n = len(log.data.files)
    return i >= n or (d is not None and i == n - 1 and d >= _size(log, i))


def _size(log, i: int) -> int:
    with FileView(log.data.files[i]) as v:
        return v.size


def _first_record(log) -> int:
    for ev in log.fmt.passes.file_events(log.data, 0):
        if ev.__class__ is Record:
            return ev.offset
        return ev.offset or 0
    return 0


def _place(log, i: int, d: int | None) -> Place:
    """The record (or damaged range) holding byte ``d`` of file ``i``; the end of the log past its last file."""
    files = log.data.files
    if i >= len(files):
        return Place(files[-1].path, _size(log, len(files) - 1)) if files else Place(log.root, 0)
    path = files[i].path
    if d is None or d == 0:
        return Place(path, 0)
    start = None
    for ev in log.fmt.passes.file_events(log.data, i):
        off = ev.offset or 0
        stop = off + ev.length if ev.__class__ is Record else (getattr(ev, "resumes_at", None) or off + 1)
        if stop > d:
            start = off
            break
    return Place(path, min(d, _size(log, i)) if start is None else start)
