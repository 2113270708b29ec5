"""pack --apply on a Kestrel queue that a process is writing: never a lost record.

Kestrel has no lock files: its writer keeps the live journal open and appends. A pack that renamed and deleted
files under such a writer lost every record appended during the pack (the writer's descriptor follows the renamed,
then deleted, file). Now apply refuses while another process holds a file of the queue open (``/proc/*/fd``),
and rolls back when the live file changes — or a new one appears — at any point up to the deletion of the old
files; bytes a writer squeezes in after the last check are moved into the new live file. These tests run real
appender processes against the CLI and count every record they wrote.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import cli
from wqtool.engine.kestrel.pack import pack_plan
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.kestrel.writer import JournalWriter
from wqtool.engine.findings import Verdict
from wqtool.engine.fsops import LogBusy

from .conftest import AS_OF_NS, T, one_set, write_journal

#: An appender: writes ADDX records "item-<n>" with one write() each, until SIGTERM; then prints n.
APPENDER = r"""
import os, signal, sys, time
sys.path.insert(0, {root!r})
from wqtool.engine.kestrel.fastpath import encode_addx
path, mode, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
n = start
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if mode == "hold" else None
print("ready", flush=True)
while not stop:
    rec = encode_addx(b"item-%d" % n, {t})
    if mode == "hold":
        os.write(fd, rec)
    else:
        f = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(f, rec)
        os.close(f)
    n += 1
    time.sleep(0.0005)
print(n, flush=True)
"""


def _start(qdir: str, mode: str, start: int) -> subprocess.Popen:
    from tests.conftest import ROOT
    p = subprocess.Popen([sys.executable, "-c", APPENDER.format(root=ROOT, t=T), os.path.join(qdir, "q"), mode,
                          str(start)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def _stop(p: subprocess.Popen) -> int:
    p.terminate()
    out, _ = p.communicate(timeout=20)
    return int(out.strip().splitlines()[-1])


def _items(qdir: str) -> list[bytes]:
    rep = run_log(one_set(qdir, queue="q"), AS_OF_NS, keep_open=True)
    assert rep.verdict == Verdict.CLEAN, [f for f in rep.findings if f.severity == "error"][:3]
    return [it.data for it in rep.state.queue]


def _seed(qdir: str) -> None:
    """Items seed-0..seed-49 in a rotated file and the live file, 20 of them removed (so pack has work)."""
    write_journal(os.path.join(qdir, "q.100"), lambda w: [w.add(b"seed-%d" % i, T) for i in range(25)])
    write_journal(os.path.join(qdir, "q"), lambda w: ([w.add(b"seed-%d" % i, T) for i in range(25, 50)],
                                                      [w.remove() for _ in range(20)]))


def test_a_writer_holding_the_journal_open_is_refused_and_nothing_is_lost(qdir):
    _seed(qdir)
    for round_ in range(3):
        p = _start(qdir, "hold", round_ * 1_000_000)
        try:
            time.sleep(0.05)
            r = cli("pack", "--apply", "--format", "kestrel", "--as-of", str(AS_OF_NS / 1e9), qdir)
        finally:
            n = _stop(p)
        assert r.code == 5, (r.code, r.err)
        assert "must be stopped before pack --apply" in r.err and f"pid {p.pid}" in r.err, r.err
        items = _items(qdir)
        wrote = [b"item-%d" % i for i in range(round_ * 1_000_000, n)]
        assert items[-len(wrote):] == wrote and len(wrote) > 0
    assert sorted(os.listdir(qdir)) == ["q", "q.100"]     # refused: nothing renamed, nothing left behind


@pytest.mark.parametrize("attempt", range(6))
def test_a_writer_reopening_the_journal_per_record_never_loses_one(qdir, attempt):
    """An appender that opens the live file by name for every record (no descriptor to find): whatever the
    timing — refused, rolled back, or packed — every record it wrote is in the queue afterwards, in order."""
    _seed(qdir)
    before = _items(qdir)
    p = _start(qdir, "reopen", 0)
    try:
        time.sleep(0.002 * attempt)
        r = cli("pack", "--apply", "--format", "kestrel", "--as-of", str(AS_OF_NS / 1e9), qdir)
    finally:
        n = _stop(p)
    assert r.code in (0, 5), (r.code, r.err)
    if r.code == 5:
        assert "must be stopped" in r.err or "a writer" in r.err, r.err
    items = _items(qdir)
    assert items == before + [b"item-%d" % i for i in range(n)], (r.code, r.err, len(items), n)


def test_bytes_appended_after_the_last_check_move_into_the_new_live_file(qdir):
    """The one window no check can close (between the last look and the deletion of the old files): the bytes a
    writer appends there are found through our descriptor on the old live file and kept; apply fails loudly."""
    _seed(qdir)
    before = _items(qdir)
    plan = pack_plan(one_set(qdir, queue="q"), AS_OF_NS)
    from wqtool.engine.kestrel.fastpath import encode_addx
    late = encode_addx(b"late", T)
    fd = os.open(os.path.join(qdir, "q"), os.O_WRONLY | os.O_APPEND)

    def hook(when, label):
        if when == "after" and label == "check-quiet":
            os.write(fd, late)        # through a descriptor opened before the rotation: the old live file
    try:
        with pytest.raises(LogBusy, match="appended 25 bytes"):
            plan.apply(now_ms=1000, hook=hook)
    finally:
        os.close(fd)
    assert _items(qdir) == before + [b"late"]
    assert sorted(os.listdir(qdir)) == ["q"]


def test_a_live_file_grown_since_the_plan_is_refused(qdir):
    _seed(qdir)
    plan = pack_plan(one_set(qdir, queue="q"), AS_OF_NS)
    with JournalWriter(os.path.join(qdir, "q"), mode="ab") as w:
        w.add(b"after the plan", T)
    with pytest.raises(Exception, match="changed since the plan"):
        plan.apply(now_ms=1000)
    assert _items(qdir)[-1] == b"after the plan"
