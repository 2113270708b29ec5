"""The C request-line parser (wqtool/server/workq/_proto.c) against the Python reference in wire.py: the same
Request (name, arguments, flags in order, body size) or the same error reply for every line, and the same values
from the ID and number parsers the handlers use."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from tests.conftest import examples
from wqtool.server.workq import wire

_proto = pytest.importorskip("wqtool.server.workq._proto")
if wire._c is None:
    # WQTOOL_PURE_PYTHON=1: the server runs the reference and wire.py did not hand the C parser what it owns
    # (wire._load_c); this file compares the built module with the reference all the same, so it hands it over
    _proto.init(wire.Request, wire.COMMANDS, (wire.E_FLAGS, wire.E_UNKNOWN, wire.E_ARGS, wire.E_PAYLOAD_SIZE,
                                              wire.E_RESULT_SIZE))

NAMES = [*wire.COMMANDS, b"ad", b"adds", b"ADD", b"", b"-x=1"]
HEX = b"0123456789abcdefABCDEF"
_ODD = b"ab-=+ 0\t\r\x00\xff"
_NUM = b"+-0123456789a "


def _norm(r):
    if r.__class__ is bytes:
        return ("reply", r)
    return (r.name, r.args, list(r.flags.items()), r.size)


def _number():
    return st.builds(lambda sign, zeros, n: sign + b"0" * zeros + str(n).encode(),
                     st.sampled_from([b"", b"", b"+", b"-"]), st.integers(0, 3),
                     st.one_of(st.integers(0, 2_000_000), st.integers(0, 10 ** 25)))


def _uuid():
    def build(groups, dashes, prefix, tail, cut):
        s = b""
        for g, d in zip(groups, dashes):
            s += (b"-" if d else b"") + g
        s = prefix + s.lstrip(b"-" if not dashes[0] else b"") + tail
        return s[:cut] if cut is not None else s
    hexs = [st.binary(min_size=n, max_size=n).map(lambda b: bytes(HEX[x % len(HEX)] for x in b)) for n in
            (8, 4, 4, 4, 12)]
    return st.builds(build, st.tuples(*hexs), st.lists(st.booleans(), min_size=5, max_size=5),
                     st.sampled_from([b"", b"", b"urn:uuid:", b"{", b"urn:uuid", b"-"]),
                     st.sampled_from([b"", b"}", b"x", b"-abc"]), st.one_of(st.none(), st.integers(0, 45)))


def _flag():
    return st.builds(lambda k, v, more: b"-" + k + b"=" + v + more,
                     st.sampled_from([b"", b"priority", b"max-attempts", b"max-fails", b"a", b"-"]),
                     st.one_of(st.sampled_from([b"", b"1", b"-5"]), _number()),
                     st.sampled_from([b"", b"", b"=", b"=x", b"=x=y"]))


def _token():
    return st.one_of(st.sampled_from(NAMES), _number(), _uuid(), _flag(), st.sampled_from([b"-", b"=", b"-a", b"a=b"]),
                     st.binary(max_size=6).map(lambda b: bytes(_ODD[x % len(_ODD)] for x in b)))


def _line():
    return st.builds(lambda lead, toks, seps, trail: lead + b"".join(t + s for t, s in zip(toks, seps)) + trail,
                     st.sampled_from([b"", b"", b" ", b"  "]), st.lists(_token(), max_size=9),
                     st.lists(st.sampled_from([b" ", b" ", b"  ", b"   "]), min_size=9, max_size=9),
                     st.sampled_from([b"", b"", b" ", b"  "]))


@settings(max_examples=examples(800), deadline=None)
@given(st.one_of(_line(), st.binary(max_size=80)))
@example(b"add 00000000-0000-4000-8000-000000000001 q 1000 60000 1")
@example(b"fail 00000000-0000-4000-8000-000000000001 -1")
@example(b"add -priority=1=2 x 1 2 3")
@example(b"lease q -a=1 -a=2 0")
@example(b" add")
@example(b"")
def test_parse_line_is_the_reference(line):
    assert _norm(_proto.parse_line(line)) == _norm(wire.py_parse_line(line))


@settings(max_examples=examples(800), deadline=None)
@given(st.one_of(_uuid(), st.binary(max_size=48)))
@example(b"urn:uuid:00000000-0000-4000-8000-00000000")
@example(b"{00000000-0000-4000-8000-000000000001}")
def test_parse_uuid_is_the_reference(tok):
    assert _proto.parse_uuid(tok) == wire.py_parse_uuid(tok)


@settings(max_examples=examples(800), deadline=None)
@given(st.one_of(_number(), st.binary(max_size=24).map(lambda b: bytes(_NUM[x % len(_NUM)] for x in b))),
       st.integers(1, 64))
@example(b"-9223372036854775808", 64)
@example(b"9223372036854775808", 64)
@example(b"18446744073709551615", 64)
@example(b"18446744073709551616", 64)
@example(b"-2147483648", 32)
@example(b"-0", 8)
def test_numbers_are_the_reference(tok, bits):
    assert _proto.parse_uint(tok, bits) == wire.py_parse_uint(tok, bits)
    assert _proto.parse_int(tok, bits) == wire.py_parse_int(tok, bits)


def test_the_server_uses_the_c_parser_unless_pure_python_is_asked_for():
    import os
    import subprocess
    import sys
    code = "from wqtool.server.workq import wire; print(wire.parse_line is wire.py_parse_line)"
    for env, pure in (({}, "False"), ({"WQTOOL_PURE_PYTHON": "1"}, "True")):
        e = {k: v for k, v in os.environ.items() if k != "WQTOOL_PURE_PYTHON"}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**e, **env}, timeout=60)
        assert r.stdout.strip() == pure, r.stderr


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.integers(-(1 << 62), 1 << 62), st.integers(1_700_000_000 * 10 ** 9, 1_900_000_000 * 10 ** 9)),
       st.one_of(st.binary(max_size=300), st.integers(16_380, 16_390).map(lambda n: b"\xa5" * n)))
@example(0, b"")
@example(-1, b"\x01")
@example(-(10 ** 9), b"x" * 127)
@example(10 ** 9 - 1, b"x" * 128)
def test_record_is_the_reference_encoder(ns, payload):
    from wqtool.engine.workq.fastpath import encode_record
    from wqtool.formats._common import GoTime
    assert _proto.record(ns, payload) == encode_record(GoTime.from_unix_ns(ns), payload)


_I64 = st.integers(-(1 << 63), (1 << 63) - 1)
_U64 = st.one_of(st.integers(0, 300), st.integers(0, (1 << 64) - 1))


@settings(max_examples=examples(300), deadline=None)
@given(_I64, st.sampled_from([1, 2]), st.binary(min_size=16, max_size=16), st.binary(max_size=300), _U64, _U64,
       st.one_of(st.integers(-(1 << 31), (1 << 31) - 1), _I64), _U64, _U64,
       st.one_of(st.binary(max_size=300), st.integers(16_380, 16_390).map(lambda n: b"\xa5" * n)),
       st.one_of(st.none(), _I64), _I64)
@example(0, 1, b"\x00" * 16, b"", 0, 0, 0, 0, 0, b"", None, 0)
@example(-1, 2, b"\xff" * 16, b"q" * 255, 86_400_000, 2_592_000_000, -1, 255, 255, b"x" * 128, -(10 ** 9), 1)
def test_add_record_is_the_reference_encoder(ns, cmd, jid, name, ttr, ttl, prio, ma, mf, body, when, created):
    """server.add_record's C twin: the bytes of encode_record(encode_payload(Command(...))) for every field value
    the payload schema holds (the Go zero time for None)."""
    from wqtool.server.workq.server import add_record_py
    args = (ns, cmd, jid, name, ttr, ttl, prio, ma, mf, body, when, created)
    assert _proto.add_record(*args) == add_record_py(*args)


@settings(max_examples=examples(200), deadline=None)
@given(_I64, st.integers(3, 8), st.binary(min_size=16, max_size=16),
       st.one_of(st.binary(max_size=300), st.integers(16_380, 16_390).map(lambda n: b"\xa5" * n)))
@example(0, 3, b"\x00" * 16, b"")
def test_short_record_is_the_reference_encoder(ns, cmd, jid, result):
    from wqtool.server.workq.server import short_record_py
    res = result if cmd in (3, 4) else None
    assert _proto.short_record(ns, cmd, jid, res) == short_record_py(ns, cmd, jid, res)


def test_record_builders_refuse_what_the_schema_does_not_hold():
    with pytest.raises(ValueError):
        _proto.add_record(0, 3, b"\x00" * 16, b"", 0, 0, 0, 0, 0, b"", None, 0)     # not an add / schedule
    with pytest.raises(ValueError):
        _proto.add_record(0, 1, b"\x00" * 15, b"", 0, 0, 0, 0, 0, b"", None, 0)     # a 15-byte id
    with pytest.raises(ValueError):
        _proto.short_record(0, 3, b"\x00" * 16, None)                              # complete without a result
    with pytest.raises(ValueError):
        _proto.short_record(0, 5, b"\x00" * 16, b"x")                              # delete with one
    with pytest.raises(OverflowError):
        _proto.add_record(0, 2, b"\x00" * 16, b"", 0, 0, 0, 0, 0, b"", 1 << 63, 0)  # past the year 2262


def test_a_schedule_past_2262_is_encoded_by_the_reference():
    from wqtool.server.workq import server
    args = (0, 2, b"\x00" * 16, b"q", 1, 1, 0, 0, 0, b"b", 10 ** 20, 0)
    assert server.add_record(*args) == server.add_record_py(*args)
