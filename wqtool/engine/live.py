"""Logs that are being written while we read them: a partial last record is "in flight", not damage.

A log has a live writer when its format says so (``Live.writer``: workq's append.lock held by a running
server, a process holding a Kestrel journal open), when its live file changed while we read it (size, inode,
mtime: a writer this host cannot see, e.g. in another container), or when the caller says so (``--live``).
Then the torn tail the reader found at the end of the newest file is the record the writer is appending: it is
reported as the format's in-flight note (``Live.in_flight_code``: WQ-IN-FLIGHT, KQ-IN-FLIGHT), never as
"safe to truncate", and the verdict no longer counts it. Commands that change files refuse a live log
(``refuse_live``).

Generic over the registry: ``LiveWatch`` and ``refuse_live`` name no format; repair and clean use them as pack
does. Who holds a file open (``holders``, ``fd_holders``: ``/proc/*/fd``) and whether a lock file is held
(``is_locked``) are here too: the readers, verify, dump, send and the plans' checks ask.
"""
from __future__ import annotations

import errno
import fcntl
import os
from typing import Iterable

from .findings import ERROR, NOTE, Finding, Verdict, worst
from .fsops import FileSig, LogBusy
from .run import LogReport

LIVE_FLAG = "--live was given (the log is being written)"


def in_flight(report: LogReport, code: str, writer: str, error_codes: frozenset[str] = frozenset()) -> LogReport:
    """Turn the torn-tail findings of ``report`` into in-flight notes (``code``) and drop them from the verdict:
    the bytes after the last complete record are a record ``writer`` is still appending. Returns ``report``
    (changed in place); a report without a torn tail is returned unchanged. ``error_codes``: the format's
    error codes, to move the counts of a torn tail the report counted but did not keep (``limit=0``)."""
    torn = [f for f in report.findings if f.verdict == Verdict.TORN_TAIL]
    if not torn and report.verdict != Verdict.TORN_TAIL:
        return report
    if not torn:     # counted, not kept: with a torn-tail verdict every error counted is the torn tail's
        for c in [c for c in report.counts if c in error_codes]:
            n = report.counts.pop(c)
            report.severities[ERROR] -= n
            report.counts[code] += n
            report.severities[NOTE] += n
    notes = []
    for f in torn:
        seen = f.cause if f.cause is not None else f.message
        notes.append(Finding(NOTE, code, f"a record in flight at 0x{(f.offset or 0):x}, not damage: {writer}; the "
                             f"bytes after the last complete record are still being appended (seen as {f.code}: "
                             f"{seen}) — do not truncate; verify again once the writer is done, or use --horizon",
                             path=f.path, offset=f.offset, record_index=f.record_index, next_index=f.next_index))
        report.counts[f.code] -= 1
        if not report.counts[f.code]:
            del report.counts[f.code]
        report.severities[f.severity] -= 1
        report.counts[code] += 1
        report.severities[NOTE] += 1
    by_id = {id(f): n for f, n in zip(torn, notes)}
    report.findings[:] = [by_id.get(id(f), f) for f in report.findings]
    report.last_good = None
    if report.verdict == Verdict.TORN_TAIL:
        # a torn tail is the only damage of its log (every other class wins over it): what remains is clean
        # unless a finding we still hold says otherwise
        report.verdict = worst(f.verdict for f in report.findings if f.severity == ERROR)
    if not report.severities.get(ERROR):
        report.severities.pop(ERROR, None)
    return report


