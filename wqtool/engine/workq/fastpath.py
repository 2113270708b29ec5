"""The hot codec for workq records: hand-written, proven equal to wqtool.formats.workq by property tests.

``tests/engine/test_fastpath.py`` builds random commands and random byte strings with hypothesis and checks
both directions against the construct schema (same values, same bytes, same accept/refuse decision).
"""
from __future__ import annotations


from ...errors import InvalidPayload, UnknownOpcode
from ...formats._common import GO_TIME_STRUCT, GoTime, crc32c, encode_uvarint, zigzag_decode, zigzag_encode
from ...formats.workq import JOB_ID_SIZE, RECORD_CRC_STRUCT, CmdType
from .model import Command

_TIME = GO_TIME_STRUCT
_U32 = RECORD_CRC_STRUCT
_CMDS = {int(c): c for c in CmdType}
_ADD, _SCHEDULE, _COMPLETE, _FAIL = CmdType.ADD, CmdType.SCHEDULE, CmdType.COMPLETE, CmdType.FAIL


def _uvarint(b, pos: int, end: int, fieldname: str) -> tuple[int, int]:
    """Go ReadUvarint over b[pos:end]: returns (value, new_pos); bounded at 10 bytes."""
    result = 0
    shift = 0
    for i in range(10):
        if pos >= end:
            raise InvalidPayload(f"payload ends inside {fieldname}", field=fieldname)
        c = b[pos]
        pos += 1
        if c < 0x80:
            if i == 9 and c > 1:
                raise InvalidPayload(f"{fieldname}: varint overflows a 64-bit integer", field=fieldname)
            return result | (c << shift), pos
        result |= (c & 0x7F) << shift
        shift += 7
    raise InvalidPayload(f"{fieldname}: varint overflows a 64-bit integer", field=fieldname)


def decode_time(b, pos: int) -> GoTime:
    """A 15-byte Go binary time at b[pos:] (caller checked the bytes are there)."""
    version, sec, nsec, zone = _TIME.unpack_from(b, pos)
    if version != 1:
        raise InvalidPayload(f"unsupported Go time version {version}", field="time")
    return GoTime(sec, nsec, zone - 0x10000 if zone >= 0x8000 else zone)


def encode_time(t: GoTime) -> bytes:
    return _TIME.pack(1, t.sec, t.nsec, t.zone & 0xFFFF)


def decode_payload(b, start: int = 0, end: int | None = None) -> Command:
    """Decode one command from b[start:end] exactly as ``formats.workq.payload`` does, or raise.

    Raises UnknownOpcode (unknown CMD_TYPE) or InvalidPayload (empty, ends inside a field, trailing bytes,
    varint overflow, bad time version) with the field name; the reader adds path and offset.
    """
    if end is None:
        end = len(b)
    if start >= end:
        raise InvalidPayload("empty payload (upstream: EOF)", field="cmd")
    c = b[start]
    cmd = _CMDS.get(c)
    if cmd is None:
        raise UnknownOpcode(f"unknown command type {c}", field="cmd")
    pos = start + 1
    if pos + JOB_ID_SIZE > end:
        raise InvalidPayload("payload ends inside job_id", field="job_id")
    job_id = bytes(b[pos:pos + JOB_ID_SIZE])
    pos += JOB_ID_SIZE
    if cmd is _ADD or cmd is _SCHEDULE:
        n, pos = _uvarint(b, pos, end, "name")
        if pos + n > end:
            raise InvalidPayload("payload ends inside name", field="name")
        name = bytes(b[pos:pos + n])
        pos += n
        ttr, pos = _uvarint(b, pos, end, "ttr")
        ttl, pos = _uvarint(b, pos, end, "ttl")
        zz, pos = _uvarint(b, pos, end, "priority")
        max_attempts, pos = _uvarint(b, pos, end, "max_attempts")
        max_fails, pos = _uvarint(b, pos, end, "max_fails")
        n, pos = _uvarint(b, pos, end, "payload")
        if pos + n > end:
            raise InvalidPayload("payload ends inside payload", field="payload")
        body = bytes(b[pos:pos + n])
        pos += n
        if pos + 15 > end:
            raise InvalidPayload("payload ends inside time", field="time")
        t = decode_time(b, pos)
        pos += 15
        if pos + 15 > end:
            raise InvalidPayload("payload ends inside created", field="created")
        try:
            created = decode_time(b, pos)
        except InvalidPayload:
            raise InvalidPayload("unsupported Go time version in created", field="created") from None
        pos += 15
        if pos != end:
            raise InvalidPayload(f"{end - pos} trailing bytes after the command", field="trailing")
        return Command(cmd, job_id, name, ttr, ttl, zigzag_decode(zz), max_attempts, max_fails, body, t, created)
    if cmd is _COMPLETE or cmd is _FAIL:
        n, pos = _uvarint(b, pos, end, "result")
        if pos + n > end:
            raise InvalidPayload("payload ends inside result", field="result")
        result = bytes(b[pos:pos + n])
        pos += n
        if pos != end:
            raise InvalidPayload(f"{end - pos} trailing bytes after the command", field="trailing")
        return Command(cmd, job_id, result=result)
    if pos != end:
        raise InvalidPayload(f"{end - pos} trailing bytes after the command", field="trailing")
    return Command(cmd, job_id)


def encode_payload(c: Command) -> bytes:
    """Build one command's payload bytes, exactly as ``formats.workq.payload.build`` does."""
    cmd = CmdType(c.cmd)
    if len(c.job_id) != JOB_ID_SIZE:
        raise ValueError(f"job_id must be {JOB_ID_SIZE} bytes")
    head = bytes((int(cmd),)) + c.job_id
    if cmd is _ADD or cmd is _SCHEDULE:
        return b"".join((
            head,
            encode_uvarint(len(c.name)), c.name,
            encode_uvarint(c.ttr), encode_uvarint(c.ttl),
            encode_uvarint(zigzag_encode(c.priority)),
            encode_uvarint(c.max_attempts), encode_uvarint(c.max_fails),
            encode_uvarint(len(c.payload)), c.payload,
            encode_time(c.time), encode_time(c.created),
        ))
    if cmd is _COMPLETE or cmd is _FAIL:
        return head + encode_uvarint(len(c.result)) + c.result
    return head


def encode_record(time: GoTime, payload: bytes) -> bytes:
    """One framed record: TIME ‖ SIZE ‖ PAYLOAD ‖ CRC-32C(BE) over the three."""
    body = encode_time(time) + encode_uvarint(len(payload)) + payload
    return body + _U32.pack(crc32c(body))
