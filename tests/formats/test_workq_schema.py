"""The construct schemas against the upstream vectors of docs/formats (workq-cmdlog.md section 5)."""
from __future__ import annotations

import pytest
from construct import ChecksumError, ConstError, StreamError, TerminatedError
from hypothesis import given, strategies as st

from wqtool.formats import workq
from wqtool.formats._common import (CRC32C_CHECK, GO_ZERO_TIME, UVarInt, ZVarInt, BadTimeVersion, GoTime,
                                    UnknownEnumValue, VarintOverflow, crc32c, crc32c_reference, go_time)
from wqtool.formats.workq import CmdType

ID = "61a444a0612841c08078cc757d3bd2d8"
VECTORS = {
    CmdType.ADD: "0161a444a0612841c08078cc757d3bd2d80470696e67e807e0d403140301016101000000000000000000000000ffff"
                 "010000000ecfd1eba000000000ffff",
    CmdType.SCHEDULE: "0261a444a0612841c08078cc757d3bd2d80470696e67e807e0d4031403010161010000000ecff8ec0000000000ffff"
                      "010000000ecfd1eba000000000ffff",
    CmdType.COMPLETE: "0361a444a0612841c08078cc757d3bd2d80161",
    CmdType.FAIL: "0461a444a0612841c08078cc757d3bd2d80161",
    CmdType.DELETE: "0561a444a0612841c08078cc757d3bd2d8",
    CmdType.EXPIRE: "0661a444a0612841c08078cc757d3bd2d8",
    CmdType.START_ATTEMPT: "0761a444a0612841c08078cc757d3bd2d8",
    CmdType.TIMEOUT_ATTEMPT: "0861a444a0612841c08078cc757d3bd2d8",
}
CREATED = GoTime(63616183200, 0, -1)      # 2016-12-01T10:00:00Z
SCHEDULED = GoTime(63618739200, 0, -1)    # 2016-12-31T00:00:00Z


@pytest.mark.parametrize("cmd", list(CmdType), ids=lambda c: c.label)
def test_upstream_payload_vectors_parse_and_build_byte_exact(cmd):
    raw = bytes.fromhex(VECTORS[cmd])
    obj = workq.payload.parse(raw)
    assert obj.cmd is cmd
    assert obj.body.job_id.hex() == ID
    assert workq.payload.build(obj) == raw
    if cmd in (CmdType.ADD, CmdType.SCHEDULE):
        b = obj.body
        assert (b.name, b.ttr, b.ttl, b.priority, b.max_attempts, b.max_fails, b.payload) == \
            (b"ping", 1000, 60000, 10, 3, 1, b"a")
        assert b.created == CREATED
        assert b.time == (GO_ZERO_TIME if cmd is CmdType.ADD else SCHEDULED)
        assert len(raw) == 62
        assert b.created.isoformat() == "2016-12-01T10:00:00Z"
    if cmd in (CmdType.COMPLETE, CmdType.FAIL):
        assert obj.body.result == b"a"


def test_name_and_payload_field_vectors():
    assert workq.job_spec.subcons[1].build(b"ping") == bytes.fromhex("0470696e67")
    assert workq.job_spec.subcons[7].build(b"pay") == bytes.fromhex("03706179")


def test_record_crc_vector():
    raw = bytes.fromhex("010000000ecff4225100000000ffff" "01" "61" "d1221c32")
    rec = workq.record.parse(raw)
    assert rec.crc == 3508673586 == 0xD1221C32
    assert rec.body.value.payload == b"a"
    assert rec.body.value.time.unix_ns == 1482828625 * 10**9
    built = workq.record.build(dict(body=dict(value=dict(time=rec.body.value.time, size=1, payload=b"a"))))
    assert built == raw


def test_record_with_wrong_crc_is_refused():
    # the "invalid input" vector of upstream record_test.go: not a valid CRC even before its damage
    raw = bytes.fromhex("010000000ecff41f522b351870ffff" "01" "61" "22c25e2b")
    with pytest.raises(ChecksumError):
        workq.record.parse(raw)
    assert crc32c(raw[:17]) == 0x0E1319C1


LIVE_RECORDS = [  # spec 5.4: records written by a live workq-server 0.2.0
    ("010000000ee2941ceb3287177cffff 41 01 00000000000040008000000000000001 02 7131 8827 80dddb01 0a 00 00 05 "
     "68656c6c6f 01000000000000000000000000ffff 010000000ee2941ceb3279bafaffff 5f3b6a63", CmdType.ADD, 85),
    ("010000000ee2941ced03f99784ffff 40 02 00000000000040008000000000000005 02 7133 e807 e0d403 00 00 00 05 "
     "6c61746572 010000000ee2942afd00000000ffff 010000000ee2941ced03f7df73ffff 2a9e2ca5", CmdType.SCHEDULE, 84),
    ("010000000ee2941ced15ec8443ffff 11 07 00000000000040008000000000000001 3997c2e5", CmdType.START_ATTEMPT, 37),
    ("010000000ee2941ced27db6acfffff 16 03 00000000000040008000000000000001 04 646f6e65 dfef4145", CmdType.COMPLETE, 42),
    ("010000000ee2941cee101d57e5ffff 16 04 00000000000040008000000000000002 04 6f6f7073 9c0d5bae", CmdType.FAIL, 42),
    ("010000000ee2941cee220ae8dcffff 11 05 00000000000040008000000000000004 97cc6e3f", CmdType.DELETE, 37),
    ("010000000ee2941cf0162eab26ffff 11 06 00000000000040008000000000000006 a9278088", CmdType.EXPIRE, 37),
    ("010000000ee2941cef3a12d6c7ffff 11 08 00000000000040008000000000000007 23b0e4ce", CmdType.TIMEOUT_ATTEMPT, 37),
]


