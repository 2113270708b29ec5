"""The wire parsers against the Go functions they reproduce (strconv, time.Parse, satori/go.uuid v1.0.0)."""
from __future__ import annotations

import datetime as dt

from hypothesis import given, strategies as st

from wqtool.server.workq import wire


@given(st.integers(0, (1 << 64) + 5), st.integers(0, 3))
def test_parse_uint_is_strconv(n, zeros):
    tok = (b"0" * zeros) + str(n).encode()
    for bits in (8, 16, 32, 64):
        assert wire.parse_uint(tok, bits) == (n if n < 1 << bits else None)
    assert wire.parse_uint(b"+" + tok, 32) is None and wire.parse_uint(b"", 32) is None


@given(st.integers(-(1 << 40), 1 << 40), st.sampled_from([b"", b"+"]))
def test_parse_int_is_strconv(n, plus):
    tok = (plus if n >= 0 else b"") + str(n).encode()
    assert wire.parse_int(tok, 32) == (n if -(1 << 31) <= n < 1 << 31 else None)
    assert wire.go_atoi(tok) == n


@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)),
       st.integers(0, 999_999_999), st.integers(0, 9))
def test_parse_go_time_matches_the_calendar(d, ns, digits):
    frac = b"" if digits == 0 else b"." + (b"%09d" % ns)[:digits]
    tok = d.strftime("%Y-%m-%dT%H:%M:%S").encode().rjust(19, b"0") + frac + b"Z"
    want_ns = int(frac[1:].ljust(9, b"0")) if digits else 0
    secs = (d.replace(microsecond=0) - dt.datetime(1970, 1, 1)) // dt.timedelta(seconds=1)
    assert wire.parse_go_time(tok) == secs * 1_000_000_000 + want_ns
    assert wire.timestamp(secs * 1_000_000_000 + want_ns) == d.strftime("%Y-%m-%dT%H:%M:%SZ").encode().rjust(20, b"0") \
        or d.year < 1000


def test_parse_go_time_refusals():
    for bad in (b"2030-01-01T00:00:00", b"2030-01-01T00:00:00z", b"2030-01-01T00:00:00+00:00", b"2030-1-01T00:00:00Z",
                b"2030-13-01T00:00:00Z", b"2030-02-29T00:00:00Z", b"2030-01-00T00:00:00Z", b"2030-01-01T00:60:00Z",
                b"2030-01-01T00:00:60Z", b"2030-01-01 00:00:00Z", b"2030-01-01T00:00:00.Z", b"+030-01-01T00:00:00Z",
                b"2030-01-01T00:00:00ZZ", b""):
        assert wire.parse_go_time(bad) is None, bad
    assert wire.parse_go_time(b"2028-02-29T7:05:09.1234567891Z") == wire.parse_go_time(b"2028-02-29T07:05:09Z") + 123456789


@given(st.binary(min_size=16, max_size=16), st.sampled_from(["plain", "dashes", "urn", "brace", "upper", "junk"]))
def test_parse_uuid_forms(raw, form):
    h = raw.hex()
    dashed = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    text = {"plain": h, "dashes": dashed, "urn": "urn:uuid:" + dashed, "brace": "{" + dashed + "}",
            "upper": dashed.upper(), "junk": dashed + "XYZ"}[form]
    assert wire.parse_uuid(text.encode()) == raw


def test_parse_uuid_refusals():
    for bad in (b"", b"x" * 31, b"6ba7b810-9dad-41d1-80b4-00c04fd43zzz", b"urn:uuid:00000000-0000-4000-8000",
                b"6ba7b810 9dad 41d1 80b4 00c04fd430c4", b"urn:uuid:6ba7b810-9dad-41d1-80b4-00c04fd430c"):
        assert wire.parse_uuid(bad) is None, bad


def test_parse_line_grammar():
    r = wire.parse_line(b"add  -priority=1=2 id q 1 2   3 -x=y")
    assert (r.name, r.args, r.flags, r.size) == (b"add", [b"id", b"q", b"1", b"2", b"3"],
                                                 {b"priority": b"1", b"x": b"y"}, 3)
    assert wire.parse_line(b" add id q 1 2 3") == wire.E_UNKNOWN
    assert wire.parse_line(b"ADD id q 1 2 3 -=1") == wire.E_FLAGS       # flags are checked before the name
    assert wire.parse_line(b"lease q -5") .args == [b"q", b"-5"]         # no '=': an argument
    assert wire.parse_line(b"fail id -0") .size == 0
    assert wire.parse_line(b"fail id 99999999999999999999") == wire.E_RESULT_SIZE
