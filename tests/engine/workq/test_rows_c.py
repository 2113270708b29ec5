"""dump's C row encoder (``_kernel.encode_records``) is the reference serialiser, byte for byte.

The reference: ``RecordReader`` decodes each record, ``serialize.record_to_jsonable(rec, payload=mode)`` makes its
row, ``json.dumps(row, ensure_ascii=False)`` writes it. Random records with hostile fields — names and payloads of
any bytes (quotes, backslashes, control characters, valid and broken UTF-8), 10-byte varints up to 2**64-1,
extreme and zero Go times, any zone — in every payload mode and both styles must encode identically; a record the
reader reports as damaged or undecodable makes the encoder refuse (ValueError), never write a row. On generated
logs ``verify.fast_dump`` (the kernel's verdict + the encoder) equals the reference pass, limits included.
"""
from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import pytest
from google_crc32c import value as crc32c
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.findings import Finding
from wqtool.engine.workq import fastreplay
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import LogSet, RecordReader, discover
from wqtool.engine.workq.sample import T0_NS, SampleSpec, generate
from wqtool.engine.workq.serialize import record_to_jsonable
from wqtool.engine.workq.verify import LogRun, fast_dump
from wqtool.formats._common import UNIX_TO_INTERNAL

_kernel = fastreplay._kernel
pytestmark = pytest.mark.skipif(_kernel is None, reason="the C kernel (wqtool.engine.workq._kernel) is not built")
HEADER = bytes.fromhex("7771777100000001")
SEC = T0_NS // 10**9 + UNIX_TO_INTERNAL
MODES = {"none": 0, "hex": 1, "base64": 2, "text": 3}
STYLES = {"jsonl": (b"", b"\n"), "json": (b",\n  ", b"")}


def uvarint(v: int, long: int = 0) -> bytes:
    """LEB128 of v (< 2**64): minimal, or with ``long`` set exactly 10 bytes (the longest Go decodes)."""
    out = bytearray()
    while v >= 0x80 or (long and len(out) < 9):
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def gotime(ver, sec, nsec, zone=0xFFFF) -> bytes:
    return struct.pack(">BqiH", ver, sec, nsec, zone)


TEXTY = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"", b'"', b"\\", b"\x00\x1f\x7f\n\r\t\x08\x0c", b"\xc3\xa9", b"\xe2\x82", b"\xed\xa0\x80",
                     b"\xf0\x9f\x98\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xff\xfe",
                     b"q1", "é".encode("latin-1"), b"\xe2\x82A", b"\xf0\x9f\x98"]),
)
U64 = st.sampled_from([0, 1, 127, 128, 5000, 2**31, 2**32 + 5, 2**63 - 1, 2**63, 2**64 - 1])
SECS = st.sampled_from([SEC, 0, 1, -1, 2**63 - 1, -(2**63), UNIX_TO_INTERNAL, UNIX_TO_INTERNAL - 1,
                        UNIX_TO_INTERNAL + 253402300799, UNIX_TO_INTERNAL + 253402300800, SEC + 86400 * 365 * 300])
NSECS = st.sampled_from([0, 1, 999_999_999, 10**9, -1, 2**31 - 1, -(2**31), 120_000_000])


@st.composite
def payload(draw):
    c = draw(st.sampled_from([1, 1, 2, 3, 4, 5, 6, 7, 8]))
    jid = draw(st.sampled_from([bytes(range(16)), b"\xff" * 16, bytes(16)]))
    head = bytes((c,)) + jid
    pad = st.sampled_from([0, 0, 0, 0, 1])        # 1: a 10-byte varint (decodable, non-minimal)
    if c in (1, 2):
        name, body = draw(TEXTY), draw(TEXTY)
        t1 = gotime(1, draw(st.sampled_from([0, SEC + 600])) if draw(st.booleans()) else draw(SECS),
                    draw(st.sampled_from([0, 0, 5])) if draw(st.booleans()) else draw(NSECS),
                    draw(st.sampled_from([0xFFFF, 0, 60])))
        t2 = gotime(1, draw(SECS), draw(NSECS), draw(st.sampled_from([0xFFFF, 0])))
        return (head + uvarint(len(name), draw(pad)) + name
                + b"".join(uvarint(draw(U64), draw(pad)) for _ in range(5)) + uvarint(len(body), draw(pad)) + body
                + t1 + t2)
    if c in (3, 4):
        res = draw(TEXTY)
        return head + uvarint(len(res), draw(pad)) + res
    return head


@st.composite
def record(draw, damage=False):
    p = draw(payload())
    tsec, tnsec = draw(SECS), draw(NSECS)
    zone = draw(st.sampled_from([0xFFFF, 0xFFFF, 0]))
    if damage:
        how = draw(st.sampled_from(["tail", "crc", "cmd", "short", "time"]))
        if how == "tail":
            p += b"x"
        elif how == "cmd":
            p = b"\x09" + p[1:]
        elif how == "short":
            p = p[:draw(st.integers(0, max(0, len(p) - 1)))]
        elif how == "time" and p[0] in (1, 2):
            p = p[:-30] + b"\x02" + p[-29:]
    body = gotime(1, tsec, tnsec, zone) + uvarint(len(p)) + p
    crc = crc32c(body) ^ (1 if damage and how == "crc" else 0)
    return body + struct.pack(">I", crc)


