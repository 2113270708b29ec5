"""The C packer (kernel/pack.c: JobTable.pack_plan / pack_segment) == the Python reference (pack.py: _layout,
_tail, _iter_records and the writer's roll-over): the same plan and byte-identical segments, on random histories
of random shapes (hypothesis), segment sizes from one record per segment up, and the jobs of every state."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import AS_OF
from wqtool.engine.instant import parse_instant
from wqtool.engine.workq import pack
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.sample import SampleSpec, generate
from wqtool.engine.workq.verify import run_log

_kernel = pytest.importorskip("wqtool.engine.workq._kernel", reason="no C kernel built")
AS_OF_NS = parse_instant(AS_OF)


def _c_kernel(monkeypatch) -> None:
    """The kernel's pass (its C job table packs), also under WQTOOL_PURE_PYTHON=1 (fastreplay.KERNEL "python": the
    reference pass, whose plan has no table); as tests/engine/workq/test_jobtable.py does for the C table."""
    from wqtool.engine.workq import fastreplay
    monkeypatch.setattr(fastreplay, "KERNEL", "c")


def _files(d: str) -> dict[str, bytes]:
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d)) if n.endswith(".log")}


def _python_plan(log, as_of_ns: int, segment_size: int):
    """The plan on the reference pass's state (Job objects): the Python layout and writer."""
    ref = run_log(log, as_of_ns, engine="reference")
    plan = pack.pack_plan(log, as_of_ns, segment_size=segment_size)
    order, lengths, segs, nbytes, recs, kinds = pack._layout(log, ref.state, segment_size)
    plan.table, plan.state, plan.order, plan.src_lengths = None, ref.state, order, lengths
    plan.segments_after, plan.bytes_after, plan.records_after, plan.by_kind_after = segs, nbytes, recs, kinds
    return plan


@settings(max_examples=int(os.environ.get("WQTOOL_PACK_C_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.integers(0, 600), seed=st.integers(0, 10_000), queues=st.integers(1, 5),
       payload=st.integers(0, 300), segment_size=st.sampled_from([15, 200, 4096, 1 << 20]),
       as_of=st.sampled_from([AS_OF, "2026-11-21T00:00:00Z", "2027-06-01T00:00:00Z"]))
def test_the_c_packer_is_the_python_packer(tmp_path_factory, monkeypatch, records, seed, queues, payload,
                                           segment_size, as_of):
    _c_kernel(monkeypatch)
    base = tmp_path_factory.mktemp("packc")
    src = str(base / "src")
    generate(src, SampleSpec(records=records, seed=seed, queues=queues, payload_max=payload, segment_size=2048))
    log = discover([src])[0]
    as_of_ns = parse_instant(as_of)
    c = pack.pack_plan(log, as_of_ns, segment_size=segment_size)
    assert c.table is not None
    py = _python_plan(log, as_of_ns, segment_size)
    assert b"".join(py.order) == c.order
    assert list(py.src_lengths) == list(c.src_lengths)
    assert (c.segments_after, c.bytes_after, c.records_after, c.by_kind_after) == \
        (py.segments_after, py.bytes_after, py.records_after, py.by_kind_after)
    a, b = str(base / "c"), str(base / "py")
    c.write(a, fsync=False)
    py.write(b, fsync=False)
    assert _files(a) == _files(b)
    assert sum(len(x) for x in _files(a).values()) == c.bytes_after


def test_a_changed_record_is_an_input_error(tmp_path, monkeypatch):
    """The C writer checks each add's CRC and id again, as the Python one: the log changed since the plan."""
    from wqtool.errors import InputError
    _c_kernel(monkeypatch)
    src = str(tmp_path / "src")
    generate(src, SampleSpec(records=200, seed=3))
    plan = pack.pack_plan(discover([src])[0], AS_OF_NS)
    job = plan.state.jobs[plan.order[:16]]      # the first live job's add, in log order
    data = bytearray(open(job.src_path, "rb").read())
    data[job.src_offset + 20] ^= 0xFF
    open(job.src_path, "wb").write(bytes(data))
    with pytest.raises(InputError, match=os.path.basename(job.src_path)):
        plan.write(str(tmp_path / "out"), fsync=False)
    assert not (tmp_path / "out").exists()
