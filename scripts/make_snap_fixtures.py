#!/usr/bin/env python3
"""Build the Snap! journal fixtures deterministically through the engine's writers.

    python scripts/make_snap_fixtures.py            # (re)write fixtures/snaplist/, fixtures/evtj/, fixtures/fastjournal/
    python scripts/make_snap_fixtures.py --check    # exit 1 if the committed corpus drifted

Each scenario is ``fixtures/<format>/<kebab-scenario>/journal/`` plus ``expected.jsonl`` (dump rows, a damage row
per error finding in place) and ``expected-verify.json`` (verdict, counts, findings, digest and replayed rows) at
the fixed instant ``AS_OF_NS``. ``fastjournal`` is wqtool's own journal of the priority FIFO, per the
unimplemented libfastjournal design (no upstream file exists to copy).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine import format as registry  # noqa: E402
from wqtool.exitcodes import CODES  # noqa: E402
from wqtool.engine.evtj.fastpath import encode_event  # noqa: E402
from tests.writers.evtj import EvtjWriter, write_conf  # noqa: E402
from wqtool.engine.fastjournal.writer import (SegmentWriter, delete_request, encode_record, mark_request,  # noqa: E402
                                              segment_header, set_request)
from wqtool.engine.fastjournal.wire import Request, encode_request  # noqa: E402
from wqtool.engine.format import Options  # noqa: E402
from wqtool.engine.serialize import finding_json  # noqa: E402
from wqtool.engine.snaplist.writer import acknowledge, append_raw, append_request, request_line  # noqa: E402
from wqtool.formats.evtj import EXTERNAL_ATTACHMENT, Status  # noqa: E402
from wqtool.formats.fastjournal import SEGMENT_SNAPSHOT, Function, fjj_segment_name  # noqa: E402

#: 2026-01-30T03:30:00Z: the current hour is 3, the previous 2.
AS_OF_S = 1_769_743_800
AS_OF_NS = AS_OF_S * 1_000_000_000
AS_OF_US = AS_OF_S * 1_000_000
MIN = 60_000_000                 # µs
HOUR = 60 * MIN
S = 1_000_000_000                # ns

# ====================================================================== list client journal (Part B)


def _req(d, uri: bytes, minutes_before: int, **kw):
    return append_request(d, uri, AS_OF_US - minutes_before * MIN, **kw)


def sl_current_hour(d):
    """The list plugin's own traffic in the previous and current hour: requests at several priorities (one written
    while the site was updating: +1 h, priority 180), the first lines of each file acknowledged."""
    a = _req(d, b"http://example.com/", 50, priority=10)
    _req(d, b"http://example.com/blog", 45, priority=10)
    _req(d, b"http://shop.example.net/cart", 40, priority=5)
    b = _req(d, b"http://example.com/news", 20, priority=2)
    _req(d, b"http://example.com/about", 15, priority=10, updating=True)
    _req(d, b"http://shop.example.net/item/7", 5, priority=1)
    _req(d, b"http://example.com/later", 1, priority=10, offset_us=20 * MIN)
    for hour, off, line in (a, b):
        acknowledge(os.path.join(d, f"{hour}.msg"), off, len(line))


def sl_torn_final_line(d):
    """The writer died mid-write: the current hour's file ends inside a line (exit 1)."""
    _req(d, b"http://example.com/one", 10)
    _req(d, b"http://example.com/two", 9)
    _h, line = request_line(b"http://example.com/three", AS_OF_US - 8 * MIN)
    append_raw(d, 3, line[:30])


def sl_missing_field(d):
    """Lines the reader skips ('required message parameter is missing'): no key_start_date, an empty uri; the
    lines before and after them were acknowledged (upstream moves on past a skipped line)."""
    h, off, line = _req(d, b"http://example.com/a", 10)
    acknowledge(os.path.join(d, f"{h}.msg"), off, len(line))
    append_raw(d, 3, b"priority=10;uri=http://example.com/no-date\n")
    append_raw(d, 3, b"priority=10;key_start_date=%d;uri=\n" % (AS_OF_US - 9 * MIN))
    h, off, line = _req(d, b"http://example.com/b", 8)
    acknowledge(os.path.join(d, f"{h}.msg"), off, len(line))
    _req(d, b"http://example.com/c", 7)


