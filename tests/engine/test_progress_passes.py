"""Progress tells the truth (issue 18 item 6): every pass of a command is announced with its name and its own
total, and the count of a pass never passes that total; the reference pass the kernel hands a log to is a pass
of its own (a bar at 100 % while a second read runs was the lie)."""
from __future__ import annotations

import os
import shutil

from tests.conftest import AS_OF, fixture_log
from wqtool.engine import progress
from wqtool.engine.instant import parse_instant
from wqtool.engine.workq import clean, pack, repair, verify
from wqtool.engine.workq.reader import discover

AS_OF_NS = parse_instant(AS_OF)


class Recorder:
    def __init__(self):
        self.passes = [["read", None, "bytes", 0]]      # name, total, unit, the highest count seen

    def update(self, done: int) -> None:
        p = self.passes[-1]
        p[3] = max(p[3], done)

    def on_pass(self, name, total, unit) -> None:
        self.passes.append([name, total, unit, 0])

    def names(self) -> list[str]:
        return [p[0] for p in self.passes]


def _run(fn):
    rec = Recorder()
    with progress.listen(rec.update, rec.on_pass):
        fn()
    for name, total, _, done in rec.passes:
        assert total is None or done <= total, (name, done, total)
    return rec


REF = progress.REFERENCE_PASS


def _handed_back(d: str) -> bool:
    """Does the hot kernel hand this log back to the reference pass (else it reads it through, or there is no
    kernel to run: WQTOOL_PURE_PYTHON=1, and the reference read is the "read" pass itself)?"""
    from wqtool.engine.workq.fastreplay import Bail, fast_run
    try:
        fast_run(discover([d])[0], AS_OF_NS, through=True)
    except Bail as exc:
        return exc.handed_back
    return False


def _copy(name, tmp_path) -> str:
    d = str(tmp_path / "log")
    shutil.copytree(fixture_log(name), d)
    for n in os.listdir(d):
        os.chmod(os.path.join(d, n), 0o644)
    return d


def test_repair_apply_reads_writes_and_re_verifies(tmp_path):
    d = _copy("crc-mismatch-mid-segment", tmp_path)
    ref = [REF] if _handed_back(d) else []
    holder = {}

    def go():
        plan = holder["plan"] = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True)
        plan.apply(fsync=False, stale_lock_hold=0)
    rec = _run(go)
    assert rec.names() == ["read", *ref, "write", "re-verify", "quarantine"]
    w, v, q = rec.passes[-3:]
    assert q[1] == q[3] == 120                                             # the cut bytes, copied
    written = sum(s.size_after for s in holder["plan"].segments if not s.remove)
    assert w[1] == written and w[3] == written                             # every byte written was counted
    assert rec.passes[0][3] > 0 and v[3] == written


def test_pack_apply_passes(tmp_path):
    d = _copy("upstream-a-run1", tmp_path)
    holder = {}

    def go():
        plan = holder["plan"] = pack.pack_plan(discover([d])[0], AS_OF_NS)
        plan.apply(fsync=False, stale_lock_hold=0)
    rec = _run(go)
    assert rec.names() == ["read", "plan the packed log", "write", "re-verify"]
    assert rec.passes[1][1:3] == [holder["plan"].jobs_kept, "jobs"]
    assert rec.passes[2][1] == holder["plan"].bytes_after == rec.passes[2][3]


def test_clean_apply_passes(tmp_path):
    """At a late as-of every add of the log has expired: clean drops records without effect (write, re-verify)."""
    d = _copy("sample-clean", tmp_path)
    late = parse_instant("2027-01-01T00:00:00Z")
    rec = _run(lambda: clean.clean_plan(discover([d])[0], late).apply(fsync=False))
    assert rec.names() == ["read", "write", "re-verify"]
    assert rec.passes[1][3] == rec.passes[1][1]


def test_the_reference_pass_is_a_pass_of_its_own(monkeypatch):
    from wqtool.engine.workq.fastreplay import Bail

    def bail(*a, **kw):
        raise Bail
    monkeypatch.setattr(verify, "fast_run", bail)
    rec = _run(lambda: verify.run_log(discover([fixture_log("upstream-a-run1")])[0], AS_OF_NS))
    assert rec.names() == ["read", REF]
    assert rec.passes[1][3] == os.path.getsize(os.path.join(fixture_log("upstream-a-run1"), "000000001.log"))


def test_without_a_kernel_the_reference_read_is_the_read_pass(tmp_path, monkeypatch):
    """No kernel to run (WQTOOL_PURE_PYTHON=1, or not built): nothing is handed back, so no pass says so; the
    reference reads the log in "read" and the new log in "re-verify" (they were empty, each followed by a
    "reference pass (the kernel handed the log back)")."""
    from wqtool.engine.workq import fastreplay
    monkeypatch.setattr(fastreplay, "KERNEL", "python")
    d = _copy("crc-mismatch-mid-segment", tmp_path)
    size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d))
    holder = {}

    def go():
        plan = holder["plan"] = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True)
        plan.apply(fsync=False, stale_lock_hold=0)
    rec = _run(go)
    assert rec.names() == ["read", "write", "re-verify", "quarantine"]
    written = sum(s.size_after for s in holder["plan"].segments if not s.remove)
    read, _, verified, _ = rec.passes
    assert read[3] >= size and verified[3] == written                     # every byte read where it is announced


def test_pack_reads_a_damaged_log_once(tmp_path, monkeypatch):
    """``pack --salvage`` counts the input's records by kind in its one read, on both paths: its "read" pass ends
    at the log's size (a second read, to count the kinds of a log that is not clean, took it to twice that)."""
    from wqtool.engine.workq import fastreplay
    d = _copy("crc-mismatch-mid-segment", tmp_path)
    size = sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".log"))
    for kernel in ("c", "python") if fastreplay.KERNEL == "c" else ("python",):
        monkeypatch.setattr(fastreplay, "KERNEL", kernel)
        rec = _run(lambda: pack.pack_plan(discover([d])[0], AS_OF_NS, salvage=True))
        assert rec.names() == ["read", "plan the packed log"], kernel
        assert 0 < rec.passes[0][3] <= size, (kernel, rec.passes[0][3], size)
