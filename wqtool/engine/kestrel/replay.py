"""The Kestrel 2.x queue state machine (``PersistentQueue.replayJournal`` + startup), with an explicit clock.

One queue, one map of open transactions and one xid counter across the whole file set. Semantics (spec §7):
adds append at the tail; REMOVE pops the head; REMOVE_TENTATIVE(_XID) pops the head into the open map;
UNREMOVE puts the open item back at the **head**; CONFIRM_REMOVE closes; CONTINUE closes its xid then appends;
SAVE_XID and every REMOVE_TENTATIVE_XID set the counter (last writer wins). Removes on an empty queue and
unknown xids are no-ops (noted). Nothing expires during replay; ``as_of`` only reports which items would be
expired (and is the add time Kestrel gives legacy ADDs). At the end, as at Kestrel startup, open transactions
go back to the head in ascending xid order unless ``keep_open``.

``--kestrel-version`` (``version``): the meaning of opcode 3 and of the legacy ADD expiry.

* ``1``: opcode 3 takes the next counter value (skipping open xids) as 1.x did; legacy ADD expiry is
  ``seconds * 1000`` computed in 32-bit arithmetic (1.1–1.3.0's overflow).
* ``2``: exactly what a 2.x server does: opcode 3 is ``RemoveTentative(0)`` (xid 0, counter reset to 0, several
  such transactions collide on key 0); legacy ADD expiry ``seconds * 1000``.
* ``auto`` (default): opcode 3 the 1.x way (its writer's meaning, as the spec recommends), legacy expiry the
  2.x way (no overflow); the writer version guessed from the opcodes seen is stated in a KQ-VERSION note.
"""
from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field

from ...formats.kestrel import Opcode
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .model import Record

NS_PER_MS = 1_000_000
QUEUED, OPEN = "queued", "open"
(_ADD, _REMOVE, _ADDX, _REMOVE_TENTATIVE, _SAVE_XID, _UNREMOVE, _CONFIRM_REMOVE, _ADD_XID, _CONTINUE,
 _REMOVE_TENTATIVE_XID) = tuple(Opcode)


def wrap_i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


@dataclass(slots=True)
class Item:
    """A queue item (``QItem``): add and expiry times in ms (expiry 0 = never), data, and where it came from."""

    add_time: int
    expiry: int
    data: bytes
    xid: int = 0
    path: str | None = None
    offset: int | None = None
    legacy: bool = False   # a legacy ADD: add_time is the replay clock

    def expired_at(self, as_of_ms: int) -> bool:
        return self.expiry != 0 and self.expiry <= as_of_ms

    def canonical(self, pos: int, state: str, xid: int | None) -> dict:
        return {"pos": pos, "state": state, "xid": xid, "add_time_ms": self.add_time, "expiry_ms": self.expiry,
                "len": len(self.data), "data_sha256": hashlib.sha256(self.data).hexdigest()}


