"""The C ``_kernel.digest_text(jobs)`` is ``b"".join(replay.digest_line(j) for j in jobs)``, byte for byte.

Checked on the jobs of random generated logs (ids reused, leases, results), on hand-made jobs with None,
negative, int64-edge and huge ints, empty/non-empty/odd results and odd ids; and ``state_digest`` must be the
same with the C kernel and with ``WQTOOL_PURE_PYTHON=1``. The C cases skip where the extension is not built
(tests/engine/test_kernel_c.py insists on it being built wherever a compiler exists).
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from enum import IntEnum

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.workq import replay
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.replay import Job, JobState, ReplayState, digest_line, state_digest
from wqtool.engine.workq.sample import T0_NS, SampleSpec, generate
from wqtool.engine.workq.verify import run_log
from wqtool.formats.workq import CmdType

_kernel = replay._kernel
needs_c = pytest.mark.skipif(_kernel is None or not hasattr(_kernel, "digest_text"),
                             reason="the C kernel (wqtool.engine.workq._kernel) is not built")
T = T0_NS + 3600 * 10**9


def py_text(jobs) -> bytes:
    return b"".join(digest_line(j) for j in jobs)


def job(**kw) -> Job:
    base = dict(id=bytes(range(16)), kind=CmdType.ADD, name="q.a-b_0", ttr=30_000, ttl=3_600_000, priority=0,
                max_attempts=3, max_fails=1, created_ns=T, scheduled_ns=None, expires_ns=T + 1, log_expires_ns=T + 2,
                payload_len=12, payload_crc=0xDEADBEEF, src_path="x/000000001.log", src_offset=8)
    base.update(kw)
    return Job(**base)


@needs_c
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(1, 1500), st.sampled_from([0.0, 0.5]),
       st.sampled_from([T0_NS, T, T + 40 * 86400 * 10**9]))
def test_c_equals_python_on_generated_logs(tmp_path_factory, monkeypatch, seed, n, reuse, as_of):
    from wqtool.engine.workq import fastreplay
    monkeypatch.setattr(fastreplay, "KERNEL", "c")          # the kernel's jobs also under WQTOOL_PURE_PYTHON=1
    d = tmp_path_factory.mktemp("g")
    generate(str(d), SampleSpec(records=n, segment_size=4000, seed=seed, reuse_ids=reuse))
    state = run_log(discover([str(d)])[0], as_of, engine="fast").state
    jobs = state.sorted_jobs()
    assert _kernel.digest_text(jobs) == py_text(jobs)
    assert _kernel.digest_text(jobs[::-1]) == py_text(jobs[::-1])     # the given order, whatever it is


I64 = 2**63
INTS = [0, 1, -1, 7, -7, 10**9, I64 - 1, -I64, I64, -I64 - 1, 2**64, 2**64 - 1, -(2**64), 10**40, -(10**40)]
CRCS = [0, 1, 0xA, 0xFFFFFFFF, 0x100000000, 2**63 - 1, 2**63, 2**70 + 5, -1, -0xA, -(2**70)]


class Odd(IntEnum):
    X = 5


@needs_c
@pytest.mark.parametrize("field", ["attempts", "created_ns", "expires_ns", "log_expires_ns", "max_attempts",
                                   "max_fails", "payload_len", "priority", "ttl", "ttr",
                                   "scheduled_ns", "lease_expires_ns"])
def test_c_equals_python_on_edge_ints(field):
    jobs = [job(**{field: v}) for v in INTS]
    if field in ("scheduled_ns", "lease_expires_ns"):
        jobs.append(job(**{field: None}))
    jobs += [job(**{field: True}), job(**{field: Odd.X})]   # int subclasses: formatted as Python does
    for j in jobs:
        assert _kernel.digest_text([j]) == digest_line(j), j
    assert _kernel.digest_text(jobs) == py_text(jobs)


@dataclasses.dataclass(slots=True)
class SubJob(Job):
    pass


@needs_c
def test_c_equals_python_on_odd_fields():
    jobs = [job(payload_crc=c) for c in CRCS]
    jobs += [job(result=r) for r in (None, b"", b"\x00", b"\xff" * 3, bytes(range(256)) * 40)]
    jobs += [job(id=i) for i in (b"", b"\x01", bytes(9), bytes(range(10, 20)), bytes(range(40)), bytes(64))]
    jobs += [job(state=s, kind=k) for s in JobState for k in (CmdType.ADD, CmdType.SCHEDULE)]
    jobs += [job(state=int(JobState.LEASED), kind=int(CmdType.SCHEDULE))]    # plain ints look up the same labels
    jobs += [job(name=nm) for nm in ("", "a", "x" * 300, "é-ü")]
    jobs += [job(id=bytearray(range(16))), job(result=bytearray(b"\x01\x02")), job(result=memoryview(b"ab"))]
    jobs += [SubJob(**dataclasses.asdict(job(result=b"\x07")))]   # not exactly Job: read by getattr
    for j in jobs:
        assert _kernel.digest_text([j]) == digest_line(j), j
    assert _kernel.digest_text(jobs) == py_text(jobs)
    assert _kernel.digest_text([]) == b""
    assert _kernel.digest_text(tuple(jobs)) == py_text(jobs)


@needs_c
def test_c_raises_where_python_raises():
    for bad in (job(state=99), job(kind="nope"), job(name="\ud800")):
        with pytest.raises(Exception) as py_err:
            digest_line(bad)
        with pytest.raises(type(py_err.value)):
            _kernel.digest_text([job(), bad])
    with pytest.raises(AttributeError):
        _kernel.digest_text([object()])
    with pytest.raises(AttributeError):
        _kernel.digest_text([Job.__new__(Job)])          # unset slots: what getattr says
    with pytest.raises(TypeError):
        _kernel.digest_text(5)


def test_state_digest_chunks_equal_the_line_loop(monkeypatch, tmp_path):
    """More jobs than a chunk, and a chunk size that does not divide the count."""
    generate(str(tmp_path), SampleSpec(records=4000, segment_size=1 << 20, seed=5, reuse_ids=0.5))
    state = run_log(discover([str(tmp_path)])[0], T).state
    want = replay.digest_start(state.as_of_ns)
    for j in state.sorted_jobs():
        want.update(digest_line(j))
    monkeypatch.setattr(replay, "_DIGEST_CHUNK", 7)
    assert len(state.jobs) > 7
    assert state_digest(state) == want.hexdigest()
    monkeypatch.setattr(replay, "_C_DIGEST", None)
    assert state_digest(state) == want.hexdigest()
    assert state_digest(ReplayState(T, {})) == replay.digest_start(T).hexdigest()


def test_state_digest_is_the_same_with_forced_python(tmp_path):
    generate(str(tmp_path), SampleSpec(records=3000, segment_size=1 << 20, seed=9, reuse_ids=0.5))
    code = ("import sys; from wqtool.engine.workq import replay; from wqtool.engine.workq.reader import discover; "
            "from wqtool.engine.workq.verify import run_log; "
            f"s = run_log(discover([sys.argv[1]])[0], {T}).state; "
            "print(replay._C_DIGEST is None, s.digest())")
    outs = {}
    for pure in ("1", ""):
        env = dict(os.environ, WQTOOL_PURE_PYTHON=pure)
        outs[pure] = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True,
                                    text=True, check=True).stdout.split()
    assert outs["1"][0] == "True"
    assert outs[""][0] == str(_kernel is None or not hasattr(_kernel, "digest_text"))
    assert outs["1"][1] == outs[""][1]
    state = run_log(discover([str(tmp_path)])[0], T).state
    assert state.digest() == outs["1"][1]


def test_digest_line_is_the_canonical_json():
    """What the C text copies: digest_line is json.dumps(canonical) (also in test_replay, for generated jobs)."""
    import json
    j = dataclasses.replace(job(), result=b"\x01", scheduled_ns=-5, lease_expires_ns=10**30)
    assert digest_line(j) == (json.dumps(j.canonical(), sort_keys=True, separators=(",", ":")) + "\n").encode()
