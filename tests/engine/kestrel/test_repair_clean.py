"""repair and clean for Kestrel queues: damage cut (quarantined byte for byte) and the readable part's digest kept;
clean does what Kestrel's start-up does; both crash-safe at every step and refused while a writer holds a file."""
from __future__ import annotations

import os
import random
import shutil

import pytest

from tests.conftest import ROOT, cli
from wqtool.engine.kestrel.reader import JournalReader
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.findings import Verdict
from wqtool.engine.kestrel import clean, repair
from wqtool.engine.plan import InjectedCrash
from wqtool.errors import PackRefused

from .conftest import AS_OF_NS, T, dir_snapshot, one_set, write_journal

KF = os.path.join(ROOT, "fixtures", "kestrel")


def _copy(name: str, dst) -> str:
    shutil.copytree(os.path.join(KF, name, "queue"), dst)
    return str(dst)


def digests(d, queue=None):
    fs = one_set(d, **({"queue": queue} if queue else {}))
    rep = run_log(fs, AS_OF_NS, keep_open=True)
    return rep.verdict, rep.state.digest()


@pytest.mark.parametrize("name, verdict, flags", [("torn-tail", Verdict.TORN_TAIL, {}),
                                                  ("damage-mid-live", Verdict.CORRUPT, {"salvage": True}),
                                                  ("negative-size", Verdict.CORRUPT, {"salvage": True})])
def test_repair_every_damaged_fixture(tmp_path, name, verdict, flags):
    d = _copy(name, tmp_path / "q")
    original = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    if flags:
        with pytest.raises(PackRefused, match="--salvage repairs it"):
            repair.repair_plan(one_set(d), AS_OF_NS)
    plan = repair.repair_plan(one_set(d), AS_OF_NS, **flags)
    assert plan.input_verdict == verdict and plan.digest_before == plan.digest_expected
    res = plan.apply(now_ms=1000, fsync=False)
    assert digests(d) == (Verdict.CLEAN, plan.digest_expected)
    assert sorted(os.listdir(res.backup)) == sorted(original) and \
        all(open(os.path.join(res.backup, n), "rb").read() == b for n, b in original.items())
    for q in res.quarantine:
        fname, span = os.path.basename(q)[:-4].split("@")
        a, b = (int(x, 16) for x in span.split("-"))
        assert open(q, "rb").read() == original[fname][a:b]
    assert repair.repair_plan(one_set(d), AS_OF_NS).nothing_to_do


def test_bit_flips_in_a_journal_repair_to_a_clean_queue(tmp_path):
    """~300 single-bit flips of a real journal: salvage + drop-invalid repair every detected one into a queue that
    verifies clean with the plan's digest, the quarantine holding exactly the cut bytes (Kestrel has no checksum:
    a flip inside item data or a time is not detectable and leaves nothing to do)."""
    src = tmp_path / "src"
    src.mkdir()
    write_journal(str(src / "q"), lambda w: [w.add(b"item %d" % i * 3, T + i) for i in range(40)]
                  + [w.remove_tentative(1), w.confirm_remove(1), w.remove()])
    data = open(src / "q", "rb").read()
    rng = random.Random(7)
    repaired = 0
    for i in range(300):
        pos = rng.randrange(len(data))
        d = tmp_path / f"f{i}"
        d.mkdir()
        flipped = bytearray(data)
        flipped[pos] ^= 1 << rng.randrange(8)
        (d / "q").write_bytes(bytes(flipped))
        try:
            plan = repair.repair_plan(one_set(str(d)), AS_OF_NS, salvage=True, drop_invalid=True)
        except PackRefused:
            raise AssertionError(f"flip at {pos}")
        if not plan.nothing_to_do:
            res = plan.apply(now_ms=1000, fsync=False)
            _check_repaired(str(d), plan, res, bytes(flipped))
            repaired += 1
        shutil.rmtree(d)
        for n in os.listdir(tmp_path):
            if n.startswith(f"f{i}."):
                shutil.rmtree(tmp_path / n)
    assert repaired >= 25


