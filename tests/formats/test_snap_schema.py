"""The Snap! declarations (wqtool.formats.snaplist, .evtj, .fastjournal) are the truth: the spec's example, round trips, and every hot codec
proven equal to its schema (same values, same bytes, same accept / refuse decision)."""
from __future__ import annotations

import struct

import pytest
from construct import ConstructError, Struct, Terminated
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples

from wqtool.engine.evtj import fastpath as ev_fast
from tests.writers.evtj import EvtjWriter, build_event
from wqtool.engine.fastjournal import wire
from wqtool.engine.fastjournal.writer import encode_record, segment_header
from wqtool.engine.snaplist import fastpath as sl_fast
from wqtool.formats import evtj, fastjournal, snaplist

# the spec's C.4 example, as printed there
C4 = bytes.fromhex(
    "45 56 54 4a 01 00 00 00"
    "65 76 01 07 3f 00 00 00"
    "00 1a 7c 69 00 00 00 00 15 cd 5b 07 00 00 00 00"
    "01 00 00 00 00 00 00 00"
    "2b 00 00 00"
    "74 68 69 73 2d 69 64"
    "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13".replace(" ", ""))


# ---------------------------------------------------------------- EVTJ
def test_spec_c4_example_parses_and_builds_byte_for_byte():
    s = evtj.schemas("little")
    h = s.journal_header.parse(C4[:8])
    assert (h.major_version, h.minor_version, h.pad) == (1, 0, 0)
    e = s.event.parse(C4[8:])
    assert (e.status, e.request_id, e.size, e.tv_sec, e.tv_nsec, list(e.offsets), e.data) == \
        (evtj.Status.READY, b"this-id", 63, 1769740800, 123456789, [43], bytes(range(20)))
    built = s.event.build(dict(status=evtj.Status.READY, tv_sec=1769740800, tv_nsec=123456789, offsets=[43],
                               request_id=b"this-id", data=bytes(range(20))))
    assert s.journal_header.build({}) + built == C4


def test_spec_c4_example_from_the_writer(tmp_path):
    p = tmp_path / "journal-0.events"
    with EvtjWriter(str(p), byteorder="little") as w:
        w.add(b"this-id", 1_769_740_800_123_456_789, [bytes(range(20))])
    assert p.read_bytes() == C4


def test_the_fixture_is_the_spec_example():
    from tests.conftest import ROOT
    import os
    assert open(os.path.join(ROOT, "fixtures/evtj/spec-c4-example/journal/journal-0.events"), "rb").read() == C4


def test_big_endian_schema_swaps_the_fields():
    be = evtj.schemas("big")
    raw = be.event.build(dict(status=1, tv_sec=5, tv_nsec=6, offsets=[40], request_id=b"abcd", data=b"x"))
    assert raw[4:8] == struct.pack(">I", 41) and raw[8:16] == struct.pack(">Q", 5)
    with pytest.raises(ValueError):
        evtj.schemas("middle")


events = st.fixed_dictionaries({
    "status": st.sampled_from([s for s in evtj.Status if s != evtj.Status.UNKNOWN]),
    "request_id": st.binary(min_size=1, max_size=40),
    "tv_sec": st.integers(0, 2**64 - 1), "tv_nsec": st.integers(0, 2**64 - 1),
    "offsets": st.lists(st.integers(0, 2**32 - 1), max_size=5),
    "data": st.binary(max_size=60),
})


