"""clean for workq: drops exactly the records the replay gives no effect, never a record that changed a live job
(upstream's resurrection bug, spec 7.5), keeps the digest, never touches the active segment, and is crash-safe."""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples, fixture_log
from wqtool.engine.fsops import LogBusy
from wqtool.engine.instant import parse_instant
from wqtool.engine.plan import InjectedCrash
from wqtool.engine.workq import clean
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.verify import run_log
from wqtool.engine.workq.writer import SegmentWriter, add, result, simple
from wqtool.errors import PackRefused
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType
from wqtool.engine.findings import Verdict

#: after the 2.5 s jobs of upstream-b expired, long before the 1 h ones
AS_OF_B = parse_instant("2026-11-21T23:16:12Z")


def _copy(tmp_path, name: str) -> str:
    d = str(tmp_path / name)
    shutil.copytree(fixture_log(name), d)
    for n in os.listdir(d):
        os.chmod(os.path.join(d, n), 0o644)
    return d


def state(d: str, as_of: int):
    rep = run_log(discover([d])[0], as_of, state=True)
    return rep.state.digest(), {j.uuid for j in rep.state.jobs.values()}


def test_the_resurrection_bug_cannot_happen(tmp_path):
    """upstream-b: job ...401 is added and deleted in segment 2. workq-server's cleaner drops the delete and keeps the
    add (upstream-b-after-clean: the job comes back at restart); wqtool keeps both."""
    d = _copy(tmp_path, "upstream-b-before-clean")
    before = state(d, AS_OF_B)
    assert "00000000-0000-4000-8000-000000000401" not in before[1]
    plan = clean.clean_plan(discover([d])[0], AS_OF_B)
    actions = {os.path.basename(a["file"]): a["action"] for a in plan.report_doc()["actions"]}
    assert actions == {"000000001.log": "delete", "000000002.log": "rewrite"}   # 000000003.log: active, untouched
    res = plan.apply()
    assert state(d, AS_OF_B) == before
    assert sorted(os.listdir(d)) == ["000000002.log", "000000003.log", "append.lock", "read.lock"]  # locks taken
    dumped = [r.command for r in __import__("wqtool.engine.workq.reader", fromlist=["RecordReader"])
              .RecordReader(discover([d])[0]).events() if r.__class__.__name__ == "Record"]
    assert (CmdType.DELETE, "401") in {(c.cmd, c.job_id.hex()[-3:]) for c in dumped}
    assert res.removed == [os.path.join(d, "000000001.log")]
    # and upstream's own output resurrects the job: the bug this test guards against is real
    up = state(fixture_log("upstream-b-after-clean"), AS_OF_B)
    assert "00000000-0000-4000-8000-000000000401" in up[1]


