"""pack: Kestrel-style compaction, from a full replay, proven lossless, installed crash-safely.

``pack_plan`` replays the whole file set (open transactions kept open) and describes the rewrite: Kestrel 2.x's
``Journal.dump`` sequence — per open transaction in descending xid order ``ADDX`` + ``REMOVE_TENTATIVE_XID``,
then ``ADDX`` per queued item head -> tail with the original add / expiry times (``drop_expired`` leaves out
queued items expired at ``as_of``). Nothing is written by the plan.

``write`` writes a **new** file (never an append) and proves it (``prove``). ``apply`` installs it the way Kestrel
does, with the one window Kestrel leaves open (spec §9.1: a crash between the ``.pack`` rename and the deletion of
the live file duplicates the state) closed by rotating the live file first:

1. write ``q~~<T>``, fsync it, re-verify it (digest);
2. (repair) link every file of the set into the backup directory, before any of them is superseded;
3. rename ``q`` -> ``q.<T0>`` (a rotation: same replay), fsync the directory;
4. rename ``q~~<T>`` -> ``q.<T>.pack`` (``T > T0`` > every existing ``<ms>``): from here the .pack rule
   supersedes every file of the old set; fsync the directory;
5. delete the superseded files (rotated files, older packs, temps, ``q.<T0>``), fsync the directory;
6. rename ``q.<T>.pack`` -> ``q`` (never over a live file a writer created meanwhile: then ``q.<T>``), fsync.

A crash at any step leaves a file set that Kestrel 2.x (and wqtool's virtual file-set rules) replays to the
same state.

Recovery (``finish_interrupted``; pack, repair and clean ``--apply`` run it first), for the two states a crash
leaves that are not the uncrashed run's layout:

* the half-done rotation between steps 3 and 4 — no live file, the old live file as ``q.<T0>`` and the temp
  ``q~~<T0+1>`` beside it. Kestrel's replay deletes the temp (upstream ``Journal.scala`` ``replay``, master cc280ec
  lines 357-363) and reads ``q.<T0>`` as a rotated file, so a torn tail there would become damage in a rotated
  file (CORRUPT). The rotation is rolled back: ``q.<T0>`` renamed to ``q`` (never over a live file a writer
  created meanwhile) and the temp removed, so the identical command starts again from the input it planned on;
* a published pack (steps 4-6): no live file and a ``q.<T>.pack`` newer than every other file of the queue. The
  .pack rule already reads only the pack (a repair's backup was made at step 2), so the pack is installed: the
  files it supersedes are deleted and it is renamed to ``q`` — what the uncrashed run leaves. Before, a rerun of
  the repair found "nothing to repair" and left the queue half swapped (issue 34, D1).

Temps beside a live file are the plans' to remove (superseded, as Kestrel's replay removes them).
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import InputError, PackMismatch, PackRefused, UsageError  # noqa: F401  (PackMismatch re-exported)
from ...formats.kestrel import ADDX_FIXED, PACK_SUFFIX, TEMP_MARKER, XID_RECORD_SIZE
from ..findings import ERROR, Verdict
from ..fsops import FileSig, LogBusy, fsync_dir, link_or_copy, rename_noreplace, same_file, unlink_quiet
from ..live import describe_holders, holders, refuse_holders
from ..plan import InjectedCrash  # noqa: F401  (re-exported)
from ..plan import (ApplyResult, Plan, StepRunner, WriteResult, input_exit_code, pack_doc,
                    pack_refusal, prove, timed, write_step)
from ..run import LogReport
from .reader import ROLE_LIVE, ROLE_PACK, FileSet, JournalFile, classify, queue_of
from .replay import KestrelState, first_difference
from .verify import run_log
from .writer import rewrite_records


class KestrelInstall(Plan):
    """A Kestrel plan whose result is one new journal (``content_chunks()``), proven by its replay
    (``digest_expected``, ``state``, ``verify_version``) and installed as a pack (the module docstring): pack, and
    repair (which also links the files it replaces into ``backup_dir`` first)."""

    keep_open = False              # the digests reported are replay's with --keep-open (else: backed out)

    def write_file(self, output: str, *, fsync: bool = True) -> WriteResult:
        """Write the new journal to a new file ``output`` (an existing directory: ``<dir>/<queue>``), re-verify it
        and compare digests. Never appends: an existing output file is refused. On any error the output is
        removed."""
        t0 = time.perf_counter()
        if os.path.isdir(output):
            output = os.path.join(output, self.fileset.queue)
        if os.path.lexists(output):
            raise UsageError("output exists; pack never appends to or overwrites a file", path=output)
        with StepRunner() as step:        # the file goes on any error (``write_step``'s rollback)
            size = write_step(step, "write", output, self.content_chunks, fsync=fsync)
            digest = self.verify_file(output)
        if fsync:
            fsync_dir(os.path.dirname(os.path.abspath(output)))
        return WriteResult(output, None, size, self.records_after, digest, time.perf_counter() - t0)

    def verify_file(self, path: str) -> str:
        fs = FileSet(root=os.path.dirname(path) or ".", queue=os.path.basename(path),
                     files=[JournalFile(path, ROLE_LIVE)], is_dir=False, kestrel_version=self.verify_version)
        rep = run_log(fs, self.as_of_ns, keep_open=True, resync=False)
        prove("packed output does not replay to the input state", self.digest_expected, rep.state.digest(),
              path=path, verdict=rep.verdict, detail=lambda: first_difference(self.state, rep.state) or "states differ")
        return replay_digest(rep.state, keep_open=self.keep_open)   # as `wqtool replay` prints it (the check
        # above compares the open states, which is stricter)

    def apply(self, **kw) -> ApplyResult:
        """Install the new journal into the queue's directory (the module docstring's sequence; ``now_ms``: the
        clock its names take, ``fsync``). Refuses when the queue's files changed since the plan, or while a writer
        is live (another process holds a file of the queue open, or the live file changes at any point up to the
        deletion of the old files: rolled back). A plan with nothing to do changes nothing."""
        if getattr(self, "nothing_to_do", False):
            return ApplyResult(self.fileset.live_path, [], None, self.bytes_before, self.bytes_before)
        _refuse_holders(self)
        _check_unchanged(self)
        return Plan.apply(self, **kw)

    def run(self, ctx: dict, fail_at: str | None, hook, **kw) -> StepRunner:
        """``Plan.run``, the live file held open throughout (``_check_quiet`` and ``_rescue`` watch it grow)."""
        try:
            ctx["fds"] = [os.open(self.fileset.live_path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))]
            ctx["live_fd"] = ctx["fds"][0]
        except FileNotFoundError:
            pass
        return Plan.run(self, ctx, fail_at, hook, **kw)

    def steps(self, step: StepRunner, ctx: dict, *, now_ms: int | None = None, fsync: bool = True, **_kw) -> None:
        _run_steps(self, step, _names(self, now_ms), fsync, ctx)
        fd = ctx.get("live_fd")
        if fd is not None and self.live_sig is not None and os.fstat(fd).st_size != self.live_sig.size:
            _rescue(self, fd, ctx)    # a writer appended between the last check and the unlink: keep its bytes


@dataclass(slots=True)
class PackPlan(KestrelInstall):
    """What pack would do. Sizes in bytes; ``records_dropped`` = records before - records after."""

    kind: ClassVar[str] = "pack"

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
    input_verdict: Verdict
    digest_input: str                      # replay digest of the input (keep_open)
    digest_expected: str                   # digest the output must replay to (= input, minus dropped expired)
    state: KestrelState                    # the state the output encodes (keep_open)
    report: LogReport
    dropped: list[str] = field(default_factory=list)   # what was not carried over, one line each
    live_sig: FileSig | None = None        # the live file before it was read (a writer changing it is refused)
    keep_open: bool = False                # the digests reported are replay's with --keep-open (else: backed out)

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
            "drop_expired": self.drop_expired, "salvage": self.salvage,
            "input_exit_code": input_exit_code(self),
            "digest_input": self.digest_input, "digest_expected": self.digest_expected, "dropped": self.dropped,
            "elapsed_s": round(self.elapsed_s, 6),
        }

    def report_doc(self) -> dict:
        """pack's report (the same shape for every format): sizes before/after, what is dropped, the digest."""
        return pack_doc(self, {"format": "kestrel", "root": self.fileset.root, "queue": self.fileset.queue},
                        {"records": self.records_before, "bytes": self.bytes_before, "files": len(self.inputs)},
                        {"records": self.records_after, "bytes": self.bytes_after, "items": self.items_queued,
                         "open_transactions": self.open_transactions}, self.dropped,
                        replay_digest(self.state, keep_open=self.keep_open), self.to_jsonable(),
                        replay_digest(self.report.state, keep_open=self.keep_open))

    #: the replay meaning the output is verified with (a pack writes only 2.x opcodes)
    verify_version: ClassVar[str] = "2"

    def content_chunks(self):
        """The new journal, record by record: Kestrel 2.x's rewrite of the replayed state."""
        return rewrite_records(self.state)

    write = KestrelInstall.write_file      # pack -o: a file (or <dir>/<queue>)