@pytest.mark.parametrize("hexrec,cmd,length", LIVE_RECORDS, ids=[r[1].label for r in LIVE_RECORDS])
def test_live_server_records(hexrec, cmd, length):
    raw = bytes.fromhex(hexrec.replace(" ", ""))
    assert len(raw) == length
    rec = workq.record.parse(raw)
    p = workq.payload.parse(rec.body.value.payload)
    assert p.cmd is cmd
    assert workq.record.build(dict(body=dict(value=rec.body.value))) == raw
    assert rec.body.value.time.zone == -1


def test_live_add_field_walk():
    raw = bytes.fromhex(LIVE_RECORDS[0][0].replace(" ", ""))
    rec = workq.record.parse(raw)
    assert rec.body.value.time.isoformat() == "2026-11-21T23:14:51.847714172Z"
    b = workq.payload.parse(rec.body.value.payload).body
    assert (b.name, b.ttr, b.ttl, b.priority, b.payload) == (b"q1", 5000, 3_600_000, 5, b"hello")
    assert b.created.isoformat() == "2026-11-21T23:14:51.846838522Z"
    assert b.time.is_zero


def test_segment_header():
    assert workq.segment_header.build({}) == bytes.fromhex("7771777100000001") == workq.HEADER_BYTES
    workq.segment_header.parse(workq.HEADER_BYTES)
    with pytest.raises(ConstError):
        workq.segment_header.parse(b"workqbad")
    with pytest.raises(ConstError):
        workq.segment_header.parse(bytes.fromhex("7771777100000002"))
    with pytest.raises(StreamError):
        workq.segment_header.parse(b"wqwq\x00")


def test_captain_fixture_framing():
    """int/captain/test/cursor-next/000000001.log: three raw captain records (payloads '1', '2', '3')."""
    seg = bytes.fromhex("7771777100000001 010000000ed007cfd730c21cbfffff 01 31 7e0a1267 010000000ed007cfd730c278e6ffff "
                        "01 32 115af4c2 010000000ed007cfd730c28888ffff 01 33 cd3c08cf".replace(" ", ""))
    assert len(seg) == 71
    pos, payloads = 8, []
    while pos < len(seg):
        r = workq.record.parse(seg[pos:])
        payloads.append(r.body.value.payload)
        pos += r.body.length + 4
    assert payloads == [b"1", b"2", b"3"]


def test_unknown_command_type_is_an_error_not_an_int():
    with pytest.raises(UnknownEnumValue):
        workq.payload.parse(b"\x09")
    with pytest.raises(UnknownEnumValue):
        workq.payload.parse(b"\x00" + bytes(16))


def test_trailing_and_short_payloads():
    with pytest.raises(TerminatedError):
        workq.payload.parse(bytes.fromhex(VECTORS[CmdType.DELETE]) + b"\x00")
    with pytest.raises(StreamError):
        workq.payload.parse(bytes.fromhex(VECTORS[CmdType.DELETE])[:11])
    with pytest.raises(StreamError):
        workq.payload.parse(b"")


def test_zigzag_and_varint_vectors():
    assert ZVarInt.build(10) == b"\x14" and ZVarInt.build(5) == b"\x0a"
    assert ZVarInt.build(-3) == b"\x05" and ZVarInt.build(0) == b"\x00"
    assert UVarInt.build(1000) == bytes.fromhex("e807") and UVarInt.build(60000) == bytes.fromhex("e0d403")
    assert UVarInt.build(70000) == bytes.fromhex("f0a204") and UVarInt.build(317) == bytes.fromhex("bd02")
    assert UVarInt.parse(b"\xff" * 9 + b"\x01") == 2**64 - 1
    with pytest.raises(VarintOverflow):
        UVarInt.parse(b"\xff" * 11)
    with pytest.raises(VarintOverflow):
        UVarInt.parse(b"\xff" * 9 + b"\x02")
    assert UVarInt.parse(b"\x81\x00") == 1  # non-minimal accepted, as Go does


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_uvarint_round_trip(n):
    assert UVarInt.parse(UVarInt.build(n)) == n


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_zvarint_round_trip(n):
    assert ZVarInt.parse(ZVarInt.build(n)) == n


def test_go_time():
    assert go_time.build(GO_ZERO_TIME) == bytes.fromhex("01000000000000000000000000ffff")
    with pytest.raises(BadTimeVersion):
        go_time.parse(bytes.fromhex("fe000000000000000000000000ffff"))
    t = go_time.parse(bytes.fromhex("010000000ecff4225100000000" "0000"))
    assert t.zone == 0 and t.unix_ns == 1482828625 * 10**9


def test_crc32c_parameters():
    assert crc32c(b"123456789") == CRC32C_CHECK == crc32c_reference(b"123456789")


@given(st.binary(max_size=512))
def test_hardware_crc_equals_declared_reference(data):
    assert crc32c(data) == crc32c_reference(data)


@given(st.one_of(st.integers(-62135596900, 253402300900), st.integers(-(1 << 70), 1 << 70),
                 st.sampled_from([253402300799, 253402300800, -62135596800, -62135596801, 0, -1, 951782400])))
def test_printed_seconds_are_datetimes(s):
    """``_format_seconds`` (arithmetic: printing a time imports no datetime) is datetime's rendering, and None
    exactly where datetime overflows (outside years 1-9999)."""
    import datetime as dt
    from wqtool.formats._common import _format_seconds
    try:
        d = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=s)
        want = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    except OverflowError:
        want = None
    assert _format_seconds(s) == want
