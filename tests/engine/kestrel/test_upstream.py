"""Kestrel's own test-suite expectations (spec §13.3) and the rewrite outputs (§10.2, §13.2)."""
from __future__ import annotations

import os

from wqtool.engine.kestrel.model import Record
from wqtool.engine.kestrel.pack import pack_plan
from wqtool.engine.kestrel.reader import JournalReader
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.kestrel.writer import JournalWriter, rewrite_records
from wqtool.engine.kestrel.fastpath import decode_op
from wqtool.engine.kestrel.replay import Item, KestrelState
from wqtool.engine.findings import Verdict
from wqtool.formats.kestrel import Opcode

from .conftest import AS_OF_NS, T, T_BYTES, ZERO8, dir_snapshot, one_set, write_journal


def dump_journal(path: str) -> list[str]:
    """Kestrel's test DumpJournal: add(len:xid[:text]), remove, remove-tentative(x), xid(x), unremove(x), ..."""
    raw = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(raw):
        o, pos = decode_op(raw, pos, len(raw))
        if o.data is not None:
            text = o.data.decode("latin-1")
            out.append(f"add({len(o.data)}:{o.xid or 0}" + (f":{text})" if text else ")"))
        elif o.op == Opcode.REMOVE:
            out.append("remove")
        elif o.op in (Opcode.REMOVE_TENTATIVE, Opcode.REMOVE_TENTATIVE_XID):
            out.append(f"remove-tentative({o.xid or 0})")
        elif o.op == Opcode.SAVE_XID:
            out.append(f"xid({o.xid})")
        elif o.op == Opcode.UNREMOVE:
            out.append(f"unremove({o.xid})")
        elif o.op == Opcode.CONFIRM_REMOVE:
            out.append(f"confirm-remove({o.xid})")
    return out


def queue_data(report) -> list[bytes]:
    return [it.data for _, _, it in report.state.sorted_items()]


def test_walk_sizes(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: [w.add(b"x" * n, T) for n in (32, 64, 10)])
    recs = [e for e in JournalReader(one_set(qdir)).events() if isinstance(e, Record)]
    assert [len(r.data) for r in recs] == [32, 64, 10]
    assert os.path.getsize(p) == 3 * 21 + 106


def test_recover_from_corruption(qdir):
    """One 32-byte ADDX + byte 0x7F: Kestrel throws BrokenItemException; for us a torn tail at 0x20 (live file)."""
    p = write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"hello kitty", T), w.raw(b"\x7f")))
    r = run_log(one_set(qdir), AS_OF_NS)
    assert r.verdict == Verdict.TORN_TAIL
    f = [f for f in r.findings if f.code == "KQ-BAD-OPCODE"][0]
    assert (f.offset, f.last_good_offset, f.path) == (32, 32, p)
    assert "invalid opcode in journal: 127 at position 32" in f.message
    assert r.last_good == (p, 32)
    assert queue_data(r) == [b"hello kitty"]


def test_report_file_sizes(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: w.add(b"", T))
    assert os.path.getsize(p) == 21


def test_pack_old_files_lengths(qdir):
    write_journal(os.path.join(qdir, "q.1"), lambda w: w.add(b"", T))
    write_journal(os.path.join(qdir, "q.2"), lambda w: w.add(b"", T))
    write_journal(os.path.join(qdir, "q"), lambda w: None)
    fs = one_set(qdir)
    assert [os.path.getsize(f.path) for f in fs.files] == [21, 21, 0]
    r = run_log(fs, AS_OF_NS)
    assert r.verdict == Verdict.CLEAN and queue_data(r) == [b"", b""]


def test_add_and_remove_one_item(qdir):
    p = os.path.join(qdir, "q")
    with JournalWriter(p) as w:
        w.add(b"hello kitty", T)
        w.flush()
        assert os.path.getsize(p) == 32
        w.remove()
    assert os.path.getsize(p) == 33
    assert dump_journal(p) == ["add(11:0:hello kitty)", "remove"]
    assert queue_data(run_log(one_set(qdir), AS_OF_NS)) == []


def test_flush_all_items(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: ([w.add(x, T) for x in (b"alpha", b"beta", b"gamma")],
                                                          [w.remove() for _ in range(3)]))
    assert dump_journal(p) == ["add(5:0:alpha)", "add(4:0:beta)", "add(5:0:gamma)", "remove", "remove", "remove"]


