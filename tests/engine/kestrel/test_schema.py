"""Schema round trips and the spec's derived byte vectors (§13.1, §13.2) for every opcode, through both the
construct schema and the fast codec."""
from __future__ import annotations

import pytest
from construct import ConstructError

from wqtool.engine.kestrel.fastpath import decode_op, encode_op
from wqtool.engine.kestrel.model import Op
from wqtool.formats.kestrel import Opcode, journal_op

from .conftest import T, T_BYTES, ZERO8

A_EXP = T + 60_000

# (name, Op, hex) — spec §13.1
VECTORS = [
    ("addx-empty-21B", Op(Opcode.ADDX, None, T, 0, b""), "02 10 00 00 00" + T_BYTES.hex() + ZERO8.hex()),
    ("addx-hello-kitty-32B", Op(Opcode.ADDX, None, T, 0, b"hello kitty"),
     "02 1b 00 00 00" + T_BYTES.hex() + ZERO8.hex() + b"hello kitty".hex()),
    ("remove", Op(Opcode.REMOVE), "01"),
    ("addx-A-exp", Op(Opcode.ADDX, None, T, A_EXP, b"A"),
     "02 11 00 00 00 00 c8 09 ae 2e 01 00 00 60 b2 0a ae 2e 01 00 00 41"),
    ("legacy-add-hi", Op(Opcode.ADD, None, None, 0, b"hi"), "00 06 00 00 00 00 00 00 00 68 69"),
    ("legacy-add-hi-exp", Op(Opcode.ADD, None, None, 1300000060, b"hi"), "00 06 00 00 00 3c 6d 7c 4d 68 69"),
    ("remove-tentative", Op(Opcode.REMOVE_TENTATIVE), "03"),
    ("save-xid-7", Op(Opcode.SAVE_XID, 7), "04 07 00 00 00"),
    ("unremove-2", Op(Opcode.UNREMOVE, 2), "05 02 00 00 00"),
    ("confirm-remove-2", Op(Opcode.CONFIRM_REMOVE, 2), "06 02 00 00 00"),
    ("add-xid-6-A-26B", Op(Opcode.ADD_XID, 6, T, 0, b"A"),
     "07 06 00 00 00 11 00 00 00 00 c8 09 ae 2e 01 00 00 00 00 00 00 00 00 00 00 41"),
    ("continue-1-two-28B", Op(Opcode.CONTINUE, 1, T, 0, b"two"),
     "08 01 00 00 00 13 00 00 00 00 c8 09 ae 2e 01 00 00 00 00 00 00 00 00 00 00 74 77 6f"),
    ("rt-xid-6", Op(Opcode.REMOVE_TENTATIVE_XID, 6), "09 06 00 00 00"),
    ("rt-xid-min", Op(Opcode.REMOVE_TENTATIVE_XID, -2**31), "09 00 00 00 80"),
]


def schema_obj(o: Op) -> dict:
    if o.op in (Opcode.REMOVE, Opcode.REMOVE_TENTATIVE):
        body = None
    elif o.op == Opcode.ADD:
        body = dict(expiry=o.expiry, data=o.data)
    elif o.op == Opcode.ADDX:
        body = dict(add_time=o.add_time, expiry=o.expiry, data=o.data)
    elif o.op in (Opcode.ADD_XID, Opcode.CONTINUE):
        body = dict(xid=o.xid, item=dict(add_time=o.add_time, expiry=o.expiry, data=o.data))
    else:
        body = dict(xid=o.xid)
    return dict(opcode=o.op, body=body)


def from_schema(c) -> Op:
    op = Opcode(c.opcode)
    b = c.body
    if op in (Opcode.REMOVE, Opcode.REMOVE_TENTATIVE):
        return Op(op)
    if op == Opcode.ADD:
        return Op(op, None, None, b.expiry, b.data)
    if op == Opcode.ADDX:
        return Op(op, None, b.add_time, b.expiry, b.data)
    if op in (Opcode.ADD_XID, Opcode.CONTINUE):
        return Op(op, b.xid, b.item.add_time, b.item.expiry, b.item.data)
    return Op(op, b.xid)


@pytest.mark.parametrize("name,op,hexs", VECTORS, ids=[v[0] for v in VECTORS])
def test_vector(name, op, hexs):
    raw = bytes.fromhex(hexs)
    assert journal_op.build(schema_obj(op)) == raw
    assert from_schema(journal_op.parse(raw)) == op
    assert encode_op(op) == raw
    got, nxt = decode_op(raw, 0, len(raw))
    assert got == op and nxt == len(raw)


def test_every_opcode_has_a_vector():
    assert {v[1].op for v in VECTORS} == set(Opcode)


def test_sizes_match_qitem_packing():
    # "serialized QItem = 1 + 21 bytes"; ADDX of n bytes = 21 + n; ADD_XID / CONTINUE = 25 + n
    assert len(encode_op(Op(Opcode.ADDX, None, T, 0, b"x"))) == 22
    for n in (0, 1, 11, 512):
        assert len(encode_op(Op(Opcode.ADDX, None, T, 0, b"x" * n))) == 21 + n
        assert len(encode_op(Op(Opcode.CONTINUE, 3, T, 0, b"x" * n))) == 25 + n


def test_opcode_labels_and_spelling():
    assert Opcode(8).name == "CONTINUE" and Opcode(9).name == "REMOVE_TENTATIVE_XID"
    assert Opcode.REMOVE_TENTATIVE_XID.label == "remove-tentative-xid"


@pytest.mark.parametrize("raw", ["0a", "ff", "80", "02 0f 00 00 00" + "00" * 15, "02 10 00 00", "09 01 00",
                                 "01 01"])
def test_schema_refuses(raw):
    with pytest.raises(ConstructError):
        journal_op.parse(bytes.fromhex(raw))


def test_interleave_journal_71_bytes():
    """§13.2 'correctly interleave transactions' (71 bytes)."""
    raw = bytes.fromhex("02 15 00 00 00" + T_BYTES.hex() + ZERO8.hex() + "68 6f 75 73 65 02 13 00 00 00"
                        + T_BYTES.hex() + ZERO8.hex() + "63 61 74 09 01 00 00 00 09 02 00 00 00 05 01 00 00 00"
                        "06 02 00 00 00 01")
    assert len(raw) == 71
    ops, pos = [], 0
    while pos < len(raw):
        o, pos = decode_op(raw, pos, len(raw))
        ops.append(o)
    assert [o.op for o in ops] == [Opcode.ADDX, Opcode.ADDX, Opcode.REMOVE_TENTATIVE_XID,
                                   Opcode.REMOVE_TENTATIVE_XID, Opcode.UNREMOVE, Opcode.CONFIRM_REMOVE, Opcode.REMOVE]
    assert b"".join(encode_op(o) for o in ops) == raw