def sl_bad_value(d):
    """Values the list plugin never writes: priority 300, a key_start_date that is not a number."""
    append_raw(d, 3, b"priority=300;key_start_date=%d;uri=http://example.com/p\n" % (AS_OF_US - 10 * MIN))
    append_raw(d, 3, b"priority=5;key_start_date=12ab;uri=http://example.com/d\n")
    _req(d, b"http://example.com/ok", 5)


def sl_uri_semicolon(d):
    """A raw ';' in a uri (the writer replaces it with %3A): upstream's tokenizer cuts the uri there."""
    append_raw(d, 3, b"priority=5;key_start_date=%d;uri=http://example.com/a;b=c\n" % (AS_OF_US - 10 * MIN))
    _req(d, b"http://example.com/x;y", 9)


def sl_non_ascii(d):
    """A UTF-8 page key (passed through by the writer) and a stray control byte."""
    _req(d, "http://example.com/café".encode(), 10)
    append_raw(d, 3, b"priority=5;key_start_date=%d;uri=http://example.com/tab\there\n" % (AS_OF_US - 9 * MIN))


def sl_noncanonical(d):
    """Lines in another form than the writer's: an unknown name first, fields reordered with spaces; a name
    repeated (the last wins)."""
    ksd = AS_OF_US - 10 * MIN
    append_raw(d, 3, b"origin=cli;key_start_date=%d; priority=5 ;uri=http://example.com/n\n" % ksd)
    append_raw(d, 3, b"priority=1;priority=7;key_start_date=%d;uri=http://example.com/r\n" % ksd)


def sl_wrong_hour(d):
    """Requests whose start date is in hour 5 written into the current hour's file."""
    _req(d, b"http://example.com/here", 10)
    for i in range(2):
        _h, line = request_line(b"http://example.com/elsewhere%d" % i, AS_OF_US + 2 * HOUR + i * MIN)
        append_raw(d, 3, line)


def sl_stale_hours(d):
    """Hour files the reader should have unlinked: 0.msg still holds overdue pending lines, 1.msg is exhausted."""
    _req(d, b"http://example.com/overdue-1", 200)
    _req(d, b"http://example.com/overdue-2", 199)
    h, off, line = _req(d, b"http://example.com/done", 130)
    acknowledge(os.path.join(d, f"{h}.msg"), off, len(line))
    _req(d, b"http://example.com/now", 5)


def sl_ack_out_of_order(d):
    """The second of three lines acknowledged, the first not: a blank run after a pending line."""
    _req(d, b"http://example.com/first", 10)
    h, off, line = _req(d, b"http://example.com/second", 9)
    acknowledge(os.path.join(d, f"{h}.msg"), off, len(line))
    _req(d, b"http://example.com/third", 8)


def sl_foreign_and_temp(d):
    """A foreign file and the temp file of an interrupted wqtool pack next to the hour files."""
    _req(d, b"http://example.com/a", 10)
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a journal file\n")
    with open(os.path.join(d, ".3.msg.wqtool-pack"), "wb") as f:
        f.write(b"priority=10;key_start_date=1;uri=http://example.com/a\n")


def sl_superseded(d):
    """The same page requested three times: the largest key_start_date wins, whatever the order read."""
    _req(d, b"http://example.com/page", 70, priority=9)      # hour 2
    _req(d, b"http://example.com/page", 10, priority=3)      # hour 3: the largest date
    append_raw(d, 3, request_line(b"http://example.com/page", AS_OF_US - 30 * MIN, priority=1)[1])
    _req(d, b"http://example.com/other", 5)


SNAPLIST = {
    "current-hour": sl_current_hour, "torn-final-line": sl_torn_final_line, "missing-field": sl_missing_field,
    "bad-value": sl_bad_value, "uri-semicolon": sl_uri_semicolon, "non-ascii": sl_non_ascii,
    "noncanonical": sl_noncanonical, "wrong-hour": sl_wrong_hour, "stale-hours": sl_stale_hours,
    "ack-out-of-order": sl_ack_out_of_order, "foreign-and-temp": sl_foreign_and_temp, "superseded": sl_superseded,
}

# ====================================================================== prinbee EVTJ (Part C)
T_EV = AS_OF_NS - 3600 * S        # an hour before --as-of
SPEC_TIME = 1_769_740_800_123_456_789


