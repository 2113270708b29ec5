"""workq pack (engine/plans.py): digest preserved, idempotent, refuses corruption unless salvaging, never
resurrects, never appends, and a crash-safe, locked installation (a failure injected before / after every
step of apply leaves the log path replaying to the original state, and a later apply completes)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples, UPSTREAM, fixture_log
from wqtool.engine.workq import pack as plans
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.model import Command, Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.replay import JobState
from wqtool.engine.workq.sample import SampleSpec, generate, v4_id
from wqtool.engine.workq.verify import run_log
from wqtool.engine.workq.writer import SegmentWriter
from wqtool.errors import InputError, UsageError, WqError
from wqtool.engine.findings import Verdict
from wqtool.formats._common import GO_ZERO_TIME, GoTime
from wqtool.formats.workq import CmdType

S = 1_000_000_000
T0 = 1_795_302_000 * S                 # 2026-11-21T23:00:00Z: records start here
AS_OF = T0 + 3600 * S                  # packs are made one hour later
LATER = AS_OF + 1800 * S
FIX_AS_OF = 1795303800 * S             # 2026-11-21T23:30:00Z (the fixtures' as-of)


# ---------------------------------------------------------------- helpers
def load(d):
    return discover([d])[0]


def digest(d, as_of=AS_OF):
    rep = run_log(load(d), as_of)
    return rep.state.digest()


def records(d):
    return [e for e in RecordReader(load(d), keep_raw=True).events() if e.__class__ is Record]


def files(d):
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d))}


def pack_to(src, out, as_of=AS_OF, **kw):
    plan = plans.pack_plan(load(src), as_of, **kw)
    return plan, plan.write(out, fsync=False)


IDS = [v4_id(__import__("random").Random(i)) for i in range(8)]   # 0..5 used, 6..7 never added (unknown)


class Model:
    """Just enough of upstream's rules to keep a generated stream valid (the engine is the judge)."""

    def __init__(self, as_of):
        self.as_of = as_of
        self.jobs = {}            # id -> [state, attempts, max_attempts]

    def valid(self, kind, jid, arg):
        j = self.jobs.get(jid)
        if kind in ("add", "schedule"):
            return j is None or arg is False        # arg False: the add is already expired (skipped)
        if j is None:
            return True                             # unknown job: tolerated
        st_, a, m = j
        if kind == "start":
            return st_ in ("new", "pending") and not (m and a >= m)
        if kind in ("complete", "fail"):
            return st_ not in ("done",)
        return True

    def apply(self, kind, jid, arg):
        j = self.jobs.get(jid)
        if kind in ("add", "schedule"):
            if arg is not False:
                self.jobs[jid] = ["new", 0, arg]
            return
        if j is None:
            return
        if kind == "start":
            j[0], j[1] = "leased", j[1] + 1
        elif kind == "timeout":
            if j[0] != "done":
                j[0] = "done" if j[2] and j[1] >= j[2] else "pending"
        elif kind in ("complete", "fail"):
            j[0] = "done"
        else:
            del self.jobs[jid]


OP = st.tuples(st.sampled_from(["add", "add", "schedule", "start", "start", "timeout", "complete", "fail",
                                "delete", "expire"]),
               st.integers(0, 7), st.integers(0, 3), st.sampled_from([b"", b"ok", b"x" * 200]),
               st.sampled_from([1_000, 7_200_000, 600_000_000]), st.booleans())


