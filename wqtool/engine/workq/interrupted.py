"""An interrupted workq ``--apply`` recognised by what it leaves, as SQLite recognises a hot journal.

``swap.SwapPlan.apply`` (pack and repair; clean rewrites segments in place, see ``clean``) writes the new log into
``P/<name>.<tag>-tmp-<pid>-<n>``, renames it ``P/<name>.<tag>-new-<ino>-<stamp>`` once verified, then swaps it with
``D = P/<name>``. A process killed on the way leaves one of those siblings behind, and — in the rename fallback's one
window — no ``D`` at all. ``swap.finish_interrupted`` (run by the next pack or repair) finishes the job; until then
every reader says so instead of reading a half-installed log as damage:

* ``D`` present: by swap.py's design it always names a complete log (the old one, or the new one after the
  exchange), so it is read as it is and the leftover is one WARNING finding (``WQ-INTERRUPTED-APPLY``): the verdict
  is the log's own, never CORRUPT.
* ``D`` missing beside a verified ``-new-`` copy (its inode is the one in its name): nothing is read; one line,
  a UsageError (exit 2, see docs/exit-codes.md): the log is not there until the rerun renames the copy to ``D``.

A sibling is a leftover only when no install is running on it: a running install holds LOCK_EX on the lock files of
its temp and ready copies (and, after an exchange, on the old log's), probed here with LOCK_SH|LOCK_NB
(``fsops.is_locked``), which creates nothing and leaves other readers alone. A ``-tmp-`` copy without lock files yet
(between its mkdir and its lock files) is a running install's while the pid in its name lives.

upstream: workq-server opens only its ``-cmdlog-path`` (cmd/workq-server/main.go:59 ``captain.NewStream``,
main.go:65 ``OpenCursor``, main.go:80 ``cmdlog.Replay``) and never looks at the siblings: it starts on whatever ``D``
holds, and refuses a missing ``D`` (main.go:65 -> int/captain/filemutex.go:16 ``os.OpenFile`` fails).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import UsageError
from ...formats.workq import LOCK_FILES
from ..findings import WARNING, Finding
from ..fsops import pid_alive
from ..live import is_locked
from .swap import _leftovers as _swap_leftovers

CODE = "WQ-INTERRUPTED-APPLY"
#: the line every reader prints (the Kestrel reader's KQ-INTERRUPTED-APPLY says the same)
LINE = "an interrupted wqtool repair (or pack, clean): rerun it to finish"
UPSTREAM = ("workq-server reads only the log directory (cmd/workq-server/main.go:59, :65, :80) and starts on "
            "whatever it holds")


@dataclass(frozen=True, slots=True)
class Leftover:
    path: str
    tag: str                # pack | repair
    kind: str               # tmp | new
    ino: int | None = None  # -new-: the inode in its name (the verified new log's)

    @property
    def is_new_log(self) -> bool:
        """A ``-new-`` copy that is the verified new log (its inode is the one in its name); else, after an
        exchange, the old log waiting for its backup name."""
        try:
            return self.kind == "new" and os.stat(self.path).st_ino == self.ino
        except OSError:
            return False


def _running(lo: Leftover, name_rest: str) -> bool:
    """True when an install in progress owns ``lo`` (its lock files are locked; or, a temp copy without lock files
    yet, the pid in its name lives)."""
    locks = [os.path.join(lo.path, n) for n in LOCK_FILES]
    if any(is_locked(p) for p in locks):
        return True
    if lo.kind == "tmp" and not any(os.path.lexists(p) for p in locks):
        pid = name_rest.partition("-")[0]
        return pid.isdigit() and pid_alive(int(pid))
    return False


def leftovers(path: str) -> list[Leftover]:
    """The siblings an interrupted install of the log directory ``path`` left in its parent (those of installs
    still running excluded): swap.py's own listing (``swap._leftovers``, its name patterns), verified copies
    first."""
    d = os.path.abspath(path)
    parent, name = os.path.split(d)
    if not name:
        return []
    ready, temps = _swap_leftovers(parent, name)
    found = [(Leftover(p, tag, "new", ino), "") for p, ino, _, tag in ready]
    for p in temps:
        tag, _, rest = os.path.basename(p)[len(name) + 1:].partition("-tmp-")
        found.append((Leftover(p, tag, "tmp"), rest))
    return [lo for lo, rest in found if not _running(lo, rest)]


def _what(lo: Leftover, present: bool) -> str:
    base = os.path.basename(lo.path)
    if lo.kind == "tmp":
        return f"{base} is its unfinished {lo.tag} rewrite; the log was read as before it started"
    if lo.is_new_log:
        if present:
            return f"{base} is its verified {lo.tag} rewrite, not swapped in yet; the log was read as before it started"
        return f"the log directory is missing: {base} is its verified {lo.tag} rewrite, which the rerun renames to it"
    return f"{base} is the log before the {lo.tag}, swapped out; the log was read as the {lo.tag} left it"


def findings(path: str) -> list[Finding]:
    """One WQ-INTERRUPTED-APPLY warning per leftover beside the log directory ``path`` (which exists)."""
    return [Finding(WARNING, CODE, f"{LINE}; {_what(lo, True)}", path=lo.path, upstream=UPSTREAM)
            for lo in leftovers(path)]


def missing_error(path: str) -> UsageError | None:
    """For a log directory ``path`` that does not exist: the one-line error when an interrupted install's rename
    fallback left it missing beside its verified new copy (None: not that case, the caller's own error stands)."""
    if os.path.lexists(path):
        return None
    ready = [lo for lo in leftovers(path) if lo.is_new_log]
    if not ready:
        return None
    return UsageError(f"{LINE}; {_what(ready[0], False)}", path=path)


def refuse_start(path: str) -> None:
    """``wqtool serve``'s start-up check: a server must not start on a half-installed log (its append.lock, held
    for its whole life, would keep the rerun from finishing). Raises UsageError with the one line; upstream would
    start on whatever ``D`` holds (module docstring)."""
    err = missing_error(path)
    if err is not None:
        raise err
    if os.path.isdir(path):
        found = leftovers(path)
        if found:
            raise UsageError(f"{LINE}: {os.path.basename(found[0].path)} is its leftover (a server does not start "
                             "on a half-installed log)", path=path)