def test_clean_is_idempotent_and_a_noop_is_a_noop(tmp_path):
    d = _copy(tmp_path, "upstream-b-before-clean")
    clean.clean_plan(discover([d])[0], AS_OF_B).apply()
    plan = clean.clean_plan(discover([d])[0], AS_OF_B)
    assert plan.changed == [] and plan.report_doc()["reclaimed"]["bytes"] == 0
    snap = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    res = plan.apply()
    assert res.steps == [] and {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == snap


def test_a_crash_at_every_step_replays_the_same(tmp_path):
    base = _copy(tmp_path, "upstream-b-before-clean")
    before = state(base, AS_OF_B)
    labels = clean.clean_plan(discover([base])[0], AS_OF_B).apply_steps()
    assert "verify" in labels and any(x.startswith("unlink:") for x in labels)
    for when in ("before", "after"):
        for label in labels:
            d = str(tmp_path / f"{when}-{label}".replace(":", "_"))
            shutil.copytree(base, d)
            plan = clean.clean_plan(discover([d])[0], AS_OF_B)
            with pytest.raises(InjectedCrash):
                plan.apply(fail_at=f"{when}:{label}")
            assert state(d, AS_OF_B) == before, f"{when}:{label}"
            clean.clean_plan(discover([d])[0], AS_OF_B).apply()     # the next run finishes the job
            assert state(d, AS_OF_B) == before


def test_refuses_corruption_and_a_running_server(tmp_path):
    with pytest.raises(PackRefused, match="run `wqtool repair` first"):
        clean.clean_plan(discover([fixture_log("crc-mismatch-mid-segment")])[0], AS_OF_B)
    d = _copy(tmp_path, "upstream-b-before-clean")
    for n in ("append.lock", "read.lock"):
        open(os.path.join(d, n), "ab").close()
    plan = clean.clean_plan(discover([d])[0], AS_OF_B)
    fd = os.open(os.path.join(d, "append.lock"), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(LogBusy, match="append.lock is locked"):
            plan.apply(lock_timeout=0.1)
        plan.apply(locks="read")        # what the server's own cleaning timer does, holding append.lock
    finally:
        os.close(fd)
    assert sorted(os.listdir(d)) == ["000000002.log", "000000003.log", "append.lock", "read.lock"]


# ---------------------------------------------------------------- random histories
S = 1_000_000_000
T0 = 1_795_302_000 * S
OPS = st.lists(st.tuples(st.sampled_from(["add", "start", "timeout", "complete", "fail", "delete", "expire"]),
                         st.integers(0, 7), st.sampled_from([1, 5, 3600])), min_size=1, max_size=60)


def _jid(n: int) -> bytes:
    return bytes.fromhex(f"00000000000040008000{n:012x}")


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.integers(2, 10), st.integers(0, 40))
def test_random_histories_clean_to_the_same_state(ops, per_segment, at):
    """Any history the server could write (records of gone jobs, re-added ids, expiries), segments of a few records,
    cleaned at any instant: the replay is the same, now and later."""
    with tempfile.TemporaryDirectory() as d:
        live: dict[int, str] = {}
        w = SegmentWriter(d, segment_size=8 + per_segment * 40)
        t = T0
        for op, n, ttl in ops:
            t += S
            jid = _jid(n)
            gt = GoTime.from_unix_ns(t)
            if op == "add":
                if n in live:
                    continue
                w.append(add(jid, "q", ttr=1000, ttl=ttl * 1000, created=gt, max_attempts=0), gt)
                live[n] = "new"
            elif op in ("start", "timeout"):
                if op == "start" and live.get(n) in ("leased", "done"):
                    continue
                w.append(simple(CmdType.START_ATTEMPT if op == "start" else CmdType.TIMEOUT_ATTEMPT, jid), gt)
                if n in live and live[n] != "done":
                    live[n] = "leased" if op == "start" else "new"
            elif op in ("complete", "fail"):
                if live.get(n) == "done":
                    continue
                w.append(result(CmdType.COMPLETE if op == "complete" else CmdType.FAIL, jid, b"r"), gt)
                if n in live:
                    live[n] = "done"
            else:
                w.append(simple(CmdType.DELETE if op == "delete" else CmdType.EXPIRE, jid), gt)
                live.pop(n, None)
        w.close()
        as_of = T0 + at * S
        log = discover([d])[0]
        rep = run_log(log, as_of, state=True)
        if rep.verdict != Verdict.CLEAN:
            return          # the writer above can still produce a history upstream refuses; clean refuses it too
        before = rep.state.digest()
        later = run_log(log, as_of + 7200 * S, state=True).state.digest()
        clean.clean_plan(log, as_of).apply(fsync=False)
        log2 = discover([d])[0]
        assert run_log(log2, as_of, state=True).state.digest() == before
        assert run_log(log2, as_of + 7200 * S, state=True).state.digest() == later


def test_encode_helpers_are_consistent():
    """The writer helpers used above build what the fast codec builds."""
    gt = GoTime.from_unix_ns(T0)
    c = simple(CmdType.DELETE, _jid(1))
    assert encode_record(gt, encode_payload(c))[15:17] == b"\x11\x05"
