"""pack of a list journal: drop the blank runs (acknowledged lines), keep every other byte exactly.

``apply`` is the template's per-file rewrite (``plan.rewrite_file``) of each hour file holding blank bytes, under
the lock upstream's writers take (``lock:`` opens it O_RDWR, never created, and ``flock``s it). ``check:`` refuses
while another process holds it open (upstream's reader writes its acknowledgements at offsets and unlinks the file
when done: a rewrite under it would misplace them or lose the new file); ``write-temp:`` proves the pending lines
unchanged, byte for byte. After ``unlock:``, a writer that opened the old file before the rename and waited for the
lock appends to the old inode: its bytes are copied to the new file (``rescue_late_writers``). A crash leaves the
old or the new file and at most the temp, which the reader reports (``SL-TEMP-FILE``) and ``clean`` removes.
"""
from __future__ import annotations

import fcntl
import os
import stat
import time
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import InputError
from ..findings import Verdict
from ..fsops import LogBusy, flock_fd, unlink_quiet, write_all, write_new
from ..live import describe_holders, fd_holders
from ..plan import Plan, StepRunner, pack_doc, prove, rewrite_file, timed
from ..run import LogReport
from .model import HourFile, ListJournal
from .reader import temp_name
from .verify import run_log

LOCK_TIMEOUT_S = 10.0
#: How long apply waits for writers that opened a replaced / unlinked hour file to close it.
LATE_WRITER_WAIT_S = 2.0


def content_lines(data: bytes) -> list[bytes]:
    """The non-blank lines of an hour file's content, with their '\\n' (a torn tail last, as it is)."""
    out = []
    pos, n = 0, len(data)
    while pos < n:
        if data[pos] == 10:
            pos += 1
            continue
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        out.append(data[pos:end])
        pos = end
    return out


def packed(data: bytes) -> bytes:
    """The content without blank runs: every non-blank line, byte-exact, in order."""
    return b"".join(content_lines(data))


@dataclass(slots=True)
class FilePlan:
    path: str
    hour: int
    size: int
    size_after: int
    blank_bytes: int


@dataclass(slots=True)
class ListPackPlan(Plan):
    kind: ClassVar[str] = "pack"

    journal: ListJournal
    as_of_ns: int
    report: LogReport
    files: list[FilePlan]           # the hour files that change
    unchanged: list[str]            # hour files without a blank byte
    bytes_before: int
    bytes_after: int
    records_before: int
    records_after: int
    digest: str
    dropped: list[str] = field(default_factory=list)

    @property
    def input_verdict(self) -> Verdict:
        return self.report.verdict

    def report_doc(self) -> dict:
        files = len(self.files) + len(self.unchanged)
        return pack_doc(self, {"format": "snaplist", "root": self.journal.root, "queue": None},
                        {"records": self.records_before, "bytes": self.bytes_before, "files": files},
                        {"records": self.records_after, "bytes": self.bytes_after, "files": files}, self.dropped,
                        self.digest, {"rewrite": [{"file": f.path, "bytes_before": f.size, "bytes_after": f.size_after,
                                                   "blank_bytes": f.blank_bytes} for f in self.files],
                                      "unchanged": self.unchanged}, self.digest)

    out_mode = 0o700

    def write_copy(self, out: str, fsync: bool) -> tuple:
        """The packed hour files (all of them)."""
        written, total, files = [], 0, []
        for hf in self.journal.files:
            with open(hf.path, "rb") as f:
                data = packed(f.read())
            p = os.path.join(out, os.path.basename(hf.path))
            total += write_new(p, [data], mode=0o600, fsync=fsync)
            written.append(p)
            files.append(HourFile(p, hf.hour))
        return written, total, self.records_after, _reverify(self, out, files)

    def steps(self, step: StepRunner, ctx: dict, **_kw) -> None:
        ctx.update(path=self.journal.root, removed=[], bytes_after=self.bytes_after)
        for fp in self.files:
            path, key = fp.path, "fd:" + fp.path
            temp = os.path.join(os.path.dirname(path) or ".", temp_name(fp.hour))

            def check(path=path, key=key, temp=temp):
                _check_alone(path, ctx[key], "pack")
                ctx["old:" + path] = read_all(ctx[key])
                unlink_quiet(temp)    # an earlier pack --apply died after writing it (under this same lock)

            def new(path=path):
                data = ctx["old:" + path]
                out = packed(data)
                prove("packed hour file does not keep the pending lines", "", "", path=path,
                      ok=content_lines(out) == content_lines(data))
                return out

            def unlock(path=path, key=key):
                fcntl.flock(ctx[key], fcntl.LOCK_UN)
                rescue_late_writers(ctx[key], len(ctx["old:" + path]), path, recreate=False)

            rewrite_file(step, path, temp, new, check, mode=lambda key=key: stat.S_IMODE(os.fstat(ctx[key]).st_mode),
                         lock=lambda path=path, key=key: _open_locked(path, ctx, key), unlock=unlock)


