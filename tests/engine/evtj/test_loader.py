"""EVTJ read exactly as prinbee's loader reads it: each stop condition made in code, with its code, offset and
verdict; truncation at every offset; the end marker; byte order; statuses moving backwards."""
from __future__ import annotations

import os
import struct

import pytest

from wqtool.engine.evtj.fastpath import encode_event
from tests.writers.evtj import EvtjWriter
from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options, get
from wqtool.formats.evtj import EXTERNAL_ATTACHMENT, Status

FMT = get("evtj")
S = 1_000_000_000
AS_OF = 1_769_743_800 * S
T = AS_OF - 3600 * S


def run(d, **extra):
    opts = Options(AS_OF, settings=extra)
    (log,) = FMT.discover([str(d)], opts)
    p = FMT.run(log, opts)
    evs = list(p.events())
    return (p.report, [e for e in evs if e.__class__ is FMT.record_cls],
            [e for e in evs if e.__class__ is not FMT.record_cls and e.code != "EVTJ-NO-CHECKSUM"])


def ev(status=1, rid=b"id", t=T, data=b"x", **kw):
    off = 32 + 4 + len(rid)
    return encode_event(status, rid, t // S, t % S, kw.pop("offsets", [off]), data, "little", **kw)


def file_of(tmp_path, *events, header=b"EVTJ\x01\x00\x00\x00"):
    p = tmp_path / "journal-0.events"
    p.write_bytes(header + b"".join(events))
    return p


GOOD = ev(rid=b"good")


@pytest.mark.parametrize("bad,code", [
    (ev(status=0), "EVTJ-UNKNOWN-STATUS"), (ev(status=5), "EVTJ-UNKNOWN-STATUS"),
    (ev(rid=b"", offsets=[36]), "EVTJ-EMPTY-ID"),
    (ev(size=1000), "EVTJ-SIZE-BEYOND-FILE"),
    (ev(magic=b"eV"), "EVTJ-EVENT-MAGIC"),
    (ev(data=b"", offsets=[EXTERNAL_ATTACHMENT | 1]), "EVTJ-NO-INLINE-DATA"),
    (ev(size=20), "EVTJ-NO-INLINE-DATA"),
    (ev(t=AS_OF + 5 * S + 1), "EVTJ-FUTURE-TIME"),
])
@pytest.mark.parametrize("followed", [False, True])
def test_each_stop_condition(tmp_path, bad, code, followed):
    file_of(tmp_path, GOOD, bad, GOOD if followed else b"")
    rep, recs, finds = run(tmp_path)
    assert [(f.code, f.offset) for f in finds] == [(code, 8 + len(GOOD))]
    assert len(recs) == 1                     # the loader never reads past the stop
    intact = code == "EVTJ-FUTURE-TIME" or (code == "EVTJ-NO-INLINE-DATA" and b"\x14\x00\x00\x00" not in bad[:8])
    if intact:
        assert rep.verdict == Verdict.INVALID_HISTORY
    elif followed and code != "EVTJ-SIZE-BEYOND-FILE":
        assert rep.verdict == Verdict.CORRUPT and finds[0].resumes_at == 8 + len(GOOD) + len(bad)
    else:
        assert rep.verdict in (Verdict.TORN_TAIL, Verdict.CORRUPT)


def test_five_seconds_ahead_is_still_loaded(tmp_path):
    file_of(tmp_path, ev(t=AS_OF + 5 * S))
    rep, recs, finds = run(tmp_path)
    assert finds == [] and len(recs) == 1


def test_truncation_at_every_offset_is_a_torn_tail(tmp_path):
    whole = GOOD + ev(rid=b"second", data=b"0123456789")
    for cut in range(len(GOOD) + 1, len(GOOD) + len(whole[len(GOOD):])):
        d = tmp_path / str(cut)
        d.mkdir()
        file_of(d, whole[:cut])
        rep, recs, finds = run(d)
        assert rep.verdict == Verdict.TORN_TAIL, cut
        assert [(f.offset, f.last_good_offset) for f in finds] == [(8 + len(GOOD), 8 + len(GOOD))], cut
        assert finds[0].code in ("EVTJ-TRUNCATED", "EVTJ-SIZE-BEYOND-FILE")


def test_bad_file_headers(tmp_path):
    for raw, why in ((b"EVT", "only 3"), (b"EVTJ\x02\x00\x00\x00", "version 2.0"), (b"evtj\x01\x00\x00\x00", "magic")):
        file_of(tmp_path, GOOD if len(raw) == 8 else b"", header=raw)
        rep, recs, finds = run(tmp_path)
        assert [f.code for f in finds] == ["EVTJ-HEADER"] and why in finds[0].message and recs == []


def test_end_marker_of_a_compressed_file(tmp_path):
    file_of(tmp_path, GOOD, b"\x00\x00", b"leftover bytes of older events.........")
    rep, recs, finds = run(tmp_path)
    assert [(f.code, f.offset) for f in finds] == [("EVTJ-END-MARKER", 8 + len(GOOD))] and rep.verdict == Verdict.CLEAN
    file_of(tmp_path, GOOD, b"\x00\x00\x01")                   # shorter than a header: still the marker
    assert [f.code for f in run(tmp_path)[2]] == ["EVTJ-END-MARKER"]


def test_statuses_move_forward_only(tmp_path):
    with EvtjWriter(str(tmp_path / "journal-0.events")) as w:
        a = w.add(b"r", T, [b"a"])
        w.set_status(a, Status.FORWARDED)
        w.add(b"r", T + 1, [b"a"], status=Status.ACKNOWLEDGED)        # forward: a duplicate, not backwards
        w.add(b"r", T + 2, [b"a"], status=Status.FORWARDED)           # backwards
        w.add(b"s", T + 3, [b"b"], status=Status.COMPLETED)
        w.add(b"s", T + 4, [b"b"], status=Status.READY)               # a completed event back to READY
    rep, recs, finds = run(tmp_path)
    assert [f.code for f in finds] == ["EVTJ-DUPLICATE-ID", "EVTJ-STATUS-BACKWARDS", "EVTJ-STATUS-BACKWARDS",
                                       "EVTJ-COMPRESSIBLE"]
    assert rep.verdict == Verdict.INVALID_HISTORY
    assert {k: Status(e.status).label for k, e in rep.state.live.items()} == {b"r": "forwarded", b"s": "ready"}


def test_live_events_in_time_order_and_the_counter(tmp_path):
    with EvtjWriter(str(tmp_path / "journal-1.events")) as w:
        w.add(b"later", T + 5, [b"x"])
    with EvtjWriter(str(tmp_path / "journal-0.events")) as w:
        w.add(b"first", T + 9, [b"x"])
        w.add(b"done", T, [b"x"], status=Status.FAILED)
    (tmp_path / "counters.seq").write_bytes(struct.pack("<QQ", 5, 1))
    rep, recs, finds = run(tmp_path)
    assert [os.path.basename(r.path) for r in recs] == ["journal-0.events", "journal-0.events", "journal-1.events"]
    assert [e.request_id for e in rep.state.sorted_events()] == [b"later", b"first"]
    assert rep.state.counter == (1 << 64) + 5


def test_byte_order_option(tmp_path):
    with EvtjWriter(str(tmp_path / "journal-0.events"), byteorder="big") as w:
        w.add(b"be", T, [b"x"])
    rep, recs, _ = run(tmp_path, evtj_byte_order="big")
    assert [r.request_id for r in recs] == [b"be"] and rep.verdict == Verdict.CLEAN
    rep, recs, finds = run(tmp_path, evtj_byte_order="little")
    assert recs == [] and finds[0].code in ("EVTJ-SIZE-BEYOND-FILE", "EVTJ-FUTURE-TIME")
    from wqtool.errors import UsageError
    with pytest.raises(UsageError):
        run(tmp_path, evtj_byte_order="pdp")


def test_attachments(tmp_path):
    file_of(tmp_path, ev(rid=b"a", data=b"xy", offsets=[EXTERNAL_ATTACHMENT | 3, 32 + 8 + 1]))
    rep, recs, finds = run(tmp_path)
    assert [f.code for f in finds] == ["EVTJ-MISSING-ATTACHMENT"] and recs[0].external_ids == (3,)
    (tmp_path / "3.bin").write_bytes(b"att")
    rep, recs, finds = run(tmp_path)
    assert finds == [] and recs[0].inline_sizes == (2,)
    file_of(tmp_path, ev(rid=b"a", data=b"xy", offsets=[38, 37]))
    assert [f.code for f in run(tmp_path)[2]] == ["EVTJ-BAD-ATTACHMENT-OFFSET"]


def test_detection(tmp_path):
    file_of(tmp_path, GOOD)
    assert FMT.detect(str(tmp_path)).strong and FMT.detect(str(tmp_path / "journal-0.events")).strong
    (tmp_path / "x").write_bytes(b"EVTX")
    assert FMT.detect(str(tmp_path / "x")) is None
