"""wqtool's priority-FIFO journal (per the unimplemented libfastjournal design) as a format: damage made in code
with exact codes and offsets, every truncation, pack to a snapshot and clean with a crash at every step."""
from __future__ import annotations

import os
import shutil

import pytest

from wqtool.engine.fastjournal.writer import (SegmentWriter, delete_request, encode_record, mark_request,
                                              segment_header, set_request, take_lock)
from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options, PackOptions, get
from wqtool.engine.fsops import LogBusy
from wqtool.engine.plan import InjectedCrash
from wqtool.errors import PackRefused

FMT = get("fastjournal")
NOW = 1_769_743_800_000_000
OPTS = Options(NOW * 1000)


def seg(d, seq=1, flags=0) -> SegmentWriter:
    os.makedirs(d, exist_ok=True)
    return SegmentWriter(os.path.join(d, f"{seq:09d}.fjj"), seq, flags=flags)


RECS = [encode_record(NOW - 5, set_request(b"http://a.com/%d" % i, i, NOW - 100 + i, 10 + i)) for i in range(3)]


def run(d):
    (log,) = FMT.discover([str(d)], OPTS)
    p = FMT.run(log, OPTS)
    evs = list(p.events())
    return p.report, [e for e in evs if e.__class__ is FMT.record_cls], [e for e in evs if e.__class__ is not FMT.record_cls]


def history(d) -> None:
    with seg(d, 1) as w:
        for i in range(5):
            w.append(NOW - 50 + i, set_request(b"http://a.com/%d" % i, i % 3, NOW - 100 + i, 100))
        w.append(NOW - 40, set_request(b"http://a.com/1", 0, NOW - 10, 101))
        w.append(NOW - 39, mark_request(b"http://a.com/2", 100, 60_000_000))
        w.append(NOW - 38, delete_request(b"http://a.com/3", 100))
    with seg(d, 2) as w:
        w.append(NOW - 30, set_request(b"http://b.com/x", 1, NOW + 10**9, 7))
        w.append(NOW - 29, delete_request(b"http://a.com/4", 100, complete=True))


def test_a_clean_history_replays_to_the_fifo(tmp_path):
    history(tmp_path)
    rep, recs, finds = run(tmp_path)
    assert rep.verdict == Verdict.CLEAN and finds == [] and [r.op for r in recs][:7] == ["set"] * 6 + ["mark"]
    st = rep.state
    assert sorted(st.fifo.entries) == [b"http://a.com/0", b"http://a.com/1", b"http://a.com/2", b"http://b.com/x"]
    assert st.fifo.tombstones == {b"http://a.com/3": 100}
    assert st.counts_by_state() == {"due": 2, "waiting": 1, "worked-on": 1}


def test_truncation_at_every_offset_is_a_torn_tail(tmp_path):
    whole = segment_header(1) + b"".join(RECS)
    ends = {16, 16 + len(RECS[0]), 16 + len(RECS[0]) + len(RECS[1]), len(whole)}
    for cut in range(1, len(whole)):
        d = tmp_path / str(cut)
        d.mkdir()
        (d / "000000001.fjj").write_bytes(whole[:cut])
        rep, recs, finds = run(d)
        if cut in ends:
            assert rep.verdict == Verdict.CLEAN, cut
            continue
        last = max(e for e in ends if e <= cut) if cut > 16 else 0
        assert rep.verdict == Verdict.TORN_TAIL, cut
        assert [(f.code, f.offset) for f in finds] == [("FJJ-HEADER" if cut < 16 else "FJJ-TRUNCATED", last)], cut


def test_every_flipped_byte_of_a_middle_record_is_found(tmp_path):
    base = segment_header(1) + b"".join(RECS)
    start = 16 + len(RECS[0])
    for i in range(len(RECS[1])):
        data = bytearray(base)
        data[start + i] ^= 0x41
        d = tmp_path / str(i)
        d.mkdir()
        (d / "000000001.fjj").write_bytes(bytes(data))
        rep, recs, finds = run(d)
        errs = [f for f in finds if f.severity == "error"]
        assert errs and errs[0].offset == start and errs[0].code in ("FJJ-CRC", "FJJ-SIZE", "FJJ-TRUNCATED"), i
        assert rep.verdict == Verdict.CORRUPT and errs[0].resumes_at == start + len(RECS[1]), i
        assert [r.offset for r in recs] == [16, start + len(RECS[1])]