def test_repair_crash_at_every_step(tmp_path):
    base = _copy("damage-mid-live", tmp_path / "base")
    old = digests(base)
    plan = repair.repair_plan(one_set(base), AS_OF_NS, salvage=True)
    labels = plan.apply_steps(now_ms=1000, fsync=False)
    assert labels[0] == "quarantine" and "rename-temp-to-pack" in labels and "backup" in labels
    for when in ("before", "after"):
        for label in labels:
            d = _copy("damage-mid-live", tmp_path / f"{when}-{label}".replace(":", "_"))
            p = repair.repair_plan(one_set(d), AS_OF_NS, salvage=True)
            with pytest.raises(InjectedCrash):
                p.apply(now_ms=1000, fail_at=f"{when}:{label}", fsync=False)
            assert digests(d) in (old, (Verdict.CLEAN, plan.digest_expected)), f"{when}:{label}"


def test_clean_finishes_what_kestrel_would(tmp_path):
    d = _copy("half-finished-pack", tmp_path / "q")
    fs = one_set(d)
    before = digests(d)
    plan = clean.clean_plan(fs, AS_OF_NS)
    doc = plan.report_doc()
    assert {os.path.basename(a["file"]) for a in doc["actions"] if a["action"] == "delete"} == \
        {"test~~4000", "test.50", "test.100"}
    plan.apply()
    assert sorted(os.listdir(d)) == ["test", "test.100", "test.3000"]
    assert digests(d) == before
    assert clean.clean_plan(one_set(d), AS_OF_NS).report_doc()["actions"] == []


def test_clean_crash_at_every_step(tmp_path):
    base = _copy("half-finished-pack", tmp_path / "base")
    before = digests(base)
    labels = clean.clean_plan(one_set(base), AS_OF_NS).apply_steps()
    for when in ("before", "after"):
        for label in labels:
            d = _copy("half-finished-pack", tmp_path / f"{when}-{label}".replace(":", "_").replace("~", "T"))
            with pytest.raises(InjectedCrash):
                clean.clean_plan(one_set(d), AS_OF_NS).apply(fail_at=f"{when}:{label}")
            assert digests(d) == before, f"{when}:{label}"


def test_clean_and_repair_refuse_a_live_writer(tmp_path):
    d = _copy("half-finished-pack", tmp_path / "q")
    snap = dir_snapshot(d)
    fd = os.open(os.path.join(d, "test"), os.O_RDONLY)
    import subprocess
    import sys
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); "
                               "print('ok', flush=True); time.sleep(30)", os.path.join(d, "test")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        r = cli("clean", "--apply", d)
        assert r.code == 5 and "must be stopped before clean --apply" in r.err and f"pid {holder.pid}" in r.err
        r = cli("repair", "--apply", "--format", "kestrel", d)
        assert r.code == 5
    finally:
        holder.kill()
        holder.wait()
        os.close(fd)
    assert dir_snapshot(d) == snap


# ---------------------------------------------------------------- the flags, exactly
def _quarantined(res) -> dict[str, bytes]:
    return {os.path.basename(q): open(q, "rb").read() for q in res.quarantine}


