"""pack: Kestrel-style compaction, from a full replay, proven lossless, installed crash-safely.

``pack_plan`` replays the whole file set (open transactions kept open) and describes the rewrite: Kestrel 2.x's
``Journal.dump`` sequence — per open transaction in descending xid order ``ADDX`` + ``REMOVE_TENTATIVE_XID``,
then ``ADDX`` per queued item head -> tail with the original add / expiry times (``drop_expired`` leaves out
queued items expired at ``as_of``). Nothing is written by the plan.

``write_pack`` writes the output to a **new** file (never an append), re-reads it and compares its replay digest
with the plan's before returning; a mismatch deletes the output and raises ``PackMismatch``.

``apply_plan`` installs it into the queue's directory the way Kestrel does, with the one window Kestrel leaves
open (spec §9.1: a crash between the ``.pack`` rename and the deletion of the live file duplicates the state)
closed by rotating the live file first:

1. write ``q~~<T>``, fsync it, re-verify it (digest);
2. rename ``q`` -> ``q.<T0>`` (a rotation: same replay), fsync the directory;
3. rename ``q~~<T>`` -> ``q.<T>.pack`` (``T > T0`` > every existing ``<ms>``): from here the .pack rule
   supersedes every file of the old set; fsync the directory;
4. delete the superseded files (rotated files, older packs, temps, ``q.<T0>``), fsync the directory;
5. rename ``q.<T>.pack`` -> ``q.<T>``, then ``q.<T>`` -> ``q``, fsyncing the directory after each.

A crash at any step leaves a file set that Kestrel 2.x (and wqtool's virtual file-set rules) replays to the
same state; ``tests/kestrel/test_pack.py`` injects a failure before and after every step (``fail_at``).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from ...errors import InputError, PackMismatch, PackRefused, UsageError
from ...formats.kestrel import ADDX_FIXED, PACK_SUFFIX, TEMP_MARKER, XID_RECORD_SIZE
from ..findings import ERROR, Verdict
from ..fsops import fsync_dir
from ..run import LogReport
from .reader import ROLE_LIVE, FileSet, JournalFile, classify
from .replay import KestrelState, first_difference
from .verify import run_log
from .writer import JournalWriter, rewrite_records

NS_PER_MS = 1_000_000


class InjectedCrash(BaseException):
    """Raised by ``apply_plan(fail_at=...)`` to simulate a crash at a step: no cleanup runs."""


@dataclass(slots=True)
class PackPlan:
    """What pack would do. Sizes in bytes; ``records_dropped`` = records before - records after."""

    fileset: FileSet
    as_of_ns: int
    drop_expired: bool
    salvage: bool
    inputs: list[tuple[str, int]]          # files replayed, with their sizes
    bytes_before: int
    records_before: int
    bytes_after: int
    records_after: int
    items_queued: int                      # queued items written
    open_transactions: int
    expired_dropped: int
    input_exit_code: int
    digest_input: str                      # replay digest of the input (keep_open)
    digest_expected: str                   # digest the output must replay to (= input, minus dropped expired)
    state: KestrelState                    # the state the output encodes (keep_open)
    report: LogReport
    dropped: list[str] = field(default_factory=list)   # what was not carried over, one line each
    elapsed_s: float = 0.0

    @property
    def records_dropped(self) -> int:
        return self.records_before - self.records_after

    def to_jsonable(self) -> dict:
        return {
            "queue": self.fileset.queue, "root": self.fileset.root, "as_of_ns": self.as_of_ns,
            "inputs": [{"file": p, "bytes": s} for p, s in self.inputs],
            "bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
            "records_before": self.records_before, "records_after": self.records_after,
            "records_dropped": self.records_dropped, "items_queued": self.items_queued,
            "open_transactions": self.open_transactions, "expired_dropped": self.expired_dropped,
            "drop_expired": self.drop_expired, "salvage": self.salvage, "input_exit_code": int(self.input_exit_code),
            "digest_input": self.digest_input, "digest_expected": self.digest_expected, "dropped": self.dropped,
            "elapsed_s": round(self.elapsed_s, 6),
        }

    def report_doc(self) -> dict:
        """pack's report (the same shape for every format): sizes before/after, what is dropped, the digest."""
        d = self.to_jsonable()
        return {"format": "kestrel", "root": d["root"], "queue": d["queue"], "as_of_ns": self.as_of_ns,
                "before": {"records": d["records_before"], "bytes": d["bytes_before"], "files": len(d["inputs"])},
                "after": {"records": d["records_after"], "bytes": d["bytes_after"], "items": d["items_queued"],
                          "open_transactions": d["open_transactions"]},
                "records_dropped": d["records_dropped"], "dropped": d["dropped"], "digest": d["digest_expected"],
                "digest_input": d["digest_input"], "elapsed_s": d["elapsed_s"], "plan": d}

    def write(self, out: str) -> "PackResult":
        return write_pack(self, out)

    def apply(self, **kw) -> "ApplyResult":
        return apply_plan(self, **kw)


