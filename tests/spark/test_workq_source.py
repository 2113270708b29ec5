"""The workq records source's fast read (``Spark.file_batches``, ``wqtool.engine.workq.columns``: each segment's
rows as Arrow columns from the C kernel's ``record_columns``, the reference reader from the first record it
refuses) yields exactly the reference reader's rows (``RecordSourceReader.read`` with no fast path: a dict per record from
``RecordView.row``), schema included: on random segments of hostile records (tests/engine/workq/test_rows_c.py's
strategies), with a damaged record, random bit flips (the header's too) and truncations, in every payload
rendering, permissive and failfast, chunked at any size. The readers are driven in this process, as a Spark task
drives them (``partitions()`` on the driver, ``read(partition)`` per segment)."""
from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples
from tests.engine.workq.test_rows_c import HEADER, record

from wqtool.engine.format import get
from wqtool.engine.workq import fastreplay
from wqtool.engine.workq import columns
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import segment_events
from wqtool.spark.datasources import Options, RecordSourceReader

pytestmark = pytest.mark.skipif(fastreplay._kernel is None, reason="the C kernel is not built")
FMT = get("workq")


def read_all(path: str, options: dict, fast: bool):
    """Every batch's rows (and the schema of each batch) of the workq source over ``path``; a read that fails
    (failfast) is [("error", message)]."""
    opts = Options.parse(FMT, {"path": path, **options})
    r = RecordSourceReader(opts)
    r.fast = fast
    rows, schemas = [], set()
    try:
        for p in r.partitions():
            for b in r.read(p):
                rows += b.to_pylist()
                schemas.add(b.schema)
    except ValueError as exc:       # failfast: the task fails, Spark keeps none of its rows
        return [("error", str(exc))], set()
    return rows, schemas


def _write(d: str, segments: list[bytes]) -> None:
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, data in enumerate(segments, 1):
        with open(os.path.join(d, f"{i:09d}.log"), "wb") as f:
            f.write(data)


@st.composite
def segments(draw):
    """1-3 segments of hostile records; maybe a damaged record among them, bit flips, a truncated newest."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        recs = draw(st.lists(record(), max_size=8))
        if draw(st.integers(0, 3)) == 0:
            recs.insert(draw(st.integers(0, len(recs))), draw(record(damage=True)))
        data = bytearray(HEADER + b"".join(recs))
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 3]))):
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
        out.append(bytes(data))
    cut = draw(st.sampled_from([0, 0, 0, 1, 5, 30]))
    if cut:
        out[-1] = out[-1][:max(0, len(out[-1]) - cut)]
    return out


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(segments(), st.sampled_from(["false", "true", "hex", "text"]), st.sampled_from(["permissive", "failfast"]),
       st.sampled_from(["log", "file"]), st.sampled_from([1, 3, 65536]))
def test_kernel_rows_equal_the_reference_rows(tmp_path, monkeypatch, segs, payload, mode, index, chunk):
    d = str(tmp_path / "log")
    _write(d, segs)
    monkeypatch.setattr(columns, "CHUNK_ROWS", chunk)
    options = {"payload": payload, "mode": mode, "index": index}
    (log,) = FMT.discover([d], Options.parse(FMT, {"path": d}).engine_options())
    for i, seg in enumerate(log.segments):          # the planning count (index=log) of each segment
        want_n = sum(1 for ev in segment_events(seg, 0, seg is log.newest, decode=False) if isinstance(ev, Record))
        assert FMT.spark.file_records(log, i) == want_n
    want, want_schemas = read_all(d, options, fast=False)
    got, got_schemas = read_all(d, options, fast=True)
    assert got == want
    assert got_schemas == want_schemas


def read_shares(path: str, options: dict, slots: int, share_bytes: int):
    """The rows of every partition, in partition order, with ``slots`` executor slots and byte-range shares of
    at least ``share_bytes`` (``RecordSourceReader._shared``); the partitions' shares."""
    opts = Options.parse(FMT, {"path": path, **options})
    r = RecordSourceReader(opts)
    r.slots, r.share_bytes = slots, share_bytes
    rows, shares = [], []
    parts = r.partitions()
    for p in parts:
        shares.append((p.file, p.share, p.cuts))
        for b in r.read(p):
            rows += b.to_pylist()
    return rows, shares


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(segments(), st.sampled_from(["false", "hex"]), st.sampled_from(["log", "file"]), st.sampled_from([1, 2, 65536]),
       st.integers(2, 9), st.sampled_from([1, 7, 64, 300]))
