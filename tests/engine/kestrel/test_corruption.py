"""Corruption generated in code: truncation at every offset, bit flips, hostile sizes, junk, unknown opcodes —
exact finding code, offset and last good offset; never a traceback, never a large allocation."""
from __future__ import annotations

import os
import struct
import tracemalloc

import pytest

from wqtool.engine.kestrel.codes import KESTREL_CODES
from wqtool.engine.kestrel.model import Record
from wqtool.engine.kestrel.reader import JournalReader
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.findings import Verdict

from wqtool.engine.kestrel import fastreplay
from wqtool.engine.kestrel.verify import NO_CHECKSUM, KestrelRun

from .conftest import AS_OF_NS, T, one_set, write_journal


def _key(r):
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message, f.upstream, f.verdict,
              f.last_good_offset, f.resumes_at) for f in r.findings], dict(r.counts), r.verdict, r.records,
            r.bytes, r.last_good, r.state.digest())


@pytest.fixture(autouse=True)
def fast_path_equals_reference(monkeypatch):
    """Every corruption made here (every truncation offset, bit flips, hostile sizes, bad opcodes): the fast path
    (C, through damage) gives the reference's report, with and without resync."""
    real = run_log

    def checked(fs, as_of_ns, **kw):
        r = real(fs, as_of_ns, **kw)
        if fastreplay.KERNEL == "c" and kw.get("on_record") is None:
            opts = {n: kw[n] for n in ("limit", "keep_open", "kestrel_version") if n in kw}
            try:
                fast = fastreplay.fast_run(fs, as_of_ns, no_checksum=NO_CHECKSUM, resync=kw.get("resync", True),
                                           **opts)
            except fastreplay.Bail:          # (a libkestrel file, legacy opcodes: the reference's alone)
                pass
            else:
                ref = KestrelRun(fs, as_of_ns, resync=kw.get("resync", True), **opts)
                for _ in ref.events():
                    pass
                assert _key(fast) == _key(ref.report)
        return r
    monkeypatch.setitem(globals(), "run_log", checked)     # the tests below call run_log: each checked


def small(w):
    w.add(b"alpha", T)
    w.add(b"beta", T, T + 5000)
    w.remove_tentative(1)
    w.add(b"gamma", T)
    w.confirm_remove(1)
    w.continue_(9, b"delta", T)
    w.remove()
    w.add(b"epsilon", T)


def boundaries(raw: bytes) -> list[int]:
    from wqtool.engine.kestrel.fastpath import decode_op
    out, pos = [0], 0
    while pos < len(raw):
        _, pos = decode_op(raw, pos, len(raw))
        out.append(pos)
    return out


@pytest.fixture
def journal(tmp_path):
    p = write_journal(str(tmp_path / "src" / "q"), small)
    return open(p, "rb").read()


def test_truncation_at_every_offset_of_the_live_file(tmp_path, journal):
    bounds = boundaries(journal)
    d = str(tmp_path / "t")
    os.makedirs(d)
    p = os.path.join(d, "q")
    for cut in range(len(journal) + 1):
        with open(p, "wb") as f:
            f.write(journal[:cut])
        r = run_log(one_set(d), AS_OF_NS)
        good = max(b for b in bounds if b <= cut)
        assert r.records == bounds.index(good), cut
        if cut in bounds:
            assert r.verdict == Verdict.CLEAN, cut
            assert not [f for f in r.findings if f.severity == "error"]
        else:
            assert r.verdict == Verdict.TORN_TAIL, cut
            errs = [f for f in r.findings if f.severity == "error"]
            assert [(f.code, f.offset, f.last_good_offset) for f in errs] == [("KQ-TRUNCATED", good, good)], cut
            assert r.last_good == (p, good)


def test_truncation_of_a_rotated_file_is_corruption(tmp_path, journal):
    bounds = boundaries(journal)
    d = str(tmp_path / "t")
    os.makedirs(d)
    write_journal(os.path.join(d, "q"), lambda w: w.add(b"live", T))
    for cut in range(1, len(journal)):
        if cut in bounds:
            continue
        with open(os.path.join(d, "q.100"), "wb") as f:
            f.write(journal[:cut])
        r = run_log(one_set(d), AS_OF_NS)
        assert r.verdict == Verdict.CORRUPT, cut
        f = [f for f in r.findings if f.severity == "error"][0]
        assert f.code == "KQ-TRUNCATED" and f.path.endswith("q.100")
        assert "truncates the LIVE file" in f.upstream
        assert r.state.queue[-1].data == b"live"    # the live file is still read


