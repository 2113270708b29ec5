"""The qdump view: QDumper's line format and summary, -d / -A / -Q, and the pack report (snapshots)."""
from __future__ import annotations

import json
import os

from wqtool.engine.kestrel.pack import pack_plan
from wqtool.engine.kestrel.qdump import QDUMP_USAGE, duration_str, qdump_text

from .conftest import AS_OF_NS, T, one_set, write_journal

NOW = T + 1000


def things(d):
    return write_journal(os.path.join(d, "things"), lambda w: (
        w.add(b"house", T), w.add(b"cat", T), w.remove_tentative(1), w.remove_tentative(2), w.unremove(1),
        w.confirm_remove(2), w.remove()))


def test_spec_example(qdir):
    p = things(qdir)
    out, err, raw = qdump_text([p], now_ms=NOW)
    assert out == (f"Queue: {p}\n"
                   "00000000  ADD 5     \n"
                   "0000001a  ADD 3     \n"
                   "00000032  RSV 1\n"
                   "00000037  RSV 2\n"
                   "0000003c  CAN 1\n"
                   "00000041  ACK 2\n"
                   "00000046  REM\n"
                   "\r" + " " * 30 + "\n"
                   "Journal size: 71 bytes, with 7 operations.\n"
                   "0 items totalling 0 bytes.\n")
    assert err == "" and raw == b""


def every_op(w):
    w.add(b"plain", T)
    w.add(b"later", T, NOW + 59_999)
    w.add(b"gone", T, NOW - 1)
    w.legacy_add(b"old", 0)
    w.add_xid(7, b"axid", T)
    w.legacy_remove_tentative()
    w.save_xid(40)
    w.remove_tentative(41)
    w.unremove(41)
    w.confirm_remove(1)
    w.continue_(5, b"cont", T, NOW + 3_600_000)
    w.remove()


def test_every_op_and_snapshot(qdir, snapshot):
    p = write_journal(os.path.join(qdir, "q"), every_op)
    out, err, _ = qdump_text([p], now_ms=NOW)
    lines = out.splitlines()
    assert lines[1] == "00000000  ADD 5     "
    assert lines[2].endswith("ADD 5      exp=59.seconds+999.milliseconds")
    assert lines[3].endswith("ADD 4      expired")
    assert "ADD 4      xid=7" in lines[5]
    assert lines[6].endswith("RSV 1") and lines[7].endswith("XID 40") and lines[8].endswith("RSV 41")
    assert lines[9].endswith("CAN 41") and lines[10].endswith("ACK 1")
    assert lines[11].endswith("CON 4      exp=1.hours") and "5" not in lines[11].split("CON")[1].split()[1:]
    snapshot.assert_match(out.replace(p, "<q>").replace("\r", "<CR>"), "qdump_every_op.txt")
    out_d, _, _ = qdump_text([p], now_ms=NOW, dump_contents=True)
    assert "00000000  ADD 5     \n    plain\n" in out_d
    snapshot.assert_match(out_d.replace(p, "<q>").replace("\r", "<CR>"), "qdump_every_op_d.txt")


def test_quiet_raw_and_queue_state(qdir):
    p = things(qdir)
    q = write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"one", T), w.add(b"two", T),
                                                           w.add(b"three", T), w.remove_tentative(1), w.remove()))
    out, _, _ = qdump_text([q], now_ms=NOW, quiet=True)
    assert out == "\r" + " " * 30 + "\nJournal size: 80 bytes, with 5 operations.\n2 items totalling 8 bytes.\n"
    _, _, raw = qdump_text([q], now_ms=NOW, raw=True)
    assert raw == b"onetwothree"
    out, _, _ = qdump_text([q], now_ms=NOW, queue_state=True)
    assert out.endswith("2 items totalling 8 bytes.\nthree\n")     # queued only, not the open one
    out, _, _ = qdump_text([p, q], now_ms=NOW, quiet=True)
    assert out.count("Journal size") == 2


def test_errors_and_usage(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: (w.remove(), w.unremove(3), w.add(b"x", T),
                                                           w.raw(b"\x02\x01")))
    out, err, _ = qdump_text([p], now_ms=NOW)
    assert "REM on an empty queue" in err and "CAN of unknown xid 3" in err
    assert f"Exception reading journal file: {p}\n" in err and "KQ-TRUNCATED" in err
    assert "Journal size" not in out
    out, err, _ = qdump_text([os.path.join(qdir, "missing")], now_ms=NOW)
    assert err == f"Can't open journal file: {os.path.join(qdir, 'missing')}\n"
    assert qdump_text([], now_ms=NOW)[0] == QDUMP_USAGE


def test_duration_strings():
    assert duration_str(0) == "0.seconds"
    assert duration_str(59_999 * 10**6) == "59.seconds+999.milliseconds"
    assert duration_str(90 * 60 * 10**9) == "1.hours+30.minutes"
    assert duration_str(-1500 * 10**6) == "-1.seconds-500.milliseconds"


def test_pack_report_snapshot(qdir, snapshot):
    from wqtool.exitcodes import fill
    write_journal(os.path.join(qdir, "q.100"), lambda w: ([w.add(b"i%d" % i, T) for i in range(4)], w.remove()))
    write_journal(os.path.join(qdir, "q"), lambda w: (w.remove_tentative(1), w.add(b"x", T, T + 1)))
    plan = pack_plan(one_set(qdir), AS_OF_NS, drop_expired=True)
    j = fill(plan.to_jsonable())      # the input's exit code as the edge fills it in (exitcodes.fill)
    j["root"] = "<dir>"
    j["elapsed_s"] = 0
    j["inputs"] = [{"file": os.path.basename(i["file"]), "bytes": i["bytes"]} for i in j["inputs"]]
    snapshot.assert_match(json.dumps(j, indent=2, sort_keys=True) + "\n", "pack_plan.json")
