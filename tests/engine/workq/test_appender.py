"""The live appender of wqtool serve: SegmentWriter's bytes and roll-over, reopening the newest segment, fsync
points, a failed write cut back to the last whole record, and upstream's lock messages."""
from __future__ import annotations

import errno
import os

import pytest

from wqtool.engine.fsops import LogBusy
from wqtool.engine.workq import appender as appender_mod
from wqtool.engine.workq.appender import Appender, BadActiveSegment, CmdlogLocks
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.writer import SegmentWriter, simple
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

T = GoTime(63930899691, 0)


def records(n: int) -> list[bytes]:
    return [encode_record(GoTime(T.sec + i, i), encode_payload(simple(CmdType.DELETE, bytes([i]) * 16)))
            for i in range(n)]


def _close(fd: int | None) -> None:
    """A defer_roll_sync that only closes the segment left (the server's under interval, without its syncfs)."""
    if fd is not None:
        os.close(fd)


def files(d: str) -> dict[str, bytes]:
    return {p: open(os.path.join(d, p), "rb").read() for p in sorted(os.listdir(d)) if p.endswith(".log")}


def test_same_bytes_and_roll_over_as_segment_writer(tmp_path):
    recs = records(20)
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(a)
    ap = Appender(a, segment_size=200)
    ap.open()
    ap.append(recs[:7])
    ap.append(recs[7:8])
    ap.append(recs[8:])
    ap.close()
    with SegmentWriter(b, segment_size=200) as w:
        for r in recs:
            w.append_raw(r)
    assert files(a) == files(b)
    assert len(files(a)) == 4 and ap.rolls == 4


def test_reopens_the_newest_segment_and_appends(tmp_path):
    d = str(tmp_path)
    recs = records(6)
    ap = Appender(d, segment_size=10_000)
    ap.open()
    ap.append(recs[:3])
    ap.close()
    ap = Appender(d, segment_size=10_000)
    ap.open()
    assert ap.seq == 1 and ap.size == 8 + 3 * 37
    ap.append(recs[3:])
    ap.close()
    assert files(d) == {"000000001.log": b"wqwq\x00\x00\x00\x01" + b"".join(recs)}


def test_a_full_newest_segment_rolls_before_the_next_append(tmp_path):
    d = str(tmp_path)
    ap = Appender(d, segment_size=40)
    ap.open()
    ap.append(records(1))
    ap.close()
    ap = Appender(d, segment_size=40)
    ap.open()
    ap.append(records(1))
    ap.close()
    assert sorted(files(d)) == ["000000001.log", "000000002.log"]


def test_refuses_a_newest_segment_with_a_foreign_header(tmp_path):
    open(tmp_path / "000000003.log", "wb").write(b"workqbadheader\n")
    ap = Appender(str(tmp_path))
    with pytest.raises(BadActiveSegment):
        ap.open()


def test_a_failed_write_leaves_no_partial_record(tmp_path, monkeypatch):
    d = str(tmp_path)
    ap = Appender(d)
    ap.open()
    ap.append(records(2))
    real = os.write

    def half_then_enospc(fd, data):
        real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(appender_mod.os, "write", half_then_enospc)
    with pytest.raises(OSError):
        ap.append(records(3)[2:])
    monkeypatch.setattr(appender_mod.os, "write", real)
    assert os.path.getsize(os.path.join(d, "000000001.log")) == 8 + 2 * 37
    ap.append(records(3)[2:])                   # the retry appends whole records after whole records
    ap.close()
    assert files(d)["000000001.log"] == b"wqwq\x00\x00\x00\x01" + b"".join(records(3))


def test_a_failure_after_a_roll_over_says_how_many_records_were_written(tmp_path, monkeypatch):
    """A call that rolls over writes its first run to the old segment; when the next run fails, the error tells how
    many records are in the log already (``records_done``), so a retry writes only the rest: no duplicates."""
    d = str(tmp_path)
    ap = Appender(d, segment_size=8 + 3 * 37)        # three 37-byte records per segment
    ap.open()
    recs = records(5)
    ap.append(recs[:2])
    real = appender_mod.os.write
    calls = {"n": 0}

    def second_run_fails(fd, data):
        calls["n"] += 1
        if calls["n"] == 2:                          # the new segment's header and first run, after segment 1's run
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(appender_mod.os, "write", second_run_fails)
    with pytest.raises(OSError) as err:
        ap.append(recs[2:])
    monkeypatch.setattr(appender_mod.os, "write", real)
    assert err.value.records_done == 1               # recs[2] filled segment 1; recs[3:] failed in segment 2
    assert sorted(files(d)) == ["000000001.log"]      # the segment whose first write failed is gone again
    ap.append(recs[2 + err.value.records_done:])    # the retry the server makes
    ap.close()
    got = files(d)
    assert got["000000001.log"] == b"wqwq\x00\x00\x00\x01" + b"".join(recs[:3])
    assert got["000000002.log"] == b"wqwq\x00\x00\x00\x01" + b"".join(recs[3:])


def three_rolls(d: str, monkeypatch) -> tuple[list[bytes], list[bytes]]:
    """Three one-record segments (``-cmdlog-seg-size 15``): (the records, every write(2)'s bytes)."""
    real = appender_mod.os.write
    writes = []

    def counted(fd, data):
        writes.append(bytes(data))
        return real(fd, data)

    monkeypatch.setattr(appender_mod.os, "write", counted)
    ap = Appender(d, segment_size=15, defer_roll_sync=_close)
    recs = records(3)
    for r in recs:
        ap.append([r])
    ap.close(sync=False)
    return recs, writes