def reference(data: bytes, path: str, mode: str, index: int):
    """(rows, ok): the reference rows of the segment's records; ok False when the reader reports damage or an
    undecodable payload."""
    sd = SimpleNamespace(data=data, size=len(data), path=path)
    reader = RecordReader(LogSet("d", []))
    rows, ok = [], True
    for ev in reader.segment_events(sd, index, True):
        if isinstance(ev, Finding):
            if ev.severity == "error":
                ok = False
        elif ev.command is None:
            ok = False
        else:
            rows.append(json.dumps(record_to_jsonable(ev, payload=mode), ensure_ascii=False))
    return rows, ok


def encode(data: bytes, path: str, mode: str, style: str, index: int, max_rows: int, max_bytes: int):
    sep, term = STYLES[style]
    pj = json.dumps(path, ensure_ascii=False).encode("utf-8", "surrogatepass")
    pos, out, total = 8, [], 0
    while pos < len(data):
        text, pos, index, n = _kernel.encode_records(data, pos, len(data), pj, index, MODES[mode], sep, term,
                                                     max_rows, max_bytes)
        assert n >= 1 and n <= max_rows
        out.append(text)
        total += n
    return out, total


def joined(chunks, style):
    return ",\n  ".join(chunks) if style == "json" else "".join(chunks)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record(), max_size=12), st.sampled_from(list(MODES)), st.sampled_from(list(STYLES)),
       st.sampled_from(["dir/000000001.log", 'd "x"\\y/\u00e9/000000002.log', "d/\udcff\n/000000003.log"]),
       st.sampled_from([0, 41]), st.sampled_from([1, 2, 4096]), st.sampled_from([1, 1 << 20]))
def test_c_rows_equal_the_reference(recs, mode, style, path, index, max_rows, max_bytes):
    data = HEADER + b"".join(recs)
    rows, ok = reference(data, path, mode, index)
    assert ok
    chunks, n = encode(data, path, mode, style, index, max_rows, max_bytes)
    assert n == len(rows)
    want = "".join(r + "\n" for r in rows) if style == "jsonl" else ",\n  ".join(rows)
    assert joined(chunks, style) == want


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record(), max_size=5), record(damage=True), st.lists(record(), max_size=3),
       st.sampled_from(list(MODES)))
def test_c_rows_refuse_a_damaged_or_undecodable_record(before, bad, after, mode):
    data = HEADER + b"".join(before) + bad + b"".join(after)
    rows, ok = reference(data, "d/000000001.log", mode, 0)
    if ok:   # the damage happened to leave a valid record (e.g. a time version on a non-add)
        chunks, n = encode(data, "d/000000001.log", mode, "jsonl", 0, 4096, 1 << 20)
        assert "".join(chunks) == "".join(r + "\n" for r in rows)
        return
    with pytest.raises(ValueError):
        encode(data, "d/000000001.log", mode, "jsonl", 0, 4096, 1 << 30)


@pytest.fixture
def c_kernel(monkeypatch):
    monkeypatch.setattr(fastreplay, "KERNEL", "c")


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(1, 800), st.sampled_from(list(MODES)), st.sampled_from(list(STYLES)),
       st.sampled_from([None, 0, 1, 57, 10**6]), st.sampled_from([T0_NS, T0_NS + 10**12, T0_NS + 10**17]))
def test_fast_dump_equals_the_reference_pass(c_kernel, tmp_path_factory, seed, n, mode, style, limit, as_of):
    d = tmp_path_factory.mktemp("g")
    generate(str(d), SampleSpec(records=n, segment_size=2500, seed=seed, reuse_ids=0.3, payload_max=120))
    log = discover([str(d)])[0]
    report, chunks = fast_dump(log, as_of, style=style, payload=mode, limit=limit)
    got = list(chunks)
    run = LogRun(log, as_of, limit=0)
    rows = [json.dumps(record_to_jsonable(ev, payload=mode), ensure_ascii=False) for ev in run.events()
            if ev.__class__ is Record]
    rows = rows if limit is None else rows[:limit]
    assert sum(k for k, _ in got) == len(rows)
    want = "".join(r + "\n" for r in rows) if style == "jsonl" else ",\n  ".join(rows)
    assert joined([t for k, t in got if k], style) == want
    assert report.verdict == run.report.verdict and report.counts == run.report.counts
    assert report.records == run.report.records and report.segments == run.report.segments


def test_fast_dump_hands_back_damaged_logs_and_the_python_kernel(tmp_path, monkeypatch):
    generate(str(tmp_path), SampleSpec(records=60, segment_size=1 << 20, seed=4))
    log = discover([str(tmp_path)])[0]
    monkeypatch.setattr(fastreplay, "KERNEL", "python")
    assert fast_dump(log, T0_NS, style="jsonl", payload="base64") is None
    monkeypatch.setattr(fastreplay, "KERNEL", "c")
    assert fast_dump(log, T0_NS, style="yaml", payload="base64") is None
    assert fast_dump(log, T0_NS, style="jsonl", payload="binary") is None
    seg = tmp_path / "000000001.log"
    data = bytearray(seg.read_bytes())
    data[200] ^= 1
    seg.write_bytes(bytes(data))
    assert fast_dump(discover([str(tmp_path)])[0], T0_NS, style="jsonl", payload="base64") is None


def test_fast_dump_notices_a_log_that_changed_between_its_passes(c_kernel, tmp_path):
    from wqtool.errors import InputError
    generate(str(tmp_path), SampleSpec(records=60, segment_size=1 << 20, seed=4))
    log = discover([str(tmp_path)])[0]
    report, chunks = fast_dump(log, T0_NS, style="jsonl", payload="base64")
    seg = tmp_path / "000000001.log"
    data = bytearray(seg.read_bytes())
    data[300] ^= 1
    seg.write_bytes(bytes(data))
    with pytest.raises(InputError, match="changed while it was read"):
        list(chunks)
