"""``pack``'s input records by kind (``by_kind_before``) come from its one read of the log, on both paths:
the kernel's statistics, and the reference pass counting the records as they go by. Both paths must equal an
independent count of every CRC-valid frame by its command byte. That count is the framing reader with no payload
decoding, as below. The logs are random, damaged in code (bit flips and truncations) and read through with
``--salvage``. The count must also hold for a log with a record the kernel cannot decode."""
from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import AS_OF
from wqtool.engine.findings import Finding
from wqtool.engine.instant import parse_instant
from wqtool.engine.workq import fastreplay, pack
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.sample import SampleSpec, generate
from wqtool.errors import PackRefused
from wqtool.formats.workq import CmdType

AS_OF_NS = parse_instant(AS_OF)
_KIND = {int(c): c.label for c in CmdType}


def frames_by_kind(log) -> dict[str, int]:
    """The oracle: every frame the reader accepts (CRC-valid), by its payload's first byte (the command)."""
    out: Counter = Counter()
    for ev in RecordReader(log, decode=False).events():
        if isinstance(ev, Finding):
            continue
        body = ev.raw_payload
        out[_KIND.get(body[len(body) - ev.size] if ev.size else 0, "(undecodable)")] += 1
    return dict(out)


def _plan(path: str, kernel: str, monkeypatch):
    monkeypatch.setattr(fastreplay, "KERNEL", kernel)
    return pack.pack_plan(discover([path])[0], AS_OF_NS, salvage=True)


def _damage(path: str, flips: list[int], cut: int | None) -> None:
    segs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
    for i, at in enumerate(flips):
        seg = os.path.join(path, segs[i % len(segs)])
        data = bytearray(open(seg, "rb").read())
        if data:
            data[at % len(data)] ^= 1 << (at % 8)
            open(seg, "wb").write(bytes(data))
    if cut is not None:
        last = os.path.join(path, segs[-1])
        size = os.path.getsize(last)
        os.truncate(last, size - cut % max(size, 1))


@pytest.mark.parametrize("kernel", ["c", "python"])
def test_a_clean_log_is_counted_in_the_one_pass(tmp_path, monkeypatch, kernel):
    if kernel == "c":
        pytest.importorskip("wqtool.engine.workq._kernel", reason="no C kernel built")
    src = str(tmp_path / "log")
    generate(src, SampleSpec(records=400, seed=3, segment_size=4096))
    plan = _plan(src, kernel, monkeypatch)
    assert plan.by_kind_before == frames_by_kind(discover([src])[0])
    assert sum(plan.by_kind_before.values()) == plan.records_before


@settings(max_examples=int(os.environ.get("WQTOOL_PACK_KINDS_EXAMPLES", "30")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.integers(1, 300), seed=st.integers(0, 10_000), segment_size=st.sampled_from([300, 2048, 1 << 20]),
       flips=st.lists(st.integers(0, 1 << 20), max_size=4), cut=st.none() | st.integers(1, 200))
def test_a_damaged_log_is_counted_alike_on_both_paths(tmp_path_factory, monkeypatch, records, seed, segment_size,
                                                      flips, cut):
    pytest.importorskip("wqtool.engine.workq._kernel", reason="no C kernel built")
    src = str(tmp_path_factory.mktemp("kinds") / "log")
    generate(src, SampleSpec(records=records, seed=seed, segment_size=segment_size))
    _damage(src, flips, cut)
    want = frames_by_kind(discover([src])[0])
    got = {}
    for kernel in ("c", "python"):
        try:
            got[kernel] = _plan(src, kernel, monkeypatch).by_kind_before
        except PackRefused as exc:      # (nothing left to pack): refused alike on both paths
            got[kernel] = type(exc)
    assert got["c"] == got["python"]
    if got["c"] is not PackRefused:
        assert got["c"] == want


@pytest.mark.parametrize("kernel", ["c", "python"])
def test_a_record_that_does_not_decode_is_counted_by_its_command_byte(tmp_path, monkeypatch, kernel):
    """A CRC-valid record with no known command (byte 0x7f, its CRC made again): the kernel hands the log back,
    and the reference pass counts it as "(undecodable)" in the same read."""
    if kernel == "c":
        pytest.importorskip("wqtool.engine.workq._kernel", reason="no C kernel built")
    from google_crc32c import value as crc32c

    from wqtool.formats.workq import RECORD_CRC_STRUCT
    src = str(tmp_path / "log")
    generate(src, SampleSpec(records=40, seed=5, segment_size=1 << 20))
    rec = next(ev for ev in RecordReader(discover([src])[0], decode=False).events() if not isinstance(ev, Finding))
    end = rec.offset + rec.length - 4                   # the CRC covers the record up to its payload's end
    data = bytearray(open(rec.path, "rb").read())
    data[end - rec.size] = 0x7F
    RECORD_CRC_STRUCT.pack_into(data, end, crc32c(bytes(data[rec.offset:end])))
    open(rec.path, "wb").write(bytes(data))
    want = frames_by_kind(discover([src])[0])
    assert want["(undecodable)"] == 1
    assert _plan(src, kernel, monkeypatch).by_kind_before == want
