"""pack: digest preserved, idempotent, refuses corruption unless salvaging, never appends, and crash-safe
installation (a failure injected before / after every step of apply leaves a set that replays the same)."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.kestrel.pack import InjectedCrash, PackMismatch, PackRefused, pack_plan
from wqtool.engine.kestrel.reader import discover
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.kestrel import pack as pack_mod
from wqtool.errors import InputError, UsageError
from wqtool.engine.findings import Verdict

from .conftest import AS_OF_NS, T, dir_snapshot, one_set, write_journal
from .test_replay import OPS, build_set


def digests(d: str, queue: str = "q") -> tuple[str, str]:
    fs = discover([d], queue=queue)[0]
    return (run_log(fs, AS_OF_NS, keep_open=True).state.digest(), run_log(fs, AS_OF_NS).state.digest())


@settings(max_examples=examples(100), deadline=None)
@given(OPS, st.lists(st.integers(0, 40), max_size=3))
def test_pack_preserves_digest_and_is_idempotent(ops, cuts):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        os.makedirs(src)
        build_set(src, ops, cuts)
        fs = one_set(src)
        before = digests(src)
        try:
            plan = pack_plan(fs, AS_OF_NS)
        except PackRefused as e:
            assert e.verdict == Verdict.INVALID_HISTORY     # an open xid reused
            plan = pack_plan(fs, AS_OF_NS, salvage=True)
            before = (plan.digest_input, None)
        out1 = os.path.join(d, "o1")
        os.makedirs(out1)
        res = plan.write(out1)
        assert plan.digest_expected == before[0]            # the plan compares the open states (keep_open)
        assert res.digest == plan.report_doc()["digest"]     # what pack prints: replay's digest, same options
        if before[1] is not None:
            assert res.digest == before[1]
        assert os.path.getsize(res.path) == plan.bytes_after == res.bytes
        assert res.records == plan.records_after
        after = digests(out1)
        assert after[0] == before[0]
        if before[1] is not None:
            assert after[1] == before[1]
        # pack of packed: byte-identical
        plan2 = pack_plan(one_set(out1), AS_OF_NS)
        out2 = os.path.join(d, "o2")
        os.makedirs(out2)
        res2 = plan2.write(out2)
        assert open(res2.path, "rb").read() == open(res.path, "rb").read()


def rich_set(d: str) -> None:
    """Rotated files, a half-finished pack, a leftover temp, open transactions, a live file, a stray name."""
    write_journal(os.path.join(d, "q.100"), lambda w: ([w.add(b"r%d" % i, T + i) for i in range(6)],
                                                        w.remove_tentative(1), w.remove()))
    write_journal(os.path.join(d, "q.200"), lambda w: (w.add(b"superseded", T), w.remove()))
    write_journal(os.path.join(d, "q.200.pack"), lambda w: (w.add(b"p-open", T), w.remove_tentative(4),
                                                             [w.add(b"p%d" % i, T, T + 10 * i) for i in range(4)]))
    write_journal(os.path.join(d, "q.300"), lambda w: (w.add(b"s", T), w.remove_tentative(5), w.confirm_remove(4),
                                                        w.add(b"t", T, T + 1)))
    write_journal(os.path.join(d, "q~~250"), lambda w: w.add(b"temp-junk", T))
    write_journal(os.path.join(d, "q"), lambda w: (w.add(b"live", T), w.remove_tentative(6), w.unremove(6),
                                                    w.remove_tentative(7), w.continue_(7, b"cont", T)))


def test_rich_set_pack_and_apply(qdir):
    rich_set(qdir)
    before = digests(qdir)
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    assert plan.open_transactions == 1 and plan.records_dropped > 0
    assert plan.bytes_before == sum(s for _, s in plan.inputs)
    j = plan.to_jsonable()
    assert j["bytes_after"] == plan.bytes_after and j["digest_input"] == before[0]
    res = plan.apply(now_ms=1000)
    assert sorted(os.listdir(qdir)) == ["q"]
    assert digests(qdir) == before
    assert res.bytes_after == os.path.getsize(os.path.join(qdir, "q")) == plan.bytes_after
    assert run_log(one_set(qdir), AS_OF_NS).verdict == Verdict.CLEAN


def _crash_points(plan) -> list[str]:
    labels = plan.apply_steps(now_ms=1000)
    return ["during:write-temp"] + [f"{w}:{label}" for label in labels for w in ("before", "after")]


def test_crash_at_every_step_replays_to_the_original_state(tmp_path):
    base = str(tmp_path / "base")
    os.makedirs(base)
    rich_set(base)
    write_journal(os.path.join(base, "other"), lambda w: w.add(b"another queue", T))
    original = digests(base)
    other = digests(base, "other")
    points = _crash_points(pack_plan(one_set(base, queue="q"), AS_OF_NS))
    assert len(points) > 20
    for point in points:
        d = str(tmp_path / point.replace(":", "_").replace("~", "T"))
        shutil.copytree(base, d)
        plan = pack_plan(discover([d], queue="q")[0], AS_OF_NS)
        with pytest.raises(InjectedCrash):
            plan.apply(now_ms=1000, fail_at=point)
        assert digests(d) == original, (point, sorted(os.listdir(d)))
        assert digests(d, "other") == other
        # no crash leaves Kestrel's duplicate-state window: never a live file next to a pack superseding it
        # unless the pack supersedes it (i.e. it was rotated first)
        names = os.listdir(d)
        assert not ("q" in names and any(n.endswith(".pack") and n != "q.200.pack" for n in names)), point
        # and a second run from wherever it stopped converges
        plan2 = pack_plan(discover([d], queue="q")[0], AS_OF_NS)
        plan2.apply(now_ms=5000)
        assert sorted(os.listdir(d)) == ["other", "q"]
        assert digests(d) == original
        shutil.rmtree(d)


def test_os_error_while_writing_removes_the_temp(qdir, monkeypatch):
    rich_set(qdir)
    before = dir_snapshot(qdir)
    plan = pack_plan(one_set(qdir), AS_OF_NS)

    def boom(fd):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(pack_mod.os, "fsync", boom)
    with pytest.raises(OSError):
        plan.apply(now_ms=1000)
    monkeypatch.undo()
    assert dir_snapshot(qdir) == before


def test_os_error_at_a_rename_leaves_a_consistent_set(qdir, monkeypatch):
    rich_set(qdir)
    original = digests(qdir)
    real = os.rename
    calls = {"n": 0}

    def flaky(a, b):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(a, b)
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    monkeypatch.setattr(pack_mod.os, "rename", flaky)
    with pytest.raises(OSError):
        plan.apply(now_ms=1000)
    monkeypatch.undo()
    assert digests(qdir) == original


def test_mismatch_aborts_and_removes_output(qdir, tmp_path, monkeypatch):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.add(b"b", T)))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    real = pack_mod.PackPlan.content_chunks

    def lossy(self):
        yield from real(self)
        from wqtool.engine.kestrel.fastpath import encode_addx
        yield encode_addx(b"extra", T)
    monkeypatch.setattr(pack_mod.PackPlan, "content_chunks", lossy)
    out = str(tmp_path / "out")
    with pytest.raises(PackMismatch) as e:
        plan.write(out)
    assert e.value.expected == plan.digest_expected and e.value.actual != e.value.expected
    assert "first difference" in str(e.value) or "item counts differ" in str(e.value)
    assert not os.path.exists(out)
    before = dir_snapshot(qdir)
    with pytest.raises(PackMismatch):
        plan.apply(now_ms=1000)
    assert dir_snapshot(qdir) == before


def test_never_appends(qdir, tmp_path):
    write_journal(os.path.join(qdir, "q"), lambda w: w.add(b"a", T))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    out = str(tmp_path / "exists")
    open(out, "wb").write(b"keep")
    with pytest.raises(UsageError):
        plan.write(out)
    assert open(out, "rb").read() == b"keep"
    res = plan.write(str(tmp_path))       # a directory: <dir>/<queue>
    assert res.path == str(tmp_path / "q")


def test_drop_expired(qdir, tmp_path):
    """Queued items expired at as-of are dropped; open transactions are kept (Kestrel expires only at the head)."""
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"open-exp", T, T + 1), w.remove_tentative(3),
                                                       w.add(b"exp", T, T + 1), w.add(b"keep", T)))
    plan = pack_plan(one_set(qdir), AS_OF_NS, drop_expired=True)
    assert plan.expired_dropped == 1 and plan.digest_expected != plan.digest_input
    assert any("expired" in line for line in plan.dropped)
    res = plan.write(str(tmp_path))
    r = run_log(discover([res.path])[0], AS_OF_NS, keep_open=True)
    assert [(s, x, i.data) for s, x, i in r.state.sorted_items()] == [("open", 3, b"open-exp"),
                                                                      ("queued", None, b"keep")]
    assert r.state.digest() == plan.digest_expected


def test_refuses_corruption_unless_salvage(qdir, tmp_path):
    write_journal(os.path.join(qdir, "q.1"), lambda w: (w.add(b"a", T), w.raw(b"\xee"), w.add(b"b", T)))
    write_journal(os.path.join(qdir, "q"), lambda w: w.add(b"c", T))
    with pytest.raises(PackRefused) as e:
        pack_plan(one_set(qdir), AS_OF_NS)
    assert e.value.verdict == Verdict.CORRUPT and e.value.offset == 22
    assert "KQ-BAD-OPCODE" in str(e.value)
    plan = pack_plan(one_set(qdir), AS_OF_NS, salvage=True)
    assert [i.data for i in plan.state.queue] == [b"a", b"b", b"c"]
    assert len(plan.dropped) == 1 and "0x16..0x17" in plan.dropped[0]
    assert plan.input_verdict == Verdict.CORRUPT


def test_refuses_invalid_history_unless_salvage(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.add(b"b", T), w.remove_tentative(3),
                                                       w.remove_tentative(3)))
    with pytest.raises(PackRefused) as e:
        pack_plan(one_set(qdir), AS_OF_NS)
    assert e.value.verdict == Verdict.INVALID_HISTORY
    plan = pack_plan(one_set(qdir), AS_OF_NS, salvage=True)
    assert any("KQ-XID-REUSED" in x or "already open" in x for x in plan.dropped)


def test_torn_tail_is_packed_and_reported(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.raw(b"\x02\x20\x00")))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    assert plan.input_verdict == Verdict.TORN_TAIL
    assert plan.dropped and "torn tail" in plan.dropped[0]
    plan.apply(now_ms=1000)
    r = run_log(one_set(qdir), AS_OF_NS)
    assert r.verdict == Verdict.CLEAN and [i.data for i in r.state.queue] == [b"a"]


def test_apply_refuses_changed_input_and_explicit_files(qdir):
    p = write_journal(os.path.join(qdir, "q"), lambda w: w.add(b"a", T))
    plan = pack_plan(one_set(qdir), AS_OF_NS)
    with open(p, "ab") as f:
        f.write(b"\x01")
    with pytest.raises(InputError):
        plan.apply(now_ms=1000)
    plan = pack_plan(discover([p])[0], AS_OF_NS)
    with pytest.raises(UsageError):
        plan.apply(now_ms=1000)