def test_truncate_to_time_cuts_every_item_added_after_t(tmp_path):
    """Five 27-byte adds at T, T+1 s, ... T+4 s: a rollback to T+2.5 s cuts from the fourth add (0x51) to the end,
    exactly those bytes are quarantined, the two later items leave the queue, and the result verifies clean."""
    d = tmp_path / "q"
    write_journal(str(d / "q"), lambda w: [w.add(b"item %d" % i, T + i * 1000) for i in range(5)])
    data = open(d / "q", "rb").read()
    assert len(data) == 5 * 27
    plan = repair.repair_plan(one_set(str(d)), AS_OF_NS, truncate_to_ns=(T + 2500) * 1_000_000)
    doc = plan.report_doc()
    assert [(c["offset"], c["length"], c["what"], c["code"]) for c in doc["cuts"]] == [(3 * 27, 2 * 27, "after-time",
                                                                                        None)]
    assert [(r["offset"], r["end"], r["records"]) for r in doc["kept"]] == [(0, 3 * 27, 3)]
    assert doc["jobs_changed"] == [{"at": "q@0x51", "before": "queued #3", "after": "absent"},
                                   {"at": "q@0x6c", "before": "queued #4", "after": "absent"}]
    assert plan.input_verdict == Verdict.CLEAN and plan.digest_before != plan.digest_expected
    res = plan.apply(now_ms=1000, fsync=False)
    assert _quarantined(res) == {"q@0x51-0x87.bin": data[3 * 27:]}
    rep = run_log(one_set(str(d)), AS_OF_NS, keep_open=True)
    assert rep.verdict == Verdict.CLEAN and [i.data for i in rep.state.queue] == [b"item 0", b"item 1", b"item 2"]


def test_drop_invalid_removes_exactly_the_reused_xid(tmp_path):
    """add a @0, add b @0x16, remove-tentative 3 @0x2c, remove-tentative 3 again @0x31 (KQ-XID-REUSED: item a
    would be lost): without --drop-invalid refused (exit 4) naming it; with it, exactly those 5 bytes go."""
    d = tmp_path / "q"
    write_journal(str(d / "q"), lambda w: (w.add(b"a", T), w.add(b"b", T), w.remove_tentative(3),
                                           w.remove_tentative(3)))
    data = open(d / "q", "rb").read()
    with pytest.raises(PackRefused, match="KQ-XID-REUSED.*--drop-invalid") as e:
        repair.repair_plan(one_set(str(d)), AS_OF_NS)
    assert e.value.verdict == Verdict.INVALID_HISTORY and e.value.offset == 0x31
    plan = repair.repair_plan(one_set(str(d)), AS_OF_NS, drop_invalid=True)
    doc = plan.report_doc()
    assert plan.input_verdict == Verdict.INVALID_HISTORY
    assert [(c["offset"], c["length"], c["what"], c["code"]) for c in doc["cuts"]] == [
        (0x31, 5, "refused-record", "KQ-XID-REUSED")]
    assert [(r["offset"], r["end"], r["records"]) for r in doc["kept"]] == [(0, 0x31, 3)]
    assert sorted(doc["jobs_changed"], key=lambda j: j["at"]) == [
        {"at": "q@0x0", "before": "absent", "after": "open xid 3"},
                                   {"at": "q@0x16", "before": "open xid 3", "after": "queued #0"}]
    res = plan.apply(now_ms=1000, fsync=False)
    assert _quarantined(res) == {"q@0x31-0x36.bin": data[0x31:]}
    rep = run_log(one_set(str(d)), AS_OF_NS, keep_open=True)
    assert rep.verdict == Verdict.CLEAN and {x: i.data for x, i in rep.state.open.items()} == {3: b"a"}


def test_no_backup_keeps_only_the_quarantine(tmp_path):
    d = _copy("torn-tail", tmp_path / "q")
    original = open(os.path.join(d, "mail"), "rb").read()
    plan_out = cli("repair", "--no-backup", d).out
    assert "--no-backup: the old log will not be kept" in plan_out
    r = cli("repair", "--apply", "--no-backup", "--quarantine", str(tmp_path / "cut"), d)
    assert r.code == 1, r.err
    assert "no backup kept (--no-backup)" in r.out
    assert not [n for n in os.listdir(tmp_path) if ".pre-repair-" in n]          # no backup directory
    assert os.listdir(tmp_path / "cut") == ["mail@0x31-0x4f.bin"]
    assert open(tmp_path / "cut" / "mail@0x31-0x4f.bin", "rb").read() == original[0x31:]
    assert open(os.path.join(d, "mail"), "rb").read() == original[:0x31]