@timed
def pack_plan(fileset: FileSet, as_of_ns: int, *, drop_expired: bool = False, salvage: bool = False,
              kestrel_version: str | None = None, on_record=None, keep_open: bool = False) -> PackPlan:
    """Replay ``fileset`` as of ``as_of_ns`` and describe the packed journal (nothing is written).

    Raises ``PackRefused`` (exit 3 or 4) when the input is corrupt or holds a history Kestrel cannot
    represent, unless ``salvage``; a torn tail (exit 1) is packed, and the bytes dropped are listed.
    """
    live_sig = FileSig.of(fileset.live_path) if fileset.is_dir else None
    report = run_log(fileset, as_of_ns, keep_open=True, kestrel_version=kestrel_version, on_record=on_record)
    code = report.verdict
    pack_refusal(report, salvage, ("corruption", "a history Kestrel cannot represent"),
                 "--salvage packs what is readable and lists what is dropped")
    errors = [f for f in report.findings if f.severity == ERROR]
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
                    2 * n_open + n_queued, n_queued, n_open, expired_dropped, code, digest_input,
                    digest_input if expected is state else expected.digest(), expected, report, dropped)
    plan.live_sig = live_sig if live_sig is not None and live_sig.ino is not None else None
    plan.keep_open = keep_open
    return plan