def build(d, ops, *, segment_size=256, invalid_rate=False, as_of=AS_OF):
    """Write a stream from ops: (kind, job, max_attempts, result, ttl_ms, keep_even_if_invalid)."""
    m = Model(as_of)
    t = T0
    with SegmentWriter(d, segment_size=segment_size) as w:
        for kind, j, max_att, result, ttl, force in ops:
            jid = IDS[j]
            t += 7 * S + 123
            now = GoTime.from_unix_ns(t)
            if kind == "add":
                c = Command(CmdType.ADD, jid, b"q%d" % (j % 2), 5_000, ttl, j - 3, max_att, 0, b"body%d" % j,
                            GO_ZERO_TIME, GoTime.from_unix_ns(t - 1000))
                arg = max_att if t - 1000 + ttl * 1_000_000 > as_of else False
            elif kind == "schedule":
                when = t + 600 * S
                c = Command(CmdType.SCHEDULE, jid, b"sched", 1_000, ttl, 0, max_att, 1, b"", GoTime.from_unix_ns(when),
                            GoTime.from_unix_ns(t))
                arg = max_att if when + ttl * 1_000_000 > as_of else False
            elif kind in ("complete", "fail"):
                c = Command(CmdType.COMPLETE if kind == "complete" else CmdType.FAIL, jid, result=result)
                arg = None
            else:
                c = Command({"start": CmdType.START_ATTEMPT, "timeout": CmdType.TIMEOUT_ATTEMPT,
                             "delete": CmdType.DELETE, "expire": CmdType.EXPIRE}[kind], jid)
                arg = None
            if not m.valid(kind, jid, arg) and not (invalid_rate and force):
                continue
            if m.valid(kind, jid, arg):
                m.apply(kind, jid, arg)
            w.append_raw(encode_record(now, encode_payload(c)))


def check_pack(src, tmp, as_of=AS_OF, segment_size=512, later=None, prop=False):
    """pack src; assert digest equal, accounting right, idempotent; returns the plan."""
    rep = run_log(load(src), as_of)
    # the hot kernel must agree with the reference path (test_fastreplay.py proves it in general)
    assert rep.state.digest() == run_log(load(src), as_of, engine="reference").state.digest()
    try:
        plan = plans.pack_plan(load(src), as_of, segment_size=segment_size)
    except plans.PackRefused as e:
        assert e.verdict == rep.verdict and e.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY)
        plan = plans.pack_plan(load(src), as_of, segment_size=segment_size, salvage=True)
        assert plan.dropped and all(d.what == "refused-record" for d in plan.dropped)
        later = None
    assert plan.digest_before == rep.state.digest()
    out1 = os.path.join(tmp, "o1")
    res = plan.write(out1, fsync=False)
    assert res.digest == plan.digest_before == digest(out1, as_of)
    # accounting
    out_recs = records(out1)
    assert len(out_recs) == plan.records_after == res.records
    assert Counter(r.command.cmd.label for r in out_recs) == Counter(plan.by_kind_after)
    assert sum(plan.by_kind_before.values()) == plan.records_before == rep.records
    sizes = [os.path.getsize(os.path.join(out1, n)) for n in res.files]
    assert sum(sizes) == plan.bytes_after == res.bytes and len(sizes) == plan.segments_after
    assert all(s - 37 - 8 < segment_size or True for s in sizes)
    assert sorted(os.listdir(out1)) == sorted(res.files + ["append.lock", "read.lock"])
    # add/schedule records are the input's, byte for byte
    src_raw = {r.raw for r in records(src)}
    for r in out_recs:
        if r.command.cmd in (CmdType.ADD, CmdType.SCHEDULE):
            assert r.raw in src_raw
        else:
            assert r.time == GoTime.from_unix_ns(as_of)
    # no record of a job that is not live
    live = set(plan.state.jobs)
    assert {r.command.job_id for r in out_recs} == live
    # idempotent
    out2 = os.path.join(tmp, "o2")
    plan2 = plans.pack_plan(load(out1), as_of, segment_size=segment_size)
    plan2.write(out2, fsync=False)
    assert files(out2) == files(out1)
    assert plan2.records_dropped == 0 and plan2.digest_before == plan.digest_before
    if later is not None:
        assert digest(out1, later) == digest(src, later)
    return plan


# ---------------------------------------------------------------- properties
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OP, max_size=60), st.integers(60, 900), st.integers(40, 2000), st.booleans())
def test_random_streams_pack_to_the_same_state(ops, in_size, out_size, with_invalid):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        build(src, ops, segment_size=in_size, invalid_rate=with_invalid)
        check_pack(src, tmp, segment_size=out_size, later=LATER, prop=True)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 1500), st.integers(200, 8192), st.integers(0, 3))