def test_bit_flips_never_raise(tmp_path, journal):
    d = str(tmp_path / "t")
    os.makedirs(d)
    p = os.path.join(d, "q")
    seen = set()
    for i in range(len(journal)):
        for bit in range(8):
            b = bytearray(journal)
            b[i] ^= 1 << bit
            with open(p, "wb") as f:
                f.write(b)
            r = run_log(one_set(d), AS_OF_NS)
            assert r.verdict in Verdict
            for f in r.findings:
                assert f.code in KESTREL_CODES
                if f.severity == "error":
                    assert f.offset is not None and f.offset <= len(journal)
            seen.add(r.verdict)
    assert {Verdict.CLEAN, Verdict.TORN_TAIL, Verdict.CORRUPT} <= seen


def test_bad_opcode_followed_by_valid_records(tmp_path, journal):
    bounds = boundaries(journal)
    d = str(tmp_path / "t")
    os.makedirs(d)
    b = bytearray(journal)
    b[bounds[1]] = 0xFF          # second record's opcode
    write_journal(os.path.join(d, "q"), lambda w: w.raw(bytes(b)))
    r = run_log(one_set(d), AS_OF_NS)
    assert r.verdict == Verdict.CORRUPT
    f = [f for f in r.findings if f.code == "KQ-BAD-OPCODE"][0]
    assert f.offset == bounds[1] and f.last_good_offset == bounds[1]
    assert f"invalid opcode in journal: -1 at position {bounds[1]}" in f.message
    assert f.resumes_at == bounds[3]      # the next ADDX (gamma): records resume there
    assert [i.data for i in r.state.queue][-2:] == [b"delta", b"epsilon"]
    # without resync, everything after the damage is lost (as Kestrel does) and it reads as junk at the end
    rr = run_log(one_set(d), AS_OF_NS, resync=False)
    assert rr.records == 1 and rr.verdict == Verdict.TORN_TAIL


@pytest.mark.parametrize("size,code", [(-1, "KQ-SIZE-NEGATIVE"), (-2**31, "KQ-SIZE-NEGATIVE"),
                                       (2**31 - 1, "KQ-SIZE-ABSURD"), (200 * 2**20, "KQ-SIZE-ABSURD")])
@pytest.mark.parametrize("where", ["live-tail", "live-middle", "rotated"])
def test_hostile_sizes(tmp_path, journal, size, code, where):
    d = str(tmp_path / "t")
    os.makedirs(d)
    hostile = b"\x02" + struct.pack("<i", size) + bytes(16)
    blob = journal + hostile + (journal if where == "live-middle" else b"")
    write_journal(os.path.join(d, "q.5" if where == "rotated" else "q"), lambda w: w.raw(blob))
    tracemalloc.start()
    try:
        r = run_log(one_set(d), AS_OF_NS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    assert r.verdict == Verdict.CORRUPT          # negative / absurd sizes are 3 wherever they are
    f = [f for f in r.findings if f.severity == "error"][0]
    assert (f.code, f.offset, f.last_good_offset) == (code, len(journal), len(journal))


def test_short_block_and_nul_padding(tmp_path, journal):
    d = str(tmp_path / "t")
    os.makedirs(d)
    p = write_journal(os.path.join(d, "q"), lambda w: w.raw(journal + bytes(4096)))   # disk-full NULs
    r = run_log(one_set(d), AS_OF_NS)
    assert r.verdict == Verdict.TORN_TAIL
    f = [f for f in r.findings if f.severity == "error"][0]
    assert (f.code, f.offset) == ("KQ-SHORT-BLOCK", len(journal))
    assert r.last_good == (p, len(journal))
    os.rename(p, os.path.join(d, "q.7"))
    assert run_log(one_set(d), AS_OF_NS).verdict == Verdict.CORRUPT


def test_addx_block_under_16(tmp_path):
    d = str(tmp_path / "t")
    os.makedirs(d)
    write_journal(os.path.join(d, "q"), lambda w: w.raw(b"\x02" + struct.pack("<i", 15) + bytes(15)))
    r = run_log(one_set(d), AS_OF_NS)
    assert [f.code for f in r.findings if f.severity == "error"] == ["KQ-SHORT-BLOCK"]


def test_libkestrel_file_is_named(tmp_path):
    d = str(tmp_path / "t")
    os.makedirs(d)
    write_journal(os.path.join(d, "q.100"), lambda w: w.raw(bytes.fromhex(
        "27 64 26 03 86 05 00 00 00 01 00 00 00 64 00 00 00 00 00 00 00 ff 00 00 00 00 00 00 00 68 65 6c 6c 6f")))
    r = run_log(one_set(d), AS_OF_NS)
    assert r.counts["KQ-FOREIGN-FILE"] == 1 and r.verdict == Verdict.CORRUPT


def test_offset_filters(tmp_path, journal):
    bounds = boundaries(journal)
    d = str(tmp_path / "t")
    os.makedirs(d)
    write_journal(os.path.join(d, "q"), lambda w: w.raw(journal))
    recs = [e for e in JournalReader(one_set(d), from_offset=bounds[2], to_offset=bounds[5]).events()
            if isinstance(e, Record)]
    assert [r.offset for r in recs] == bounds[2:5]
    assert [r.index for r in recs] == [2, 3, 4]