@dataclass(slots=True)
class KestrelState:
    """The replayed state: ``queue`` head->tail, ``open`` transactions (empty unless keep_open)."""

    as_of_ns: int
    queue: list[Item]
    open: dict[int, Item]
    keep_open: bool = False
    xid_counter: int = 0
    records: int = 0
    applied: int = 0
    findings: list[Finding] = field(default_factory=list)
    version: str = "auto"
    version_guess: str = ""
    backed_out: int = 0

    @property
    def as_of_ms(self) -> int:
        return self.as_of_ns // NS_PER_MS

    def sorted_items(self) -> list[tuple[str, int | None, Item]]:
        """(state, xid, item): open transactions by ascending xid, then the queue head -> tail."""
        out: list[tuple[str, int | None, Item]] = [(OPEN, x, self.open[x]) for x in sorted(self.open)]
        out.extend((QUEUED, None, it) for it in self.queue)
        return out

    def canonical_rows(self) -> list[dict]:
        rows = [it.canonical(i, OPEN, x) for i, x in enumerate(sorted(self.open)) for it in (self.open[x],)]
        rows.extend(it.canonical(i, QUEUED, None) for i, it in enumerate(self.queue))
        return rows

    def counts_by_state(self) -> dict[str, int]:
        return {QUEUED: len(self.queue), OPEN: len(self.open)}

    @property
    def items(self) -> int:
        return len(self.queue) + len(self.open)

    @property
    def data_bytes(self) -> int:
        return sum(len(i.data) for i in self.queue) + sum(len(i.data) for i in self.open.values())

    def expired(self, as_of_ns: int | None = None) -> list[tuple[str, int, Item]]:
        """Items expired at ``as_of`` (default: the replay's): (state, position or xid, item)."""
        ms = (self.as_of_ns if as_of_ns is None else as_of_ns) // NS_PER_MS
        out: list[tuple[str, int, Item]] = [(OPEN, x, it) for x, it in sorted(self.open.items()) if it.expired_at(ms)]
        out.extend((QUEUED, i, it) for i, it in enumerate(self.queue) if it.expired_at(ms))
        return out

    def expired_count(self, as_of_ns: int | None = None) -> int:
        """``len(self.expired(as_of_ns))``, without building the list."""
        ms = (self.as_of_ns if as_of_ns is None else as_of_ns) // NS_PER_MS
        n = 0
        for it in self.queue:
            e = it.expiry
            if e and e <= ms:
                n += 1
        for it in self.open.values():
            e = it.expiry
            if e and e <= ms:
                n += 1
        return n

    def without_expired(self, as_of_ns: int | None = None) -> "KestrelState":
        """A copy whose queue drops items expired at ``as_of`` (open transactions are kept, as Kestrel does)."""
        ms = (self.as_of_ns if as_of_ns is None else as_of_ns) // NS_PER_MS
        return KestrelState(self.as_of_ns, [i for i in self.queue if not i.expired_at(ms)], dict(self.open),
                            self.keep_open, self.xid_counter, self.records, self.applied, [], self.version,
                            self.version_guess, self.backed_out)

    def backed_out_copy(self) -> "KestrelState":
        """The state after Kestrel's startup: open transactions returned to the head, ascending xid order."""
        q = deque(self.queue)
        for x in sorted(self.open, reverse=True):
            q.appendleft(self.open[x])
        return KestrelState(self.as_of_ns, list(q), {}, False, self.xid_counter, self.records, self.applied, [],
                            self.version, self.version_guess, self.backed_out + len(self.open))

    def digest(self) -> str:
        return state_digest(self)


def _canonical_line(pos: int, state: str, xid: int | None, it: Item, _sha=hashlib.sha256) -> str:
    """``json.dumps(item.canonical(...), sort_keys=True, separators=(",", ":"))``, written out for speed
    (``tests/kestrel/test_replay.py`` checks the two are identical)."""
    return (f'{{"add_time_ms":{it.add_time},"data_sha256":"{_sha(it.data).hexdigest()}","expiry_ms":{it.expiry},'
            f'"len":{len(it.data)},"pos":{pos},"state":"{state}","xid":{"null" if xid is None else xid}}}\n')


def state_digest(state: KestrelState) -> str:
    """sha256 over one canonical JSON line per item (open transactions by xid, then the queue in order)."""
    h = hashlib.sha256()
    h.update(b"wqtool-kestrel-state-v1\n")
    h.update(f"as_of_ns={state.as_of_ns}\n".encode())
    buf: list[str] = []
    for i, x in enumerate(sorted(state.open)):
        buf.append(_canonical_line(i, OPEN, x, state.open[x]))
    for i, it in enumerate(state.queue):
        buf.append(_canonical_line(i, QUEUED, None, it))
        if len(buf) >= 4096:
            h.update("".join(buf).encode())
            buf.clear()
    h.update("".join(buf).encode())
    return h.hexdigest()