def test_generated_logs_pack_to_the_same_state(seed, n, seg, as_of_step):
    from wqtool.engine.workq.sample import T0_NS
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        generate(src, SampleSpec(records=n, seed=seed, segment_size=seg, payload_max=200,
                                 ttl_ms=(1_000, 7_200_000)))
        as_of = T0_NS + as_of_step * 1200 * S
        check_pack(src, tmp, as_of=as_of, segment_size=seg, later=as_of + 600 * S, prop=True)


def one_job(tmp, cmds, max_att=2):
    src = os.path.join(tmp, "src")
    jid = IDS[0]
    with SegmentWriter(src, segment_size=4096) as w:
        w.append(Command(CmdType.ADD, jid, b"q", 1000, 7_200_000, 0, max_att, 0, b"p", GO_ZERO_TIME,
                         GoTime.from_unix_ns(T0)), GoTime.from_unix_ns(T0))
        for i, c in enumerate(cmds):
            w.append(c if isinstance(c, Command) else Command(c, jid), GoTime.from_unix_ns(T0 + (i + 1) * S))
    return src


@pytest.mark.parametrize("cmds,state,attempts,result", [
    ([CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT] * 2, JobState.FAILED, 2, b""),
    ([CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT, CmdType.START_ATTEMPT,
      Command(CmdType.FAIL, IDS[0], result=b"")], JobState.FAILED, 2, b""),
    ([CmdType.START_ATTEMPT, Command(CmdType.FAIL, IDS[0], result=b"boom")], JobState.FAILED, 1, b"boom"),
    ([Command(CmdType.COMPLETE, IDS[0], result=b"never leased")], JobState.COMPLETED, 0, b"never leased"),
    ([CmdType.TIMEOUT_ATTEMPT], JobState.PENDING, 0, None),
    ([CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT, CmdType.START_ATTEMPT], JobState.LEASED, 2, None),
    ([CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT, CmdType.START_ATTEMPT,
      Command(CmdType.COMPLETE, IDS[0], result=b"ok")], JobState.COMPLETED, 2, b"ok"),
])
def test_each_job_state_is_rebuilt(tmp_path, cmds, state, attempts, result):
    src = one_job(str(tmp_path), cmds)
    plan = check_pack(src, str(tmp_path))
    (job,) = plan.state.jobs.values()
    assert (job.state, job.attempts, job.result) == (state, attempts, result)


def test_reused_id_after_a_result(tmp_path):
    src = one_job(str(tmp_path), [Command(CmdType.COMPLETE, IDS[0], result=b"r"), CmdType.DELETE,
                                  Command(CmdType.ADD, IDS[0], b"q", 1000, 7_200_000, 0, 0, 0, b"again", GO_ZERO_TIME,
                                          GoTime.from_unix_ns(T0 + 5 * S))])
    ref = run_log(load(src), AS_OF, engine="reference").state
    assert [(j.state, j.result) for j in ref.jobs.values()] == [(JobState.NEW, None)]
    assert run_log(load(src), AS_OF).state.digest() == ref.digest()
    check_pack(src, str(tmp_path))


def test_failed_at_max_attempts_is_written_as_timeouts(tmp_path):
    src = one_job(str(tmp_path), [CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT] * 3, max_att=3)
    plan = check_pack(src, str(tmp_path))
    assert plan.by_kind_after == {"add": 1, "start-attempt": 3, "timeout-attempt": 3}
    assert plan.records_dropped_by_kind == {"add": 0, "start-attempt": 0, "timeout-attempt": 0}


# ---------------------------------------------------------------- resurrection (spec 7.5)
def _emulate_upstream_cleaner(seg_path, registry, as_of):
    """Upstream's CommandCleaner on one read-only segment: keep unexpired adds, keep ID-keyed records only
    when the ID is in the in-memory registry (this is the bug), records byte-identical."""
    kept = []
    for r in [e for e in RecordReader(discover([seg_path])[0], keep_raw=True).events() if e.__class__ is Record]:
        c = r.command
        if c.cmd in (CmdType.ADD, CmdType.SCHEDULE):
            exp = (c.created.unix_ns if c.cmd is CmdType.ADD else c.time.unix_ns) + c.ttl * 1_000_000
            if exp > as_of:
                kept.append(r.raw)
        elif c.job_id in registry:
            kept.append(r.raw)
    with open(seg_path, "wb") as f:
        f.write(b"wqwq\x00\x00\x00\x01" + b"".join(kept))