def replay_digest(state: KestrelState, *, keep_open: bool = False) -> str:
    """The digest ``wqtool replay`` prints for ``state``: open transactions backed out unless ``keep_open``."""
    return state.digest() if keep_open or not state.open else state.backed_out_copy().digest()


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
                                             and queue_of(n) == fs.queue))
    cur = [(f.path, os.stat(f.path).st_size) for f in now.files]
    if cur != plan.inputs or sorted(now.superseded) != sorted(fs.superseded):
        raise InputError("the queue's files changed since the plan was made (is a writer live? Kestrel must be "
                         "stopped before pack --apply); plan again", path=fs.root)


def _run_steps(plan: PackPlan, step: StepRunner, stamps: tuple[int, int], fsync: bool, ctx: dict) -> None:
    fs = plan.fileset
    d, q = fs.root, fs.queue
    t_rot, t_pack = stamps
    live = os.path.join(d, q)
    rotated_live = os.path.join(d, f"{q}.{t_rot}")
    temp = os.path.join(d, f"{q}{TEMP_MARKER}{t_pack}")
    packf = os.path.join(d, f"{q}.{t_pack}{PACK_SUFFIX}")
    placed = os.path.join(d, f"{q}.{t_pack}")
    has_live = any(f.role == ROLE_LIVE and f.path == live for f in fs.files)   # not a rotated one read as live
    if not step.dry:
        for p in (rotated_live, temp, packf, placed):
            if os.path.lexists(p):
                raise InputError("a name the pack needs is taken; retry", path=p)

    # 1. write, fsync and verify the temp file (an error removes it)
    ctx["size"] = write_step(step, "write-temp", temp, plan.content_chunks, fsync=fsync)
    step("verify-temp", lambda: ctx.__setitem__("digest", plan.verify_file(temp)))
    # 2. a repair keeps every file it replaces whole (hard links: no copy) before any of them is superseded (temps
    # are no one's data: Kestrel deletes them at start-up)
    bdir = ctx.get("backup")
    if bdir is not None:
        kept = [f.path for f in fs.files] + [p for p in fs.superseded if TEMP_MARKER not in os.path.basename(p)]
        drop = (lambda: shutil.rmtree(bdir, ignore_errors=True)) if not os.path.lexists(bdir) else (lambda: None)
        step("backup", lambda: _backup(kept, bdir, fsync), rollback=drop, on_error=drop)
    # 3. nobody wrote to the queue since the plan; rotate the live file (the same replay: the newest rotated file)
    victims = [f.path for f in fs.files if f.path != live] + list(fs.superseded)
    if has_live:
        step("check-live", lambda: _check_quiet(plan, ctx, live_exists=True))
        step("rename-live", lambda: os.rename(live, rotated_live), rollback=lambda: _unrotate(rotated_live, live))
        step.sync("rename-live", d, fsync)
        victims.append(rotated_live)
    # 4. publish the pack: from here the .pack rule supersedes every older file
    step("rename-temp-to-pack", lambda: os.rename(temp, packf), rollback=lambda: unlink_quiet(packf))
    step.sync("rename-temp-to-pack", d, fsync)
    # 5. the last look for a writer, then delete what the pack supersedes (Kestrel's cleanUpPackedFiles)
    step("check-quiet", lambda: _check_quiet(plan, ctx, live_exists=False))
    victims = ctx["removed"] = list(dict.fromkeys(victims))
    step.commit()
    for v in victims:   # labels name no time stamp: the same steps whenever the plan runs
        step("unlink-rotated-live" if v == rotated_live else f"unlink:{os.path.basename(v)}",
             (lambda v=v: unlink_quiet(v)))
    if victims:
        step.sync("unlink", d, fsync)
    # 6. move it into place (never over a live file that a writer may have created meanwhile)
    step("rename-pack-to-live", lambda: _place(packf, live, placed, ctx))
    step.sync("rename-pack-to-live", d, fsync)
    ctx["result"] = WriteResult(ctx.get("path"), None, ctx["size"], plan.records_after, ctx.get("digest"), 0.0)