def test_a_new_segment_has_its_header_before_its_name_appears(tmp_path, monkeypatch):
    """A roll-over makes the segment whole before naming it (``create_whole``: O_TMPFILE, the header, linkat), then
    writes the records: at the link the file already holds its 8-byte header, and each run of records is one
    write(2) into the named segment. The bytes are SegmentWriter's."""
    d = str(tmp_path)
    real_link = appender_mod.os.link
    at_link = []

    def link(src, dst, **kw):
        at_link.append((dst, os.fstat(int(src.rsplit("/", 1)[1])).st_size))
        return real_link(src, dst, **kw)

    monkeypatch.setattr(appender_mod.os, "link", link)
    recs, writes = three_rolls(d, monkeypatch)
    assert at_link == [(f"00000000{k}.log", 8) for k in (1, 2, 3)]
    assert writes == [w for r in recs for w in (b"wqwq\x00\x00\x00\x01", r)]
    assert list(files(d).values()) == [b"wqwq\x00\x00\x00\x01" + r for r in recs]


def test_without_o_tmpfile_the_header_goes_out_with_the_first_run(tmp_path, monkeypatch):
    """Where the filesystem has no O_TMPFILE the segment is created empty and its header goes out with its first
    records, in one write(2) (upstream writes it at once, in a call of its own)."""
    d = str(tmp_path)
    monkeypatch.setattr(appender_mod, "_TMPFILE", False)
    recs, writes = three_rolls(d, monkeypatch)
    assert writes == [b"wqwq\x00\x00\x00\x01" + r for r in recs]
    assert list(files(d).values()) == writes


def test_a_failed_first_write_into_a_new_segment_leaves_no_empty_segment(tmp_path, monkeypatch):
    """A 0-byte newest segment is a torn tail that workq-server refuses to start on: when the first write into a
    segment fails (a short write, then ENOSPC), the segment is removed again and the retry creates it whole."""
    d = str(tmp_path)
    ap = Appender(d, segment_size=15, defer_roll_sync=_close)
    recs = records(2)
    ap.append(recs[:1])
    real = appender_mod.os.write

    def short_then_enospc(fd, data):
        real(fd, bytes(data[:3]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(appender_mod.os, "write", short_then_enospc)
    with pytest.raises(OSError) as err:
        ap.append(recs[1:])
    assert err.value.records_done == 0
    assert sorted(files(d)) == ["000000001.log"]
    assert (ap.seq, ap.fd, ap.rolls) == (1, None, 1)
    monkeypatch.setattr(appender_mod.os, "write", real)
    ap.append(recs[1:])
    ap.close(sync=False)
    assert files(d) == {"000000001.log": b"wqwq\x00\x00\x00\x01" + recs[0],
                        "000000002.log": b"wqwq\x00\x00\x00\x01" + recs[1]}


def test_locks_as_upstream(tmp_path):
    d = str(tmp_path)
    first = CmdlogLocks(d, timeout=0.2)
    first.lock_append()
    first.lock_read_shared()
    other = CmdlogLocks(d, timeout=0.2)
    other.lock_read_shared()                    # readers share read.lock
    with pytest.raises(LogBusy, match=r"Timeout waiting for cmdlog lock \(appender\)"):
        other.lock_append()
    first.release()
    other.lock_append()
    other.release()


def test_a_deferred_roll_over_sync_gets_the_old_segment_then_the_directory(tmp_path, monkeypatch):
    """defer_roll_sync (the server under interval / os): a roll-over fsyncs nothing itself; the callable takes the
    old segment's descriptor over, then is told (None) once the new segment exists — in that order."""
    d = str(tmp_path)
    calls = []
    synced = []
    monkeypatch.setattr(appender_mod.os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(appender_mod, "fsync_dir", lambda path: synced.append(path))

    def defer(fd):
        calls.append(None if fd is None else os.fstat(fd).st_size)
        if fd is not None:
            os.close(fd)
    ap = Appender(d, segment_size=15, defer_roll_sync=defer)
    ap.append(records(3))                         # one segment per record
    assert synced == []                           # nothing fsynced by the appender itself
    first = len(records(1)[0]) + 8
    assert calls == [None, first, None, first, None]   # the first segment: the directory only
    ap.close(sync=False)
    assert sorted(files(d)) == ["000000001.log", "000000002.log", "000000003.log"]


def test_syncfs_flushes_or_raises(tmp_path):
    fd = os.open(str(tmp_path), os.O_RDONLY)
    try:
        appender_mod.syncfs(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        appender_mod.syncfs(fd)                   # closed: EBADF, not a silent success


def test_no_empty_segment_is_on_disk_while_the_roll_over_syncs_the_directory(tmp_path, monkeypatch):
    """A kill during a roll-over's directory fsync must not leave a 0-byte newest segment (workq-server, and so
    serve, refuse to start on one: "invalid segment header: EOF"): the new segment's header and first records are
    written before the directory is synced, so every file the fsync could make durable has its header."""
    d = str(tmp_path)
    seen = []

    def fsync_dir(directory):
        seen.append({n: os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory)
                     if n.endswith(".log")})
    monkeypatch.setattr(appender_mod, "fsync_dir", fsync_dir)
    ap = Appender(d, segment_size=200)
    ap.open()
    for r in records(20):
        ap.append([r])
    ap.close()
    assert len(seen) == ap.rolls == 4
    assert all(size > 0 for sizes in seen for size in sizes.values()), seen