def test_pack_does_not_resurrect_a_deleted_job(tmp_path):
    d1, keep, k2 = IDS[0], IDS[1], IDS[2]
    src = str(tmp_path / "src")
    t = GoTime.from_unix_ns(T0)
    with SegmentWriter(src, segment_size=200) as w:   # add D1 + delete D1 in the same read-only segment
        w.append(Command(CmdType.ADD, d1, b"q", 1000, 3_600_000, 0, 0, 0, b"D1", GO_ZERO_TIME, t), t)
        w.append(Command(CmdType.DELETE, d1), t)
        w.append(Command(CmdType.ADD, keep, b"q", 1000, 3_600_000, 0, 0, 0, b"K", GO_ZERO_TIME, t), t)
        w.append(Command(CmdType.ADD, k2, b"q", 1000, 3_600_000, 0, 0, 0, b"K2", GO_ZERO_TIME, t), t)
    assert len(load(src).segments) == 2
    as_of = T0 + 60 * S
    original = run_log(load(src), as_of).state
    assert set(original.jobs) == {keep, k2}
    # upstream's cleaner: the delete is dropped, the add kept -> D1 comes back as NEW after a restart
    bug = str(tmp_path / "bug")
    shutil.copytree(src, bug)
    _emulate_upstream_cleaner(os.path.join(bug, "000000001.log"), set(original.jobs), as_of)
    assert d1 in run_log(load(bug), as_of).state.jobs
    # pack: D1 leaves no record at all, at this as-of or any later one
    out = str(tmp_path / "out")
    plan, res = pack_to(src, out, as_of)
    assert res.digest == original.digest()
    assert all(d1 not in raw for raw in files(out).values())
    for later in (as_of, as_of + 1800 * S, as_of + 3500 * S):
        assert d1 not in run_log(load(out), later).state.jobs
        assert digest(out, later) == digest(src, later)
    assert plan.records_dropped_by_kind["delete"] == 1 and plan.records_dropped_by_kind["add"] == 1


def test_real_cleaner_fixture_does_not_resurrect(tmp_path):
    """upstream-b: the real workq cleaner turned before-clean into after-clean and brought job ...0401 back."""
    before = str(tmp_path / "before")
    shutil.copytree(fixture_log("upstream-b-before-clean"), before)
    resurrected = {j.uuid for j in run_log(load(fixture_log("upstream-b-after-clean")), FIX_AS_OF).state.jobs.values()}
    live = {j.uuid for j in run_log(load(before), FIX_AS_OF).state.jobs.values()}
    (ghost,) = resurrected - live
    plan, res = pack_to(before, str(tmp_path / "out"), FIX_AS_OF)
    assert ghost not in {j.uuid for j in run_log(load(res.path), FIX_AS_OF).state.jobs.values()}
    assert res.digest == plan.digest_before


# ---------------------------------------------------------------- real fixtures, refusal, salvage, torn tail
@pytest.mark.parametrize("name", UPSTREAM)
def test_upstream_fixtures_pack_with_equal_digest(name, tmp_path):
    src = str(tmp_path / "src")
    shutil.copytree(fixture_log(name), src)
    first = min(r.time.unix_ns for r in records(src))
    for i, as_of in enumerate((first + 1 * S, FIX_AS_OF, FIX_AS_OF + 2 * 3600 * S)):
        sub = tmp_path / f"as_of{i}"
        sub.mkdir()
        check_pack(src, str(sub), as_of=as_of, segment_size=300, later=as_of + 60 * S)


@pytest.mark.parametrize("name,code,finding", [("crc-mismatch-mid-segment", Verdict.CORRUPT, "000000001.log@0x11c WQ-CRC"),
                                               ("duplicate-add", Verdict.INVALID_HISTORY,
                                                "000000001.log@0x82 WQ-DUPLICATE-JOB")])
