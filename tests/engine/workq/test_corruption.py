"""Damage made in code: bit flips, truncations, hostile sizes, bad headers — exact finding, offset, exit code."""
from __future__ import annotations

import shutil
import tracemalloc

import pytest

from tests.conftest import fixture_log
from wqtool.engine.workq import fastreplay
from wqtool.engine.workq.fastpath import encode_record
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.verify import run_log
from wqtool.engine.findings import Verdict
from wqtool.formats._common import GoTime
from wqtool.formats.workq import HEADER_BYTES

AS_OF_NS = 1795303800 * 10**9
FRAMING = {"WQ-CRC", "WQ-TRUNCATED", "WQ-TIME-VERSION", "WQ-SIZE-OVERFLOW", "WQ-SIZE-TOO-LARGE"}


def _key(rep):
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message, f.upstream, f.job_id, f.verdict,
              f.last_good_offset, f.resumes_at) for f in rep.findings], rep.verdict, rep.records,
            dict(rep.counts), rep.last_good, rep.state.digest())


def verify_dir(d, compare: bool = True):
    """The kernel's report (it reads through the damage), held equal to the reference path's on every corruption
    made here (every bit flip, every truncation offset, hostile sizes, bad headers)."""
    log = discover([d])[0]
    rep = run_log(log, AS_OF_NS)
    if compare and fastreplay.KERNEL == "c":
        assert _key(run_log(log, AS_OF_NS, engine="fast")) == _key(run_log(log, AS_OF_NS, engine="reference"))
    return rep


def errors(rep):
    return [f for f in rep.findings if f.severity == "error"]


def boundaries(seg_path):
    log = discover([seg_path])[0]
    return [(e.offset, e.length) for e in RecordReader(log).events() if e.__class__ is Record]


@pytest.fixture
def small(tmp_path):
    d = tmp_path / "log"
    shutil.copytree(fixture_log("upstream-a2-run1"), d)
    seg = d / "000000001.log"
    seg.chmod(0o644)
    return d, seg, seg.read_bytes()


def test_every_single_bit_flip_is_detected_at_the_right_record(small):
    d, seg, orig = small
    recs = boundaries(str(seg))
    last_off = recs[-1][0]
    checked = 0
    for pos in range(len(orig)):
        for bit in range(8):
            data = bytearray(orig)
            data[pos] ^= 1 << bit
            seg.write_bytes(bytes(data))
            rep = verify_dir(str(d))
            errs = errors(rep)
            assert errs, (pos, bit)
            first = errs[0]
            if pos < 8:
                assert first.code in ("WQ-HDR-MAGIC", "WQ-HDR-VERSION") and first.offset == 0
                assert rep.verdict == Verdict.CORRUPT
            else:
                off = max(o for o, _ in recs if o <= pos)
                assert first.code in FRAMING, (pos, bit, first)
                assert first.offset == off == first.last_good_offset, (pos, bit, first)
                assert rep.verdict == (Verdict.TORN_TAIL if off == last_off else Verdict.CORRUPT), (pos, bit)
            checked += 1
    assert checked == len(orig) * 8


def test_truncation_at_every_offset(small):
    d, seg, orig = small
    ends = {8} | {o + n for o, n in boundaries(str(seg))}
    starts = sorted(ends)
    for cut in range(len(orig) + 1):
        seg.write_bytes(orig[:cut])
        rep = verify_dir(str(d))
        if cut in ends:
            assert rep.verdict == Verdict.CLEAN, cut
            assert not errors(rep)
        else:
            assert rep.verdict == Verdict.TORN_TAIL, cut
            good = 0 if cut < 8 else max(e for e in starts if e <= cut)
            assert rep.last_good == (str(seg), good), cut
            code = errors(rep)[0].code
            assert code == ("WQ-HDR-EMPTY" if cut == 0 else "WQ-HDR-SHORT" if cut < 8 else "WQ-TRUNCATED"), cut


def _segment_with_size(tmp_path, size_varint: bytes, tail: bytes = b"") -> str:
    d = tmp_path / "hostile"
    d.mkdir()
    good = encode_record(GoTime(63930899691, 0), bytes.fromhex("0500000000000040008000000000000001"))
    bad = bytes.fromhex("010000000ee2941ceb3287177cffff") + size_varint + tail
    (d / "000000001.log").write_bytes(HEADER_BYTES + good + bad)
    return str(d)


