"""Installing a rewritten workq log in place of the old one, atomically: the directory swap that pack and repair share.

Sequence (``SwapPlan.apply``, as steps), with ``D`` the log directory and ``P`` its parent:
 1. flock LOCK_EX|LOCK_NB on ``D/append.lock`` then ``D/read.lock`` (created if missing), retried until
    ``lock_timeout``; a running workq-server holds append.lock for its whole life -> LogBusy. Under the locks:
    leftovers of crashed installs are recovered, and the caller checks the log is still what its plan read.
 2. ``P/<name>.<tag>-tmp-<pid>-<n>``: mkdir, lock files created and locked, the new segments written and fsynced by
    the caller's ``fill`` (one step each), given ``D``'s owner and modes, re-verified (digest), directory fsynced.
 3. renamed to ``P/<name>.<tag>-new-<inode>-<stamp>`` (verified and ready; the inode tells it apart from the old
    log later), ``P`` fsynced.
 4. ``renameat2(RENAME_EXCHANGE)`` swaps it with ``D``: ``D`` names the complete new log, the ready name the
    complete old one; ``P`` fsynced. Then the old log is renamed to ``P/<name>.pre-<tag>-<stamp>`` (kept: nothing
    is lost; ``.2``, ``.3``... if taken), ``P`` fsynced — or, with ``keep_backup=False``, removed.
 5. the new directory's locks are released; the old one's are held ``stale_lock_hold`` s more so that a server
    that opened the old lock files before the swap times out (upstream waits 1 s) instead of locking a directory
    that is no longer ``D`` — only when another process holds one of them open (``fd_holders``): a process that
    opens ``D/append.lock`` after the swap opens the new log's, so with no holder there is nobody to wait for
    (the hold was a fixed 1.1 s of every apply: 11x the read floor of the 146 MB bench log).
 ``swap="rename"`` (or a filesystem / libc without renameat2) replaces 4 by rename(D -> backup), fsync,
 rename(ready -> D), fsync: between the two renames ``D`` does not exist.

Recovery (``finish_interrupted``; plans and installs run it): every ``<name>.<tag>-new-<ino>-<stamp>`` whose lock files
can be locked (a running install holds them) is either the verified new log (its inode is ``<ino>``): if ``D`` is
missing the rename fallback crashed between its renames -> renamed to ``D``; otherwise the swap never happened and it
is removed (``cleanup``, i.e. under ``D``'s locks only); or the old log after an exchange (another inode) -> renamed to
its backup name. ``<name>.<tag>-tmp-*`` (unverified) are removed with ``cleanup``. So a crash at any step leaves ``D``
naming a complete log (the old or the new one, never a mix), or, in the fallback's one window, missing with the
recovery rule above, and the next run finishes the job.
"""
from __future__ import annotations

import errno
import os
import shutil
import time

from ...errors import UsageError
from ...formats.workq import HEADER_BYTES, HEADER_SIZE, LOCK_FILES
from .. import progress
from ..fsops import (LockSet, NoExchange, backup_name, exchange, exchange_supported, fsync_dir, link_or_copy, ranged,
                     without)
from ..live import fd_holders
from .reader import discover
from ..plan import ApplyResult, Plan, StepRunner, WriteResult, quarantine_step, unchanged, write_step
from ..plan import stamp as plan_stamp

TAGS = ("pack", "repair")


def _Locks(directory: str, timeout: float, *, what: str = "log", names=LOCK_FILES) -> LockSet:
    """LOCK_EX on a directory's append.lock then read.lock (or ``names``), as the server and its cleaner take
    them."""
    return LockSet(directory, names, timeout, busy=lambda name: f"held by a {what} in progress?" if what != "log"
                   else "held by a running workq-server?" if name == "append.lock"
                   else "held by a workq-server cleaner cycle or a reader?")


def _leftovers(parent: str, name: str) -> tuple[list[tuple[str, int, str, str]], list[str]]:
    """(ready dirs as (path, inode, stamp, tag), temp dirs) of installs of ``name`` in ``parent``."""
    ready, temps = [], []
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return ready, temps
    for tag in TAGS:
        pre_new, pre_tmp = f"{name}.{tag}-new-", f"{name}.{tag}-tmp-"
        for e in entries:
            p = os.path.join(parent, e)
            if e.startswith(pre_new) and os.path.isdir(p):
                ino, _, stamp = e[len(pre_new):].partition("-")
                if ino.isdigit() and stamp:
                    ready.append((p, int(ino), stamp, tag))
            elif e.startswith(pre_tmp) and os.path.isdir(p):
                temps.append(p)
    return ready, temps


