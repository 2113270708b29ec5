"""The replay state machine: upstream's accepted and refused histories, the clock, the digest."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq.model import Command, Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.replay import JobState
from wqtool.engine.workq.sample import SampleSpec, generate
from wqtool.engine.workq.verify import run_log
from wqtool.engine.workq.writer import SegmentWriter
from wqtool.engine.findings import Verdict
from wqtool.formats._common import GO_ZERO_TIME, GoTime
from wqtool.formats.workq import CmdType

T = 1_795_302_000 * 10**9          # 2026-11-21T23:00:00Z
J1 = bytes.fromhex("00000000000040008000000000000001")
J2 = bytes.fromhex("00000000000040008000000000000002")
V1_ID = bytes.fromhex("0000000000001000800000000000000a")   # version 1


def add(jid=J1, *, name=b"q1", ttr=5000, ttl=3_600_000, created=T, max_attempts=0, payload=b"p", prio=0):
    return Command(CmdType.ADD, jid, name, ttr, ttl, prio, max_attempts, 0, payload, GO_ZERO_TIME,
                   GoTime.from_unix_ns(created))


def cmd(kind, jid=J1, result=None):
    return Command(kind, jid, result=result) if result is not None else Command(kind, jid)


def replay(tmp_path, commands, as_of=T + 60 * 10**9):
    d = tmp_path / "log"
    with SegmentWriter(str(d)) as w:
        for i, c in enumerate(commands):
            w.append(c, GoTime.from_unix_ns(T + i * 10**6))
    return run_log(discover([str(d)])[0], as_of)


def codes(rep, severity="error"):
    return [f.code for f in rep.findings if f.severity == severity]


@pytest.mark.parametrize("commands,code,upstream", [
    ([add(), add()], "WQ-DUPLICATE-JOB", "Duplicate job"),
    ([add(), cmd(CmdType.START_ATTEMPT), cmd(CmdType.START_ATTEMPT)], "WQ-ALREADY-LEASED", "Job already leased"),
    ([add(), cmd(CmdType.COMPLETE, result=b""), cmd(CmdType.START_ATTEMPT)], "WQ-ALREADY-PROCESSED",
     "Job already processed"),
    ([add(), cmd(CmdType.COMPLETE, result=b""), cmd(CmdType.FAIL, result=b"")], "WQ-DUPLICATE-RESULT",
     "Duplicate result"),
    ([add(name=b"bad name")], "WQ-INVALID-NAME", "Invalid Name"),
    ([add(ttr=0)], "WQ-INVALID-TTR", "Invalid TTR"),
    ([add(ttl=2_592_000_001)], "WQ-INVALID-TTL", "Invalid TTL"),
    ([add(V1_ID)], "WQ-INVALID-ID", "Invalid ID"),
    ([add(max_attempts=1), cmd(CmdType.START_ATTEMPT), cmd(CmdType.TIMEOUT_ATTEMPT), cmd(CmdType.START_ATTEMPT)],
     "WQ-ALREADY-PROCESSED", "Job already processed"),
])
def test_histories_upstream_refuses(tmp_path, commands, code, upstream):
    rep = replay(tmp_path, commands)
    assert codes(rep) == [code]
    f = next(f for f in rep.findings if f.code == code)
    assert upstream in f.upstream and f.offset is not None and f.record_index == len(commands) - 1
    assert rep.verdict == Verdict.INVALID_HISTORY


def test_refused_record_is_not_applied_and_replay_goes_on(tmp_path):
    rep = replay(tmp_path, [add(), add(), cmd(CmdType.START_ATTEMPT)])
    j = rep.state.jobs[J1]
    assert j.state is JobState.LEASED and j.attempts == 1


@pytest.mark.parametrize("commands,code", [
    ([cmd(CmdType.COMPLETE, J2, b"x")], "WQ-UNKNOWN-JOB"),
    ([cmd(CmdType.START_ATTEMPT, J2)], "WQ-UNKNOWN-JOB"),
    ([cmd(CmdType.EXPIRE, J2)], "WQ-UNKNOWN-JOB"),
    ([add(created=T - 3_600_001 * 10**6)], "WQ-ADD-EXPIRED"),
    ([add(name=b"bad name", created=T - 3_600_001 * 10**6)], "WQ-ADD-EXPIRED"),  # skipped before validation
])
def test_tolerated_oddities_are_warnings(tmp_path, commands, code):
    rep = replay(tmp_path, commands)
    assert codes(rep, "warning") == [code] and codes(rep) == []
    assert rep.verdict == Verdict.CLEAN


def test_job_lifecycle_and_upstream_quirks(tmp_path):
    as_of = T + 60 * 10**9
    rep = replay(tmp_path, [add(max_attempts=2), cmd(CmdType.START_ATTEMPT), cmd(CmdType.TIMEOUT_ATTEMPT),
                            cmd(CmdType.START_ATTEMPT), add(J2), cmd(CmdType.START_ATTEMPT, J2)], as_of)
    j1, j2 = rep.state.jobs[J1], rep.state.jobs[J2]
    assert (j1.state, j1.attempts) == (JobState.LEASED, 2)
    assert j1.expires_ns == as_of + 3_600_000 * 10**6          # fresh TTL at restart
    assert j1.log_expires_ns == T + 3_600_000 * 10**6          # the log's own history
    assert j1.lease_expires_ns == as_of + 5000 * 10**6         # fresh TTR at restart
    assert j2.state is JobState.LEASED
    assert set(codes(rep, "note")) == {"WQ-TTL-RESET", "WQ-LEASE-RESTORED"}


def test_timeout_at_max_attempts_fails_with_empty_result(tmp_path):
    rep = replay(tmp_path, [add(max_attempts=1), cmd(CmdType.START_ATTEMPT), cmd(CmdType.TIMEOUT_ATTEMPT)])
    j = rep.state.jobs[J1]
    assert j.state is JobState.FAILED and j.result == b""


def test_schedule_expiry_is_absolute(tmp_path):
    when = GoTime.from_unix_ns(T + 600 * 10**9)
    s = Command(CmdType.SCHEDULE, J1, b"q", 1000, 60_000, 0, 0, 0, b"", when, GoTime.from_unix_ns(T))
    rep = replay(tmp_path, [s], as_of=T + 600 * 10**9 + 59_999 * 10**6)
    assert rep.state.jobs[J1].expires_ns == T + 660 * 10**9
    rep = replay(tmp_path / "b", [s], as_of=T + 660 * 10**9)
    assert rep.state.jobs == {} and codes(rep, "warning") == ["WQ-ADD-EXPIRED"]


def test_digest_is_deterministic_and_depends_on_state_and_clock(tmp_path):
    a = replay(tmp_path / "a", [add(), add(J2)]).state
    b = replay(tmp_path / "b", [add(), add(J2)]).state
    c = replay(tmp_path / "c", [add(), add(J2), cmd(CmdType.DELETE, J2)]).state
    d = replay(tmp_path / "d", [add(), add(J2)], as_of=T + 61 * 10**9).state
    assert a.digest() == b.digest()
    assert len(a.digest()) == 64 and a.digest() != c.digest() and a.digest() != d.digest()


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=300),
       st.integers(min_value=200, max_value=5000))
def test_random_valid_streams_round_trip_and_verify_clean(tmp_path_factory, seed, n, segsize):
    """writer → reader gives back every command; verify finds no error on a valid history."""
    d = tmp_path_factory.mktemp("rt")
    generate(str(d), SampleSpec(records=n, segment_size=segsize, seed=seed))
    rep = run_log(discover([str(d)])[0], T)
    assert rep.verdict == Verdict.CLEAN, [f for f in rep.findings if f.severity == "error"][:3]
    recs = [e for e in RecordReader(discover([str(d)])[0]).events() if e.__class__ is Record]
    assert len(recs) == rep.records <= n
    assert all(r.command is not None for r in recs)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=200))
def test_digest_line_is_the_canonical_json(tmp_path_factory, seed, n):
    """digest_line() is built by hand for speed; it must be byte-equal to the documented canonical JSON."""
    import json
    from wqtool.engine.workq.replay import digest_line
    d = tmp_path_factory.mktemp("dl")
    generate(str(d), SampleSpec(records=n, segment_size=4000, seed=seed, reuse_ids=0.5))
    st_ = run_log(discover([str(d)])[0], T + 10**9, engine="reference").state
    for j in st_.jobs.values():
        assert digest_line(j) == json.dumps(j.canonical(), sort_keys=True, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("name", [b"q1\n", b"", b"x" * 256, b"q 1", b"q\xff"])
def test_invalid_names_like_go(tmp_path, name):
    """Go's ^[a-zA-Z0-9_.-]{1,255}$ matches the whole name: no trailing newline (Python's $ would allow one)."""
    rep = replay(tmp_path, [add(name=name)])
    assert codes(rep) == ["WQ-INVALID-NAME"]


def test_longest_valid_name(tmp_path):
    rep = replay(tmp_path, [add(name=b"a" * 255)])
    assert codes(rep) == [] and rep.verdict == Verdict.CLEAN
