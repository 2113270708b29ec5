"""The list client journal read as upstream's reader reads it: damage made in code, exact codes and offsets."""
from __future__ import annotations

import os

import pytest

from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options, get
from wqtool.engine.snaplist.fastpath import encode_line
from wqtool.engine.snaplist.writer import acknowledge, append_raw, append_request, request_line

AS_OF_US = 1_769_743_800_000_000          # 2026-01-30T03:30:00Z: current hour 3
AS_OF_NS = AS_OF_US * 1000
MIN = 60_000_000
FMT = get("snaplist")


def run(d, **extra):
    opts = Options(AS_OF_NS, settings=extra)
    (log,) = FMT.discover([str(d)], opts)
    p = FMT.run(log, opts)
    evs = list(p.events())
    recs = [e for e in evs if e.__class__ is FMT.record_cls]
    finds = [e for e in evs if e.__class__ is not FMT.record_cls]
    return p.report, recs, finds


def codes(finds):
    return [(f.code, os.path.basename(f.path) if f.path else None, f.offset) for f in finds]


def line(uri, minutes=10, prio=10):
    return request_line(uri, AS_OF_US - minutes * MIN, priority=prio)[1]


def test_a_clean_current_hour(tmp_path):
    for i in range(3):
        append_request(str(tmp_path), b"http://example.com/%d" % i, AS_OF_US - (10 - i) * MIN)
    rep, recs, finds = run(tmp_path)
    assert rep.verdict == Verdict.CLEAN and finds == [] and [r.kind for r in recs] == ["pending"] * 3
    assert [r.offset for r in recs] == [0, len(line(b"http://example.com/0")), 2 * len(line(b"http://example.com/0"))]


def test_torn_final_line_at_every_cut(tmp_path):
    whole = line(b"http://example.com/a") + line(b"http://example.com/bb")
    first = len(line(b"http://example.com/a"))
    for cut in range(1, len(whole)):
        d = tmp_path / f"c{cut}"
        d.mkdir()
        (d / "3.msg").write_bytes(whole[:cut])
        rep, recs, finds = run(d)
        if cut in (first, len(whole)):
            assert rep.verdict == Verdict.CLEAN, cut
            continue
        start = 0 if cut < first else first
        assert codes(finds) == [("SL-TORN-LINE", "3.msg", start)], cut
        assert rep.verdict == Verdict.TORN_TAIL and rep.last_good == (str(d / "3.msg"), start)


def test_missing_fields_are_skipped_lines(tmp_path):
    ok = line(b"http://e.com/ok")
    bad = [b"priority=1;uri=http://e.com/x\n", b"priority=1;key_start_date=5;uri=\n", b"\n"]
    append_raw(str(tmp_path), 3, ok + bad[0] + bad[1])
    rep, recs, finds = run(tmp_path)
    assert codes(finds) == [("SL-MISSING-FIELD", "3.msg", len(ok)), ("SL-MISSING-FIELD", "3.msg", len(ok) + len(bad[0]))]
    assert [r.kind for r in recs] == ["pending", "skipped", "skipped"]
    assert rep.verdict == Verdict.INVALID_HISTORY and "uri" in finds[1].message


def test_bad_values(tmp_path):
    a = b"priority=256;key_start_date=1;uri=http://e.com/a\n"
    b = b"priority=2;key_start_date=-5;uri=http://e.com/b\n"
    c = b"priority= 7x;key_start_date=1;uri=http://e.com/c\n"
    append_raw(str(tmp_path), 3, a + b + c)
    rep, recs, finds = run(tmp_path)
    assert [x for x in codes(finds) if x[0] == "SL-BAD-VALUE"] == \
        [("SL-BAD-VALUE", "3.msg", 0), ("SL-BAD-VALUE", "3.msg", len(a)), ("SL-BAD-VALUE", "3.msg", len(a + b))]
    assert rep.verdict == Verdict.INVALID_HISTORY and rep.state.entries == {}


