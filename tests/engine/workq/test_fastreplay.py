"""The hot kernel (fastreplay.py) is proven equal to the reference path (reader + WorkqReplay).

Random logs — valid, with records of unknown jobs, expired adds, impossible histories, invalid fields,
undecodable payloads and byte damage — go through both; findings, exit code, counts and the state digest
must be identical, whether the kernel handled the log or handed it back to the reference path.

The kernel reads through damage: on every log here — damaged, refused records, undecodable payloads — it must
run itself (no ``Bail``; the only hand-backs left are named in fastreplay.py) and give what the reference gives,
with one process and with two. Skipped where the C kernel is not built (there the reference path is the only
one; tests/engine/workq/test_kernel_c.py insists it is built where it can be).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq import fastreplay
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.fastreplay import Bail, fast_run
from wqtool.engine.workq.model import Command
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.sample import SampleSpec, generate
from wqtool.engine.workq.verify import fast_report, run_log
from wqtool.engine.workq.writer import SegmentWriter
from wqtool.formats._common import GO_ZERO_TIME, GoTime
from wqtool.formats.workq import CmdType

T = 1_795_302_000 * 10**9
IDS = [bytes.fromhex(f"000000000000400080000000000000{i:02x}") for i in range(1, 9)] + \
      [bytes.fromhex("0000000000001000800000000000000a")]   # the last one is not v4


@pytest.fixture(scope="module", autouse=True)
def kernel():
    if fastreplay._kernel is None:
        pytest.skip("the C kernel (wqtool.engine.workq._kernel) is not built")
    saved = fastreplay._C_SCAN, fastreplay.KERNEL
    fastreplay._C_SCAN, fastreplay.KERNEL = fastreplay._kernel.scan, "c"
    try:
        yield "c"
    finally:
        fastreplay._C_SCAN, fastreplay.KERNEL = saved


@st.composite
def command(draw):
    kind = draw(st.sampled_from(list(CmdType) + [None]))
    jid = draw(st.sampled_from(IDS))
    if kind is None:   # undecodable payloads with a valid CRC
        return draw(st.sampled_from([b"", b"\x09", b"\x09\x00", b"\x05" + jid + b"\x00", b"\x05" + jid[:10]]))
    if kind in (CmdType.ADD, CmdType.SCHEDULE):
        created = T + draw(st.sampled_from([0, -3_600_000 * 10**6 - 1, -10**9]))
        return Command(kind, jid, draw(st.sampled_from([b"q1", b"q2", b"bad name", b"x" * 200])),
                       draw(st.sampled_from([1, 5000, 0, 86_400_001, 2**32 + 5])),
                       draw(st.sampled_from([3_600_000, 1, 2_592_000_001])),
                       draw(st.sampled_from([0, 5, -3, 2**31])), draw(st.sampled_from([0, 1, 2, 300])), 0,
                       draw(st.sampled_from([b"", b"payload"])),
                       GO_ZERO_TIME if kind is CmdType.ADD else GoTime.from_unix_ns(T + 600 * 10**9),
                       GoTime.from_unix_ns(created))
    if kind in (CmdType.COMPLETE, CmdType.FAIL):
        return Command(kind, jid, result=draw(st.sampled_from([b"", b"ok"])))
    return Command(kind, jid)


@st.composite
def valid_command(draw):
    """Commands with valid fields (the history may still be refused): where the kernel must do the work."""
    kind = draw(st.sampled_from(list(CmdType)))
    jid = draw(st.sampled_from(IDS[:2]))
    if kind in (CmdType.ADD, CmdType.SCHEDULE):
        created = T + draw(st.sampled_from([0, 0, 0, -3_600_000 * 10**6 - 1]))
        return Command(kind, jid, b"q1", 5000, 3_600_000, draw(st.sampled_from([0, -3])),
                       draw(st.sampled_from([0, 1, 2])), 0, b"p",
                       GO_ZERO_TIME if kind is CmdType.ADD else GoTime.from_unix_ns(T + 600 * 10**9),
                       GoTime.from_unix_ns(created))
    if kind in (CmdType.COMPLETE, CmdType.FAIL):
        return Command(kind, jid, result=draw(st.sampled_from([b"", b"ok"])))
    return Command(kind, jid)


def write_log(d, cmds, segment_size, damage, times=None):
    """The records of ``cmds`` (a command, or raw payload bytes) at ``times`` (default: a millisecond apart from T),
    then ``damage``: (segment, "flip" | "cut", where)."""
    times = [T + i * 10**6 for i in range(len(cmds))] if times is None else times
    with SegmentWriter(str(d), segment_size=segment_size) as w:
        for c, t in zip(cmds, times):
            payload = c if isinstance(c, bytes) else encode_payload(c)
            w.append_raw(encode_record(GoTime.from_unix_ns(t), payload))
    segs = sorted(p for p in os.listdir(d) if p.endswith(".log"))
    if damage is not None and segs:
        p = os.path.join(d, segs[damage[0] % len(segs)])
        data = bytearray(open(p, "rb").read())
        if damage[1] == "flip" and len(data) > 8:
            i = 8 + damage[2] % (len(data) - 8)
            data[i] ^= 1 << (damage[2] % 8)
        elif damage[1] == "cut":
            data = data[:damage[2] % (len(data) + 1)]
        open(p, "wb").write(bytes(data))


def key(report):
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message, f.upstream, f.job_id, f.verdict)
             for f in report.findings], report.verdict, report.records, dict(report.counts))


AS_OF = T + 60 * 10**9


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(command(), max_size=40), st.sampled_from([60, 300, 1 << 20]),
       st.one_of(st.none(), st.tuples(st.integers(0, 5), st.sampled_from(["flip", "cut"]), st.integers(0, 10**6))))
def test_kernel_equals_reference(tmp_path_factory, cmds, segment_size, damage):
    d = tmp_path_factory.mktemp("k")
    write_log(d, cmds, segment_size, damage)
    log = discover([str(d)])[0]
    ref = run_log(log, AS_OF, engine="reference")
    fast = run_log(log, AS_OF, engine="fast")
    assert key(fast) == key(ref)
    assert fast.state.digest() == ref.state.digest()
    verify_only = run_log(log, AS_OF, engine="fast", state=False)
    assert key(verify_only) == key(ref)
    two = run_log(log, AS_OF, engine="fast", state=False, workers=2)
    assert key(two) == key(ref)
    for workers in (1, 2):      # no finding kept: the verdict, counts and torn tail's offset still the reference's
        capped = run_log(log, AS_OF, engine="fast", state=False, workers=workers, limit=0)
        capped_ref = run_log(log, AS_OF, engine="reference", state=False, limit=0)
        assert (capped.verdict, capped.counts, capped.severities, capped.last_good, capped.findings) == \
            (capped_ref.verdict, capped_ref.counts, capped_ref.severities, capped_ref.last_good, [])


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(valid_command(), max_size=16))
def test_kernel_handles_warning_only_logs_itself(tmp_path_factory, cmds):
    """Valid fields, any history (refused records included): the kernel runs it and equals the reference."""
    d = tmp_path_factory.mktemp("w")
    write_log(d, cmds, 1 << 20, None)
    log = discover([str(d)])[0]
    ref = run_log(log, AS_OF, engine="reference")
    fast = run_log(log, AS_OF, engine="fast")
    assert key(fast) == key(ref) and fast.state.digest() == ref.state.digest()


@pytest.mark.parametrize("first", [CmdType.COMPLETE, CmdType.FAIL])
@pytest.mark.parametrize("gone", [CmdType.DELETE, CmdType.EXPIRE])
def test_a_reused_id_starts_without_the_old_result(tmp_path, first, gone):
    """Found by pack's tests: the kernel once handed a re-added job the result of the previous one."""
    j = IDS[0]
    add = Command(CmdType.ADD, j, b"q", 1000, 3_600_000, 0, 0, 0, b"", GO_ZERO_TIME, GoTime.from_unix_ns(T))
    write_log(tmp_path, [add, Command(first, j, result=b"r"), Command(gone, j), add], 1 << 20, None)
    log = discover([str(tmp_path)])[0]
    ref = run_log(log, AS_OF, engine="reference")
    fast = run_log(log, AS_OF, engine="fast")
    assert fast.state.jobs[j].result is None
    assert key(fast) == key(ref) and fast.state.digest() == ref.state.digest()