def _backup(files: list[str], bdir: str, fsync: bool) -> None:
    os.makedirs(bdir, exist_ok=True)
    for v in files:
        dst = os.path.join(bdir, os.path.basename(v))
        if not os.path.exists(v) or os.path.lexists(dst) and same_file(v, dst):   # linked by a run that died
            continue
        unlink_quiet(dst)                                 # half copied by a run that died
        link_or_copy(v, dst, fsync)
    if fsync:
        fsync_dir(bdir)


def _unrotate(rotated: str, live: str) -> bool:
    """Undo the rotation of the live file; when a writer created a new live file meanwhile, the rotated one stays
    a rotated file (it replays before the new live file, in order: nothing is lost) -> False."""
    try:
        rename_noreplace(rotated, live)
    except FileExistsError:
        return False
    return True


def _place(packf: str, live: str, placed: str, ctx: dict) -> None:
    try:
        rename_noreplace(packf, live)
        ctx["path"] = live
    except FileExistsError:     # a writer created a new live file: the pack becomes the newest rotated file
        os.rename(packf, placed)
        ctx["path"] = placed


def _check_quiet(plan: PackPlan, ctx: dict, *, live_exists: bool) -> None:
    """Kestrel has no lock files: refuse while another process holds a file of the queue open, or the live
    file changed since the plan (size, inode, or — once rotated — grew through our own descriptor), or a new
    live file appeared. Raising here rolls the apply back (nothing is lost)."""
    fs = plan.fileset
    live = fs.live_path
    _refuse_holders(plan)
    fd = ctx.get("live_fd")
    planned = plan.live_sig
    if planned is None:
        return
    if live_exists:
        now = FileSig.of(live)
        if (now.ino, now.size) != (planned.ino, planned.size):
            raise LogBusy("the live journal changed since the plan (a writer is live): Kestrel must be stopped "
                          "before pack --apply; nothing was changed", path=live)
    else:
        grown = fd is not None and os.fstat(fd).st_size != planned.size
        if grown or os.path.lexists(live):
            raise LogBusy("a writer appended to the queue during the pack (Kestrel must be stopped before pack "
                          "--apply): rolled back, nothing was lost", path=live)