def finish_interrupted(path: str, *, lock_timeout: float = 1.0, cleanup: bool = False,
                       fsync: bool = True) -> list[str]:
    """Finish what a crashed ``SwapPlan.apply`` (pack, repair) left in ``path``'s parent (rules in the module docstring).

    ``cleanup`` (only while holding ``path``'s locks, as ``apply_plan`` does) also removes unverified temp
    directories and verified ones whose swap never started. Raises LogBusy when an install is in progress."""
    d = os.path.abspath(path)
    parent, name = os.path.split(d)
    ready, temps = _leftovers(parent, name)
    done: list[str] = []
    for p, ino, stamp, tag in ready:
        locks = _Locks(p, lock_timeout, what="pack")
        try:
            if os.stat(p).st_ino == ino:
                if not os.path.lexists(d):
                    os.rename(p, d)
                    done.append(f"finished an interrupted swap: renamed {os.path.basename(p)} to {name}")
                elif cleanup:
                    shutil.rmtree(p)
                    done.append(f"removed {os.path.basename(p)} (a verified rewrite whose swap never started)")
                else:
                    continue
            else:
                b = backup_name(parent, name, f"pre-{tag}-{stamp}")
                os.rename(p, b)
                done.append(f"finished an interrupted swap: the old log {os.path.basename(p)} renamed to "
                            f"{os.path.basename(b)}")
            if fsync:
                fsync_dir(parent)
        finally:
            locks.release()
    if cleanup:
        for p in temps:
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed {os.path.basename(p)} (an unfinished rewrite)")
        if temps and fsync:
            fsync_dir(parent)
    return done


def _copy_ownership(src_dir: str, dst_dir: str) -> None:
    """Give the new log the old one's directory mode and owner (so that a workq-server running as another user
    than wqtool can still append); files get the owner and the mode of the old newest segment (or 0666&~umask)."""
    st = os.stat(src_dir)
    os.chmod(dst_dir, st.st_mode & 0o7777)
    segs = sorted(n for n in os.listdir(src_dir) if n.endswith(".log"))
    fmode = os.stat(os.path.join(src_dir, segs[-1])).st_mode & 0o777 if segs else None
    for n in [None] + sorted(os.listdir(dst_dir)):
        p = dst_dir if n is None else os.path.join(dst_dir, n)
        if n is not None and fmode is not None:
            os.chmod(p, fmode)
        if (os.stat(p).st_uid, os.stat(p).st_gid) != (st.st_uid, st.st_gid):
            try:
                os.chown(p, st.st_uid, st.st_gid)
            except PermissionError:
                pass   # not root: the files stay ours, as any file we create


def resolve_swap(swap: str, parent: str) -> str:
    if swap not in ("auto", "exchange", "rename"):
        raise UsageError(f"swap must be auto, exchange or rename, not {swap!r}")
    if swap == "auto":
        return "exchange" if exchange_supported(parent) else "rename"
    return swap


