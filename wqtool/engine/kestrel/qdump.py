"""qdump: Kestrel's ``tools/QDumper.scala`` text format, reproduced as data (nothing is printed here).

``qdump(paths, now_ms=...)`` yields ``(stream, chunk)`` pairs: ``("out", str)`` for stdout text,
``("err", str)`` for stderr text and ``("raw", bytes)`` for ``-A``'s raw item contents. The caller writes them
as they come (the output can be large; nothing is accumulated).

As upstream, each file is dumped **independently** with fresh state (the rotated/pack/live order is not
followed), one line per record: ``%08x  `` (offset mod 2^32) then ``ADD %-6d`` [`` xid=N`` for ADD_XID with
xid > 0] [`` expired`` | `` exp=<twitter-util Duration>``], ``REM``, ``RSV <xid>`` (opcode 3 takes the
dumper's own counter), ``XID <xid>``, ``CAN <xid>``, ``ACK <xid>``, ``CON %-6d`` [expiry] (its xid is never
printed); then ``\\r`` + 30 spaces, ``Journal size: N bytes, with N operations.`` and
``N items totalling N bytes.`` (queued + open).

Where qdump itself misbehaves, this differs on purpose: framing damage gives ``Exception reading journal file:
<file>`` plus the finding on stderr instead of a stack trace; REM / RSV on an empty queue and CAN of an unknown
xid (uncaught exceptions in qdump) are reported on stderr and the dump continues. The quiet-mode progress line
(``\\rReading journal: ...``) is not reproduced.
"""
from __future__ import annotations

from collections import deque
from typing import Iterator, Sequence

from ...formats.kestrel import Opcode
from ..fileio import FileView
from .fastpath import Damage, decode_op
from .reader import JournalFile, ROLE_EXPLICIT
from .replay import wrap_i32

QDUMP_USAGE = """
usage: qdump.sh <journal-files...>
    describe the contents of a kestrel journal file

options:
    -q      quiet: don't describe every line, just the summary
    -d      dump contents of added items
    -A      dump only the raw contents of added items
    -Q      dump only the raw queue state (data for items actually in the queue)

"""

_UNITS = (("days", 86_400_000_000_000), ("hours", 3_600_000_000_000), ("minutes", 60_000_000_000),
          ("seconds", 1_000_000_000), ("milliseconds", 1_000_000), ("microseconds", 1_000), ("nanoseconds", 1))


def duration_str(ns: int) -> str:
    """twitter-util ``Duration.toString``: ``59.seconds+999.milliseconds``; ``0.seconds`` for zero.
    Units are truncated towards zero as Java's ``TimeUnit.convert``; negative parts carry their own sign."""
    if ns == 0:
        return "0.seconds"
    out = []
    rest = ns
    for name, size in _UNITS:
        v = int(rest / size) if rest < 0 else rest // size
        if v != 0:
            rest -= v * size
            if v > 0 and out:
                out.append("+")
            out.append(f"{v}.{name}")
    return "".join(out)


def _exp(expiry_ms: int | None, now_ms: int) -> str:
    if not expiry_ms:
        return ""
    if expiry_ms < now_ms:
        return " expired"
    return " exp=" + duration_str((expiry_ms - now_ms) * 1_000_000)


def _text(b: bytes) -> str:
    return b.decode("latin-1")