@settings(max_examples=examples(200), deadline=None)
@given(events, st.sampled_from(["little", "big"]))
def test_event_fast_codec_equals_the_schema(e, order):
    s = evtj.schemas(order)
    built = s.event.build(e)
    fast = ev_fast.encode_event(int(e["status"]), e["request_id"], e["tv_sec"], e["tv_nsec"], e["offsets"],
                                e["data"], order)
    assert fast == built
    h = s.event_header.parse(built[:32])
    assert ev_fast.decode_header(built, 0, order) == (h.magic, h.status, h.request_id_size, h.size, h.tv_sec,
                                                      h.tv_nsec, h.attachment_count, h.pad)
    assert ev_fast.decode_offsets(built, 32, len(e["offsets"]), order) == tuple(e["offsets"])
    assert s.event.parse(built).request_id == e["request_id"]


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(min_size=32, max_size=32), st.sampled_from(["little", "big"]))
def test_event_header_decode_equals_the_schema_on_any_bytes(raw, order):
    h = evtj.schemas(order).event_header.parse(raw)
    assert ev_fast.decode_header(raw, 0, order) == (h.magic, h.status, h.request_id_size, h.size, h.tv_sec,
                                                    h.tv_nsec, h.attachment_count, h.pad)


def test_build_event_places_inline_and_external_attachments():
    data, ext = build_event(b"id", 1_000_000_000, [b"abc", b"E" * 300, b"de"], threshold=256, external_ids=[7])
    e = evtj.schemas("little").event.parse(data)
    assert list(e.offsets) == [32 + 12 + 2, evtj.EXTERNAL_ATTACHMENT | 7, 32 + 12 + 2 + 3] and e.data == b"abcde"
    assert ext == [(7, b"E" * 300)]


# ---------------------------------------------------------------- the list journal line
uris = st.binary(min_size=1, max_size=80).filter(lambda b: b";" not in b and b"\n" not in b)


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(-(2**70), 2**70), st.integers(-(2**70), 2**70), uris)
def test_line_encoder_equals_the_schema(prio, ksd, uri):
    built = snaplist.list_line.build(dict(priority=prio, key_start_date=ksd, uri=uri))
    assert sl_fast.encode_line(prio, ksd, uri) == built
    p = snaplist.list_line.parse(built)
    assert (p.priority, p.key_start_date, p.uri) == (prio, ksd, uri)
    assert sl_fast.parse_canonical(built[:-1]) == (prio, ksd, uri)
    t = sl_fast.tokenize(built[:-1])            # upstream's tokenizer reads the writer's lines the same way
    if uri.strip(b" ") == uri and b"=" not in uri:
        assert (t.priority, t.key_start_date, t.uri) == (b"%d" % prio, b"%d" % ksd, uri)


def _schema_parse(line: bytes):
    try:
        p = snaplist.list_line.parse(line + b"\n")
    except ConstructError:
        return None
    return (p.priority, p.key_start_date, p.uri)


line_bytes = st.one_of(
    st.binary(max_size=60),
    st.builds(lambda a, b, c: b"priority=%s;key_start_date=%s;uri=%s" % (a, b, c),
              st.sampled_from([b"1", b"-2", b"", b"x", b"007", b"1 "]), st.sampled_from([b"3", b"", b"-", b"9" * 25]),
              st.binary(max_size=20)),
)


@settings(max_examples=examples(500), deadline=None)
@given(line_bytes)
def test_canonical_parse_equals_the_schema_on_any_bytes(line):
    assert sl_fast.parse_canonical(line) == _schema_parse(line)


def test_tokenizer_quirks_as_upstream():
    t = sl_fast.tokenize(b" uri = x ;priority=1;key_start_date=2")
    assert t.uri == b"" and t.missing == ["uri"]                         # the name is "uri " (not trimmed at '=')
    t = sl_fast.tokenize(b"priority=1;key_start_date=2;uri")              # no '=': name and value are the token
    assert t.uri == b"uri" and not t.missing
    t = sl_fast.tokenize(b"priority=1;;key_start_date=2;uri=a;uri=b")      # empty tokens dropped; the last wins
    assert t.uri == b"b" and t.repeated == 1
    t = sl_fast.tokenize(b"priority=1;key_start_date=2;uri=http://a/b;c=d")
    assert t.uri == b"http://a/b" and t.after_uri == b"c=d"


