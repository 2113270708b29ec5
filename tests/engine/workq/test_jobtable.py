"""The compact job state (jobtable.py): the C ``JobTable`` equals its pure-Python twin, and the state built on it
(``replay.CompactJobs``) equals the reference replay's — jobs, counts, digest, replay's JSON rows.

* random put / delete sequences drive both tables (with the C table compacting itself) and every read method
  must agree; memory follows the live jobs;
* on random generated logs the kernel's state (C and Python tables) has the reference's jobs (``Job`` by
  ``Job``), counts, queues and digest, and its encoded rows are ``json.dumps(job_to_jsonable(job))`` exactly;
* the C time formatting is ``format_unix_ns`` on every edge (years 1 and 9999, before 1970, the "@ns" form).
"""
from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq import fastreplay, replay
from wqtool.engine.workq.jobtable import ROW, PyJobTable
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.replay import CompactJobs, ReplayState, digest_line, digest_start
from wqtool.engine.workq.sample import T0_NS, SampleSpec, generate
from wqtool.engine.workq.serialize import WorkqStateView, job_to_jsonable
from wqtool.engine.workq.verify import run_log
from wqtool.formats._common import format_unix_ns

_kernel = fastreplay._kernel
needs_c = pytest.mark.skipif(_kernel is None, reason="the C kernel (wqtool.engine.workq._kernel) is not built")
T = T0_NS + 3600 * 10**9
IDS = [bytes([i % 7, 0, 0, 0, 0, 0, 0x40, 0, 0x80] + [0] * 6 + [i]) for i in range(40)]


@st.composite
def row(draw):
    kind = draw(st.sampled_from([1, 2]))
    st_ = draw(st.integers(0, 4))
    return (kind, draw(st.sampled_from(["q1", "q2", "a" * 255, "Z.9_-z", "x"])),
            draw(st.sampled_from([1, 5000, 86_400_000, 2**32 - 1])), draw(st.sampled_from([1, 3_600_000, 2**32 - 1])),
            draw(st.sampled_from([0, -3, 2**31 - 1, -(2**31)])), draw(st.sampled_from([0, 1, 255])),
            draw(st.sampled_from([0, 255])), draw(st.sampled_from([T, -(2**63), 2**63 - 1, 0])),
            None if kind == 1 else draw(st.sampled_from([T + 1, -(2**63), 2**63 - 1])),
            draw(st.sampled_from([T + 2, -(2**63), 2**63 - 1])), draw(st.sampled_from([0, 7, 2**32 - 1])),
            draw(st.sampled_from([0, 0xDEADBEEF, 2**32 - 1])), draw(st.integers(0, 3)),
            draw(st.sampled_from([8, 2**40])), st_, draw(st.sampled_from([0, 1, 2**32 - 1])),
            draw(st.sampled_from([None, b"", b"ok", bytes(range(256)) * 3])))


def reads(t) -> tuple:
    return (len(t), t.ids(), t.sorted_ids(), t.rows(), t.note_counts(), t.counts(),
            [t.get_row(k) for k in IDS], [k in t for k in IDS])


@needs_c
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "put", "delete"]), st.sampled_from(IDS), row()), max_size=120))
def test_c_table_equals_the_python_table(ops):
    c, py = _kernel.JobTable(), PyJobTable()
    for op, jid, r in ops:
        if op == "put":
            c.put(jid, r)
            py.put(jid, r)
        else:
            outcomes = []
            for t in (c, py):
                try:
                    t.delete(jid)
                    outcomes.append("ok")
                except KeyError:
                    outcomes.append("KeyError")
            assert outcomes[0] == outcomes[1]
    assert reads(c) == reads(py)


