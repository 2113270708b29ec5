"""The reader's framing is the construct ``record`` schema: proven over random records and random bytes.

``formats.workq.record`` (TIME, SIZE, PAYLOAD, CRC-32C) is the single truth of a record's bytes; the reader
(``engine.workq.reader``) frames records with a hand-written loop. Records built by the schema are framed by the
reader with the same offsets, lengths, times, sizes, payloads and CRCs; on arbitrary bytes after a valid prefix,
every record the reader accepts parses with the schema to the same values, and where the reader reports damage the
schema refuses the bytes at that offset with the matching error.
"""
from __future__ import annotations

import os
import tempfile

from construct import ChecksumError, ConstructError, StreamError
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.formats import workq as schema
from wqtool.formats._common import BadTimeVersion, GoTime, VarintOverflow

TIMES = st.builds(GoTime, st.integers(0, 315537897599), st.integers(0, 999_999_999),
                  st.sampled_from([-1, 0, 60, -120]))
PAYLOADS = st.binary(max_size=300)


def build(t: GoTime, payload: bytes) -> bytes:
    return schema.record.build(dict(body=dict(value=dict(time=t, size=len(payload), payload=payload))))


def _payload(rec: Record) -> bytes:
    """With decode=False the reader keeps the CRC-covered body (TIME, SIZE, PAYLOAD): the payload is its tail."""
    return bytes(rec.raw_payload[len(rec.raw_payload) - rec.size:])


def frame(data: bytes):
    """The reader's events over one segment holding ``data`` after the header (it is the newest segment)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "000000001.log"), "wb") as f:
            f.write(schema.HEADER_BYTES + data)
        [log] = discover([d])
        reader = RecordReader(log, decode=False)
        return [ev for ev in reader.events()]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TIMES, PAYLOADS), max_size=12))
def test_records_built_by_the_schema_frame_identically(recs):
    blobs = [build(t, p) for t, p in recs]
    events = frame(b"".join(blobs))
    records = [ev for ev in events if ev.__class__ is Record]
    assert [ev for ev in events if ev.__class__ is not Record and ev.severity == "error"] == []
    assert len(records) == len(recs)
    pos = schema.HEADER_SIZE
    for rec, blob, (t, p) in zip(records, blobs, recs):
        parsed = schema.record.parse(blob)
        assert (rec.offset, rec.length) == (pos, len(blob))
        assert rec.time == parsed.body.value.time == t
        assert rec.size == parsed.body.value.size == len(p)
        assert rec.crc == parsed.crc
        assert _payload(rec) == p == parsed.body.value.payload
        pos += len(blob)


_SCHEMA_ERROR = {
    "WQ-CRC": ChecksumError,
    "WQ-TRUNCATED": StreamError,
    "WQ-TIME-VERSION": BadTimeVersion,
    "WQ-SIZE-OVERFLOW": VarintOverflow,
}


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TIMES, PAYLOADS), max_size=4), st.binary(max_size=200),
       st.lists(st.integers(0, 10_000), max_size=3))
def test_on_random_bytes_reader_and_schema_agree(recs, junk, flips):
    data = bytearray(b"".join(build(t, p) for t, p in recs) + junk)
    for f in flips:
        if data:
            data[f % len(data)] ^= 1 << (f % 8)
    data = bytes(data)
    full = schema.HEADER_BYTES + data
    for ev in frame(data):
        if ev.__class__ is Record:
            parsed = schema.record.parse(full[ev.offset:ev.offset + ev.length])
            assert (parsed.body.value.time, parsed.body.value.size, parsed.crc) == (ev.time, ev.size, ev.crc)
            assert parsed.body.value.payload == _payload(ev)
        elif ev.code in _SCHEMA_ERROR:
            try:
                schema.record.parse(full[ev.offset:])
            except ConstructError as exc:
                assert isinstance(exc, _SCHEMA_ERROR[ev.code]), (ev.code, type(exc).__name__, ev.offset)
            else:
                raise AssertionError(f"the schema parses what the reader calls {ev.code} at {ev.offset}")