def test_start_hour_and_reading_order():
    assert snaplist.start_hour(1_769_740_800_000_000) == 2
    assert snaplist.start_hour(-1) == 0 and snaplist.start_hour(-25 * snaplist.US_PER_HOUR) == -1   # C++ % keeps the sign
    assert snaplist.reading_order(3)[0] == 4 and snaplist.reading_order(3)[-1] == 3
    assert snaplist.kept_hours(0) == (23, 0)


@pytest.mark.parametrize("uri,domain", [
    (b"http://example.com/a", b"example.com"), (b"https://user:pw@Example.COM:8080/x?q", b"example.com"),
    (b"http://[::1]:80/", b"[::1]"), (b"example.org/page", b"example.org"), (b"plain", b"plain"),
])
def test_domain_of(uri, domain):
    assert snaplist.domain_of(uri) == domain


# ---------------------------------------------------------------- the design's FJ / JR messages
def _flags_dict(v: int) -> dict:
    return dict(fastjournal.fj_flags.parse(v.to_bytes(2, "big")))


requests = st.builds(
    lambda fn, ident, flags, ts, key, timeout, count, upper, value: wire.Request(
        fn, ident, flags, ts, key, timeout, count if (flags & fastjournal.QUERY_MASK) == 1 << 7 else None,
        upper if (flags & fastjournal.QUERY_MASK) == 1 << 7 else None,
        value[0] if value else None, value[1] if value else None),
    st.sampled_from(list(fastjournal.Function)), st.integers(0, 0xFFFF),
    st.integers(0, 0x1FFF).map(lambda f: f & ~(fastjournal.FLAG_KEY16 | fastjournal.VALUE_SIZE_MASK | fastjournal.FLAG_TIMEOUT)),
    st.integers(0, 2**64 - 1), st.binary(max_size=300), st.one_of(st.none(), st.integers(0, 2**64 - 1)),
    st.integers(0, 0xFFFF), st.binary(max_size=20),
    st.one_of(st.none(), st.tuples(st.sampled_from(list(fastjournal.ValueType)), st.binary(max_size=300))))


_ONE_REQUEST = Struct("request" / fastjournal.fj_request, Terminated)      # exactly one message, nothing after it


def _schema_request(b: bytes):
    try:
        return _ONE_REQUEST.parse(b).request
    except ConstructError:
        return None


@settings(max_examples=examples(300), deadline=None)
@given(requests)
def test_request_codec_equals_the_schema(r):
    raw = wire.encode_request(r)
    p = fastjournal.fj_request.parse(raw)
    assert fastjournal.fj_request.build(p) == raw
    assert wire.frame_request(raw) == len(raw)
    d = wire.decode_request(raw)
    assert (d.function, d.identifier, d.flags, d.timestamp, d.key, d.timeout, d.count, d.upper_key) == \
        (p.function, p.identifier, int.from_bytes(fastjournal.fj_flags.build(p.flags), "big"), p.timestamp, p.key,
         p.timeout, p.count, p.upper_key)
    assert (d.value_type, d.value) == ((p.value.type, p.value.data) if p.value is not None else (None, None))
    for cut in range(len(raw)):                  # every prefix: more bytes needed, never a wrong frame
        assert wire.frame_request(raw[:cut]) is None


@settings(max_examples=examples(600), deadline=None)
@given(st.one_of(st.binary(max_size=40), requests.map(wire.encode_request).flatmap(
    lambda b: st.tuples(st.integers(0, len(b) - 1), st.integers(0, 255)).map(
        lambda t: b[:t[0]] + bytes([t[1]]) + b[t[0] + 1:]))))
def test_request_decoder_accepts_exactly_what_the_schema_accepts(raw):
    try:
        n = wire.frame_request(raw)
        ours = wire.decode_request(raw, 0, n) if n == len(raw) else None
    except (wire.WireError, wire.BadRequest):
        ours = None
    theirs = _schema_request(raw)
    assert (ours is None) == (theirs is None), raw
    if ours is not None:
        assert (ours.function, ours.key, ours.value) == (theirs.function, theirs.key,
                                                         theirs.value.data if theirs.value else None)