def test_not_applied_and_bad_requests(tmp_path):
    from wqtool.engine.fastjournal.wire import Request, encode_request
    from wqtool.formats.fastjournal import Function
    with seg(tmp_path) as w:
        a = w.append(NOW, set_request(b"u", 1, 1, 10))
        b = w.append(NOW, set_request(b"u", 1, 1, 9))                     # older: the server never writes it
        c = w.append(NOW, set_request(b"v", 1, 1, 9, overwrite=False))
        d = w.append(NOW, set_request(b"v", 1, 1, 10, overwrite=False))   # "exists": never written
        e = w.append(NOW, mark_request(b"u", 9, 5))                       # marks another version
        f = w.append(NOW, delete_request(b"zz", 5, complete=True))        # nothing to delete
        g = w.append(NOW, encode_request(Request(Function.QUIT)))
    rep, recs, finds = run(tmp_path)
    assert [(x.code, x.offset) for x in finds] == [("FJJ-NOT-APPLIED", b), ("FJJ-NOT-APPLIED", d),
                                                   ("FJJ-NOT-APPLIED", e), ("FJJ-NOT-APPLIED", f),
                                                   ("FJJ-BAD-REQUEST", g)]
    assert rep.verdict == Verdict.INVALID_HISTORY and (a, c) == (16, c)


def test_live_and_empty_notes(tmp_path):
    d = tmp_path / "j"
    d.mkdir()
    assert [f.code for f in run(d)[2]] == ["FJJ-EMPTY"]
    history(d)
    lock = take_lock(str(d))
    try:
        import subprocess
        import sys
        code = ("import sys; from wqtool.engine.format import get, Options\n"
                "(l,) = get('fastjournal').discover([sys.argv[1]], Options(0)); print(l.live)")
        out = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "True"           # another process sees the server's lock
        with pytest.raises(LogBusy):
            FMT.plans.pack(FMT.discover([str(d)], OPTS)[0], PackOptions(OPTS.as_of_ns)).apply()
    finally:
        lock.release()


def _steps(plan):
    labels = plan.apply_steps()
    return [f"{w}:{l}" for l in labels for w in ("before", "after")] + [f"during:{l}" for l in labels
                                                                        if l.startswith("write-temp:")]


def test_pack_to_a_snapshot_and_crash_at_every_step(tmp_path):
    src = str(tmp_path / "src")
    history(src)
    digest = run(src)[0].state.digest()
    plan = FMT.plans.pack(FMT.discover([src], OPTS)[0], PackOptions(OPTS.as_of_ns))
    doc = plan.report_doc()
    assert doc["plan"]["snapshot"] == "000000003.fjj" and doc["digest"] == digest
    w = plan.write(str(tmp_path / "out"))
    assert w.digest == digest and os.listdir(tmp_path / "out") == ["000000001.fjj"]
    for i, at in enumerate(_steps(plan)):
        d = str(tmp_path / f"c{i}")
        shutil.copytree(src, d)
        with pytest.raises(InjectedCrash):
            FMT.plans.pack(FMT.discover([d], OPTS)[0], PackOptions(OPTS.as_of_ns)).apply(fail_at=at)
        rep, _, finds = run(d)
        assert rep.state.digest() == digest and rep.verdict == Verdict.CLEAN, at
        assert {f.code for f in finds} <= {"FJJ-SUPERSEDED", "FJJ-TEMP-FILE"}, at
        FMT.plans.clean(FMT.discover([d], OPTS)[0], OPTS).apply()
        rep, _, finds = run(d)
        assert rep.state.digest() == digest and finds == [], at
    d = str(tmp_path / "whole")
    shutil.copytree(src, d)
    res = FMT.plans.pack(FMT.discover([d], OPTS)[0], PackOptions(OPTS.as_of_ns)).apply()
    assert sorted(os.listdir(d)) == ["000000003.fjj", "journal.lock"] and res.result.digest == digest