def test_raw_semicolon_is_read_as_upstream_cuts_it(tmp_path):
    first = line(b"http://e.com/ok")
    append_raw(str(tmp_path), 3, first + b"priority=1;key_start_date=%d;uri=http://e.com/a;b\n" % AS_OF_US)
    rep, recs, finds = run(tmp_path)
    assert codes(finds) == [("SL-URI-SEMICOLON", "3.msg", len(first))]
    assert recs[1].uri == b"http://e.com/a" and b"http://e.com/a" in rep.state.entries


def test_non_ascii_and_noncanonical(tmp_path):
    a = b"priority=1;key_start_date=%d;uri=http://e.com/\xc3\xa9\n" % AS_OF_US
    b = b"key_start_date=%d;priority=1;uri=http://e.com/b\n" % AS_OF_US
    append_raw(str(tmp_path), 3, a + b)
    rep, recs, finds = run(tmp_path)
    assert codes(finds) == [("SL-NON-ASCII", "3.msg", 0), ("SL-NONCANONICAL", "3.msg", len(a))]
    assert rep.verdict == Verdict.CLEAN


def test_wrong_hour_respects_the_offset_and_updating(tmp_path):
    d = str(tmp_path)
    h, off, l1 = append_request(d, b"http://e.com/ok", AS_OF_US - 5 * MIN)
    upd = request_line(b"http://e.com/upd", AS_OF_US - 5 * MIN, updating=True)[1]   # +1 h, priority 180
    far = encode_line(10, AS_OF_US + 3 * 60 * MIN, b"http://e.com/far")
    append_raw(d, 3, upd + far)
    rep, recs, finds = run(tmp_path)
    assert codes(finds) == [("SL-WRONG-HOUR", "3.msg", len(l1) + len(upd))]
    assert finds[0].message.startswith("1 line(s)")
    # with a 3 h offset the far line is right and the two others are off
    _rep, _recs, finds = run(tmp_path, start_date_offset_us=str(3 * 60 * MIN))
    assert codes(finds) == [("SL-WRONG-HOUR", "3.msg", 0)] and finds[0].message.startswith("2 line(s)")


def test_stale_files_and_kept_hours(tmp_path):
    d = str(tmp_path)
    append_request(d, b"http://e.com/zero", AS_OF_US - 200 * MIN)         # 0.msg: overdue
    h, off, ln = append_request(d, b"http://e.com/one", AS_OF_US - 130 * MIN)   # 1.msg: exhausted
    acknowledge(os.path.join(d, "1.msg"), off, len(ln))
    append_request(d, b"http://e.com/two", AS_OF_US - 70 * MIN)          # 2.msg: the previous hour, kept
    rep, recs, finds = run(tmp_path)
    assert [(c, f) for c, f, _ in codes(finds)] == [("SL-STALE-FILE", "0.msg"), ("SL-STALE-FILE", "1.msg")]
    assert "1 pending" in finds[0].message and "exhausted" in finds[1].message
    # upstream's reading order at 03:30: hours 4 .. 23, 0 .. 3
    assert [os.path.basename(p) for p in FMT.files(FMT.discover([d], Options(AS_OF_NS))[0])] == \
        ["0.msg", "1.msg", "2.msg"]


def test_ack_out_of_order_and_blank_runs(tmp_path):
    d = str(tmp_path)
    _h, o1, l1 = append_request(d, b"http://e.com/1", AS_OF_US - 9 * MIN)
    _h, o2, l2 = append_request(d, b"http://e.com/2", AS_OF_US - 8 * MIN)
    append_request(d, b"http://e.com/3", AS_OF_US - 7 * MIN)
    acknowledge(os.path.join(d, "3.msg"), o2, len(l2))
    rep, recs, finds = run(tmp_path)
    assert codes(finds) == [("SL-ACK-OUT-OF-ORDER", "3.msg", o2)]
    assert [(r.kind, r.length) for r in recs] == [("pending", len(l1)), ("acked", len(l2)), ("pending", len(l1))]


def test_leading_blank_run_is_acknowledged_not_damage(tmp_path):
    d = str(tmp_path)
    _h, o1, l1 = append_request(d, b"http://e.com/1", AS_OF_US - 9 * MIN)
    append_request(d, b"http://e.com/2", AS_OF_US - 8 * MIN)
    acknowledge(os.path.join(d, "3.msg"), o1, len(l1))
    rep, recs, finds = run(tmp_path)
    assert finds == [] and [r.kind for r in recs] == ["acked", "pending"] and rep.state.acked_bytes == len(l1)