@dataclass(slots=True)
class PackResult:
    path: str
    bytes: int
    records: int
    digest: str
    elapsed_s: float

    def to_jsonable(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "records": self.records, "digest": self.digest}


@dataclass(slots=True)
class ApplyResult:
    installed: str                 # the live file now holding the packed journal
    removed: list[str]
    steps: list[str]
    result: PackResult
    bytes_before: int
    bytes_after: int

    def to_jsonable(self) -> dict:
        return {"path": self.installed, "removed": self.removed, "bytes_after": self.bytes_after,
                "steps": self.steps}


def pack_plan(fileset: FileSet, as_of_ns: int, *, drop_expired: bool = False, salvage: bool = False,
              kestrel_version: str | None = None, on_record=None) -> PackPlan:
    """Replay ``fileset`` as of ``as_of_ns`` and describe the packed journal (nothing is written).

    Raises ``PackRefused`` (exit 3 or 4) when the input is corrupt or holds a history Kestrel cannot
    represent, unless ``salvage``; a torn tail (exit 1) is packed, and the bytes dropped are listed.
    """
    t0 = time.perf_counter()
    report = run_log(fileset, as_of_ns, keep_open=True, kestrel_version=kestrel_version, on_record=on_record)
    code = report.verdict
    errors = [f for f in report.findings if f.severity == ERROR]
    if code in (Verdict.CORRUPT, Verdict.INVALID_HISTORY) and not salvage:
        first = next((f for f in errors if f.verdict == code), errors[0] if errors else None)
        what = "corruption" if code == Verdict.CORRUPT else "a history Kestrel cannot represent"
        raise PackRefused(f"refusing to pack {what} ({first.code}: {first.message}); --salvage packs what is "
                          "readable and lists what is dropped" if first else f"refusing to pack {what}",
                          verdict=int(code), report=report, path=first.path if first else None,
                          offset=first.offset if first else None)
    state: KestrelState = report.state
    dropped: list[str] = []
    for f in errors:
        if f.verdict == Verdict.TORN_TAIL:
            dropped.append(f"{os.path.basename(f.path)}@0x{f.offset:x}: torn tail dropped ({f.code}); Kestrel "
                           "truncates it too")
        elif f.verdict == Verdict.CORRUPT:
            span = (f"0x{f.offset:x}..0x{f.resumes_at:x}" if f.resumes_at is not None else f"0x{f.offset:x}..end")
            dropped.append(f"{os.path.basename(f.path)} {span}: unreadable bytes dropped ({f.code})")
        elif f.verdict == Verdict.INVALID_HISTORY:
            dropped.append(f"{os.path.basename(f.path)}@0x{f.offset:x}: {f.message}")
    expected = state
    expired_dropped = 0
    if drop_expired:
        expected = state.without_expired(as_of_ns)
        expired_dropped = len(state.queue) - len(expected.queue)
        if expired_dropped:
            dropped.append(f"{expired_dropped} queued item(s) expired at --as-of dropped (--drop-expired)")
    digest_input = state.digest()
    n_open = len(expected.open)
    n_queued = len(expected.queue)
    size = (n_open * (ADDX_FIXED + XID_RECORD_SIZE) + n_queued * ADDX_FIXED
            + sum(len(i.data) for i in expected.queue) + sum(len(i.data) for i in expected.open.values()))
    reader_files = [(f.path, os.stat(f.path).st_size) for f in fileset.files]
    plan = PackPlan(fileset, as_of_ns, drop_expired, salvage, reader_files, report.bytes, report.records, size,
                    2 * n_open + n_queued, n_queued, n_open, expired_dropped, int(code), digest_input,
                    digest_input if expected is state else expected.digest(), expected, report, dropped)
    plan.elapsed_s = time.perf_counter() - t0
    return plan