@pytest.mark.parametrize("name", ["upstream-a-run1", "upstream-b-after-clean", "sample-clean"])
def test_kernel_handles_the_real_fixtures(name):
    from tests.conftest import examples, fixture_log
    log = discover([fixture_log(name)])[0]
    for as_of in (T, T + 3600 * 10**9, T + 10 * 86400 * 10**9):
        ref = run_log(log, as_of, engine="reference")
        fast = run_log(log, as_of, engine="fast")
        assert key(fast) == key(ref) and fast.state.digest() == ref.state.digest()


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 400), st.sampled_from([0.0, 0.5, 1.0]),
       st.sampled_from([T - 10**9, T + 10**8, T + 40 * 86400 * 10**9]))
def test_kernel_equals_reference_on_generated_logs(tmp_path_factory, seed, n, reuse, as_of):
    """Valid histories by construction (ids re-added after their job is gone, leases, timeouts, results)."""
    d = tmp_path_factory.mktemp("g")
    generate(str(d), SampleSpec(records=n, segment_size=2000, seed=seed, reuse_ids=reuse))
    log = discover([str(d)])[0]
    ref = run_log(log, as_of, engine="reference")
    fast = run_log(log, as_of, engine="fast")
    assert key(fast) == key(ref) and fast.state.digest() == ref.state.digest()