def test_refused_unless_salvage(name, code, finding, tmp_path):
    src = str(tmp_path / "src")
    shutil.copytree(fixture_log(name), src)
    with pytest.raises(plans.PackRefused) as e:
        plans.pack_plan(load(src), FIX_AS_OF)
    assert e.value.verdict == code and isinstance(e.value, WqError)
    assert finding in str(e.value) and "--salvage" in str(e.value)
    rep = run_log(load(src), FIX_AS_OF)
    plan, res = pack_to(src, str(tmp_path / "out"), FIX_AS_OF, salvage=True)
    assert plan.input_verdict == code
    errors = [f for f in rep.findings if f.severity == "error"]
    assert [(d.code, d.path, d.offset) for d in plan.dropped] == [(f.code, f.path, f.offset) for f in errors]
    assert res.digest == rep.state.digest() == plan.digest_before
    assert run_log(load(res.path), FIX_AS_OF).verdict == Verdict.CLEAN


def test_salvage_reports_exact_spans(tmp_path):
    src = str(tmp_path / "src")
    shutil.copytree(fixture_log("crc-mismatch-mid-segment"), src)
    plan = plans.pack_plan(load(src), FIX_AS_OF, salvage=True)
    (d,) = plan.dropped
    assert (d.what, d.code, os.path.basename(d.path), d.offset, d.length) == \
        ("unreadable", "WQ-CRC", "000000001.log", 0x11c, 120)
    src2 = str(tmp_path / "src2")
    shutil.copytree(fixture_log("duplicate-add"), src2)
    plan = plans.pack_plan(load(src2), FIX_AS_OF, salvage=True)
    (d,) = plan.dropped
    assert (d.what, d.code, d.offset, d.length) == ("refused-record", "WQ-DUPLICATE-JOB", 0x82, 85)
    assert plan.records_dropped_by_kind["add"] == 1


def test_torn_tail_packs(tmp_path):
    src = str(tmp_path / "src")
    shutil.copytree(fixture_log("torn-tail-mid-record"), src)
    plan, res = pack_to(src, str(tmp_path / "out"), FIX_AS_OF)
    assert plan.input_verdict == Verdict.TORN_TAIL
    (d,) = plan.dropped
    assert (d.what, d.code, os.path.basename(d.path), d.offset, d.length) == \
        ("torn-tail", "WQ-TRUNCATED", "000000004.log", 590, 20)
    assert res.digest == plan.digest_before
    assert run_log(load(res.path), FIX_AS_OF).verdict == Verdict.CLEAN