@pytest.mark.parametrize("varint,code", [
    ((2**31).to_bytes(5, "little") and bytes([0x80, 0x80, 0x80, 0x80, 0x08]), "WQ-SIZE-TOO-LARGE"),  # 2^31
    (bytes([0x80] * 8 + [0x40]), "WQ-SIZE-TOO-LARGE"),                                          # 2^62
    (b"\xff" * 11, "WQ-SIZE-OVERFLOW"),                                                           # 11-byte varint
    (b"\xff" * 9 + b"\x02", "WQ-SIZE-OVERFLOW"),
])
def test_hostile_sizes_are_findings_without_allocation(tmp_path, varint, code):
    d = _segment_with_size(tmp_path, varint, b"x" * 64)
    tracemalloc.start()
    rep = verify_dir(d, compare=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2 * 1024 * 1024
    verify_dir(d)                    # kernel == reference
    errs = errors(rep)
    assert [e.code for e in errs] == [code]
    assert errs[0].offset == 8 + 37 and errs[0].last_good_offset == 45
    assert rep.verdict == Verdict.TORN_TAIL
    assert rep.records == 1


def test_size_2_62_names_the_upstream_panic(tmp_path):
    d = _segment_with_size(tmp_path, bytes([0x80] * 8 + [0x40]))
    e = errors(verify_dir(d))[0]
    assert "makeslice" in e.upstream


@pytest.mark.parametrize("junk,code", [(b"\x0a", "WQ-TRUNCATED"), (bytes.fromhex("deadbeef00"), "WQ-TRUNCATED"),
                                       (b"\x00" * 32, "WQ-TIME-VERSION"), (b"hello world, this is junk", "WQ-TIME-VERSION")])
def test_junk_appended_is_a_torn_tail(small, junk, code):
    d, seg, orig = small
    seg.write_bytes(orig + junk)
    rep = verify_dir(str(d))
    assert [e.code for e in errors(rep)] == [code]
    assert rep.verdict == Verdict.TORN_TAIL and rep.last_good == (str(seg), len(orig))


def _three_segments(tmp_path):
    from wqtool.engine.workq.sample import SampleSpec, generate
    d = tmp_path / "three"
    generate(str(d), SampleSpec(records=40, segment_size=900, seed=3))
    segs = sorted(p for p in d.iterdir() if p.name.endswith(".log"))
    assert len(segs) >= 3
    return d, segs


def test_damage_in_a_middle_segment_is_corrupt_even_at_its_end(tmp_path):
    d, segs = _three_segments(tmp_path)
    data = segs[1].read_bytes()
    segs[1].write_bytes(data[:-3])
    rep = verify_dir(str(d))
    e = errors(rep)[0]
    assert e.code == "WQ-TRUNCATED" and e.path == str(segs[1])
    assert rep.verdict == Verdict.CORRUPT and rep.last_good is None


@pytest.mark.parametrize("which,content,code,exit_code", [
    (-1, b"", "WQ-HDR-EMPTY", Verdict.TORN_TAIL),
    (-1, b"wqwq\x00", "WQ-HDR-SHORT", Verdict.TORN_TAIL),
    (1, b"", "WQ-HDR-EMPTY", Verdict.CORRUPT),
    (1, b"wqw", "WQ-HDR-SHORT", Verdict.CORRUPT),
])
def test_empty_and_short_headers(tmp_path, which, content, code, exit_code):
    d, segs = _three_segments(tmp_path)
    segs[which].write_bytes(content)
    rep = verify_dir(str(d))
    assert [e.code for e in errors(rep)][:1] == [code]
    assert rep.verdict == exit_code


@pytest.mark.parametrize("header,code", [(b"wqwX\x00\x00\x00\x01", "WQ-HDR-MAGIC"), (b"wqwq\x00\x00\x00\x02", "WQ-HDR-VERSION"),
                                         (b"workqbad", "WQ-HDR-MAGIC")])
def test_bad_header_is_corrupt_even_in_the_newest_segment(tmp_path, header, code):
    d, segs = _three_segments(tmp_path)
    data = segs[-1].read_bytes()
    segs[-1].write_bytes(header + data[8:])
    rep = verify_dir(str(d))
    assert errors(rep)[0].code == code and rep.verdict == Verdict.CORRUPT


def test_crc_damage_mid_segment_resyncs_and_reads_the_rest(tmp_path):
    d, segs = _three_segments(tmp_path)
    recs = boundaries(str(segs[0]))
    clean = verify_dir(str(d)).records
    data = bytearray(segs[0].read_bytes())
    off, n = recs[2]
    data[off + n - 1] ^= 0xFF
    segs[0].write_bytes(bytes(data))
    rep = verify_dir(str(d))
    e = errors(rep)[0]
    assert (e.code, e.offset, e.resumes_at) == ("WQ-CRC", off, off + n)
    assert rep.records == clean - 1 and rep.verdict == Verdict.CORRUPT


def test_zone_offset_zero_is_a_warning_only(tmp_path):
    d = tmp_path / "zone"
    d.mkdir()
    rec = encode_record(GoTime(63930899691, 0, 0), bytes.fromhex("0500000000000040008000000000000001"))
    (d / "000000001.log").write_bytes(HEADER_BYTES + rec)
    rep = verify_dir(str(d))
    assert rep.verdict == Verdict.CLEAN and rep.counts["WQ-ZONE"] == 1
