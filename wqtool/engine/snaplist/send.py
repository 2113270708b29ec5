"""The client side of the libfastjournal design: forward a list client journal to a fastjournal daemon.

**Per the unimplemented libfastjournal design** (its README, A.6: "a client service … forwards lines to the daemon
and erases a line once the daemon confirms it persisted"): the daemon is wqtool's own (``wqtool.server.
fastjournal``); no upstream daemon exists. The hour files are visited in upstream's reading order at --as-of and
read the way its reader reads them (``open(O_RDWR)``, ``flock(LOCK_EX)``, size, ``flock(LOCK_UN)``, read that many
bytes). Each pending line becomes one ``SET`` (key: the uri; value: priority and key_start_date; timestamp: the
key_start_date, so a resent line is the same request and the daemon's "newest timestamp wins" keeps the line
with the largest date, as snaplistd does) with the persist flag; the line is blanked in place (line and ``\\n``
overwritten with ``\\n``, as upstream acknowledges) only once the daemon's reply says it was journaled.

**Resuming without resending.** A crash between the daemon's reply and the blanking leaves an acknowledged line
pending (and with a window of requests in flight, up to ``WINDOW`` of them). So every window of pending lines is
first asked of the daemon (``GET`` with the data flag, pipelined): a line the daemon already holds — the entry at
the line's timestamp with its priority and date, or a newer one, or a tombstone not older (error "deleted") — is
one its ``SET`` would not change, so it is blanked without being sent ("already at the daemon"); only the others
are sent. A line is never blanked on anything but the daemon's word. Lines upstream would skip or misread
(missing fields, bad values, a raw ``;`` in the uri, a torn tail) are not sent and stay as they are.

The messages are built and parsed with the construct schemas of ``wqtool.formats.fastjournal`` (the single truth).
"""
from __future__ import annotations

import fcntl
import os
import socket
from typing import Callable
from urllib.parse import urlsplit

from ...errors import InputError, UsageError
from ...formats import fastjournal as fj
from ..findings import ERROR, Finding
from ..format import SendReport
from ..fsops import flock_fd
from .model import HourFile, Line, ListJournal
from .reader import ListReader
from .writer import acknowledge

SCHEME = "fastjournal"
WINDOW = 32                 # requests in flight before waiting for replies
TIMEOUT_S = 10.0
BLOCKING = {"SL-URI-SEMICOLON"}   # warnings that make a line unsafe to send as upstream reads it


def parse_target(url: str) -> tuple[str, int]:
    u = urlsplit(url)
    if u.scheme != SCHEME or not u.hostname or u.port is None or u.path not in ("", "/"):
        raise UsageError(f"--send: expected {SCHEME}://HOST:PORT, got {url!r}")
    return u.hostname, u.port


def _flags(**bits) -> dict:
    d = dict(reserved=0, persist_again=False, listen=False, data=False, persist=False, query=fj.Query.KEY,
             worked_on=False, overwrite=False, update_timeout=False, timeout=False, value_size=fj.SizeWidth.NONE,
             key_size16=False)
    d.update(bits)
    return d


def set_request(identifier: int, uri: bytes, priority: int, key_start_date: int) -> bytes:
    value = fj.fifo_value.build(dict(priority=priority, key_start_date=key_start_date))
    return fj.fj_request.build(dict(
        version=fj.FJ_VERSION, function=fj.Function.SET, identifier=identifier,
        flags=_flags(persist=True, overwrite=True, value_size=fj.SizeWidth.U8, key_size16=len(uri) > 255),
        timestamp=key_start_date, timeout=None, count=None, key=uri, upper_key=None,
        value=dict(type=fj.ValueType.BUFFER, data=value)))


def get_request(identifier: int, uri: bytes) -> bytes:
    """``GET uri`` with the data flag: the entry's value comes back (the resume probe)."""
    return fj.fj_request.build(dict(
        version=fj.FJ_VERSION, function=fj.Function.GET, identifier=identifier,
        flags=_flags(data=True, key_size16=len(uri) > 255), timestamp=0, timeout=None, count=None, key=uri,
        upper_key=None, value=None))


def delivered(reply, line: Line) -> bool:
    """Whether the daemon's answer to ``GET line.uri`` shows that ``SET`` of ``line`` would change nothing (the
    fifo's rules: a newer timestamp wins, an equal one with the same value is a resend, a tombstone not older
    stops it)."""
    ts = line.key_start_date
    if reply.error == fj.FjError.DELETED:
        return reply.timestamp >= ts
    if reply.error or not reply.pairs:
        return False
    if reply.timestamp != ts:
        return reply.timestamp > ts
    v = reply.pairs[0].value
    if v is None or v.type != fj.ValueType.BUFFER or len(v.data) != fj.FIFO_VALUE_SIZE:
        return False
    held = fj.fifo_value.parse(v.data)
    return (held.priority, held.key_start_date) == (line.priority, line.key_start_date)