class LiveWatch:
    """Watch one log (an ``engine.format.Log``) while a command reads it: ``writer`` is who writes it before the
    read; ``settle(report)`` after the read also looks at whether the live file changed meanwhile and turns a
    torn tail into an in-flight note when the log is live."""

    def __init__(self, log, *, live: bool = False):
        self.fmt = log.fmt
        lv = self.fmt.live
        self.writer: str | None = LIVE_FLAG if live else lv.writer(log.data) if lv is not None else None
        self._sigs = {p: FileSig.of(p) for p in (lv.files(log.data) if lv is not None else self.fmt.files(log.data)[-1:])}

    def changed(self) -> str | None:
        """The live file that changed since the watch began (a writer appended, rotated or created it), or None."""
        for p, sig in self._sigs.items():
            if FileSig.of(p) != sig:
                return p
        return None

    def live(self) -> str | None:
        """Who writes the log (in words), looking again now; None: nobody we can tell."""
        if self.writer is not None:
            return self.writer
        p = self.changed()
        if p is not None:
            return f"{p} changed while it was read (a writer is appending)"
        return None

    def settle(self, report: LogReport) -> LogReport:
        code = self.fmt.live.in_flight_code if self.fmt.live is not None else None
        if code is None or (report.verdict != Verdict.TORN_TAIL
                            and not any(f.verdict == Verdict.TORN_TAIL for f in report.findings)):
            return report
        who = self.live()
        if who is None:
            return report
        return in_flight(report, code, who, frozenset(c for c, (sev, _) in self.fmt.codes.items() if sev == ERROR))

    def torn_in_flight(self, f: Finding) -> Finding:
        """One streamed torn-tail finding as the in-flight note it is when the log is live (dump), else itself."""
        code = self.fmt.live.in_flight_code if self.fmt.live is not None else None
        if code is None or f.verdict != Verdict.TORN_TAIL:
            return f
        who = self.live()
        if who is None:
            return f
        rep = LogReport(root="", findings=[f], verdict=Verdict.TORN_TAIL)
        rep.counts[f.code] += 1
        rep.severities[f.severity] += 1
        return in_flight(rep, code, who).findings[0]


def refuse_live(log, what: str, *, live: bool = False, why: str = "") -> None:
    """A command that changes files (``what``: "pack --apply", "repair --apply", ...) refuses a log that is being
    written: LogBusy (exit 5) naming the writer (``why``: a reason the command adds)."""
    who = LIVE_FLAG if live else log.fmt.live.writer(log.data) if log.fmt.live is not None else None
    if who is not None:
        raise LogBusy(f"the log is being written ({who}){why}: the writer must be stopped before {what}; nothing "
                      "was changed", path=log.root)


# ---------------------------------------------------------------- who holds a file open
def is_locked(path: str) -> bool:
    """True when another process holds a flock on ``path`` (probed with LOCK_SH|LOCK_NB, released at once).
    A missing file is not locked."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)


def holders(paths: Iterable[str], *, writing: bool = False) -> list[tuple[int, str, str]]:
    """Other processes holding any of ``paths`` open: [(pid, path, command line)], from ``/proc/*/fd`` (Linux;
    elsewhere, or for processes we may not inspect, nothing is found — callers also watch the files change).
    Matching is by (device, inode), so renamed or hard-linked names are found too.

    ``writing``: only descriptors open for writing (O_WRONLY or O_RDWR, from ``/proc/PID/fdinfo``): a live
    writer, where a reader (another ``wqtool verify``, a tail) is no writer. Commands that replace files ask
    for every holder."""
    want: dict[tuple[int, int], str] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        want[(st.st_dev, st.st_ino)] = p
    if not want or not os.path.isdir("/proc"):
        return []
    me = os.getpid()
    out: list[tuple[int, str, str]] = []
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            hit = want.get((st.st_dev, st.st_ino))
            if hit is not None and (not writing or _open_for_writing(pid, fd)):
                out.append((pid, hit, _cmdline(pid)))
                break
    return out


def _open_for_writing(pid: int, fd: str) -> bool:
    """Whether descriptor ``fd`` of ``pid`` is open for writing (its ``flags:`` line in ``/proc/PID/fdinfo/FD``,
    octal; access mode O_WRONLY or O_RDWR). A descriptor we cannot inspect counts as writing (the careful
    answer: a torn tail is then read as in flight, not as damage to repair)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        pass
    return True


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or "?"


def refuse_holders(paths: Iterable[str], who: str, what: str, path: str) -> None:
    """LogBusy ("``who`` must be stopped before ``what``") while another process holds one of ``paths`` open."""
    found = holders(list(dict.fromkeys(paths)))
    if found:
        raise LogBusy(f"{who} must be stopped before {what}: {describe_holders(found)}; nothing was changed",
                      path=path)


def describe_holders(found: list[tuple[int, str, str]]) -> str:
    return "; ".join(f"pid {pid} ({cmd[:80]}) holds {os.path.basename(path)} open" for pid, path, cmd in found[:3]) \
        + (f"; and {len(found) - 3} more" if len(found) > 3 else "")


def fd_holders(fd: int) -> list[tuple[int, str, str]]:
    """Other processes holding open the file behind our descriptor ``fd`` (even once it is renamed over or
    unlinked): ``holders`` of ``/proc/self/fd/<fd>``."""
    return holders([f"/proc/self/fd/{fd}"])