# ---------------------------------------------------------------- plan.write contract
def test_write_pack_never_appends_and_mismatch_aborts(tmp_path, monkeypatch):
    src = one_job(str(tmp_path), [CmdType.START_ATTEMPT, CmdType.TIMEOUT_ATTEMPT])
    plan = plans.pack_plan(load(src), AS_OF)
    full = tmp_path / "full"
    full.mkdir()
    (full / "000000001.log").write_bytes(b"keep")
    with pytest.raises(UsageError):
        plan.write(str(full))
    assert files(str(full)) == {"000000001.log": b"keep"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert plan.write(str(empty)).digest == plan.digest_before
    # a wrong rebuild is caught before anything is installed (the Python writer, whose rule is patched)
    plan.table = None
    monkeypatch.setattr(plans, "_tail", lambda job: [(CmdType.START_ATTEMPT, None)])
    with pytest.raises(plans.PackMismatch) as e:
        plan.write(str(tmp_path / "bad"))
    assert isinstance(e.value, plans.PackMismatch) and e.value.expected in str(e.value) and e.value.actual in str(e.value)
    assert e.value.job_id == str(__import__("uuid").UUID(bytes=IDS[0])) and e.value.job_id in str(e.value)
    assert not (tmp_path / "bad").exists()
    before = files(src)
    with pytest.raises(plans.PackMismatch):
        plan.apply(stale_lock_hold=0)
    assert files(src) == before and sorted(os.listdir(tmp_path)) == ["empty", "full", "src"]


def test_input_changed_since_plan(tmp_path):
    src = one_job(str(tmp_path), [CmdType.START_ATTEMPT])
    plan = plans.pack_plan(load(src), AS_OF)
    with open(os.path.join(src, "000000001.log"), "ab") as f:
        f.write(encode_record(GoTime.from_unix_ns(T0), encode_payload(Command(CmdType.TIMEOUT_ATTEMPT, IDS[0]))))
    with pytest.raises(InputError, match="changed since the plan"):
        plan.apply(stale_lock_hold=0)
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_empty_live_state_gives_a_log_without_segments(tmp_path):
    src = one_job(str(tmp_path), [CmdType.DELETE])
    plan, res = pack_to(src, str(tmp_path / "out"))
    assert plan.jobs_kept == 0 and plan.segments_after == 0 and res.files == []
    assert sorted(os.listdir(res.path)) == ["append.lock", "read.lock"]


# ---------------------------------------------------------------- apply: locks, swap, crash safety
def crash_base(tmp_path):
    base = str(tmp_path / "base")
    ops = [("add", i, i % 3, b"", 7_200_000, False) for i in range(6)]
    ops += [("start", 0, 0, b"", 0, False), ("start", 1, 0, b"", 0, False), ("complete", 1, 0, b"r", 0, False),
            ("delete", 2, 0, b"", 0, False), ("start", 3, 0, b"", 0, False), ("timeout", 3, 0, b"", 0, False),
            ("complete", 7, 0, b"x", 0, False)]
    build(base, ops, segment_size=300)
    return base


def test_apply_swaps_in_place_and_keeps_a_backup(tmp_path):
    base = crash_base(tmp_path)
    original = digest(base)
    old = files(base)
    plan = plans.pack_plan(load(base), AS_OF, segment_size=300)
    res = plan.apply(stale_lock_hold=0)
    assert res.steps == plan.apply_steps()
    assert digest(base) == original == res.result.digest
    assert sorted(os.listdir(tmp_path)) == ["base", os.path.basename(res.backup)]
    assert res.backup.endswith("base.pre-pack-20261122T000000Z")
    backup = files(res.backup)
    assert {k: v for k, v in backup.items() if k.endswith(".log")} == {k: v for k, v in old.items() if k.endswith(".log")}
    assert sorted(os.listdir(base)) == sorted(res.result.files + ["append.lock", "read.lock"])
    assert res.bytes_after == plan.bytes_after < res.bytes_before
    # again at the same as-of: same bytes, second backup name
    plan2 = plans.pack_plan(load(base), AS_OF, segment_size=300)
    packed = files(base)
    res2 = plan2.apply(stale_lock_hold=0, swap="rename")
    assert res2.swap == "rename" and res2.backup.endswith(".2") and files(base) == packed


@pytest.mark.parametrize("swap", ["exchange", "rename"])
def test_crash_at_every_step(tmp_path, swap):
    base = crash_base(tmp_path)
    original = digest(base)
    plan = plans.pack_plan(load(base), AS_OF, segment_size=300)
    labels = plan.apply_steps(swap=swap)
    assert plan.segments_after >= 2
    points = [f"{w}:{label}" for label in labels for w in ("before", "after")]
    points += ["during:write:000000001.log", "during:write:000000002.log"]
    missing_at = set()
    for i, point in enumerate(points):
        case = tmp_path / f"case{i}"
        case.mkdir()
        d = str(case / "log")
        shutil.copytree(base, d)
        plan = plans.pack_plan(load(d), AS_OF, segment_size=300)
        seen = []
        with pytest.raises(plans.InjectedCrash):
            plan.apply(fail_at=point, swap=swap, stale_lock_hold=0,
                             hook=lambda when, label: seen.append((when, label)))
        assert seen, point
        if os.path.isdir(d):
            assert digest(d) == original, point        # the path always names a complete log
        else:
            missing_at.add(point)                      # only the rename fallback's window
            assert plans.finish_interrupted(d)
            assert digest(d) == original, point
        # a later plan + apply finishes the job
        plan2 = plans.pack_plan(load(d), AS_OF, segment_size=300)
        plan2.apply(swap=swap, stale_lock_hold=0)
        assert digest(d) == original, point
        names = sorted(os.listdir(case))
        assert names[0] == "log" and all(".pre-pack-" in n for n in names[1:]), (point, names)
        for n in names[1:]:                             # every backup is a whole log with the original state
            assert digest(str(case / n)) == original, (point, n)
        shutil.rmtree(case)
    if swap == "exchange":
        assert not missing_at
    else:
        assert missing_at == {"after:rename-log-to-backup", "before:fsync-dir:parent:backup",
                              "after:fsync-dir:parent:backup", "before:rename-ready-to-log"}


@pytest.mark.parametrize("swap,at", [("exchange", "fsync-dir:parent:exchange"),
                                      ("exchange", "rename-old-to-backup"),
                                      ("rename", "fsync-dir:parent:backup"), ("rename", "rename-ready-to-log")])
def test_an_error_after_the_swap_finishes_it_at_once(tmp_path, swap, at):
    """An ordinary error (EIO) between the swap and its last rename: the apply fails, but what it still owed is done
    before it returns (``finish_interrupted``): the log's name holds the new log, the old one its backup name, and
    no sibling is left for the next run."""
    base = crash_base(tmp_path)
    original = digest(base)
    plan = plans.pack_plan(load(base), AS_OF, segment_size=300)

    def eio(when, label):
        if (when, label) == ("before", at):
            raise OSError(5, "Input/output error")
    with pytest.raises(OSError):
        plan.apply(swap=swap, stale_lock_hold=0, hook=eio)
    names = sorted(os.listdir(tmp_path))
    assert names[0] == "base" and len(names) == 2 and ".pre-pack-" in names[1], names
    assert digest(base) == original and digest(str(tmp_path / names[1])) == original
    assert len(records(base)) < len(records(str(tmp_path / names[1])))     # the packed log is installed


def _hold_lock_in_child(path):
    code = ("import fcntl, os, sys, time\n"
            f"fd = os.open({path!r}, os.O_RDONLY | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\nsys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_lock_held_by_a_server_is_log_busy(tmp_path):
    base = crash_base(tmp_path)
    before = files(base)
    plan = plans.pack_plan(load(base), AS_OF)
    child = _hold_lock_in_child(os.path.join(base, "append.lock"))    # as a running workq-server does
    try:
        with pytest.raises(plans.LogBusy) as e:
            plan.apply(lock_timeout=0.2, stale_lock_hold=0)
    finally:
        child.stdin.close()
        child.wait(10)
    assert isinstance(e.value, InputError) and "held by a running workq-server?" in str(e.value)
    assert files(base) == {**before, "append.lock": b"", "read.lock": b""}
    assert sorted(os.listdir(tmp_path)) == ["base"]
    # read.lock held through a second descriptor in this process (a cleaner cycle)
    import fcntl
    fd = os.open(os.path.join(base, "read.lock"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(plans.LogBusy, match="read.lock"):
            plan.apply(lock_timeout=0.1, stale_lock_hold=0)
    finally:
        os.close(fd)
    assert plan.apply(stale_lock_hold=0).result.digest == plan.digest_before


def test_recovery_refuses_while_a_pack_is_in_progress(tmp_path):
    base = crash_base(tmp_path)
    plan = plans.pack_plan(load(base), AS_OF)
    busy = []

    def hook(when, label):
        if (when, label) == ("after", "rename-temp-to-ready"):
            with pytest.raises(plans.LogBusy, match="pack in progress"):
                plans.finish_interrupted(base, lock_timeout=0.05)
            busy.append(label)
    plan.apply(hook=hook, stale_lock_hold=0)
    assert busy and digest(base) == plan.digest_before


def test_apply_needs_a_directory(tmp_path):
    base = crash_base(tmp_path)
    plan = plans.pack_plan(discover([os.path.join(base, "000000001.log")])[0], AS_OF)
    with pytest.raises(UsageError):
        plan.apply(stale_lock_hold=0)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_apply_keeps_owner_and_modes(tmp_path):
    base = crash_base(tmp_path)
    os.chmod(base, 0o750)
    for n in os.listdir(base):
        os.chmod(os.path.join(base, n), 0o640)
        os.chown(os.path.join(base, n), 1234, 4321)
    os.chown(base, 1234, 4321)
    plans.pack_plan(load(base), AS_OF).apply(stale_lock_hold=0)
    st = os.stat(base)
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o750, 1234, 4321)
    for n in os.listdir(base):
        st = os.stat(os.path.join(base, n))
        assert (st.st_mode & 0o777, st.st_uid, st.st_gid) == (0o640, 1234, 4321), n