class _Conn:
    def __init__(self, host: str, port: int, timeout: float):
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise InputError(f"cannot connect to the fastjournal daemon: {exc.strerror or exc}",
                             path=f"{SCHEME}://{host}:{port}") from None
        self.sock.settimeout(timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _need(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            self.buf += chunk
        return self.buf[:n]

    def reply(self):
        """One JR reply, framed by its flags and parsed with ``jr_reply`` (the schema)."""
        head = self._need(fj.JR_HEADER_SIZE)
        flags = int.from_bytes(head[6:8], "big")
        n = fj.JR_HEADER_SIZE + (8 if flags & fj.FLAG_TIMEOUT else 0)
        data = bool(flags & fj.FLAG_DATA)
        count = 0
        if data:
            count = int.from_bytes(self._need(n + 2)[n:n + 2], "big")
            n += 2
        wide = 2 if flags & fj.FLAG_KEY16 else 1
        n += wide + int.from_bytes(self._need(n + wide)[n:n + wide], "big")
        vw = {0: 0, 1: 1, 2: 2, 3: 4}[(flags & fj.VALUE_SIZE_MASK) >> fj.VALUE_SIZE_SHIFT]
        for _ in range(count if data else 0):
            n += wide + int.from_bytes(self._need(n + wide)[n:n + wide], "big")
            if vw:
                n += vw + int.from_bytes(self._need(n + vw)[n:n + vw], "big")
        msg = self._need(n)
        self.buf = self.buf[n:]
        return fj.jr_reply.parse(msg)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _lines_of(journal: ListJournal, hf: HourFile) -> list[tuple[Line, list[Finding]]]:
    """The lines of one hour file read as upstream's reader reads it, each with the findings about it."""
    out: list[tuple[Line, list[Finding]]] = []
    for ev in ListReader(journal, with_discovery=False).file_events(hf):
        if ev.__class__ is Line:
            out.append((ev, []))
        elif out and ev.record_index == out[-1][0].index:
            out[-1][1].append(ev)
    return out


def forward(journal: ListJournal, target: str, *, dry_run: bool = False,
            progress: Callable[[str], None] | None = None, timeout: float = TIMEOUT_S,
            hook: Callable[[str, Line], None] | None = None) -> SendReport:
    """Send every pending line of ``journal`` to the daemon at ``target`` (see the module docstring).
    ``hook(when, line)`` observes "sent" / "acked" (before the blanking) / "blanked" — the tests kill the process
    there."""
    host, port = parse_target(target)
    rep = SendReport(target, dry_run=dry_run)
    conn = None if dry_run else _Conn(host, port, timeout)
    ident = 0
    try:
        for hf0 in journal.files:
            name = os.path.basename(hf0.path)
            try:
                fd = os.open(hf0.path, (os.O_RDONLY if dry_run else os.O_RDWR) | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise InputError(exc.strerror or str(exc), path=hf0.path) from None
            try:
                flock_fd(fd, hf0.path, timeout)              # upstream: lock, measure, unlock
                size = os.lseek(fd, 0, os.SEEK_END)
                fcntl.flock(fd, fcntl.LOCK_UN)
                hf = HourFile(hf0.path, hf0.hour, pinned_size=size)
                todo = []
                for line, findings in _lines_of(journal, hf):
                    if line.kind == "acked":
                        continue
                    where = f"{name}@0x{line.offset:x}"
                    blocking = [f for f in findings if f.severity == ERROR or f.code in BLOCKING]
                    if not line.valid or blocking:
                        why = blocking[0].code if blocking else "not sendable"
                        rep.skipped += 1
                        rep.lines.append(f"kept    {where}: {why} ({blocking[0].message if blocking else ''})"
                                         .rstrip(" ()"))
                        continue
                    if dry_run:
                        rep.sent += 1
                        rep.lines.append(f"would send {where}: priority={line.priority} "
                                         f"key_start_date={line.key_start_date} uri={_text(line.uri)}")
                        continue
                    todo.append(line)
                if dry_run:
                    continue
                for i in range(0, len(todo), WINDOW):
                    batch = []
                    probes = []
                    for line in todo[i:i + WINDOW]:       # the resume probe: what does the daemon hold already?
                        ident = (ident + 1) & 0xFFFF
                        probes.append(ident)
                        conn.send(get_request(ident, line.uri))
                    for line, want in zip(todo[i:i + WINDOW], probes):
                        r = conn.reply()
                        if r.identifier != want:
                            raise InputError(f"reply {r.identifier} does not answer request {want}", path=target)
                        if not delivered(r, line):
                            batch.append(line)
                            continue
                        acknowledge(hf.path, line.offset, line.length, fd=fd)
                        if hook is not None:
                            hook("blanked", line)
                        rep.already += 1
                        rep.lines.append(f"blanked {name}@0x{line.offset:x}: {_text(line.uri)} (already at the "
                                         f"daemon: not sent)")
                    ids = []
                    for line in batch:
                        ident = (ident + 1) & 0xFFFF
                        ids.append(ident)
                        conn.send(set_request(ident, line.uri, line.priority, line.key_start_date))
                        if hook is not None:
                            hook("sent", line)
                    for line, want in zip(batch, ids):
                        r = conn.reply()
                        where = f"{name}@0x{line.offset:x}"
                        if r.identifier != want:
                            raise InputError(f"reply {r.identifier} does not answer request {want}", path=target)
                        if r.error:
                            rep.failed += 1
                            rep.lines.append(f"refused {where}: {r.error.decode('ascii', 'replace')} (kept)")
                            continue
                        if hook is not None:
                            hook("acked", line)
                        acknowledge(hf.path, line.offset, line.length, fd=fd)
                        if hook is not None:
                            hook("blanked", line)
                        rep.sent += 1
                        rep.lines.append(f"sent    {where}: {_text(line.uri)}")
                if progress is not None and todo:
                    progress(f"send: {name}: {len(todo)} line(s) sent")
            finally:
                os.close(fd)
    except OSError as exc:      # ConnectionError, socket.timeout: what is not acknowledged stays pending
        rep.failed += 1
        rep.lines.append(f"connection to {target} lost: {exc} (unacknowledged lines are kept; run again)")
    finally:
        if conn is not None:
            conn.close()
    return rep


def _text(b: bytes | None) -> str:
    return "" if b is None else b.decode("utf-8", "backslashreplace")