@needs_c
def test_c_table_compacts_and_memory_follows_the_live_jobs():
    t = _kernel.JobTable()
    r = (1, "q1", 5000, 3_600_000, 0, 0, 0, T, None, T + 1, 10, 1, 0, 8, 1, 1, b"r" * 100)
    ids = [i.to_bytes(16, "big") for i in range(200_000)]
    for i in ids:
        t.put(i, r)
    full = t.memory()
    for i in ids[:199_000]:
        t.delete(i)
    assert len(t) == 1000 and t.memory() < full / 20        # dead records, index and result bytes given back
    assert t.ids() == ids[199_000:] and t.sorted_ids() == ids[199_000:]
    assert all(t.get_row(i) == r for i in ids[199_000:])
    for n in range(300):                                     # names that come and go are dropped at compaction
        t.put(ids[n], (1, f"queue{n}", 5000, 3_600_000, 0, 0, 0, T, None, T + 1, 10, 1, 0, 8, 1, 1, None))
    assert t.counts()[1]["q1"] == [0, 1000, 0, 0, 0]
    assert _kernel.JOB_RECORD_SIZE <= 112


@needs_c
def test_c_table_refuses_what_a_row_cannot_hold():
    t = _kernel.JobTable()
    good = (1, "q1", 5000, 3_600_000, 0, 0, 0, T, None, T + 1, 10, 1, 0, 8, 1, 1, None)
    for i, bad in [(1, "bad name"), (2, 2**32), (4, 2**31), (5, 256), (7, 2**63), (8, 5), (14, 5), (15, 2**32)]:
        r = list(good)
        r[i] = bad
        with pytest.raises((ValueError, OverflowError)):
            t.put(IDS[0], tuple(r))
    with pytest.raises(ValueError):        # the Python table checks the name only (the scan writes valid rows)
        PyJobTable().put(IDS[0], (1, "bad name", *good[2:]))
    with pytest.raises(TypeError):
        t.get_row(b"short")
    assert len(t) == 0 and len(ROW) == 17


# ---------------------------------------------------------------- the state on a table == the reference state
@pytest.fixture(params=["python", "c"])
def kernel(request, monkeypatch):
    """The table the state is on: the C one the kernel fills, or its rows copied into a PyJobTable (the table the
    server keeps under WQTOOL_PURE_PYTHON=1)."""
    if _kernel is None:
        pytest.skip("the C kernel is not built")
    monkeypatch.setattr(fastreplay, "KERNEL", "c")
    return request.param


def compact_state(log, as_of, kernel):
    state = run_log(log, as_of, engine="fast").state
    if kernel == "python":
        py = PyJobTable()
        for r in state.jobs.table.rows():
            py.put(r[0], tuple(r[1:]))
        state.jobs = CompactJobs(py, state.jobs.paths, state.jobs.as_of_ns)
    return state


def job_key(j):
    return j.canonical(), j.src_path, j.src_offset, j.kind, j.state


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(1, 1500), st.sampled_from([0.0, 0.6]),
       st.sampled_from([T0_NS, T, T + 40 * 86400 * 10**9, 2**80, -(2**80)]))
def test_compact_state_equals_the_reference(kernel, tmp_path_factory, seed, n, reuse, as_of):
    d = tmp_path_factory.mktemp("g")
    generate(str(d), SampleSpec(records=n, segment_size=3000, seed=seed, reuse_ids=reuse, queues=5))
    log = discover([str(d)])[0]
    ref = run_log(log, as_of, engine="reference").state
    fast = compact_state(log, as_of, kernel)
    assert isinstance(fast.jobs, CompactJobs) and isinstance(ref.jobs, dict)
    assert len(fast.jobs) == len(ref.jobs) and set(fast.jobs) == set(ref.jobs)
    assert [job_key(j) for j in fast.sorted_jobs()] == [job_key(j) for j in ref.sorted_jobs()]
    assert fast.jobs == ref.jobs                       # Mapping equality, Job by Job
    assert fast.counts_by_state() == ref.counts_by_state() and fast.queues() == ref.queues()
    assert fast.digest() == ref.digest()
    for style in ("jsonl", "json"):
        got = "".join(c if style == "jsonl" else c + ",\n" for c in WorkqStateView(fast).encoded_rows(style))
        want = "".join(json.dumps(job_to_jsonable(j)) + "\n" if style == "jsonl"
                       else "    " + json.dumps(job_to_jsonable(j), indent=2).replace("\n", "\n    ") + ",\n"
                       for j in ref.sorted_jobs())
        assert got == want


