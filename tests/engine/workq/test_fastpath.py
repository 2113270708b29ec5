"""The hot codec is proven equal to the construct schema, in both directions (STYLE: 'Schemas are the truth')."""
from __future__ import annotations

import pytest
from construct import ConstructError
from hypothesis import given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq.fastpath import decode_payload, encode_payload, encode_record
from wqtool.engine.workq.model import Command
from wqtool.errors import InvalidPayload, UnknownOpcode
from wqtool.formats import workq
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

u64 = st.integers(min_value=0, max_value=2**64 - 1)
small = st.one_of(st.integers(min_value=0, max_value=300), u64)
go_times = st.builds(GoTime, st.integers(min_value=-(2**63), max_value=2**63 - 1),
                     st.integers(min_value=-(2**31), max_value=2**31 - 1),
                     st.integers(min_value=-(2**15), max_value=2**15 - 1))
ids = st.binary(min_size=16, max_size=16)


@st.composite
def commands(draw):
    cmd = draw(st.sampled_from(list(CmdType)))
    jid = draw(ids)
    if cmd in (CmdType.ADD, CmdType.SCHEDULE):
        return Command(cmd, jid, draw(st.binary(max_size=300)), draw(small), draw(small),
                       draw(st.integers(min_value=-(2**63), max_value=2**63 - 1)), draw(small), draw(small),
                       draw(st.binary(max_size=2000)), draw(go_times), draw(go_times))
    if cmd in (CmdType.COMPLETE, CmdType.FAIL):
        return Command(cmd, jid, result=draw(st.binary(max_size=300)))
    return Command(cmd, jid)


def to_container(c: Command) -> dict:
    body = {"job_id": c.job_id}
    if c.name is not None:
        body.update(name=c.name, ttr=c.ttr, ttl=c.ttl, priority=c.priority, max_attempts=c.max_attempts,
                    max_fails=c.max_fails, payload=c.payload, time=c.time, created=c.created)
    if c.result is not None:
        body.update(result=c.result)
    return {"cmd": c.cmd, "body": body}


def from_container(obj) -> Command:
    b = obj.body
    if obj.cmd in (CmdType.ADD, CmdType.SCHEDULE):
        return Command(obj.cmd, b.job_id, b.name, b.ttr, b.ttl, b.priority, b.max_attempts, b.max_fails, b.payload,
                       b.time, b.created)
    if obj.cmd in (CmdType.COMPLETE, CmdType.FAIL):
        return Command(obj.cmd, b.job_id, result=b.result)
    return Command(obj.cmd, b.job_id)


@settings(max_examples=examples(400))
@given(commands())
def test_fast_encode_equals_schema_build(c):
    assert encode_payload(c) == workq.payload.build(to_container(c))


@settings(max_examples=examples(400))
@given(commands())
def test_fast_decode_equals_schema_parse(c):
    raw = workq.payload.build(to_container(c))
    assert decode_payload(raw) == from_container(workq.payload.parse(raw)) == c


def _schema_outcome(raw: bytes):
    try:
        return from_container(workq.payload.parse(raw))
    except ConstructError:
        return "error"


def _fast_outcome(raw: bytes):
    try:
        return decode_payload(raw)
    except (InvalidPayload, UnknownOpcode):
        return "error"


@settings(max_examples=examples(600))
@given(st.one_of(
    st.binary(max_size=120),
    commands().map(lambda c: encode_payload(c)).flatmap(
        lambda raw: st.tuples(st.just(raw), st.integers(0, len(raw)), st.binary(max_size=3)).map(
            lambda t: t[0][:t[1]] + t[2])),
))
def test_fast_and_schema_agree_on_arbitrary_bytes(raw):
    """Same value or same refusal on random bytes and on truncated/extended valid payloads."""
    assert _fast_outcome(raw) == _schema_outcome(raw)


@settings(max_examples=examples(200))
@given(go_times, st.binary(max_size=400))
def test_fast_record_equals_schema_record(t, payload):
    built = workq.record.build(dict(body=dict(value=dict(time=t, size=len(payload), payload=payload))))
    assert encode_record(t, payload) == built
    parsed = workq.record.parse(built)
    assert parsed.body.value.payload == payload and parsed.body.value.time == t


@pytest.mark.parametrize("raw,exc,field", [
    (b"", InvalidPayload, "cmd"),
    (b"\x09", UnknownOpcode, "cmd"),
    (b"\x05" + bytes(10), InvalidPayload, "job_id"),
    (b"\x05" + bytes(17), InvalidPayload, "trailing"),
    (b"\x03" + bytes(16) + b"\x05ab", InvalidPayload, "result"),
])
def test_fast_errors_name_the_field(raw, exc, field):
    with pytest.raises(exc) as ei:
        decode_payload(raw)
    assert ei.value.field == field