def _refuse_holders(plan: PackPlan) -> None:
    fs = plan.fileset
    refuse_holders([f.path for f in fs.files] + list(fs.superseded) + [fs.live_path], "Kestrel", "pack --apply",
                   fs.live_path)


def _rescue(plan: PackPlan, fd: int, ctx: dict) -> None:
    """The old live file grew after the last check (a writer raced the unlink): its new records follow the packed
    state, so they are appended to the new live file, and the apply fails loudly."""
    start = plan.live_sig.size
    end = os.fstat(fd).st_size
    extra = os.pread(fd, end - start, start)
    target = ctx["path"]
    with open(target, "ab") as f:
        f.write(extra)
        f.flush()
        os.fsync(f.fileno())
    raise LogBusy(f"a writer appended {len(extra)} bytes to the journal during the final step of pack --apply: they "
                  f"were appended to {os.path.basename(target)} (nothing lost), but the writer still writes to the "
                  "replaced file — stop Kestrel now and restart it", path=target)


# ---------------------------------------------------------------- recovery
def interrupted_applies(directory: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, list[str], str, str]]]:
    """What crashed applies left in ``directory``, per queue with no live file ``q``, as the reader's rules
    (``reader.classify``) see it:

    * half-done rotations, (temp ``q~~<T>``, rotated ``q.<T-1>``, live ``q``): a temp named one millisecond after
      the newest rotated file (KQ-INTERRUPTED-APPLY) — ``_run_steps`` killed between rotating the live file (step 3)
      and publishing the temp as ``.pack`` (step 4);
    * published packs, (pack ``q.<T>.pack``, the files it supersedes, live ``q``, rotated name ``q.<T>``): the
      ``.pack`` is all the queue replays — killed after publishing the pack and before placing it (step 6), or
      Kestrel killed in its own clean-up of a pack; either way the .pack rule already reads only it."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return [], []
    half, published = [], []
    for q in sorted({queue_of(n) for n in names} - set(names)):
        fs = classify(q, directory, [n for n in names if queue_of(n) == q])
        live, last = os.path.join(directory, q), fs.files[-1] if fs.files else None
        if any(f.code == "KQ-INTERRUPTED-APPLY" for f in fs.findings):
            half.append((os.path.join(directory, f"{q}{TEMP_MARKER}{last.ts + 1}"), last.path, live))
        elif len(fs.files) == 1 and last.role == ROLE_PACK:
            published.append((last.path, fs.superseded, live, os.path.join(directory, f"{q}.{last.ts}")))
    return half, published


def finish_interrupted(path: str, *, fsync: bool = True) -> list[str]:
    """Finish what a crashed pack or repair ``--apply`` left in ``path`` (a queue's directory, or a file in it):
    a half-done rotation is rolled back, a published pack is installed (see "Recovery" in the module docstring).
    LogBusy while another process holds one of the files open (Kestrel running: nothing is touched). Returns what
    was done, one line each."""
    d = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    found, published = interrupted_applies(d)
    if not found and not published:
        return []
    busy = holders([p for t, r, _ in found for p in (t, r)] + [p for pk, old, _, _ in published for p in [pk] + old])
    if busy:
        raise LogBusy(f"a half-done pack is in progress? {describe_holders(busy)}; nothing was changed", path=d)
    done = []
    for packf, older, live, placed in published:
        for p in older:
            unlink_quiet(p)
        if fsync and older:
            fsync_dir(d)
        ctx: dict = {}
        _place(packf, live, placed, ctx)
        if fsync:
            fsync_dir(d)
        done.append(f"finished an interrupted pack or repair: {os.path.basename(packf)} installed as "
                    f"{os.path.basename(ctx['path'])}"
                    + (f", {len(older)} superseded file(s) removed" if older else ""))
    for temp, rotated, live in found:
        if _unrotate(rotated, live):
            done.append(f"rolled back a half-done rotation: renamed {os.path.basename(rotated)} to "
                        f"{os.path.basename(live)}")
        if fsync:
            fsync_dir(d)
        unlink_quiet(temp)
        done.append(f"removed {os.path.basename(temp)} (the temp file of an unfinished pack)")
        if fsync:
            fsync_dir(d)
    return done