def test_recover_after_restart_size(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"first", T), w.add(b"second", T), w.remove()))
    assert os.path.getsize(p) == 5 + 6 + 16 + 16 + 5 + 5 + 1 == 54
    assert queue_data(run_log(one_set(qdir), AS_OF_NS)) == [b"second"]


def test_recover_a_journal_with_a_rewritten_transaction(qdir):
    """add zero, first, second; RT zero (1) + confirm; RT first (2); rewrite; confirm 2; restart; remove."""
    p = write_journal(os.path.join(qdir, "q"), lambda w: (
        w.add(b"zero", T), w.add(b"first", T), w.add(b"second", T), w.remove_tentative(1), w.confirm_remove(1),
        w.remove_tentative(2)))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    plan.apply(now_ms=5000)
    assert sorted(os.listdir(qdir)) == ["q"]
    assert dump_journal(p) == ["add(5:0:first)", "remove-tentative(2)", "add(6:0:second)"]
    with JournalWriter(p, mode="ab") as w:
        w.confirm_remove(2)
        w.remove()
    assert dump_journal(p) == ["add(5:0:first)", "remove-tentative(2)", "add(6:0:second)", "confirm-remove(2)",
                               "remove"]
    assert queue_data(run_log(one_set(qdir), AS_OF_NS)) == []


def test_rewrite_empty_queue_with_open_transactions(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: (
        w.add(b"first", T), w.add(b"second", T), w.remove_tentative(1), w.confirm_remove(1), w.remove_tentative(2)))
    pack_plan(one_set(qdir), AS_OF_NS).apply(now_ms=5000)
    assert dump_journal(p) == ["add(6:0:second)", "remove-tentative(2)"]
    r = run_log(one_set(qdir), AS_OF_NS)          # restart: backed out
    assert queue_data(r) == [b"second"] and r.state.backed_out == 1
    assert r.counts["KQ-OPEN-BACKED-OUT"] == 1


def test_rewrite_empty_queue_on_graceful_shutdown(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"first", T), w.add(b"second", T), w.remove(),
                                                       w.remove()))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    assert plan.bytes_after == 0 and plan.records_after == 0 and plan.records_dropped == 4
    plan.apply(now_ms=5000)
    assert os.path.getsize(os.path.join(qdir, "q")) == 0


def test_correctly_interleave_transactions(qdir):
    p = write_journal(os.path.join(qdir, "things"), lambda w: (
        w.add(b"house", T), w.add(b"cat", T), w.remove_tentative(1), w.remove_tentative(2), w.unremove(1),
        w.confirm_remove(2), w.remove()))
    assert dump_journal(p) == ["add(5:0:house)", "add(3:0:cat)", "remove-tentative(1)", "remove-tentative(2)",
                               "unremove(1)", "confirm-remove(2)", "remove"]
    assert open(p, "rb").read() == bytes.fromhex(
        "02 15 00 00 00" + T_BYTES.hex() + ZERO8.hex() + "68 6f 75 73 65 02 13 00 00 00" + T_BYTES.hex()
        + ZERO8.hex() + "63 61 74 09 01 00 00 00 09 02 00 00 00 05 01 00 00 00 06 02 00 00 00 01")
    r = run_log(one_set(qdir), AS_OF_NS)
    assert queue_data(r) == [] and r.verdict == Verdict.CLEAN


def test_recover_a_journal_with_open_transactions(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (
        [w.add(x, T) for x in (b"one", b"two", b"three", b"four", b"five")],
        [w.remove_tentative(x) for x in (1, 2, 3, 4)], w.confirm_remove(2), w.confirm_remove(4)))
    r = run_log(one_set(qdir), AS_OF_NS)
    assert queue_data(r) == [b"one", b"three", b"five"] and r.state.open == {}
    r = run_log(one_set(qdir), AS_OF_NS, keep_open=True)
    assert [(s, x, i.data) for s, x, i in r.state.sorted_items()] == [
        ("open", 1, b"one"), ("open", 3, b"three"), ("queued", None, b"five")]