def _verify_output(plan: PackPlan, path: str) -> str:
    fs = FileSet(root=os.path.dirname(path) or ".", queue=os.path.basename(path),
                 files=[JournalFile(path, ROLE_LIVE)], is_dir=False, kestrel_version="2")
    rep = run_log(fs, plan.as_of_ns, keep_open=True, resync=False)
    got = rep.state.digest()
    if rep.verdict != Verdict.CLEAN or got != plan.digest_expected:
        diff = first_difference(plan.state, rep.state) or "states differ"
        raise PackMismatch(f"packed output does not replay to the input state: expected digest "
                           f"{plan.digest_expected}, got {got} (exit {int(rep.verdict)}); {diff}",
                           expected=plan.digest_expected, actual=got, path=path)
    return got


def write_pack(plan: PackPlan, output: str, *, fsync: bool = True) -> PackResult:
    """Write the packed journal to a new file ``output`` (an existing directory: ``<dir>/<queue>``), re-verify it
    and compare digests. Never appends: an existing output file is refused. On any error the output is removed."""
    t0 = time.perf_counter()
    if os.path.isdir(output):
        output = os.path.join(output, plan.fileset.queue)
    if os.path.lexists(output):
        raise UsageError("output exists; pack never appends to or overwrites a file", path=output)
    try:
        w = JournalWriter(output, mode="xb", fsync=fsync)
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), path=output) from None
    try:
        w.write_state(plan.state)
        w.close()
        digest = _verify_output(plan, output)
    except BaseException:
        w._f.close()
        _unlink(output)
        raise
    if fsync:
        fsync_dir(os.path.dirname(os.path.abspath(output)))
    return PackResult(output, w.size, w.records, digest, time.perf_counter() - t0)


# ---------------------------------------------------------------- installing
def _names(plan: PackPlan, now_ms: int | None) -> tuple[int, int]:
    fs = plan.fileset
    stamps = [f.ts for f in fs.files if f.ts is not None]
    for p in fs.superseded + fs.packs:
        n = os.path.basename(p)
        for part in n.replace(TEMP_MARKER, ".").split(".")[1:2]:
            if part.lstrip("+-").isdigit():
                stamps.append(int(part))
    base = int(time.time() * 1000) if now_ms is None else now_ms
    t0 = max([base] + [s + 1 for s in stamps])
    return t0, t0 + 1


def _check_unchanged(plan: PackPlan) -> None:
    fs = plan.fileset
    if not fs.is_dir:
        raise UsageError("--apply needs the queue's directory (files named one by one cannot be installed)",
                         path=fs.root)
    now = classify(fs.queue, fs.root, sorted(n for n in os.listdir(fs.root)
                                             if os.path.isfile(os.path.join(fs.root, n))
                                             and _belongs(n, fs.queue)))
    cur = [(f.path, os.stat(f.path).st_size) for f in now.files]
    if cur != plan.inputs or sorted(now.superseded) != sorted(fs.superseded):
        raise InputError("the queue's files changed since the plan was made; plan again", path=fs.root)


def _belongs(name: str, queue: str) -> bool:
    from .reader import queue_of
    return queue_of(name) == queue


def apply_steps(plan: PackPlan, *, now_ms: int | None = None, fsync: bool = True) -> list[str]:
    """The labels of the steps ``apply_plan`` runs (each can be failed ``before:`` or ``after:``; the write can
    also be failed ``during:write-temp``, leaving half of the temp file)."""
    return [label for label, _ in _build_steps(plan, now_ms, fsync=fsync, fail_at=None, ctx={}, dry=True)[0]]