def test_parallel_kernel_equals_reference(tmp_path):
    generate(str(tmp_path), SampleSpec(records=3000, segment_size=20_000, seed=11))
    # sprinkle records of unknown jobs and an expired add in a second log
    log = discover([str(tmp_path)])[0]
    for as_of in (T, T + 10**9, T + 40 * 86400 * 10**9):
        ref = run_log(log, as_of, engine="reference")
        par = run_log(log, as_of, engine="fast", state=False, workers=2)
        assert key(par) == key(ref)


def flip(seg, at: int) -> None:
    data = bytearray(seg.read_bytes())
    data[at] ^= 1
    seg.write_bytes(bytes(data))


def test_damage_is_read_through_with_the_reference_finding(tmp_path):
    generate(str(tmp_path), SampleSpec(records=50, segment_size=1 << 20, seed=2))
    log = discover([str(tmp_path)])[0]
    whole = fast_run(log, T)
    flip(tmp_path / "000000001.log", 100)
    log = discover([str(tmp_path)])[0]
    with pytest.raises(Bail):                         # a caller that wants an intact log
        fast_run(log, T, through=False)
    res = fast_run(log, T, through=True)
    ref = run_log(log, T, engine="reference")
    errors = [f for f in res.findings if f.severity == "error"]
    assert [(f.code, f.offset, f.resumes_at) for f in errors] == \
        [(f.code, f.offset, f.resumes_at) for f in ref.findings if f.severity == "error"]
    (f,) = errors
    assert f.code == "WQ-CRC" and f.offset < 100 < f.resumes_at and "valid records resume at" in f.message
    assert res.records == whole.records - 1 == ref.records
    assert [(sp.seg_no, sp.start, sp.stop, sp.finding) for sp in res.spans] == [(0, f.offset, f.resumes_at, f)]
    assert res.seg_records == [whole.records - 1]
    for workers in (1, 2):
        assert key(run_log(log, T, engine="fast", state=False, workers=workers)) == key(ref)


def test_the_reference_reads_only_what_the_c_loop_hands_back(tmp_path, monkeypatch):
    """One flipped byte: the reference reader is asked about that one spot, once; the rest is the C loop's."""
    generate(str(tmp_path), SampleSpec(records=400, segment_size=1 << 20, seed=3))
    flip(tmp_path / "000000001.log", 5000)
    calls = []
    orig = RecordReader.segment_events

    def spy(self, sd, index, is_newest, **kw):
        calls.append(kw.get("start"))
        return orig(self, sd, index, is_newest, **kw)
    monkeypatch.setattr(RecordReader, "segment_events", spy)
    res = fast_run(discover([str(tmp_path)])[0], T, through=True)
    assert res.records == 399 and len(calls) == 1 and calls[0] < 5000