def test_rows_chunking_and_an_as_of_beyond_128_bits(kernel, tmp_path, monkeypatch):
    """More rows than a chunk; an as-of no C integer holds takes the Python path, with the same results."""
    generate(str(tmp_path), SampleSpec(records=3000, segment_size=1 << 20, seed=3))
    log = discover([str(tmp_path)])[0]
    monkeypatch.setattr(replay, "_ROWS_CHUNK", 7)
    for as_of in (T, 2**130, -(2**130)):
        ref = run_log(log, as_of, engine="reference").state
        fast = compact_state(log, as_of, kernel)
        assert len(ref.jobs) > 7 or as_of > T        # (everything has expired at 2**130)
        assert fast.digest() == ref.digest()
        chunks = list(WorkqStateView(fast).encoded_rows("jsonl"))
        assert "".join(chunks) == "".join(json.dumps(job_to_jsonable(j)) + "\n" for j in ref.sorted_jobs())


def test_the_digest_is_the_line_loop(kernel, tmp_path):
    generate(str(tmp_path), SampleSpec(records=2000, segment_size=1 << 20, seed=8, reuse_ids=0.5))
    state = compact_state(discover([str(tmp_path)])[0], T, kernel)
    h = digest_start(T)
    for j in state.sorted_jobs():
        h.update(digest_line(j))
    assert state.digest() == h.hexdigest()
    assert ReplayState(T, CompactJobs(PyJobTable(), [], T)).digest() == digest_start(T).hexdigest()


@needs_c
def test_the_c_digest_refuses_a_hash_that_keeps_its_buffer(tmp_path, monkeypatch):
    from wqtool.engine.workq import fastreplay
    monkeypatch.setattr(fastreplay, "KERNEL", "c")          # the C table also under WQTOOL_PURE_PYTHON=1
    generate(str(tmp_path), SampleSpec(records=50, segment_size=1 << 20, seed=2))
    table = compact_state(discover([str(tmp_path)])[0], T, kernel).jobs.table

    class Keeper:
        def __init__(self):
            self.kept = []

        def update(self, b):
            self.kept.append(b)

    with pytest.raises(RuntimeError):
        table.digest(Keeper(), T)
    h = hashlib.sha256()
    table.digest(h, T)


@needs_c
@settings(max_examples=examples(2000), deadline=None)
@given(st.one_of(st.integers(-(2**127), 2**127 - 1),
                 st.integers(-62135596800 * 10**9 - 10**10, 253402300799 * 10**9 + 10**10),
                 st.sampled_from([0, -1, 1, 10**9 - 1, -(10**9), -62135596800 * 10**9, -62135596800 * 10**9 - 1,
                                  253402300799 * 10**9 + 999_999_999, 253402300800 * 10**9, 951782400 * 10**9,
                                  -(2**63), 2**63 - 1, -(2**127), 2**127 - 1])))
def test_c_time_format_equals_format_unix_ns(ns):
    assert _kernel.format_ns(ns) == format_unix_ns(ns)


def test_labels_match_the_enums():
    if _kernel is None:
        pytest.skip("the C kernel is not built")
    from wqtool.engine.workq.replay import JobState
    from wqtool.formats.workq import CmdType
    assert _kernel.LABELS["state"] == tuple(s.label for s in JobState)
    assert _kernel.LABELS["kind"][1:] == (CmdType.ADD.label, CmdType.SCHEDULE.label)
    assert _kernel.LABELS["cmd"][1:] == tuple(c.label for c in CmdType)