replies = st.builds(
    lambda ident, ts, timeout, error, pairs: wire.Reply(ident, 0, ts, timeout, error, pairs),
    st.integers(0, 0xFFFF), st.integers(0, 2**64 - 1), st.one_of(st.none(), st.integers(0, 2**64 - 1)),
    st.binary(max_size=300),
    st.one_of(st.none(), st.lists(st.tuples(st.binary(max_size=20), st.just(1), st.binary(max_size=20)),
                                  max_size=4),
              st.lists(st.tuples(st.binary(max_size=20), st.none(), st.none()), max_size=4)))


@settings(max_examples=examples(300), deadline=None)
@given(replies)
def test_reply_codec_equals_the_schema(r):
    raw = wire.encode_reply(r)
    p = fastjournal.jr_reply.parse(raw)
    assert fastjournal.jr_reply.build(p) == raw
    assert wire.frame_reply(raw) == len(raw)
    d = wire.decode_reply(raw)
    assert (d.identifier, d.timestamp, d.timeout, d.error) == (p.identifier, p.timestamp, p.timeout, p.error)
    want = None if p.pairs is None else [(x.key, x.value.type if x.value else None, x.value.data if x.value else None)
                                         for x in p.pairs]
    assert d.pairs == want
    for cut in range(len(raw)):
        assert wire.frame_reply(raw[:cut]) is None


def test_flags_bits_are_the_designs():
    f = _flags_dict(fastjournal.FLAG_KEY16 | 2 << 1 | fastjournal.FLAG_TIMEOUT | fastjournal.FLAG_OVERWRITE | 1 << 7 | fastjournal.FLAG_PERSIST
                    | fastjournal.FLAG_DATA | fastjournal.FLAG_PERSIST_AGAIN)
    assert f["key_size16"] and f["value_size"] == fastjournal.SizeWidth.U16 and f["timeout"] and f["overwrite"]
    assert f["query"] == fastjournal.Query.RANGE and f["persist"] and f["data"] and f["persist_again"]
    assert not f["listen"] and not f["worked_on"] and not f["update_timeout"]
    with pytest.raises(ConstructError):
        fastjournal.fj_flags.parse(b"\x20\x00")           # bit 13: reserved [decided]
    with pytest.raises(wire.WireError):
        wire.frame_request(b"FJ\x00\x01\x00\x02\x00\x01\x80\x00" + bytes(8) + b"\x00")


def test_value_limit_and_magic_are_stream_errors():
    with pytest.raises(wire.WireError) as e:
        wire.frame_request(b"XX" + bytes(30))
    assert e.value.error == fastjournal.FjError.MAGIC
    big = b"FJ\x00\x01\x00\x02\x00\x01" + (3 << 1).to_bytes(2, "big") + bytes(8) + b"\x00" \
        + (fastjournal.MAX_VALUE_SIZE + 1).to_bytes(4, "big")
    with pytest.raises(wire.WireError) as e:
        wire.frame_request(big)
    assert e.value.error == fastjournal.FjError.TOO_LARGE


def test_fifo_value_layout():
    assert fastjournal.fifo_value.build(dict(priority=3, key_start_date=99)) == b"\x03" + (99).to_bytes(8, "big")


# ---------------------------------------------------------------- the FJJL journal
@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 0xFFFF), st.integers(0, 2**64 - 1), requests)
def test_journal_writer_equals_the_schema(seq, flags, at, r):
    h = segment_header(seq, flags)
    p = fastjournal.fjj_segment_header.parse(h)
    assert (p.version, p.flags, p.seq) == (fastjournal.FJJ_VERSION, flags, seq)
    req = wire.encode_request(r)
    rec = encode_record(at, req)
    q = fastjournal.fjj_record.parse(rec)
    assert (q.applied_at, q.request, q.size) == (at, req, 8 + len(req))
    assert fastjournal.fjj_record.build(dict(applied_at=at, request=req, crc=q.crc)) == rec