# ---------------------------------------------------------------- generated damage
def _small_journal(path) -> bytes:
    write_journal(str(path), lambda w: [w.add(b"item %d" % i * 3, T + i) for i in range(12)]
                  + [w.remove_tentative(1), w.confirm_remove(1), w.remove(), w.remove_tentative(2)])
    return open(path, "rb").read()


def _check_repaired(d: str, plan, res, data: bytes) -> None:
    """Clean afterwards with the plan's digest; the quarantine holds exactly the cut bytes; the journal holds
    exactly the kept ones."""
    assert digests(d) == (Verdict.CLEAN, plan.digest_expected)
    want = {f"q@0x{c.offset:x}-0x{c.offset + c.length:x}.bin": data[c.offset:c.offset + c.length]
            for c in plan.cuts if c.length}
    assert _quarantined(res) == want
    assert sum(len(b) for b in want.values()) + os.path.getsize(os.path.join(d, "q")) == len(data)


@pytest.mark.slow
def test_every_truncation_point_of_a_small_journal(tmp_path):
    data = _small_journal(tmp_path / "src" / "q")
    ends = set()
    pos = 0
    for ev in JournalReader(one_set(str(tmp_path / "src"))).events():
        if hasattr(ev, "length") and ev.__class__.__name__ == "Record":
            pos = ev.offset + ev.length
            ends.add(pos)
    for cut in range(len(data)):
        d = tmp_path / f"t{cut}"
        d.mkdir()
        (d / "q").write_bytes(data[:cut])
        plan = repair.repair_plan(one_set(str(d)), AS_OF_NS)
        if cut in ends or cut == 0:
            assert plan.nothing_to_do, cut
            continue
        assert plan.input_verdict == Verdict.TORN_TAIL and plan.digest_before == plan.digest_expected, cut
        res = plan.apply(now_ms=1000, fsync=False)
        _check_repaired(str(d), plan, res, data[:cut])
        assert os.path.getsize(d / "q") == max(e for e in ends | {0} if e <= cut)
        shutil.rmtree(d)
        for n in os.listdir(tmp_path):
            if n.startswith(f"t{cut}."):
                shutil.rmtree(tmp_path / n)


# ---------------------------------------------------------------- what a repair loses (issue 18 item 4)
@pytest.mark.parametrize("name, lost, unread", [("torn-tail", ["mail@0x31"], {"ranges": 0, "bytes": 0}),
                                                ("negative-size", ["q.100@0x17"], {"ranges": 0, "bytes": 0}),
                                                ("damage-mid-live", [], {"ranges": 1, "bytes": 2})])
def test_repair_counts_the_items_it_loses(tmp_path, name, lost, unread):
    """An item add in the cut bytes (cut short, an impossible size) is an item lost; bytes where no record reads
    are counted."""
    d = _copy(name, tmp_path / "q")
    plan = repair.repair_plan(one_set(d), AS_OF_NS, salvage=True)
    assert plan.items_lost == lost and plan.lost_unread == unread
    doc = plan.report_doc()
    assert doc["items_lost"] == len(lost) and doc["items_lost_at"] == lost and doc["items_lost_unread"] == unread


def test_items_lost_in_the_middle_of_a_damaged_range(tmp_path):
    """Three whole ADDX records after a bad opcode, before the reader resyncs: each is counted."""
    from wqtool.engine.kestrel.fastpath import encode_addx
    from wqtool.engine.kestrel.reader import damaged_items
    recs = [encode_addx(b"x" * n, T + n) for n in (3, 5, 7)]
    data = b"\xff\xff" + b"".join(recs)
    offs, unread = damaged_items(data, 0, len(data))
    assert offs == [2, 2 + len(recs[0]), 2 + len(recs[0]) + len(recs[1])] and unread == 2
