"""What ``wqtool serve`` syncs and when, counted by strace on the real process (one-record segments,
``-cmdlog-seg-size 15``, as upstream's TestCmdLog/1K):

* ``-cmdlog-sync interval``: as workq-server, each tick fsyncs the current segment only, and a segment left by a
  roll-over is closed without a sync (int/captain/appender.go:94-111, 162-172); the stop syncs what rolled;
* ``-cmdlog-sync interval --sync-rolled``: segments left by roll-overs are synced by the next tick's one syncfs(2)
  — the sync calls are bounded by the ticks, not by the segments (before: an fsync of each segment and of the
  directory, 756 fsyncs and 131 syncfs for 1,000 adds); every record written is covered by a later sync call;
* ``-cmdlog-sync always``: before each reply, the segment holding its record is fsynced, and the directory after
  the segment's creation (upstream: int/captain/appender.go:139,188-191 fsyncs the segment, never the directory).

The kill -9 tests (test_durability.py) show that nothing acknowledged is lost when the process dies; these show
what the promises against an OS crash rest on.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import time

import pytest

from tests.server.conftest import ServerProc, jid, poll
from tests.server.conftest import Client
from tests.server.test_early import _serve, _stderr_until
from tests.server.test_prebind import _connect_when_bound, _free_port

STRACE = shutil.which("strace")
pytestmark = [pytest.mark.skipif(STRACE is None, reason="strace is not installed (.ci/run installs it)"),
              pytest.mark.slow]

# pid, timestamp, syscall, first argument (strace -y: the descriptor's path in <...>), the rest
LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(\w+)\((\d+)<([^>]*)>(.*)$")
# a segment created: pid, timestamp, the descriptor's path (reported as the call's result) — opened with O_CREAT,
# or (appender.create_whole: an unnamed file with its header, linked as the segment) opened again by its new name
CREATE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+openat\(.*(?:O_CREAT|O_WRONLY\|O_APPEND).*\)\s+=\s+\d+<([^>]*)>$")
SYNCS = ("fsync", "fdatasync", "syncfs")


UNFINISHED = " <unfinished ...>"
RESUMED = re.compile(r"^(\d+)\s+\d+\.\d+\s+<\.\.\. \w+ resumed>(.*)$")


def joined(lines):
    """strace -f's lines with every call whole: a call another task's call interrupted is printed as
    ``... <unfinished ...>`` and later ``<... NAME resumed> ...``; the two halves are put back together (with the
    first half's time, where the second half was: the call had returned by then). The server's other tasks (the import thread at start, the idle spinner) make such
    splits, and a split segment creation was not counted."""
    pending: dict[str, str] = {}
    for line in lines:
        line = line.rstrip("\n")
        if line.endswith(UNFINISHED):
            pending[line.split(None, 1)[0]] = line[:-len(UNFINISHED)]
            continue
        m = RESUMED.match(line)
        if m and m[1] in pending:
            yield pending.pop(m[1]) + m[2]
            continue
        yield line
    yield from pending.values()


def traced(tmp_path, sync: str, n: int, *extra: str, seconds: float = 0.0) -> tuple[list[tuple], str]:
    """``n`` adds (or as many as ``seconds`` allow) on one connection to a server under strace; the trace's calls
    (pid, t, name, fd path, rest) and the log directory."""
    d = str(tmp_path / "log")
    trace = str(tmp_path / "trace")
    s = ServerProc("-cmdlog-path", d, "-cmdlog-seg-size", "15", "-cmdlog-sync", sync, *extra,
                   prefix=(STRACE, "-f", "-qq", "-y", "-ttt", "-o", trace, "-e",
                           "trace=fsync,fdatasync,syncfs,write,openat,fcntl"), timeout=60)
    server = None
    try:
        with open(f"/proc/{s.p.pid}/task/{s.p.pid}/children") as f:
            (server,) = map(int, f.read().split())          # strace's child: the server
        c = s.client(timeout=30)
        if seconds:     # the timed traffic starts once the ticks are armed: the asyncio loop took over (early.py)
            assert _stderr_until(s.p, bytearray(), b"msg=listening", 120), "no listening line"
        until = time.monotonic() + seconds
        for k in range(n):
            c.add(jid(0xe000 + k), b"sc", 60_000, 3_600_000, b"x")
            if seconds and time.monotonic() > until:
                break
        c.close()
        os.kill(server, signal.SIGTERM)                     # (strace itself would detach, not pass it on)
        s.p.wait(60)
    finally:
        if s.p.poll() is None and server is not None:       # a killed strace would leave its tracee running
            try:
                os.kill(server, signal.SIGKILL)
            except ProcessLookupError:
                pass
        s.kill()
    assert s.p.returncode == 0, s.stderr_text()             # strace exits with its tracee's status
    return parse(trace), d


def parse(trace: str) -> list[tuple]:
    """The calls of a trace file (pid, t, name, fd path, rest; "create" for a file created)."""
    calls = []
    with open(trace) as f:
        for line in joined(f):
            m = CREATE.match(line.rstrip("\n"))
            if m:
                calls.append((int(m[1]), float(m[2]), "create", m[3], ""))
                continue
            m = LINE.match(line)
            if m:
                calls.append((int(m[1]), float(m[2]), m[3], m[5], m[6]))
    # the header written into the unnamed file before its link ("DIR/#INODE"): the segment's, which the segment's
    # own fsync covers (one inode)
    calls = [c for c in calls if not (c[2] == "write" and "/#" in c[3])]
    return calls


def segments(d: str) -> list[str]:
    return sorted(os.path.join(d, x) for x in os.listdir(d) if x.endswith(".log"))


def test_interval_fsyncs_only_the_current_segment_as_upstream(tmp_path):
    tick = 0.25
    calls, d = traced(tmp_path, "interval", 100_000, "-cmdlog-sync-int", str(int(tick * 1000)), seconds=1.5)
    segs = segments(d)
    assert len(segs) >= 50                                  # one segment per record, several per tick
    created = [c for c in calls if c[2] == "create" and c[3].startswith(d + os.sep) and c[3].endswith(".log")]
    syncs = [c for c in calls if c[2] in SYNCS]
    last_write = max(c[1] for c in calls if c[2] == "write" and c[3].startswith(d + os.sep))
    during = [c for c in syncs if c[1] < last_write]
    assert len(during) >= 3 and {c[2] for c in during} == {"fsync"}, [c[2:4] for c in during]
    dups = [c for c in calls if c[2] == "fcntl" and "F_DUPFD" in c[4] and c[3].startswith(d + os.sep)]
    for c in during:    # each fsyncs the descriptor the tick duplicated from the then current segment: never a rolled one
        dup = max((x for x in dups if x[1] <= c[1] and x[3] == c[3]), key=lambda x: x[1])
        current = max((x for x in created if x[1] < dup[1]), key=lambda x: x[1])[3]
        assert c[3] == current, (c, dup, current)
    # the stop: the current segment's fsync, then one syncfs for what rolled
    assert [c[2] for c in syncs if c[1] > last_write][-2:] == ["fsync", "syncfs"], [c[2:4] for c in syncs[-4:]]


def test_interval_with_sync_rolled_syncs_rolled_segments_once_per_tick(tmp_path):
    tick = 0.25
    calls, d = traced(tmp_path, "interval", 100_000, "-cmdlog-sync-int", str(int(tick * 1000)), "--sync-rolled",
                      seconds=1.5)
    segs = segments(d)
    assert len(segs) >= 50                                  # one segment per record, several per tick
    syncs = [c for c in calls if c[2] in SYNCS]
    writes = [c for c in calls if c[2] == "write" and c[3].startswith(d + os.sep)]
    assert len(writes) == len(segs)                         # one write per segment: its header and its record
    span = max(c[1] for c in calls) - writes[0][1]
    # at most one call per tick from the first write to the end, and the stop's fsync + syncfs
    assert len(syncs) <= span / tick + 1 + 2, (len(syncs), len(segs), span, [c[2:4] for c in syncs])
    assert [c[2] for c in syncs].count("syncfs") >= 3       # ticks during the traffic synced rolled segments
    # every record written is covered by a later sync call — a syncfs, or an fsync of its own segment — started
    # within a tick (and some scheduling slack: the process is traced)
    for w in writes:
        t = min((c[1] for c in syncs if c[1] > w[1] and (c[2] == "syncfs" or c[3] == w[3])), default=None)
        assert t is not None and t - w[1] < tick + 2.0, (w, t)


def test_interval_ticks_while_the_early_loop_serves(tmp_path):
    """A start slow enough to outlast a tick (here the hand-over held by ``WQTOOL_SERVE_EARLY_HOLD``; a loaded
    machine or strace do it too) syncs at each tick all the same: the early loop's tick fsyncs the current segment
    inline (``Server._early_sync``). Before, nothing was synced until the asyncio loop took over."""
    d = str(tmp_path / "log")
    trace = str(tmp_path / "trace")
    hold = tmp_path / "hold"
    hold.write_bytes(b"")
    port = _free_port()
    p = _serve(port, d, {"WQTOOL_SERVE_EARLY_HOLD": str(hold)}, "-cmdlog-sync", "interval",
               "-cmdlog-sync-int", "200", launcher=(STRACE, "-f", "-qq", "-y", "-ttt", "-o", trace, "-e", "trace=fsync,fdatasync,write",
                         sys.executable, "-m", "wqtool"))
    server = None
    try:
        _connect_when_bound(port, p, 60).close()
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            (server,) = map(int, f.read().split())          # strace's child: the server
        c = Client(("127.0.0.1", port), timeout=30)
        for k in range(5):
            c.add(jid(0xf000 + k), b"early", 60_000, 3_600_000, b"x")

        def synced_after_the_writes() -> bool:
            calls = [x for x in parse(trace) if x[3].startswith(d + os.sep)]
            writes = [x[1] for x in calls if x[2] == "write"]
            return len(writes) >= 5 and any(x[2] in SYNCS and x[1] > max(writes) for x in calls)
        assert poll(synced_after_the_writes, timeout=30, step=0.05), "no tick synced the early loop's records"
        # and it was the early loop's: the asyncio loop has not taken over ("listening" is its line)
        assert not _stderr_until(p, bytearray(), b"msg=listening", 0.1)
        c.close()
    finally:
        hold.unlink()
        if server is not None:
            os.kill(server, signal.SIGTERM)                 # (strace itself would detach, not pass it on)
        try:
            p.wait(60)
        finally:
            if p.poll() is None:
                if server is not None:
                    os.kill(server, signal.SIGKILL)
                p.kill()
    assert p.returncode == 0, p.stderr.read().decode()


def test_always_syncs_each_record_and_its_segment_before_the_reply(tmp_path):
    n = 40
    calls, d = traced(tmp_path, "always", n)
    assert len(segments(d)) == n
    unsynced: set[str] = set()          # segments written to since their last fsync
    new: set[str] = set()               # segments created since the directory's last fsync
    replies = created = 0
    for _pid, _t, name, path, rest in calls:
        if name == "create" and path.startswith(d + os.sep) and path.endswith(".log"):
            new.add(path)
            created += 1
        elif name == "write" and path.startswith(d + os.sep):
            unsynced.add(path)
        elif name in ("fsync", "fdatasync"):
            if path == d:
                new.clear()
            unsynced.discard(path)
        elif name == "syncfs":
            unsynced.clear()
            new.clear()
        elif name == "write" and path.startswith("socket:") and rest.startswith(', "+OK\\r\\n"'):
            assert not unsynced and not new, (replies, unsynced, new)
            replies += 1
    assert (replies, created) == (n, n)