def test_byte_range_shares_read_each_row_once_in_file_order(tmp_path, monkeypatch, segs, payload, index, chunk, slots,
                                                             share_bytes):
    """A file read by several tasks (fewer files than slots: byte-range shares, each running the kernel from the
    file's start and keeping what starts in its range) gives the reference reader's rows, each once, in order —
    damaged, flipped and truncated segments included (a share's damage rows and the reference reader's records
    after the kernel stops go to the share their offset falls in)."""
    d = str(tmp_path / "log")
    _write(d, segs)
    monkeypatch.setattr(columns, "CHUNK_ROWS", chunk)
    options = {"payload": payload, "index": index}
    want, _ = read_all(d, options, fast=False)
    got, shares = read_shares(d, options, slots, share_bytes)
    assert got == want
    whole, _ = read_shares(d, options, 1, share_bytes)       # one slot: a partition per file, as before
    assert whole == want


def test_a_big_file_is_split_only_where_slots_are_spare_and_reads_are_permissive(tmp_path):
    from wqtool.engine.workq.sample import SampleSpec, generate
    d = str(tmp_path / "log")
    generate(d, SampleSpec(records=3000, segment_size=1 << 20, seed=7))
    size = os.path.getsize(os.path.join(d, "000000001.log"))
    rows, shares = read_shares(d, {}, 2, size // 3)
    assert shares == [(0, 0, (size // 2,)), (0, 1, (size // 2,))]
    assert rows == read_all(d, {}, fast=False)[0]
    assert read_shares(d, {}, 3, size // 2 + 1)[1] == [(0, 0, ())]      # two shares would be under share_bytes
    rows, shares = read_shares(d, {}, 9, 1)                              # at most MAX_SHARES (4) per file
    assert [k for _, k, _ in shares] == [0, 1, 2, 3] and rows == read_all(d, {}, fast=False)[0]
    assert read_shares(d, {"mode": "failfast"}, 2, 1)[1] == [(0, 0, ())]      # failfast: the first error, whole
    assert read_shares(d, {"payload": "binary"}, 2, 1)[1] == [(0, 0, ())]     # the reference path: whole


def _fast(opts, part):
    from wqtool.spark.datasources import _arrow_schema
    return FMT.spark.file_batches(part.log, part.file, part.start_index, payload=opts.payload,
                            schema=_arrow_schema(opts, FMT.record_view), file_name=part.path, values={})


def test_an_intact_segment_takes_the_kernel_and_a_damaged_one_hands_over_at_the_damage(tmp_path):
    import pyarrow as pa

    from wqtool.engine.workq.sample import SampleSpec, generate
    d = str(tmp_path / "log")
    generate(d, SampleSpec(records=300, segment_size=1 << 20, seed=3))
    opts = Options.parse(FMT, {"path": d})
    (part,) = RecordSourceReader(opts).partitions()
    assert [b.num_rows for b in _fast(opts, part)] == [300]      # one kernel batch, no reference event
    seg = os.path.join(d, "000000001.log")
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:                            # flip a byte in the last third: a CRC error there
        f.seek(size * 2 // 3)
        b = f.read(1)
        f.seek(size * 2 // 3)
        f.write(bytes([b[0] ^ 0x40]))
    (part,) = RecordSourceReader(opts).partitions()
    got = list(_fast(opts, part))
    batches = [b for b in got if isinstance(b, pa.RecordBatch)]
    events = got[len(batches):]
    assert batches and events and not any(isinstance(e, pa.RecordBatch) for e in events)
    first = events[0]
    assert first.offset <= size * 2 // 3 and first.code == "WQ-CRC"   # the reference reads on at the damage
    assert sum(b.num_rows for b in batches) == first.next_index
    fast, _ = read_all(d, {}, fast=True)
    ref, _ = read_all(d, {}, fast=False)
    assert fast == ref and any(row["_corrupt"] for row in ref)


def test_binary_payloads_and_pushed_filters_take_the_reference_path(tmp_path):
    from wqtool.engine.workq.sample import SampleSpec, generate
    d = str(tmp_path / "log")
    generate(d, SampleSpec(records=40, segment_size=1 << 20, seed=5))
    opts = Options.parse(FMT, {"path": d, "payload": "binary"})
    (part,) = RecordSourceReader(opts).partitions()
    assert _fast(opts, part) is None
    fast, _ = read_all(d, {"payload": "binary"}, fast=True)
    ref, _ = read_all(d, {"payload": "binary"}, fast=False)
    assert fast == ref and ref and any(isinstance(r["payload"], bytes) for r in ref)
    from wqtool.spark.datasources import PushdownRecordSourceReader
    opts = Options.parse(FMT, {"path": d})
    pushed = PushdownRecordSourceReader(opts)
    pushed.pushed = [("cmd", "in", ("add",))]
    (part,) = pushed.partitions()
    got = [r for b in pushed.read(part) for r in b.to_pylist()]
    assert got == [r for r in read_all(d, {}, fast=False)[0] if r["cmd"] == "add"] and got


def test_formats_without_a_fast_reader_give_none(tmp_path):
    from wqtool.engine.caps import Spark
    from wqtool.engine.format import formats
    assert [f.name for f in formats() if type(f.spark).file_batches is not Spark.file_batches] == ["workq"]


def test_a_later_share_starts_at_its_range_on_an_intact_file_and_from_the_start_after_damage(tmp_path):
    """Share k >= 1 of a file frames the records before its range (``columns.file_batches_at``: ``_kernel.walk``)
    and decodes only its own: its first batch starts at the first record at or after its cut, numbered as the
    whole read numbers it. Damage before the cut: None (the share reads from the start and keeps its rows)."""
    from wqtool.engine.workq.sample import SampleSpec, generate
    d = str(tmp_path / "log")
    generate(d, SampleSpec(records=3000, segment_size=1 << 20, seed=3))
    (log,) = FMT.discover([d], Options.parse(FMT, {"path": d}).engine_options())
    seg = log.segments[0]
    opts = Options.parse(FMT, {"path": d})
    whole = list(columns.file_batches(log, 0, 0, payload="false", schema=_schema(opts), file_name="f", values={}))
    rows = [r for b in whole for r in b.to_pylist()]
    cut = os.path.getsize(seg.path) // 2
    later = list(columns.file_batches_at(log, 0, 0, cut, payload="false", schema=_schema(opts), file_name="f",
                                         values={}))
    got = [r for b in later for r in b.to_pylist()]
    assert got and got == [r for r in rows if r["offset"] >= cut]
    assert got[0]["offset"] < cut + 200        # the first record at or after the cut
    with open(seg.path, "r+b") as f:           # a flipped byte before the cut: the walk stops there
        f.seek(cut // 2)
        b = f.read(1)
        f.seek(cut // 2)
        f.write(bytes([b[0] ^ 0x40]))
    assert columns.file_batches_at(log, 0, 0, cut, payload="false", schema=_schema(opts), file_name="f",
                                   values={}) is None


def _schema(opts):
    """The records source's Arrow schema for ``opts``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from wqtool.spark.datasources import record_schema
    return to_arrow_schema(record_schema(opts, FMT.record_view))