def state_digest_reference(state: KestrelState) -> str:
    """The digest's definition, via json.dumps (slow; tests compare it with ``state_digest``)."""
    h = hashlib.sha256()
    h.update(b"wqtool-kestrel-state-v1\n")
    h.update(f"as_of_ns={state.as_of_ns}\n".encode())
    for row in state.canonical_rows():
        h.update(json.dumps(row, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    return h.hexdigest()


def first_difference(a: KestrelState, b: KestrelState) -> str | None:
    """A one-line description of the first item where two states differ (None when equal)."""
    ra, rb = a.canonical_rows(), b.canonical_rows()
    for x, y in zip(ra, rb):
        if x != y:
            return f"first difference at {x['state']} item {x['pos']}: {x} != {y}"
    if len(ra) != len(rb):
        return f"item counts differ: {len(ra)} != {len(rb)}"
    if a.as_of_ns != b.as_of_ns:
        return f"as_of differs: {a.as_of_ns} != {b.as_of_ns}"
    return None


# Finding constructors shared with the fast path (fastreplay.py), so both say exactly the same thing.
def empty_finding(path: str | None, offset: int | None, index: int | None, what: str) -> Finding:
    return Finding(WARNING, "KQ-REMOVE-EMPTY", f"{what} on an empty queue: no-op (2.x writes it only when an item "
                   "was removed; legitimate in 1.x journals, which logged removes of items that had just expired)",
                   path=path, offset=offset, record_index=index, upstream="Kestrel 2.x ignores it")


def unknown_xid_finding(path: str | None, offset: int | None, index: int | None, what: str, xid: int,
                        outcome: str = "no-op", upstream: str = "Kestrel 2.x ignores it") -> Finding:
    return Finding(WARNING, "KQ-UNKNOWN-XID", f"{what} {xid}: no such open transaction ({outcome})", path=path,
                   offset=offset, record_index=index, upstream=upstream)


def continue_xid0_finding(path: str | None, offset: int | None, index: int | None) -> Finding:
    return Finding(WARNING, "KQ-CONTINUE-XID0", "CONTINUE with xid 0: 2.x never assigns xid 0", path=path,
                   offset=offset, record_index=index)


_CONTINUE_UNKNOWN = ("the new item is still appended", "Kestrel 2.x appends the item")


class KestrelReplay:
    """Applies records in file-set order. Findings go to ``self.findings`` (the caller drains them)."""

    def __init__(self, as_of_ns: int, *, version: str = "auto"):
        self.as_of_ns = as_of_ns
        self.as_of_ms = as_of_ns // NS_PER_MS
        self.version = str(version)
        self.queue: deque[Item] = deque()
        self.open: dict[int, Item] = {}
        self.counter = 0
        self.findings: list[Finding] = []
        self.records = 0
        self.applied = 0
        self.op_counts = [0] * 10   # by opcode (a list: IntEnum hashing is slow)
        self._first_legacy: Record | None = None

    # ---------------------------------------------------------------- helpers
    def _warn(self, rec: Record, code: str, msg: str, upstream: str | None = None, severity: str = WARNING) -> None:
        self.findings.append(Finding(severity, code, msg, path=rec.path, offset=rec.offset, record_index=rec.index,
                                     upstream=upstream))

    def _empty(self, rec: Record, what: str) -> None:
        self.findings.append(empty_finding(rec.path, rec.offset, rec.index, what))

    def _next_xid(self) -> int:
        skip_zero = self.version != "1"
        x = self.counter
        while True:
            x = wrap_i32(x + 1)
            if (x != 0 or not skip_zero) and x not in self.open:
                self.counter = x
                return x

    def _open(self, rec: Record, xid: int) -> bool:
        """Pop the head into open[xid]; False if the queue is empty."""
        if not self.queue:
            return False
        item = self.queue.popleft()
        if xid in self.open:
            lost = self.open[xid]
            if rec.op == Opcode.REMOVE_TENTATIVE:
                self._warn(rec, "KQ-XID0-COLLISION", f"opcode 3 replayed as 2.x does (xid 0) while xid 0 is open: "
                           f"the earlier item ({len(lost.data)} bytes, added at "
                           f"{lost.path and lost.path.rsplit('/', 1)[-1]}@0x{lost.offset or 0:x}) is lost",
                           "Kestrel 2.x loses it (and may resurrect a confirmed item at startup)")
            else:
                self.findings.append(Finding(ERROR, "KQ-XID-REUSED", f"remove-tentative xid {xid} while xid {xid} "
                                             f"is already open: the earlier open item ({len(lost.data)} bytes) is "
                                             "lost; a correct writer never reuses an open xid",
                                             path=rec.path, offset=rec.offset, record_index=rec.index,
                                             last_good_offset=rec.offset, verdict=Verdict.INVALID_HISTORY,
                                             upstream="Kestrel 2.x overwrites the open transaction: one item lost"))
        item.xid = xid
        self.open[xid] = item
        return True

    # ---------------------------------------------------------------- records
    def apply(self, rec: Record) -> None:
        self.records += 1
        op = rec.op
        self.op_counts[op] += 1
        if op is _ADDX:
            self.queue.append(Item(rec.add_time, rec.expiry, rec.data, 0, rec.path, rec.offset))
        elif op is _REMOVE:
            if self.queue:
                self.queue.popleft()
            else:
                self._empty(rec, "REMOVE")
                return
        elif op is _REMOVE_TENTATIVE_XID:
            xid = rec.xid
            ok = self._open(rec, xid)
            self.counter = xid
            if not ok:
                self._empty(rec, f"REMOVE_TENTATIVE_XID {xid}")
                return
        elif op is _CONFIRM_REMOVE:
            if self.open.pop(rec.xid, None) is None:
                self.findings.append(unknown_xid_finding(rec.path, rec.offset, rec.index, "CONFIRM_REMOVE", rec.xid))
                return
        elif op is _UNREMOVE:
            item = self.open.pop(rec.xid, None)
            if item is None:
                self.findings.append(unknown_xid_finding(rec.path, rec.offset, rec.index, "UNREMOVE", rec.xid))
                return
            self.queue.appendleft(item)
        elif op is _CONTINUE:
            if rec.xid == 0:
                self.findings.append(continue_xid0_finding(rec.path, rec.offset, rec.index))
            if self.open.pop(rec.xid, None) is None:
                self.findings.append(unknown_xid_finding(rec.path, rec.offset, rec.index, "CONTINUE", rec.xid,
                                                         *_CONTINUE_UNKNOWN))
            self.queue.append(Item(rec.add_time, rec.expiry, rec.data, 0, rec.path, rec.offset))
        elif op is _ADD_XID:
            self.queue.append(Item(rec.add_time, rec.expiry, rec.data, rec.xid, rec.path, rec.offset))
        elif op is _SAVE_XID:
            self.counter = rec.xid
        elif op is _REMOVE_TENTATIVE:
            self._legacy_rt(rec)
            return
        elif op is _ADD:
            self._legacy_add(rec)
        self.applied += 1

    def _legacy_rt(self, rec: Record) -> None:
        if self.version == "2":
            ok = self._open(rec, 0)
            self.counter = 0
            how = "as 2.x does: xid 0, counter reset to 0 (--kestrel-version 2)"
            xid = 0
        else:
            xid = self._next_xid()
            ok = self._open(rec, xid)
            how = f"the 1.x way: xid {xid} from the counter"
        self._warn(rec, "KQ-LEGACY-RT", f"legacy REMOVE_TENTATIVE (opcode 3) replayed {how}",
                   "Kestrel 2.x replays it as xid 0: 1.x confirms/unremoves never match, colliding transactions "
                   "overwrite each other, and a confirmed item can be resurrected at startup")
        if not ok:
            self._empty(rec, "REMOVE_TENTATIVE")
            return
        self.applied += 1

    def _legacy_add(self, rec: Record) -> None:
        secs = rec.expiry
        if secs == 0:
            exp = 0
        elif self.version == "1":
            exp = wrap_i32(secs * 1000)
        else:
            exp = secs * 1000
        self.queue.append(Item(self.as_of_ms, exp, rec.data, 0, rec.path, rec.offset, legacy=True))
        if self._first_legacy is None:
            self._first_legacy = rec

    # ---------------------------------------------------------------- result
    def _guess(self) -> str:
        o = self.op_counts
        legacy1 = {op.name: o[op] for op in (Opcode.REMOVE_TENTATIVE, Opcode.SAVE_XID, Opcode.ADD_XID) if o[op]}
        new2 = {op.name: o[op] for op in (Opcode.REMOVE_TENTATIVE_XID,) if o[op]}
        old = o[Opcode.ADD]
        ev = ", ".join(f"{k} x{v}" for k, v in {**legacy1, **new2}.items())
        if legacy1 and new2:
            g = "a 1.x journal continued by a 2.1+ server"
        elif legacy1:
            g = "Kestrel 1.x"
        elif new2:
            g = "Kestrel 2.1+"
        elif old:
            g = "starling / scarling (legacy ADD only)"
        else:
            g = "any version (no version-specific opcode)"
        if old:
            ev = (ev + ", " if ev else "") + f"ADD x{old}"
        return g + (f" ({ev})" if ev else "")

    def finish(self, *, keep_open: bool = False) -> KestrelState:
        guess = self._guess()
        findings = self.findings
        if self.op_counts[Opcode.REMOVE_TENTATIVE] or self.op_counts[Opcode.ADD]:
            if self.version == "auto":
                meaning = ("auto: opcode 3 replayed the 1.x way, legacy ADD expiry as 2.x reads it (seconds x 1000, "
                           "no 32-bit overflow); --kestrel-version 2 reproduces 2.x's xid-0 replay of opcode 3, "
                           "--kestrel-version 1 the 1.x expiry overflow")
            elif self.version == "1":
                meaning = "--kestrel-version 1: opcode 3 the 1.x way, legacy ADD expiry with 1.x's 32-bit overflow"
            else:
                meaning = "--kestrel-version 2: opcode 3 as xid 0, legacy ADD expiry seconds x 1000"
            findings.append(Finding(NOTE, "KQ-VERSION", f"journal looks written by {guess}; {meaning}"))
        if self._first_legacy is not None:
            r = self._first_legacy
            findings.append(Finding(NOTE, "KQ-LEGACY-ADD", f"{self.op_counts[Opcode.ADD]} legacy ADD record(s): no add "
                                    "time is stored, so Kestrel uses the replay clock (--as-of here) and a later "
                                    "rewrite stores it", path=r.path, offset=r.offset, record_index=r.index))
        backed = 0
        if not keep_open and self.open:
            backed = len(self.open)
            for x in sorted(self.open, reverse=True):
                self.queue.appendleft(self.open.pop(x))
            findings.append(Finding(NOTE, "KQ-OPEN-BACKED-OUT", f"{backed} open transaction(s) returned to the head "
                                    "in ascending xid order, as at Kestrel startup (--keep-open shows them open)",
                                    upstream="Kestrel 2.x appends UNREMOVE(xid) for each at startup"))
        state = KestrelState(self.as_of_ns, list(self.queue), dict(self.open), keep_open, self.counter,
                             self.records, self.applied, findings, self.version, guess, backed)
        exp = state.expired_count()
        if exp:
            findings.append(Finding(NOTE, "KQ-EXPIRED", f"{exp} item(s) already expired at --as-of (replay never "
                                    "expires anything; Kestrel discards them when they reach the head)"))
        return state