@timed
def pack_plan(journal: ListJournal) -> ListPackPlan:
    report = run_log(journal)
    files, unchanged, dropped = [], [], []
    before = after = 0
    for hf in journal.files:
        with open(hf.path, "rb") as f:
            data = f.read()
        out = packed(data)
        before += len(data)
        after += len(out)
        if len(out) != len(data):
            files.append(FilePlan(hf.path, hf.hour, len(data), len(out), len(data) - len(out)))
            dropped.append(f"{os.path.basename(hf.path)}: {len(data) - len(out)} blank byte(s) (acknowledged lines)")
        else:
            unchanged.append(hf.path)
    state = report.state
    acked_records = state.acked_runs
    return ListPackPlan(journal, journal.as_of_ns, report, files, unchanged, before, after, report.records,
                        report.records - acked_records, state.digest(), dropped=dropped)


def _reverify(plan: ListPackPlan, root: str, files: list[HourFile]) -> str:
    j = ListJournal(root=root, files=files, current_hour=plan.journal.current_hour, as_of_ns=plan.as_of_ns,
                    is_dir=False, start_date_offset_us=plan.journal.start_date_offset_us)
    rep = run_log(j)
    return prove("packed journal does not replay to the input's entries", plan.digest, rep.state.digest(), path=root)


# ---------------------------------------------------------------- installing, one hour file at a time
def _open_locked(path: str, ctx: dict, key: str) -> int:
    """Open an existing hour file read-write (never created: O_RDWR without O_CREAT, as upstream's reader) and
    flock it; the descriptor is kept in ``ctx`` (closed by the caller whatever happens: the kernel drops the lock
    of a crashed process the same way)."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), path=path) from None
    ctx.setdefault("fds", []).append(fd)
    ctx[key] = fd
    flock_fd(fd, path, LOCK_TIMEOUT_S)
    return fd


def _check_alone(path: str, fd: int, what: str) -> None:
    st, pst = os.fstat(fd), os.stat(path)
    if (st.st_dev, st.st_ino) != (pst.st_dev, pst.st_ino):
        raise LogBusy(f"the hour file was replaced while we waited for its lock; {what} again", path=path)
    found = fd_holders(fd)
    if found:
        raise LogBusy(f"{describe_holders(found)}: upstream's reader (snapbackend listjournal) or a writer is using "
                      f"the file; nothing was changed — {what} again when it is done", path=path)


def read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def rescue_late_writers(fd: int, read_size: int, path: str, *, recreate: bool) -> int:
    """After the old inode was renamed over or unlinked and its lock released: wait (bounded) for processes that
    still hold it open (writers that opened it before the swap), then append whatever they added past
    ``read_size`` to the file now at ``path`` (``recreate``: creating it the way the writer does). Returns the
    bytes moved; LogBusy if a writer still holds the old file after the wait (its bytes so far are moved)."""
    deadline = time.monotonic() + LATE_WRITER_WAIT_S
    late = fd_holders(fd)
    while late and time.monotonic() < deadline:
        time.sleep(0.01)
        late = fd_holders(fd)
    flock_fd(fd, path, LOCK_TIMEOUT_S)       # a writer holding the lock is mid-write: let it finish
    size = os.fstat(fd).st_size
    moved = 0
    if size > read_size:
        extra = os.pread(fd, size - read_size, read_size)
        flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if recreate else 0)
        out = os.open(path, flags, 0o600)
        try:
            flock_fd(out, path, LOCK_TIMEOUT_S)
            write_all(out, extra, path)     # every byte, a short write resumed (a nearly full disk)
            os.fsync(out)
        finally:
            os.close(out)
        moved = len(extra)
    if late:
        raise LogBusy(f"{describe_holders(late)} still holds the replaced hour file open after "
                      f"{LATE_WRITER_WAIT_S:g} s; {moved} byte(s) it appended were moved to the new file — check "
                      "again", path=path)
    return moved