def _raw(status: int, rid: bytes, time_ns: int, data: bytes, *, external=()) -> bytes:
    """An event built by hand (for damage): the external attachment ids first, then one inline attachment."""
    start = 32 + 4 * (len(external) + 1) + len(rid)
    offsets = [EXTERNAL_ATTACHMENT | i for i in external] + [start]
    return encode_event(status, rid, time_ns // S, time_ns % S, offsets, data, "little")


def _ev(d, n=0, **kw) -> EvtjWriter:
    return EvtjWriter(os.path.join(d, f"journal-{n}.events"), **kw)


def ev_spec_c4_example(d):
    """The spec's example (C.4) byte for byte: one READY event, id 'this-id', one 20-byte inline attachment
    00..13, time 1769740800.123456789."""
    with _ev(d) as w:
        w.add(b"this-id", SPEC_TIME, [bytes(range(20))])


def ev_live_and_done(d):
    """A journal in use: journal.conf, events in every status across two files, an external attachment (with an
    inline one: the loader refuses events without inline data), counters.seq."""
    write_conf(d, {"maximum_number_of_files": 3, "sync": "full", "inline_attachment_size_threshold": 256})
    with _ev(d, 0) as w:
        a = w.add(b"req-1", T_EV, [b"first payload"], threshold=256)
        w.add(b"req-2", T_EV + 1, [b"small", b"L" * 300], threshold=256)
        c = w.add(b"req-3", T_EV + 2, [b"done"], threshold=256)
        w.add(b"req-4", T_EV + 3, [b"failed"], status=Status.FAILED, threshold=256)
        w.set_status(a, Status.FORWARDED)
        w.set_status(c, Status.COMPLETED)
    with _ev(d, 1) as w:
        b = w.add(struct.pack(">Q", 77), T_EV + 10, [b"binary id"], threshold=256)
        w.add(b"req-6", T_EV + 11, [b"x"], threshold=256)
        w.set_status(b, Status.ACKNOWLEDGED)
    with open(os.path.join(d, "counters.seq"), "wb") as f:
        f.write(struct.pack("<QQ", 6, 0))


def ev_bad_header(d):
    """journal-1.events does not start with EVTJ 1.0: the loader skips the whole file."""
    with _ev(d, 0) as w:
        w.add(b"kept", T_EV, [b"ok"])
    with _ev(d, 1, header=False) as w:
        w.raw(b"EVTX\x01\x00\x00\x00")
        w.add(b"lost", T_EV + 1, [b"never loaded"])


def ev_event_magic(d):
    """Junk where an event should start, with a valid event after it: the loader stops and never sees it."""
    with _ev(d) as w:
        w.add(b"before", T_EV, [b"ok"])
        w.raw(b"xx" + bytes(30))
        w.add(b"after", T_EV + 1, [b"lost"])


def ev_truncated(d):
    """A next event header cut short after 10 bytes (a torn append)."""
    with _ev(d) as w:
        w.add(b"whole", T_EV, [b"ok"])
        w.raw(_raw(1, b"torn", T_EV + 1, b"x")[:10])


def ev_unknown_status(d):
    """Status 7 in the second of three events."""
    with _ev(d) as w:
        w.add(b"one", T_EV, [b"a"])
        w.raw(_raw(7, b"two", T_EV + 1, b"b"))
        w.add(b"three", T_EV + 2, [b"c"])


def ev_empty_id(d):
    """request_id_size 0 in the last event."""
    with _ev(d) as w:
        w.add(b"one", T_EV, [b"a"])
        w.raw(encode_event(1, b"", T_EV // S, 0, [36], b"data", "little"))


def ev_size_beyond_file(d):
    """The last event's size runs past the end of the file (the writer died mid-event)."""
    with _ev(d) as w:
        w.add(b"one", T_EV, [b"a"])
        w.raw(_raw(1, b"two", T_EV + 1, b"0123456789")[:-6])


def ev_no_inline_data(d):
    """An intact event whose only attachment is external: no inline data, so the loader stops; the event after it
    is never loaded."""
    with _ev(d) as w:
        w.add(b"one", T_EV, [b"a"])
        w.raw(encode_event(1, b"ext-only", T_EV // S, 5, [EXTERNAL_ATTACHMENT | 1], b"", "little"))
        w.add(b"three", T_EV + 9, [b"c"])
    with open(os.path.join(d, "1.bin"), "wb") as f:
        f.write(b"the external attachment")


def ev_future_time(d):
    """An event stamped a minute after --as-of (more than the loader's 5 s)."""
    with _ev(d) as w:
        w.add(b"now", T_EV, [b"a"])
        w.add(b"future", AS_OF_NS + 60 * S, [b"b"])


def ev_status_backwards(d):
    """req-1 ACKNOWLEDGED in journal-0, READY again in journal-1: the loader indexes the later one."""
    with _ev(d, 0) as w:
        w.add(b"req-1", T_EV, [b"a"], status=Status.ACKNOWLEDGED)
    with _ev(d, 1) as w:
        w.add(b"req-1", T_EV + 5, [b"a again"], status=Status.READY)


def ev_duplicates(d):
    """The same request id twice (both READY) and two ids with the same time."""
    with _ev(d) as w:
        w.add(b"dup", T_EV, [b"a"])
        w.add(b"dup", T_EV + 1, [b"b"])
        w.add(b"same-time-1", T_EV + 7, [b"c"])
        w.add(b"same-time-2", T_EV + 7, [b"d"])


def ev_bad_attachment_offset(d):
    """An inline attachment offset pointing past the event's end."""
    with _ev(d) as w:
        w.raw(encode_event(1, b"bad-off", T_EV // S, 0, [500], b"data", "little"))
        w.add(b"fine", T_EV + 1, [b"ok"])


def ev_missing_attachment(d):
    """A live event whose external attachment 9.bin is missing."""
    with _ev(d) as w:
        w.raw(_raw(1, b"needs-9", T_EV, b"x", external=(9,)))


def ev_directory_oddities(d):
    """journal.conf with an unknown name and an out-of-range value, a file beyond maximum_number_of_files, a foreign
    file."""
    with open(os.path.join(d, "journal.conf"), "w") as f:
        f.write("# prinbee journal\nmaximum_number_of_files=2\nmaximum_events=5\ncolour=blue\n")
    with _ev(d, 0) as w:
        w.add(b"a", T_EV, [b"a"])
    with _ev(d, 5) as w:
        w.add(b"never-read", T_EV, [b"b"])
    with open(os.path.join(d, "README"), "w") as f:
        f.write("hello\n")


def ev_compressed_end_marker(d):
    """A compressed file: events, then the 00 00 end marker, then the stale bytes compression left behind."""
    with _ev(d) as w:
        w.add(b"kept-1", T_EV, [b"a"])
        w.add(b"kept-2", T_EV + 1, [b"b"])
        w.end_marker()
        w.raw(b"v\x04\x05old event bytes")


EVTJ = {
    "spec-c4-example": ev_spec_c4_example, "live-and-done": ev_live_and_done, "bad-header": ev_bad_header,
    "event-magic": ev_event_magic, "truncated": ev_truncated, "unknown-status": ev_unknown_status,
    "empty-id": ev_empty_id, "size-beyond-file": ev_size_beyond_file, "no-inline-data": ev_no_inline_data,
    "future-time": ev_future_time, "status-backwards": ev_status_backwards, "duplicates": ev_duplicates,
    "bad-attachment-offset": ev_bad_attachment_offset, "missing-attachment": ev_missing_attachment,
    "directory-oddities": ev_directory_oddities, "compressed-end-marker": ev_compressed_end_marker,
}

# ====================================================================== fastjournal (wqtool's, per the design)
A = AS_OF_US - 10 * MIN          # applied_at base


def _seg(d, seq, flags=0) -> SegmentWriter:
    return SegmentWriter(os.path.join(d, fjj_segment_name(seq)), seq, flags=flags)


def _history(w: SegmentWriter, base: int = A) -> None:
    w.append(base, set_request(b"http://example.com/a", 10, AS_OF_US - 5 * MIN, 100))
    w.append(base + 1, set_request(b"http://example.com/b", 1, AS_OF_US + HOUR, 100))
    w.append(base + 2, set_request(b"http://shop.example.net/c", 5, AS_OF_US - MIN, 100))


def fj_history(d):
    """A server's history over two segments: adds, an update, a worked-on mark, a delete (tombstone), a complete
    delete."""
    with _seg(d, 1) as w:
        _history(w)
        w.append(A + 3, set_request(b"http://example.com/a", 2, AS_OF_US - 4 * MIN, 105))
        w.append(A + 4, mark_request(b"http://shop.example.net/c", 100, 30 * MIN))
    with _seg(d, 2) as w:
        w.append(A + 5, set_request(b"http://example.com/gone", 3, AS_OF_US, 100))
        w.append(A + 6, delete_request(b"http://example.com/gone", 100))
        w.append(A + 7, set_request(b"http://example.com/tmp", 3, AS_OF_US, 100))
        w.append(A + 8, delete_request(b"http://example.com/tmp", 100, complete=True))


def fj_torn_tail(d):
    """The newest segment ends inside a record (the server died mid-write: never acknowledged)."""
    with _seg(d, 1) as w:
        _history(w)
        w.raw(encode_record(A + 3, set_request(b"http://example.com/torn", 1, AS_OF_US, 100))[:25])


def fj_crc_mid_segment(d):
    """A flipped byte in the second of three records: the CRC fails, valid records resume after it."""
    with _seg(d, 1) as w:
        w.append(A, set_request(b"http://example.com/1", 1, AS_OF_US, 100))
        rec = bytearray(encode_record(A + 1, set_request(b"http://example.com/2", 1, AS_OF_US, 100)))
        rec[30] ^= 0x20
        w.raw(bytes(rec))
        w.append(A + 2, set_request(b"http://example.com/3", 1, AS_OF_US, 100))


def fj_bad_size(d):
    """A record size of 3 (smaller than any request) in the middle of the segment."""
    with _seg(d, 1) as w:
        w.append(A, set_request(b"http://example.com/1", 1, AS_OF_US, 100))
        w.raw(struct.pack(">IQ", 3, A) + b"abc" + bytes(4))
        w.append(A + 2, set_request(b"http://example.com/3", 1, AS_OF_US, 100))


def fj_bad_header(d):
    """Segment 1 with a damaged header (its CRC fails), segment 2 fine."""
    with _seg(d, 1) as w:
        w.append(A, set_request(b"http://example.com/1", 1, AS_OF_US, 100))
    with open(os.path.join(d, fjj_segment_name(1)), "r+b") as f:
        f.seek(5)
        f.write(b"\x07")
    with _seg(d, 2) as w:
        w.append(A + 1, set_request(b"http://example.com/2", 1, AS_OF_US, 100))


def fj_bad_request(d):
    """An intact record holding a PING: not a change the server journals."""
    with _seg(d, 1) as w:
        _history(w)
        w.append(A + 3, encode_request(Request(Function.PING)))


def fj_not_applied(d):
    """A SET older than the entry it would update, and a mark of an entry that does not exist."""
    with _seg(d, 1) as w:
        _history(w)
        w.append(A + 3, set_request(b"http://example.com/a", 1, AS_OF_US, 50))
        w.append(A + 4, mark_request(b"http://example.com/missing", 100, MIN))


def fj_time_backwards(d):
    """A record applied before the previous one (the server's clock went back)."""
    with _seg(d, 1) as w:
        _history(w)
        w.append(A - HOUR, set_request(b"http://example.com/late", 1, AS_OF_US, 100))


def fj_interrupted_pack(d):
    """A pack interrupted after its snapshot (segment 3) was renamed into place: segments 1 and 2 are superseded;
    and a temp file of a later interrupted pack."""
    with _seg(d, 1) as w:
        _history(w)
    with _seg(d, 2) as w:
        w.append(A + 3, delete_request(b"http://example.com/b", 100))
    with _seg(d, 3, SEGMENT_SNAPSHOT) as w:
        w.append(A + 4, set_request(b"http://example.com/a", 10, AS_OF_US - 5 * MIN, 100))
        w.append(A + 4, set_request(b"http://shop.example.net/c", 5, AS_OF_US - MIN, 100))
        w.append(A + 4, delete_request(b"http://example.com/b", 100))
    with open(os.path.join(d, ".000000004.fjj.tmp"), "wb") as f:
        f.write(segment_header(4, SEGMENT_SNAPSHOT))


def fj_segment_gap(d):
    """Segments 1 and 3 (2 is missing) and a foreign file."""
    with _seg(d, 1) as w:
        _history(w)
    with _seg(d, 3) as w:
        w.append(A + 5, set_request(b"http://example.com/z", 0, AS_OF_US, 100))
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a segment\n")


FASTJOURNAL = {
    "history": fj_history, "torn-tail": fj_torn_tail, "crc-mid-segment": fj_crc_mid_segment,
    "bad-size": fj_bad_size, "bad-header": fj_bad_header, "bad-request": fj_bad_request,
    "not-applied": fj_not_applied, "time-backwards": fj_time_backwards, "interrupted-pack": fj_interrupted_pack,
    "segment-gap": fj_segment_gap,
}

CORPUS = {"snaplist": SNAPLIST, "evtj": EVTJ, "fastjournal": FASTJOURNAL}
README_TITLE = {
    "snaplist": "snapwebsites list client journal fixtures (hour files `0.msg` … `23.msg`)",
    "evtj": "prinbee event journal (EVTJ) fixtures",
    "fastjournal": "fastjournal priority-FIFO journal fixtures (wqtool's own journal, per the unimplemented "
                   "libfastjournal design)",
}


# ====================================================================== expectations
def expected(fmt_name: str, scenario_dir: str) -> tuple[str, dict]:
    """(expected.jsonl, expected-verify.json) of one scenario, paths relative to the repo root (cwd)."""
    fmt = registry.get(fmt_name)
    jdir = os.path.join(scenario_dir, "journal")
    opts = Options(AS_OF_NS)
    logs = fmt.discover([jdir], opts)
    rows = []
    out = {"format": fmt_name, "as_of_ns": AS_OF_NS, "logs": []}
    for log in logs:
        run = fmt.run(log, opts)
        for ev in run.events():
            if ev.__class__ is fmt.record_cls:
                rows.append(fmt.record_view.row(ev, "base64"))
            elif ev.severity == "error":
                rows.append(fmt.record_view.damage_row(ev))
        r = run.report
        view = fmt.state_view(r.state, log)
        out["logs"].append({
            "root": r.root, "files": fmt.files(log), "verdict": r.verdict.label, "exit_code": CODES.of(r.verdict),
            "records": r.records, "bytes": r.bytes, "counts": dict(sorted(r.counts.items())),
            "last_good": None if r.last_good is None else {"file": r.last_good[0], "offset": r.last_good[1]},
            "findings": [finding_json(f) for f in r.findings],
            "summary": view.summary(), view.rows_key: list(view.rows()),
        })
    return "".join(json.dumps(r) + "\n" for r in rows), out


def build(root: str) -> None:
    for fmt_name, scenarios in CORPUS.items():
        froot = os.path.join(root, fmt_name)
        os.makedirs(froot, exist_ok=True)
        for name, fn in scenarios.items():
            sd = os.path.join(froot, name)
            if os.path.exists(sd):
                shutil.rmtree(sd)
            jdir = os.path.join(sd, "journal")
            os.makedirs(jdir)
            fn(jdir)
            for n in os.listdir(jdir):
                os.chmod(os.path.join(jdir, n), 0o644)   # git keeps 644/755 only; the writer's 0600 is not kept
            jsonl, doc = expected(fmt_name, sd)
            with open(os.path.join(sd, "expected.jsonl"), "w") as f:
                f.write(jsonl)
            with open(os.path.join(sd, "expected-verify.json"), "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
        with open(os.path.join(froot, "README.md"), "w") as f:
            f.write(f"# {README_TITLE[fmt_name]}\n\nGenerated by `scripts/make_snap_fixtures.py` through the engine's "
                    "writers (do not edit by hand). Each scenario: `journal/` (the directory), `expected.jsonl` "
                    "(dump rows; a damage row per error finding), `expected-verify.json` (verdict, counts, findings, "
                    f"digest, replayed rows) at as_of_ns={AS_OF_NS} (2026-01-30T03:30:00Z).\n\n")
            for name, fn in scenarios.items():
                f.write(f"- `{name}`: {' '.join(fn.__doc__.split())}\n")


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for dp, _, files in os.walk(root):
        for n in files:
            p = os.path.join(dp, n)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed corpus drifted")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if not args.check:
        build("fixtures")
        return 0
    tmp = tempfile.mkdtemp(dir=ROOT, prefix=".fixtures-check-")
    try:
        rel = os.path.relpath(tmp, ROOT)
        build(rel)
        bad = []
        for fmt_name in CORPUS:
            got = {k: v.replace(rel.encode() + b"/" + fmt_name.encode(), b"fixtures/" + fmt_name.encode())
                   for k, v in _tree(os.path.join(rel, fmt_name)).items()}
            want = _tree(os.path.join("fixtures", fmt_name))
            bad += [f"{fmt_name}/{k}" for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)]
        for b in bad:
            print("drift:", b)
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