def qdump_file(path: str, *, now_ms: int, quiet: bool = False, dump_contents: bool = False,
               raw: bool = False, queue_state: bool = False, kestrel_version: str = "auto"
               ) -> Iterator[tuple[str, str | bytes]]:
    """One file, as ``qdump.sh [-q] [-d] [-A] [-Q] <path>``. ``-A`` and ``-Q`` imply quiet."""
    quiet = quiet or raw or queue_state
    try:
        sd = FileView(JournalFile(path, ROLE_EXPLICIT))
    except Exception:
        yield "err", f"Can't open journal file: {path}\n"
        return
    queue: deque[bytes] = deque()
    open_: dict[int, bytes] = {}
    counter = 0
    ops = 0
    with sd:
        data, end = sd.data, sd.size
        if not quiet:
            yield "out", f"Queue: {path}\n"
        pos = 0
        while pos < end:
            try:
                o, nxt = decode_op(data, pos, end)
            except Damage as d:
                yield "err", f"Exception reading journal file: {path}\n"
                yield "err", f"wqtool: {path}@0x{pos:x}: {d.code}: {d.message}\n"
                return
            op = o.op
            line = None
            if op is Opcode.ADDX or op is Opcode.ADD or op is Opcode.ADD_XID or op is Opcode.CONTINUE:
                exp = o.expiry * 1000 if op is Opcode.ADD and kestrel_version != "1" else (
                    wrap_i32(o.expiry * 1000) if op is Opcode.ADD else o.expiry)
                tag = "CON" if op is Opcode.CONTINUE else "ADD"
                xid = f" xid={o.xid}" if op is Opcode.ADD_XID and o.xid > 0 else ""
                line = f"{tag} {len(o.data):<6d}{xid}{_exp(exp, now_ms)}"
                if op is Opcode.CONTINUE:
                    open_.pop(o.xid, None)
                queue.append(o.data)
                if raw:
                    yield "raw", o.data
            elif op is Opcode.REMOVE:
                line = "REM"
                if queue:
                    queue.popleft()
                else:
                    yield "err", f"wqtool: {path}@0x{pos:x}: REM on an empty queue (qdump throws here)\n"
            elif op is Opcode.REMOVE_TENTATIVE or op is Opcode.REMOVE_TENTATIVE_XID:
                xid = o.xid
                if op is Opcode.REMOVE_TENTATIVE or xid == 0:
                    while True:
                        counter = wrap_i32(counter + 1)
                        if counter != 0 and counter not in open_:
                            break
                    xid = counter
                line = f"RSV {xid}"
                if queue:
                    open_[xid] = queue.popleft()
                else:
                    yield "err", f"wqtool: {path}@0x{pos:x}: RSV on an empty queue (qdump throws here)\n"
            elif op is Opcode.SAVE_XID:
                line = f"XID {o.xid}"
                counter = o.xid
            elif op is Opcode.UNREMOVE:
                line = f"CAN {o.xid}"
                item = open_.pop(o.xid, None)
                if item is None:
                    yield "err", f"wqtool: {path}@0x{pos:x}: CAN of unknown xid {o.xid} (qdump throws here)\n"
                else:
                    queue.appendleft(item)
            elif op is Opcode.CONFIRM_REMOVE:
                line = f"ACK {o.xid}"
                open_.pop(o.xid, None)
            if not quiet:
                text = f"{pos & 0xFFFFFFFF:08x}  {line}\n"
                if dump_contents and o.data is not None:
                    text += f"    {_text(o.data)}\n"
                yield "out", text
            ops += 1
            pos = nxt
    if raw:
        return
    items = len(queue) + len(open_)
    total = sum(len(b) for b in queue) + sum(len(b) for b in open_.values())
    yield "out", "\r" + " " * 30 + "\n"
    yield "out", f"Journal size: {end} bytes, with {ops} operations.\n"
    yield "out", f"{items} items totalling {total} bytes.\n"
    if queue_state:
        for b in queue:
            yield "out", _text(b) + "\n"


def qdump(paths: Sequence[str], *, now_ms: int, quiet: bool = False, dump_contents: bool = False,
          raw: bool = False, queue_state: bool = False, kestrel_version: str = "auto"
          ) -> Iterator[tuple[str, str | bytes]]:
    """``qdump.sh`` over several files (each independently); no files -> the usage text (exit 0 upstream)."""
    if not paths:
        yield "out", QDUMP_USAGE
        return
    for p in paths:
        yield from qdump_file(p, now_ms=now_ms, quiet=quiet, dump_contents=dump_contents, raw=raw,
                              queue_state=queue_state, kestrel_version=kestrel_version)


def qdump_text(paths: Sequence[str], **kw) -> tuple[str, str, bytes]:
    """Convenience for tests and small files: (stdout text, stderr text, raw bytes)."""
    out, err, raw = [], [], []
    for stream, chunk in qdump(paths, **kw):
        (out if stream == "out" else err if stream == "err" else raw).append(chunk)
    return "".join(out), "".join(err), b"".join(raw)