def _build_steps(plan: PackPlan, now_ms: int | None, *, fsync: bool, fail_at: str | None, ctx: dict,
                 dry: bool = False):
    fs = plan.fileset
    d = fs.root
    q = fs.queue
    t_rot, t_pack = _names(plan, now_ms)
    live = os.path.join(d, q)
    rotated_live = os.path.join(d, f"{q}.{t_rot}")
    temp = os.path.join(d, f"{q}{TEMP_MARKER}{t_pack}")
    packf = os.path.join(d, f"{q}.{t_pack}{PACK_SUFFIX}")
    placed = os.path.join(d, f"{q}.{t_pack}")
    has_live = any(f.role == ROLE_LIVE for f in fs.files)
    if not dry:
        for p in (rotated_live, temp, packf, placed):
            if os.path.lexists(p):
                raise InputError("a name the pack needs is taken; retry", path=p)
    steps: list[tuple[str, Callable]] = []

    def dirsync(label):
        if fsync:
            steps.append((f"fsync-dir:{label}", lambda: fsync_dir(d)))

    # 1. write, fsync and verify the temp file
    def _write():
        w = JournalWriter(temp, mode="xb")
        ctx["w"] = w
        if fail_at == "during:write-temp":
            blob = b"".join(rewrite_records(plan.state))
            w._f.write(blob[: len(blob) // 2])
            w._f.flush()
            raise InjectedCrash("during:write-temp")
        w.write_state(plan.state)
        w._f.flush()

    def _fsync():
        os.fsync(ctx["w"]._f.fileno())

    def _verify():
        ctx["w"]._f.close()
        ctx["digest"] = _verify_output(plan, temp)

    steps.append(("write-temp", _write))
    if fsync:
        steps.append(("fsync-temp", _fsync))
    steps.append(("verify-temp", _verify))
    # 2. rotate the live file (same replay: it becomes the newest rotated file)
    victims = [f.path for f in fs.files if f.role != ROLE_LIVE] + list(fs.superseded)
    if has_live:
        steps.append(("rename-live", lambda: os.rename(live, rotated_live)))
        dirsync("rename-live")
        victims.append(rotated_live)
    # 3. publish the pack: from here the .pack rule supersedes every older file
    steps.append(("rename-temp-to-pack", lambda: os.rename(temp, packf)))
    dirsync("rename-temp-to-pack")
    # 4. delete what it supersedes (what Kestrel's cleanUpPackedFiles would delete)
    victims = list(dict.fromkeys(victims))
    for v in victims:
        steps.append((f"unlink:{os.path.basename(v)}", (lambda v=v: _unlink(v))))
    if victims:
        dirsync("unlink")
    # 5. move it into place
    steps.append(("rename-pack-to-rotated", lambda: os.rename(packf, placed)))
    dirsync("rename-pack-to-rotated")
    steps.append(("rename-rotated-to-live", lambda: os.rename(placed, live)))
    dirsync("rename-rotated-to-live")
    return steps, temp, live, victims


def _unlink(p: str) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass


def apply_plan(plan: PackPlan, *, now_ms: int | None = None, fail_at: str | None = None, fsync: bool = True,
               hook: Callable[[str, str], None] | None = None) -> ApplyResult:
    """Install the packed journal into the queue's directory (see the module docstring for the sequence).

    Refuses when the queue's files changed since the plan. ``fail_at`` = ``"before:<step>"``,
    ``"after:<step>"`` (labels from ``apply_steps``) or ``"during:write-temp"`` raises ``InjectedCrash`` there,
    with no cleanup, to test crash safety; ``hook(when, label)`` observes each step. An ordinary error while
    writing or verifying the temp file removes it; later steps leave a consistent file set whatever happens.
    """
    _check_unchanged(plan)
    t0 = time.perf_counter()
    ctx: dict = {}
    steps, temp, live, victims = _build_steps(plan, now_ms, fsync=fsync, fail_at=fail_at, ctx=ctx)
    done: list[str] = []
    for label, fn in steps:
        if hook is not None:
            hook("before", label)
        if fail_at == f"before:{label}":
            raise InjectedCrash(label)
        try:
            fn()
        except Exception:
            if label in ("write-temp", "fsync-temp", "verify-temp"):
                w = ctx.get("w")
                if w is not None:
                    w._f.close()
                _unlink(temp)
            raise
        done.append(label)
        if hook is not None:
            hook("after", label)
        if fail_at == f"after:{label}":
            raise InjectedCrash(label)
    w = ctx["w"]
    result = PackResult(live, w.size, w.records, ctx["digest"], time.perf_counter() - t0)
    return ApplyResult(live, victims, done, result, plan.bytes_before, w.size)