def make_lock_files(directory: str) -> None:
    for n in LOCK_FILES:
        fd = os.open(os.path.join(directory, n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.close(fd)


class SwapPlan(Plan):
    """A workq plan whose result is a whole new log: written into ``out`` (``write``) or installed in place of the
    log directory by the swap (``apply``: the module docstring's sequence, as steps). The format gives ``fill(d,
    step, fsync)`` -> (segment names, bytes), ``verify_copy(d)`` -> (records, digest), ``check_unchanged()`` and
    ``write_total``; a repair's plan (``cuts``) also writes its quarantine before the swap."""

    tag = "pack"

    def segments_kept(self) -> list[tuple[str, int, list[tuple[int, int]], bool]]:
        """(segment, size read, its (offset, length) ranges cut, linked whole) of each segment the new log keeps."""
        raise NotImplementedError

    def check_unchanged(self) -> None:
        """The log's segments are the ones the plan read, unchanged (``changed_why``: the error's words)."""
        unchanged(self.sigs, self.changed_why, now=[s.path for s in discover([self.log.root])[0].segments],
                  path=self.log.root)

    def fill(self, d: str, step: StepRunner, fsync: bool = True) -> tuple[list[str], int]:
        """The new log's segments in ``d`` (-> names, bytes): one kept whole hard-linked (copied where links cannot
        be made), the others written without their cut ranges (``write_step``). pack writes its own."""
        names, total = [], 0
        for path, size, cuts, link in self.segments_kept():
            names.append(os.path.basename(path))
            dst = os.path.join(d, names[-1])
            if link:
                step("link:" + names[-1], lambda path=path, dst=dst: link_or_copy(path, dst, fsync))
                total += size
            else:
                total += write_step(step, "write:" + names[-1], dst, lambda path=path, size=size, cuts=cuts: ranged(
                    without(path, HEADER_SIZE, size, cuts), head=HEADER_BYTES), fsync=fsync) or 0
        return names, total

    def write_copy(self, d: str, fsync: bool) -> tuple:
        make_lock_files(d)
        progress.begin("write", self.write_total)
        names, total = self.fill(d, StepRunner(), fsync)
        progress.begin("re-verify", total)
        return (names, total, *self.verify_copy(d))

    def apply(self, **kw) -> ApplyResult:
        """Install the new log in place of the log directory, atomically (a plan with nothing to do changes
        nothing). ``quarantine``: a repair's (default ``<dir>.quarantine-<stamp>``); ``swap``: auto | exchange |
        rename; ``stale_lock_hold``, ``lock_timeout``, ``keep_backup``, ``fsync``."""
        if getattr(self, "nothing_to_do", False):
            return ApplyResult(os.path.abspath(self.log.root), [], None, self.bytes_before, self.bytes_before)
        if not self.log.is_dir:
            raise UsageError("--apply needs the log's directory (segments named one by one cannot be installed)",
                             path=self.log.root)
        return Plan.apply(self, **kw)

    def run(self, ctx: dict, fail_at: str | None, hook, *, stale_lock_hold: float = 1.1, **kw) -> StepRunner:
        """``Plan.run``; then the old log's locks are held ``stale_lock_hold`` s more after a swap, only while
        another process holds one of them open (the module docstring, step 5). An ordinary error (EIO, ENOSPC) after
        the swap: what it still owed (the old log to its backup name, or the new one to the log's name) is done at
        once by ``finish_interrupted``, as the next run would do it."""
        failed = False
        try:
            return Plan.run(self, ctx, fail_at, hook, **kw)
        except Exception:       # an ordinary error, not a crash (a crash runs nothing: the next run finishes it)
            failed = True
            raise
        finally:
            old = ctx.get("old_locks")
            if old is not None:
                if ctx.get("swapped") and stale_lock_hold > 0 and any(fd_holders(fd) for fd in old.fds):
                    time.sleep(stale_lock_hold)     # only a process holding the old lock files open can wait on them
                old.release()
            if failed and ctx.get("swapped"):
                try:
                    finish_interrupted(ctx["path"], lock_timeout=0, fsync=kw.get("fsync", True))
                except Exception:  # noqa: BLE001 — the step's error is the one to report; the next run finishes it
                    pass

    def steps(self, step: StepRunner, ctx: dict, *, quarantine: str | None = None, lock_timeout: float = 1.0,
              swap: str = "auto", fsync: bool = True, keep_backup: bool = True, **_kw) -> None:
        d = os.path.abspath(self.log.root)
        parent, name = os.path.split(d)
        ctx["path"], swap = d, ctx.setdefault("swap", resolve_swap(swap, parent))
        stamp = plan_stamp(self.as_of_ns)
        tmp = os.path.join(parent, f"{name}.{self.tag}-tmp-{os.getpid()}-{time.monotonic_ns()}")

        def lock_files():
            make_lock_files(tmp)
            ctx["lock"] = _Locks(tmp, lock_timeout, what=self.tag)
        if not step.dry:    # 1. under the log's locks: a crashed install finished, the log still what the plan read
            ctx["old_locks"] = _Locks(d, lock_timeout)
            ctx["recovered"] = finish_interrupted(d, lock_timeout=lock_timeout, cleanup=True, fsync=fsync)
            self.check_unchanged()
            progress.begin("write", self.write_total)
        # 2. the new log, in a sibling temp directory, verified (a later failure before the swap removes it)
        step("mkdir-temp", lambda: os.mkdir(tmp), rollback=lambda: shutil.rmtree(tmp, ignore_errors=True))
        step("lock-files-temp", lock_files)
        names, total = self.fill(tmp, step, fsync)
        step("own-temp", lambda: _copy_ownership(d, tmp))
        if not step.dry:
            progress.begin("re-verify", total)
        step("verify-temp", lambda: ctx.__setitem__("result", WriteResult(d, names, total, *self.verify_copy(tmp),
                                                                           0.0)))
        step.sync("temp", tmp, fsync)
        if hasattr(self, "cuts"):
            quarantine_step(self, step, ctx, quarantine, f"{d}.quarantine-{stamp}", fsync)
        # 3. verified and ready: named after its inode, so that recovery can tell it from the old log
        ready = os.path.join(parent, f"{name}.{self.tag}-new-{0 if step.dry else os.stat(tmp).st_ino}-{stamp}")
        step("rename-temp-to-ready", lambda: os.rename(tmp, ready),
             rollback=lambda: shutil.rmtree(ready, ignore_errors=True))
        step.sync("parent:ready", parent, fsync)
        # 4. the swap: the point of no return (the old log is aside from here)
        backup = ctx["backup"] = backup_name(parent, name, f"pre-{self.tag}-{stamp}")
        if swap == "exchange":
            step("exchange", lambda: _exchange(ready, d, parent))
            ctx["swapped"] = True
            step.commit()
            step.sync("parent:exchange", parent, fsync)
            step("rename-old-to-backup", lambda: os.rename(ready, backup))
            step.sync("parent:backup", parent, fsync)
        else:
            step("rename-log-to-backup", lambda: os.rename(d, backup))
            ctx["swapped"] = True
            step.commit()
            step.sync("parent:backup", parent, fsync)
            step("rename-ready-to-log", lambda: os.rename(ready, d))
            step.sync("parent:log", parent, fsync)
        if not keep_backup:
            step("remove-backup", lambda: shutil.rmtree(backup))
            step.sync("parent:no-backup", parent, fsync)
            ctx["backup"] = None


def _exchange(ready: str, d: str, parent: str) -> None:
    try:
        exchange(ready, d)
    except NoExchange:
        raise OSError(errno.EINVAL, "renameat2(RENAME_EXCHANGE) is not supported here; use swap='rename'",
                      parent) from None