def test_clean_crash_at_every_step(tmp_path):
    src = str(tmp_path / "src")
    history(src)
    with seg(src, 3, flags=1) as w:                      # a snapshot superseding 1 and 2
        for at, req in __import__("wqtool.engine.fastjournal.pack", fromlist=["x"]).snapshot_records(
                run(src)[0].state):
            w.append(at, req)
    (tmp_path / "src" / ".000000004.fjj.tmp").write_bytes(b"half")
    digest = run(src)[0].state.digest()
    plan = FMT.plans.clean(FMT.discover([src], OPTS)[0], OPTS)
    assert [os.path.basename(r["file"]) for r in plan.report_doc()["actions"]] == \
        ["000000001.fjj", "000000002.fjj", ".000000004.fjj.tmp"]
    for i, at in enumerate(_steps(plan)[:-1]):
        d = str(tmp_path / f"c{i}")
        shutil.copytree(src, d)
        with pytest.raises(InjectedCrash):
            FMT.plans.clean(FMT.discover([d], OPTS)[0], OPTS).apply(fail_at=at)
        assert run(d)[0].state.digest() == digest, at
        FMT.plans.clean(FMT.discover([d], OPTS)[0], OPTS).apply()
        assert sorted(n for n in os.listdir(d) if n != "journal.lock") == ["000000003.fjj"], at


def test_pack_refuses_corruption_unless_salvage(tmp_path):
    data = bytearray(segment_header(1) + b"".join(RECS))
    data[16 + len(RECS[0]) + 20] ^= 1
    (tmp_path / "000000001.fjj").write_bytes(bytes(data))
    (log,) = FMT.discover([str(tmp_path)], OPTS)
    with pytest.raises(PackRefused):
        FMT.plans.pack(log, PackOptions(OPTS.as_of_ns))
    plan = FMT.plans.pack(log, PackOptions(OPTS.as_of_ns, salvage=True))
    assert plan.report_doc()["dropped"] and plan.report_doc()["after"]["entries"] == 2


from tests.conftest import examples
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(0, 255), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
       st.booleans(), st.integers(0, 0xFFFF), st.integers(0, 40), st.integers(0, 255))
def test_the_journal_set_fast_path_equals_the_wire_codec(uri, prio, ksd, ts, over, ident, flip_at, flip):
    from wqtool.engine.fastjournal.reader import _decode_change, decode_change
    from wqtool.engine.fastjournal.wire import BadRequest, WireError
    req = bytearray(set_request(uri, prio, ksd, ts, overwrite=over, identifier=ident))
    for r in (bytes(req), bytes(req[:flip_at] + bytes([flip]) + req[flip_at + 1:])):
        try:
            slow = _decode_change("p", 0, 0, 0, 1, r)
        except (WireError, BadRequest):
            slow = None
        try:
            fast = decode_change("p", 0, 0, 0, 1, r)
        except (WireError, BadRequest):
            fast = None
        assert fast == slow


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=300), st.integers(0, 255), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
       st.booleans(), st.integers(0, 0xFFFF), st.sampled_from([0, 1 << 9, 1 << 10, 1 << 6, 1 << 11, 1 << 12]))
def test_the_set_writer_fast_path_equals_the_wire_codec(uri, prio, ksd, ts, over, ident, flags):
    from wqtool.engine.fastjournal.wire import Request, encode_request
    from wqtool.engine.fastjournal.writer import fifo_value
    from wqtool.formats.fastjournal import FLAG_OVERWRITE, Function
    want = encode_request(Request(Function.SET, ident, flags | (FLAG_OVERWRITE if over else 0), ts, uri,
                                  value_type=1, value=fifo_value(prio, ksd)))
    assert set_request(uri, prio, ksd, ts, overwrite=over, identifier=ident, flags=flags) == want
