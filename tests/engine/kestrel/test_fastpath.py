"""The fast codec equals the construct schema, both directions, on random records and random bytes."""
from __future__ import annotations

from construct import ConstructError
from hypothesis import given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.kestrel.fastpath import Damage, decode_op, encode_op, record_length
from wqtool.engine.kestrel.model import Op
from wqtool.formats.kestrel import Opcode, journal_op

from .test_schema import from_schema, schema_obj

i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)
data = st.binary(max_size=64)


@st.composite
def ops(draw):
    op = draw(st.sampled_from(list(Opcode)))
    if op in (Opcode.REMOVE, Opcode.REMOVE_TENTATIVE):
        return Op(op)
    if op == Opcode.ADD:
        return Op(op, None, None, draw(i32), draw(data))
    if op == Opcode.ADDX:
        return Op(op, None, draw(i64), draw(i64), draw(data))
    if op in (Opcode.ADD_XID, Opcode.CONTINUE):
        return Op(op, draw(i32), draw(i64), draw(i64), draw(data))
    return Op(op, draw(i32))


@settings(max_examples=examples(200), deadline=None)
@given(ops())
def test_build_equal(o):
    raw = journal_op.build(schema_obj(o))
    assert encode_op(o) == raw
    got, nxt = decode_op(raw, 0, len(raw))
    assert got == o and nxt == len(raw)
    assert record_length(raw, 0, len(raw)) == len(raw)
    assert from_schema(journal_op.parse(raw)) == o


def _fast(raw: bytes):
    """The fast codec's verdict on one whole record: the Op, or None when refused / not exactly one record."""
    try:
        o, nxt = decode_op(raw, 0, len(raw))
    except Damage:
        return None
    return o if nxt == len(raw) else None


def _schema(raw: bytes):
    try:
        return from_schema(journal_op.parse(raw))
    except (ConstructError, ValueError, OverflowError):
        return None


@settings(max_examples=examples(200), deadline=None)
@given(st.one_of(st.binary(min_size=1, max_size=40),
                 ops().map(lambda o: encode_op(o)).flatmap(
                     lambda b: st.sampled_from([b, b[:-1] or b"\x0b", b + b"\x01"]))))
def test_parse_equal_on_random_bytes(raw):
    """Same accept/refuse decision and the same values: random bytes, truncated and over-long records."""
    assert _fast(raw) == _schema(raw)


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from([0, 2, 7, 8]), st.integers(-2**31, 2**31 - 1), st.binary(max_size=24))
def test_hostile_sizes_refused_without_allocation(op, size, tail):
    import struct
    raw = bytes((op,)) + (struct.pack("<i", 1) if op in (7, 8) else b"") + struct.pack("<i", size) + tail
    try:
        o, nxt = decode_op(raw, 0, len(raw))
    except Damage as d:
        assert d.code in ("KQ-TRUNCATED", "KQ-SHORT-BLOCK", "KQ-SIZE-NEGATIVE", "KQ-SIZE-ABSURD")
        if size < 0:
            assert d.code == "KQ-SIZE-NEGATIVE"
        return
    assert nxt <= len(raw)