def test_without_the_c_kernel_the_reference_runs(tmp_path, monkeypatch):
    generate(str(tmp_path), SampleSpec(records=50, segment_size=1 << 20, seed=3))
    log = discover([str(tmp_path)])[0]
    monkeypatch.setattr(fastreplay, "KERNEL", "python")
    with pytest.raises(Bail):
        fast_run(log, T)
    assert key(run_log(log, T)) == key(run_log(log, T, engine="reference"))


def test_gc_is_paused_during_the_run_and_restored(tmp_path, monkeypatch):
    """fast_run / finish_state switch cyclic GC off while they build (no cycles there) and restore it after."""
    import gc
    generate(str(tmp_path), SampleSpec(records=200, segment_size=1 << 20, seed=4))
    log = discover([str(tmp_path)])[0]
    seen = []
    finish = fastreplay._finish_state
    monkeypatch.setattr(fastreplay, "_finish_state", lambda *a: seen.append(gc.isenabled()) or finish(*a))
    was = gc.isenabled()
    try:
        gc.enable()
        fast_run(log, T)
        assert seen == [False] and gc.isenabled()
        gc.disable()
        fast_run(log, T)
        assert not gc.isenabled()
        gc.enable()
        flip(tmp_path / "000000001.log", 100)
        with pytest.raises(Bail):
            fast_run(discover([str(tmp_path)])[0], T, through=False)
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("workers,state", [(1, True), (1, False), (2, False)])
def test_kernel_keeps_limit_findings_and_counts_the_rest(tmp_path, workers, state):
    """A warning per record (expired adds, records of gone jobs) must not make memory follow the file."""
    generate(str(tmp_path), SampleSpec(records=2000, segment_size=20_000, seed=5))
    log = discover([str(tmp_path)])[0]
    late = T + 40 * 86400 * 10**9          # every add has expired: hundreds of warnings
    ref = run_log(log, late, engine="reference")
    got = run_log(log, late, engine="fast", limit=7, state=state, workers=workers)
    assert sum(ref.counts.values()) > 100
    assert got.counts == ref.counts and got.severities == ref.severities and got.verdict == ref.verdict
    assert len(got.findings) == 7
    assert [(f.code, f.offset) for f in got.findings] == [(f.code, f.offset) for f in ref.findings[:7]]


def test_spans_name_the_bytes_of_every_error_for_a_repair_plan(tmp_path):
    """A refused record (a duplicate add) spans exactly its record; a torn tail spans to the segment's end; the
    job table of the same pass holds the live jobs (what repair and pack plan from, without a second pass)."""
    j = IDS[0]
    add = Command(CmdType.ADD, j, b"q", 1000, 3_600_000, 0, 0, 0, b"body", GO_ZERO_TIME, GoTime.from_unix_ns(T))
    write_log(tmp_path, [add, add, Command(CmdType.START_ATTEMPT, j)], 1 << 20, None)
    seg = tmp_path / "000000001.log"
    with open(seg, "ab") as f:
        f.write(b"\x01" + bytes(10))                      # a torn tail
    log = discover([str(tmp_path)])[0]
    res = fast_run(log, AS_OF, keep=True, through=True)
    ref = run_log(log, AS_OF, engine="reference")
    assert key(fast_report(log, res, None)) == key(ref)
    dup, torn = res.spans
    recs = [ev for ev in RecordReader(log).events() if isinstance(ev, Record)]
    assert (dup.finding.code, dup.start, dup.stop) == ("WQ-DUPLICATE-JOB", recs[1].offset,
                                                       recs[1].offset + recs[1].length)
    size = seg.stat().st_size
    assert (torn.finding.code, torn.start, torn.stop) == ("WQ-TRUNCATED", size - 11, size)
    assert res.seg_records == [3]
    table = res.state.jobs.table                          # the compact job table (a _kernel.JobTable)
    assert len(table) == 1 and table.get_row(j)[14] == 4  # leased by the start-attempt after the refused add