def test_continue_a_queue_item(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"one", T), w.remove_tentative(1),
                                                       w.continue_(1, b"two", T)))
    r = run_log(one_set(qdir), AS_OF_NS)
    assert queue_data(r) == [b"two"] and r.counts.get("KQ-UNKNOWN-XID", 0) == 0


def test_recreate_journal_when_too_big_size(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: ([w.add(b"x" * 512, T) for _ in range(6)],
                                                           [w.remove() for _ in range(4)]))
    assert os.path.getsize(p) == 512 * 6 + 6 * 21 + 4


def _spec_rewrite_bytes(order) -> bytes:
    parts = []
    for letter, xid in order:
        parts.append(bytes.fromhex("02 11 00 00 00") + T_BYTES + ZERO8 + letter)
        parts.append(bytes.fromhex("09") + xid.to_bytes(4, "little"))
    for letter in (b"D", b"E", b"F"):
        parts.append(bytes.fromhex("02 11 00 00 00") + T_BYTES + ZERO8 + letter)
    return b"".join(parts)


def test_rewrite_output_147_bytes(qdir):
    """rewrite([A/6, B/7, C/8], [D, E, F]): a server writes open transactions by descending xid."""
    st = KestrelState(AS_OF_NS, [Item(T, 0, x) for x in (b"D", b"E", b"F")],
                      {6: Item(T, 0, b"A"), 7: Item(T, 0, b"B"), 8: Item(T, 0, b"C")}, keep_open=True)
    out = b"".join(rewrite_records(st))
    assert len(out) == 147
    assert out == _spec_rewrite_bytes([(b"C", 8), (b"B", 7), (b"A", 6)])
    # the order the JournalSpec test passes (A, B, C) is 147 bytes too and replays to the same state
    spec = _spec_rewrite_bytes([(b"A", 6), (b"B", 7), (b"C", 8)])
    for name, blob in (("a", out), ("b", spec)):
        d = os.path.join(qdir, name)
        write_journal(os.path.join(d, "q"), lambda w: w.raw(blob))
        r = run_log(one_set(d), AS_OF_NS, keep_open=True)
        assert [(s, x, i.data) for s, x, i in r.state.sorted_items()] == [
            ("open", 6, b"A"), ("open", 7, b"B"), ("open", 8, b"C"),
            ("queued", None, b"D"), ("queued", None, b"E"), ("queued", None, b"F")]
    assert run_log(one_set(os.path.join(qdir, "a")), AS_OF_NS).state.xid_counter == 6


def test_half_finished_pack_file_set(qdir):
    """test.50, test.100, test.100.pack, test.3000, test -> test.100 (the pack), test.3000, test; test.50 deleted
    — virtually: the directory is untouched."""
    for name in ("test.50", "test.100", "test.100.pack", "test.3000", "test"):
        write_journal(os.path.join(qdir, name), lambda w, n=name: w.add(n.encode(), T))
    before = dir_snapshot(qdir)
    fs = one_set(qdir)
    assert [os.path.basename(f.path) for f in fs.files] == ["test.100.pack", "test.3000", "test"]
    assert [f.role for f in fs.files] == ["pack", "rotated", "live"]
    assert sorted(os.path.basename(p) for p in fs.superseded) == ["test.100", "test.50"]
    half = [f for f in fs.findings if f.code == "KQ-HALF-PACK"]
    assert len(half) == 1 and "deletes test.50, test.100 and renames test.100.pack to test.100" in half[0].message
    r = run_log(fs, AS_OF_NS)
    assert queue_data(r) == [b"test.100.pack", b"test.3000", b"test"]
    assert r.verdict == Verdict.CLEAN
    assert dir_snapshot(qdir) == before


def test_identify_valid_journal_files(qdir):
    for name in ("test.50", "test.3000", "test.100", "test"):
        write_journal(os.path.join(qdir, name), lambda w: None)
    assert [os.path.basename(f.path) for f in one_set(qdir).files] == ["test.50", "test.100", "test.3000", "test"]
    os.unlink(os.path.join(qdir, "test"))
    fs = one_set(qdir)
    assert [os.path.basename(f.path) for f in fs.files] == ["test.50", "test.100", "test.3000"]
    assert [f.code for f in fs.findings] == ["KQ-NO-LIVE"]
