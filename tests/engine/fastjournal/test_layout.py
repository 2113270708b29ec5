"""The struct twins of engine/fastjournal/layout.py equal the construct schemas of wqtool.formats.fastjournal."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wqtool.engine.fastjournal import layout
from wqtool.engine.fastjournal.wire import Request, encode_request
from wqtool.engine.fastjournal.writer import set_request
from wqtool.formats import fastjournal
from wqtool.formats.fastjournal import FJJ_MAGIC, FJJ_VERSION, Function, ValueType

u16, u32, u64 = (st.integers(0, (1 << n) - 1) for n in (16, 32, 64))


@given(flags=u16, seq=u32, crc=u32)
def test_segment_header(flags, seq, crc):
    raw = layout.SEGMENT_HEAD_CRC.pack(FJJ_MAGIC, FJJ_VERSION, flags, seq, crc)
    assert raw == layout.SEGMENT_HEAD.pack(FJJ_MAGIC, FJJ_VERSION, flags, seq) + layout.CRC.pack(crc)
    assert raw == fastjournal.fjj_segment_header.build(dict(version=FJJ_VERSION, flags=flags, seq=seq, crc=crc))


@given(applied=u64, request=st.binary(max_size=40), crc=u32)
def test_record(applied, request, crc):
    raw = layout.RECORD_HEAD.pack(8 + len(request), applied) + request + layout.CRC.pack(crc)
    assert raw == fastjournal.fjj_record.build(dict(applied_at=applied, request=request, crc=crc))


@given(prio=st.integers(0, 255), ksd=u64)
def test_fifo_value(prio, ksd):
    raw = layout.fifo_value(prio, ksd)
    assert raw == fastjournal.fifo_value.build(dict(priority=prio, key_start_date=ksd))
    assert layout.parse_fifo_value(raw) == (prio, ksd)


@given(uri=st.binary(max_size=255), prio=st.integers(0, 255), ksd=u64, ts=u64, ident=u16)
def test_short_set_equals_the_encoder(uri, prio, ksd, ts, ident):
    assert set_request(uri, prio, ksd, ts, identifier=ident) == encode_request(Request(
        Function.SET, ident, fastjournal.FLAG_OVERWRITE, ts, uri, value_type=ValueType.BUFFER,
        value=layout.fifo_value(prio, ksd)))