def test_foreign_temp_and_empty(tmp_path):
    d = tmp_path / "j"
    d.mkdir()
    rep, recs, finds = run(d)
    assert [f.code for f in finds] == ["SL-EMPTY"] and rep.verdict == Verdict.CLEAN
    (d / "24.msg").write_bytes(b"x\n")
    (d / ".3.msg.wqtool-pack").write_bytes(b"")
    rep, recs, finds = run(d)
    assert sorted(f.code for f in finds) == ["SL-EMPTY", "SL-FOREIGN-FILE", "SL-TEMP-FILE"]


def test_replay_one_entry_per_uri_largest_date_wins_in_sort_index_order(tmp_path):
    d = str(tmp_path)
    append_raw(d, 2, encode_line(9, AS_OF_US - 70 * MIN, b"http://b.com/p"))
    append_raw(d, 3, encode_line(3, AS_OF_US - 5 * MIN, b"http://b.com/p"))     # the largest date
    append_raw(d, 3, encode_line(1, AS_OF_US - 25 * MIN, b"http://b.com/p"))    # read later, older: loses
    append_raw(d, 3, encode_line(0, AS_OF_US + 10 * MIN, b"http://b.com/q"))    # not due yet
    append_raw(d, 3, encode_line(5, AS_OF_US - 1 * MIN, b"http://a.com/z"))
    append_raw(d, 3, encode_line(5, AS_OF_US - 2 * MIN, b"http://a.com/y"))
    rep, recs, finds = run(tmp_path)
    st = rep.state
    assert [(e.uri, e.priority) for e in st.sorted_entries()] == [
        (b"http://a.com/y", 5), (b"http://a.com/z", 5), (b"http://b.com/q", 0), (b"http://b.com/p", 3)]
    assert st.counts_by_state() == {"due": 3, "waiting": 1} and st.superseded == 2
    assert [f.code for f in finds] == ["SL-SUPERSEDED"]
    # equal dates: the line read later wins
    append_raw(d, 3, encode_line(7, AS_OF_US - 5 * MIN, b"http://b.com/p"))
    rep, _, _ = run(tmp_path)
    assert rep.state.entries[b"http://b.com/p"].priority == 7


def test_replay_digest_ignores_blank_runs_and_line_order_of_distinct_uris(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    l1, l2 = encode_line(1, AS_OF_US - MIN, b"http://e/1"), encode_line(2, AS_OF_US - MIN, b"http://e/2")
    (a / "3.msg").write_bytes(b"\n\n\n" + l1 + b"\n" + l2)
    (b / "3.msg").write_bytes(l2 + l1)
    assert run(a)[0].state.digest() == run(b)[0].state.digest()


@pytest.mark.parametrize("bad", ["-1", "x", str(25 * 3600 * 1_000_000)])
def test_offset_option_is_checked(tmp_path, bad):
    from wqtool.errors import UsageError
    with pytest.raises(UsageError):
        FMT.discover([str(tmp_path)], Options(AS_OF_NS, settings={"start_date_offset_us": bad}))


def test_explicit_hour_files_and_detection(tmp_path):
    d = str(tmp_path)
    append_request(d, b"http://e.com/1", AS_OF_US - 9 * MIN)
    append_raw(d, 5, b"\n\n")
    assert FMT.detect(d).strong and FMT.detect(os.path.join(d, "3.msg")).strong
    assert not FMT.detect(os.path.join(d, "5.msg")).strong          # only blanks: the name alone
    (tmp_path / "x.msg").write_bytes(b"priority=1;key_start_date=1;uri=a\n")
    assert FMT.detect(str(tmp_path / "x.msg")) is None
    (log,) = FMT.discover([os.path.join(d, "5.msg"), os.path.join(d, "3.msg")], Options(AS_OF_NS))
    assert [os.path.basename(p) for p in FMT.files(log)] == ["5.msg", "3.msg"] and not log.is_dir
