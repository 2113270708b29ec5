"""Retry files of every XXL-JOB release line (issue 19): the corpus made by real Java (Jackson 2.0.0, Java
serialization 2.2.0, Gson HEAD) and the Hessian 2.0.2-2.1.x files built from the spec; wqtool's encoders give the
same bytes; each file reads with its release named; the Hessian reader is bounded (every truncation, every
single-byte change refused or read without instantiating anything); round trips of every encoding wqtool writes;
replay --send delivers each release's callbacks to a loopback admin."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import ROOT
from tests.engine.orth.admin import Admin
from wqtool.engine import format as registry
from wqtool.engine.format import Options
from wqtool.engine.findings import Verdict
from wqtool.engine.javacodec.gson import Entry, encode, parse_lenient
from wqtool.engine.javacodec.hessian import (HessianError, HessianReader, encode_params, h_int, h_long, h_string,
                                        parse_hessian)
from wqtool.engine.javacodec.jackson import encode_jackson_line, parse_jackson_line
from wqtool.engine.javacodec.javaser import JavaStreamError, encode_220, parse_legacy

FIX = os.path.join(ROOT, "fixtures", "orth-xxl-job")
FMT = registry.get("orth-callbacks")


def _script():
    spec = importlib.util.spec_from_file_location("mx", os.path.join(ROOT, "scripts", "make_orth_xxljob_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _script()


def test_the_corpus_has_not_drifted_and_wqtools_encoders_give_the_java_bytes():
    assert SCRIPT.main(["--check"]) == 0


def _report(path: str):
    log = FMT.discover([path], Options(0))[0]
    run = FMT.run(log, Options(0))
    rows = [ev for ev in run.events() if ev.__class__ is FMT.record_cls]
    return rows, run.report


@pytest.mark.parametrize("scenario,release,source,codes", [
    ("xxl-job-2-0-0-jackson", "xxl-job-2.0.0", "jackson", [(31, 200), (32, 500), (33, 502)]),
    ("xxl-job-2-1-hessian", "xxl-job-2.0.2", "hessian", [(41, 200), (42, 500), (43, 200)]),
    ("xxl-job-2-2-0-java", "xxl-job-2.2.0", "java", [(51, 200), (52, 500), (53, 200), (54, 200)]),
    ("xxl-job-head-gson", "xxl-job-head", "json", [(61, 200), (62, 500)]),
])
def test_each_release_line_reads_with_its_release_named(scenario, release, source, codes):
    rows, rep = _report(os.path.join(FIX, scenario, "logpath"))
    assert [(r.log_id, r.handle_code) for r in rows] == codes
    assert {r.release for r in rows} == {release} and {r.source for r in rows} == {source}
    assert [r.log_date_tim for r in rows] == [1769740800000 + i for i in range(len(codes))]     # HEAD: not 1970
    assert rep.verdict == Verdict.CLEAN
    view = FMT.state_view(rep.state)
    assert view.summary()["written_by"] == [dict(r[:2] for r in __import__("wqtool.formats.orth", fromlist=["x"])
                                                 .CALLBACK_RELEASES)[release]]
    if release != "xxl-job-head":           # in a directory no current release reads: stranded, and said why
        stranded = [f for f in rep.findings if f.code == "OC-STRANDED"]
        assert stranded and all(r.file_state == "stranded" for r in rows)


def test_the_2_2_0_file_says_what_2_3_to_3_2_do_with_it():
    """The issue: not OC-JAVA-BAD "xxl-job <= 3.2 would fail to read it" — a 2.3-3.2 class reads it as handleCode 0
    and resends that."""
    _, rep = _report(os.path.join(FIX, "xxl-job-2-2-0-java", "logpath", "callbacklog"))
    assert "OC-JAVA-BAD" not in rep.counts
    (f, _) = [x for x in rep.findings if x.code == "OC-STRANDED"]
    assert "2.3-3.2 read it as handleCode 0" in f.message and "2.2.0 resends it" in f.message


def test_a_log_path_with_the_2_0_0_file_is_both_logs_and_no_stray_file():
    lp = os.path.join(FIX, "xxl-job-2-0-0-jackson", "logpath")
    assert [f.name for f, ev in registry.detect_all(lp)] == ["orth-callbacks", "orth-executor-logs"]
    ex = registry.get("orth-executor-logs")
    run = ex.run(ex.discover([lp], Options(0))[0], Options(0))
    for _ in run.events():
        pass
    assert "OE-STRAY-FILE" not in run.report.counts
    assert {r["log_id"]: r["retry_files"] for r in run.report.state.rows()}[32] == ["xxl-job-callback.log"]


# ---------------------------------------------------------------- Hessian: the spec's own examples
@pytest.mark.parametrize("v,b", [(0, "90"), (-16, "80"), (47, "bf"), (-256, "c7 00"), (2047, "cf ff"),
                                 (-262144, "d0 00 00"), (262143, "d7 ff ff"), (262144, "49 00 04 00 00")])
def test_hessian_ints_as_the_spec_writes_them(v, b):
    assert h_int(v) == bytes.fromhex(b) and HessianReader(bytes.fromhex(b)).read_value() == v


@pytest.mark.parametrize("v,b", [(0, "e0"), (-8, "d8"), (15, "ef"), (-256, "f7 00"), (2047, "ff ff"),
                                 (-262144, "38 00 00"), (262143, "3f ff ff"), (300000, "59 00 04 93 e0"),
                                 (1 << 40, "4c 00 00 01 00 00 00 00 00")])
def test_hessian_longs_as_the_spec_writes_them(v, b):
    assert h_long(v) == bytes.fromhex(b) and HessianReader(bytes.fromhex(b)).read_value() == v


def test_hessian_strings_lists_objects_and_refs_of_the_spec():
    assert h_string("") == b"\x00" and h_string("hello") == b"\x05hello"
    assert h_string("\u00c3") == b"\x01\xc3\x83"
    assert HessianReader(b"\x05hello").read_value() == "hello"
    assert HessianReader(bytes.fromhex("7b 90 91 92")).read_value() == [0, 1, 2]       # untyped fixed, 3
    assert HessianReader(bytes.fromhex("58 93 90 91 92")).read_value() == [0, 1, 2]   # 'X' + length
    assert HessianReader(bytes.fromhex("57 90 91 5a")).read_value() == [0, 1]         # variable, 'Z'
    # the spec's class example: C "example.Car" 2 "color" "model", then O refs
    data = b"C\x0bexample.Car\x92\x05color\x05model" + b"`\x03red\x08corvette" + b"`\x05green\x05civic"
    r = HessianReader(b"\x7a" + data)
    cars = r.read_value()
    assert [(c.cls, c.fields) for c in cars] == [("example.Car", {"color": "red", "model": "corvette"}),
                                                ("example.Car", {"color": "green", "model": "civic"})]
    shared = HessianReader(b"\x7a" + data[:-13] + b"\x51\x91").read_value()      # Q 1: the first object again
    assert shared[1] is shared[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1),
                          st.integers(-(1 << 31), (1 << 31) - 1), st.none() | st.text(max_size=40)),
                max_size=12), st.booleans())
def test_hessian_round_trip(items, share):
    es = [Entry(*t) for t in items]
    shared = {i: 0 for i in range(1, len(es))} if share and es else {}
    got = parse_hessian(encode_params(es, shared=shared)).entries
    want = [(e.log_id, e.log_date_tim, es[0].handle_code if i in shared else e.handle_code,
             es[0].handle_msg if i in shared else e.handle_msg) for i, e in enumerate(es)]
    assert [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in got] == want


def test_hessian_every_truncation_and_every_byte_change_is_refused_or_read_bounded():
    es = [Entry(41, 1769740800000, 200, None), Entry(42, 1769740800001, 500, "boom 中文")]
    data = encode_params(es, contents={1: "c"})
    for k in range(len(data)):
        with pytest.raises(HessianError) as ei:
            parse_hessian(data[:k])
        assert ei.value.offset <= k
    for k in range(len(data)):
        for b in (0x00, 0x4F, 0x51, 0x58, 0x7F, 0xFF, data[k] ^ 0x20):
            try:
                parse_hessian(data[:k] + bytes((b,)) + data[k + 1:])
            except HessianError as exc:
                assert 0 <= exc.offset <= len(data)


def test_hessian_hostile_sizes_are_capped_before_allocating():
    for data in (b"\x58\x49\x7f\xff\xff\xff", b"\x53\xff\xff", b"C\x05hello\x49\x7f\xff\xff\xff",
                 b"\x7a" * 40, b"\x51\x90"):
        with pytest.raises(HessianError):
            parse_hessian(data)


# ---------------------------------------------------------------- round trips of every encoding wqtool writes
_entries = st.lists(st.builds(Entry, st.integers(-(1 << 31), (1 << 31) - 1), st.integers(-(1 << 63), (1 << 63) - 1),
                              st.integers(-(1 << 31), (1 << 31) - 1), st.none() | st.text(max_size=30)), max_size=8)


@settings(max_examples=150, deadline=None)
@given(_entries)
def test_round_trips(es):
    key = lambda xs: [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in xs]  # noqa: E731
    assert key(parse_legacy(encode_220(es)).entries) == key(es)
    line = encode_jackson_line(es)
    assert line.endswith(b"\r\n")
    assert key(parse_jackson_line(line[:-2].decode("utf-8", "surrogatepass"), 0)) == key(es)
    res = parse_lenient(encode(es, "logDateTime"))
    assert [res.head_dates.get(i, 0) for i in range(len(es))] == [e.log_date_tim for e in es]


def test_2_2_0_stream_cut_anywhere_is_refused():
    data = encode_220([Entry(51, 1, 200, None), Entry(52, 2, 500, "x")], shared={})
    for k in range(len(data)):
        with pytest.raises(JavaStreamError):
            parse_legacy(data[:k])


# ---------------------------------------------------------------- replay --send of each release
@pytest.mark.parametrize("scenario,admin_release", [("xxl-job-2-0-0-jackson", "orth"),
                                                    ("xxl-job-2-1-hessian", "xxl-job-2.2"),
                                                    ("xxl-job-2-2-0-java", "xxl-job-2.3"),
                                                    ("xxl-job-head-gson", "xxl-job-head")])
def test_replay_send_delivers_each_release(tmp_path, scenario, admin_release):
    lp = str(tmp_path / "lp")
    shutil.copytree(os.path.join(FIX, scenario, "logpath"), lp)
    rows, _ = _report(lp)
    want = {(r.log_id, r.handle_code) for r in rows}
    (log,) = FMT.discover([lp], Options(0))
    with Admin() as admin:
        rep = FMT.send(log, admin.url, Options(0, settings={"admin_release": admin_release}))
    assert rep.failed == 0 and rep.sent >= 1
    bodies = [c for body in admin.received for c in (body["callbackList"] if isinstance(body, dict) else body)]
    assert all(isinstance(b, dict) == (admin_release == "xxl-job-head") for b in admin.received)
    if admin_release == "xxl-job-2.2":
        assert {(c["logId"], c["executeResult"]["code"]) for c in bodies} == want
    else:
        assert {(c["logId"], c["handleCode"]) for c in bodies} == want
        date_key = "logDateTime" if admin_release == "xxl-job-head" else "logDateTim"
        assert all(c[date_key] >= 1769740800000 for c in bodies)
    assert FMT.discover([lp], Options(0))[0].files == []          # delivered: deleted


def test_a_line_jackson_rejects_is_an_error_that_says_2_0_0_loses_it(tmp_path):
    lp = tmp_path / "lp"
    lp.mkdir()
    good = encode_jackson_line([Entry(1, 1769740800000, 200, None)])
    (lp / "xxl-job-callback.log").write_bytes(good + b'[{"logId":2,"logDateTim":1,"bogus":1}]\r\n' + good)
    rows, rep = _report(str(lp))
    assert [r.log_id for r in rows] == [1, 1] and rep.verdict == Verdict.CORRUPT
    (f,) = [x for x in rep.findings if x.code == "OC-REJECTED"]
    assert f.offset == len(good) + 1 and "bogus" in f.message and "lost" in f.message     # the element


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x85\u2028\u2029"),
                        max_size=30), min_size=1, max_size=6))
def test_xxl_job_executor_log_lines_round_trip(tmp_path_factory, messages):
    from tests.writers.orth_executor_logs import XxlJobLogWriter
    lp = str(tmp_path_factory.mktemp("x"))
    w = XxlJobLogWriter(lp)
    w.start(7, 1769740800000, 1769740801000)
    for i, m in enumerate(messages):
        w.line(7, 1769740800000, 1769740802000 + i, m)
    ex = registry.get("orth-executor-logs")
    run = ex.run(ex.discover([lp], Options(0))[0], Options(0))
    got = [ev.message for ev in run.events() if ev.__class__ is ex.record_cls]
    assert got[1:] == messages and run.report.verdict == Verdict.CLEAN
