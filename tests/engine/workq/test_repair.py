"""repair for workq: every class of damage in the fixtures and generated damage (every truncation point, hundreds
of bit flips of a real segment): after repair --apply the log verifies clean, the digest of the readable part is
kept, the quarantine holds exactly the cut bytes, the old log is kept whole; refusals name the damage; a crash at
any step leaves the old or the new log."""
from __future__ import annotations

import fcntl
import os
import random
import shutil

import pytest

from tests.conftest import AS_OF, ROOT, cli, fixture_log
from wqtool.engine.findings import Verdict
from wqtool.engine.instant import parse_instant
from wqtool.engine.plan import InjectedCrash
from wqtool.engine.workq import repair
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.swap import finish_interrupted
from wqtool.engine.workq.verify import run_log
from wqtool.errors import PackRefused

AS_OF_NS = parse_instant(AS_OF)
FAST = dict(fsync=False, stale_lock_hold=0)


def _copy(src: str, dst) -> str:
    shutil.copytree(src, dst)
    for n in os.listdir(dst):
        os.chmod(os.path.join(dst, n), 0o644)
    return str(dst)


def _files(d: str) -> dict[str, bytes]:
    return {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d)) if n.endswith(".log")}


def _check(d: str, plan, res, original: dict[str, bytes]) -> None:
    """The repaired log verifies clean with the plan's digest; the backup is the original; the quarantine holds
    exactly the cut bytes."""
    rep = run_log(discover([d])[0], AS_OF_NS)
    assert rep.verdict == Verdict.CLEAN, [(f.code, f.offset) for f in rep.findings if f.severity == "error"]
    assert rep.state.digest() == plan.digest_after
    assert _files(res.backup) == original
    cut = {}
    for c in plan.cuts:
        if c.length:
            cut[f"{os.path.basename(c.path)}@0x{c.offset:x}-0x{c.offset + c.length:x}.bin"] = \
                original[os.path.basename(c.path)][c.offset:c.offset + c.length]
    assert {os.path.basename(q): open(q, "rb").read() for q in res.quarantine} == cut
    reheaded = 8 * sum(1 for c in plan.cuts if c.what == "bad-header")     # replaced by a good header
    kept = sum(len(b) for b in original.values()) - sum(len(b) for b in cut.values()) + reheaded
    assert sum(len(b) for b in _files(d).values()) == kept


CASES = [("torn-tail-mid-record", Verdict.TORN_TAIL, {}), ("junk-appended", Verdict.TORN_TAIL, {}),
         ("empty-newest-segment", Verdict.TORN_TAIL, {}),
         ("crc-mismatch-mid-segment", Verdict.CORRUPT, {"salvage": True}),
         ("bad-header-middle-segment", Verdict.CORRUPT, {"salvage": True}),
         ("duplicate-add", Verdict.INVALID_HISTORY, {"drop_invalid": True}),
         ("unknown-command", Verdict.INVALID_HISTORY, {"drop_invalid": True}),
         ("double-lease-and-result", Verdict.INVALID_HISTORY, {"drop_invalid": True})]


@pytest.mark.parametrize("name, verdict, flags", CASES, ids=[c[0] for c in CASES])
def test_every_damaged_fixture(tmp_path, name, verdict, flags):
    d = _copy(fixture_log(name), tmp_path / "log")
    original = _files(d)
    if flags:
        with pytest.raises(PackRefused) as e:
            repair.repair_plan(discover([d])[0], AS_OF_NS)
        assert e.value.verdict == verdict and ("--salvage" if "salvage" in flags else "--drop-invalid") in str(e.value)
    plan = repair.repair_plan(discover([d])[0], AS_OF_NS, **flags)
    assert plan.input_verdict == verdict and not plan.nothing_to_do
    assert plan.digest_before == plan.digest_after          # the readable part keeps its digest
    res = plan.apply(**FAST)
    _check(d, plan, res, original)
    assert repair.repair_plan(discover([d])[0], AS_OF_NS).nothing_to_do   # repaired: nothing left to repair


def test_a_healthy_log_is_a_noop(tmp_path):
    d = _copy(fixture_log("upstream-a-run1"), tmp_path / "log")
    before = _files(d)
    plan = repair.repair_plan(discover([d])[0], AS_OF_NS)
    assert plan.nothing_to_do and plan.report_doc()["why"]
    assert plan.apply(**FAST).steps == [] and _files(d) == before


@pytest.mark.slow
def test_every_truncation_point_of_a_real_segment(tmp_path):
    """upstream-a2-run1 (445 bytes, a real server's segment) cut at every offset: the repair keeps every record
    before the cut, and the log then verifies clean."""
    src = fixture_log("upstream-a2-run1")
    data = open(os.path.join(src, "000000001.log"), "rb").read()
    for cut in range(0, len(data)):
        d = str(tmp_path / f"t{cut}")
        os.makedirs(d)
        open(os.path.join(d, "000000001.log"), "wb").write(data[:cut])
        original = _files(d)
        plan = repair.repair_plan(discover([d])[0], AS_OF_NS)
        if plan.nothing_to_do:                  # cut exactly between records
            assert run_log(discover([d])[0], AS_OF_NS).verdict == Verdict.CLEAN
        else:
            assert plan.input_verdict == Verdict.TORN_TAIL, cut
            res = plan.apply(**FAST)
            if cut < 8:   # no header left: the segment is removed, its bytes quarantined
                assert not os.path.exists(os.path.join(d, "000000001.log"))
                assert [open(q, "rb").read() for q in res.quarantine] == ([data[:cut]] if cut else [])
            else:
                _check(d, plan, res, original)
        shutil.rmtree(d)
        for n in os.listdir(tmp_path):
            if n.startswith(f"t{cut}."):
                shutil.rmtree(tmp_path / n)


@pytest.mark.slow
def test_three_hundred_bit_flips_of_a_real_segment(tmp_path):
    """upstream-a-run1 (a real server's 71 kB segment) with one bit flipped at 300 random places: salvage and
    drop-invalid repair every one into a log that verifies clean, keeping the digest of what was readable."""
    src = fixture_log("upstream-a-run1")
    data = open(os.path.join(src, "000000001.log"), "rb").read()
    rng = random.Random(20261123)
    for i in range(300):
        pos, bit = rng.randrange(len(data)), rng.randrange(8)
        flipped = bytearray(data)
        flipped[pos] ^= 1 << bit
        d = str(tmp_path / f"f{i}")
        os.makedirs(d)
        open(os.path.join(d, "000000001.log"), "wb").write(bytes(flipped))
        original = _files(d)
        plan = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True, drop_invalid=True)
        if plan.nothing_to_do:        # a flip inside a payload byte the CRC does not cover cannot happen: CRC covers all
            raise AssertionError(f"flip at {pos} bit {bit} went unnoticed")
        res = plan.apply(**FAST)
        _check(d, plan, res, original)
        shutil.rmtree(d)
        for n in os.listdir(tmp_path):
            if n.startswith(f"f{i}."):
                shutil.rmtree(tmp_path / n)


def test_point_in_time_rollback(tmp_path):
    d = _copy(fixture_log("upstream-a-run1"), tmp_path / "log")
    t = parse_instant("2026-11-21T23:14:53Z")
    plan = repair.repair_plan(discover([d])[0], AS_OF_NS, truncate_to_ns=t)
    doc = plan.report_doc()
    assert doc["cut"]["by_what"] == {"after-time": 1} and plan.digest_before != plan.digest_after
    assert doc["jobs_changed"] and all(j["after"] in ("absent", "new") for j in doc["jobs_changed"])
    plan.apply(**FAST)
    rep = run_log(discover([d])[0], AS_OF_NS)
    assert rep.verdict == Verdict.CLEAN and rep.state.digest() == plan.digest_after
    assert all(r["time"] <= "2026-11-21T23:14:53Z" for r in
               map(__import__("json").loads, cli("dump", "-o", "jsonl", d).out.splitlines()[:-1]))


def test_a_crash_at_every_step_leaves_the_old_or_the_new_log(tmp_path):
    base = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "base")
    old = run_log(discover([base])[0], AS_OF_NS)
    plan = repair.repair_plan(discover([base])[0], AS_OF_NS, salvage=True)
    labels = plan.apply_steps(fsync=False)
    assert "quarantine" in labels and "exchange" in labels
    for when in ("before", "after"):
        for label in labels:
            d = _copy(base, tmp_path / f"{when}-{label}".replace(":", "_"))
            p = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True)
            with pytest.raises(InjectedCrash):
                p.apply(fail_at=f"{when}:{label}", **FAST)
            finish_interrupted(d)
            rep = run_log(discover([d])[0], AS_OF_NS)
            assert (rep.verdict, rep.state.digest()) in ((old.verdict, old.state.digest()),
                                                          (Verdict.CLEAN, plan.digest_after)), f"{when}:{label}"


def test_a_running_server_is_never_raced(tmp_path):
    d = _copy(fixture_log("torn-tail-mid-record"), tmp_path / "log")
    for n in ("append.lock", "read.lock"):
        open(os.path.join(d, n), "ab").close()
    fd = os.open(os.path.join(d, "append.lock"), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = cli("repair", "--apply", d)
        assert r.code == 5 and "in flight, not damage" in r.err
    finally:
        os.close(fd)
    r = cli("repair", "--apply", d)
    assert r.code == 1, r.err     # the input's damage class, as verify's
    assert cli("verify", "-q", d).code == 0


def test_no_backup_keeps_only_the_quarantine(tmp_path):
    """--no-backup: the plan says the old log will not be kept; after --apply there is no <dir>.pre-repair-*, the
    quarantine holds exactly the torn tail, and the repaired log verifies clean."""
    d = _copy(fixture_log("torn-tail-mid-record"), tmp_path / "log")
    original = _files(d)
    assert "--no-backup: the old log will not be kept" in cli("repair", "--no-backup", d).out
    r = cli("repair", "--apply", "--no-backup", "--quarantine", str(tmp_path / "cut"), d)
    assert r.code == 1, r.err                 # the input's damage class (a torn tail), as verify's
    assert "no backup kept (--no-backup)" in r.out
    assert sorted(os.listdir(tmp_path)) == ["cut", "log"]
    assert {n: open(tmp_path / "cut" / n, "rb").read() for n in os.listdir(tmp_path / "cut")} == \
        {"000000004.log@0x24e-0x262.bin": original["000000004.log"][0x24e:0x262]}
    assert _files(d) == {**original, "000000004.log": original["000000004.log"][:0x24e]}
    assert cli("verify", "-q", d).code == 0


# ---------------------------------------------------------------- one pass (issue 18 items 3 and 4)
def _doc(plan) -> dict:
    d = plan.report_doc()
    for k in ("elapsed_s", "jobs_lost", "jobs_lost_more", "jobs_lost_unread"):
        d.pop(k, None)
    return d


def _two_replays(d: str, **flags):
    """The plan as the two-replay pass makes it (the rollback's, with a point in time after every record)."""
    return repair.repair_plan(discover([d])[0], AS_OF_NS, truncate_to_ns=1 << 62, **flags)


@pytest.fixture(params=["kernel", "reference"])
def engine(request, monkeypatch):
    """The one-pass plan on the hot kernel and on the reference pass (the kernel made to hand every log back)."""
    if request.param == "reference":
        from wqtool.engine.workq.fastreplay import Bail

        def bail(*a, **kw):
            raise Bail
        monkeypatch.setattr(repair, "fast_run", bail)
    return request.param


@pytest.mark.parametrize("name, verdict, flags", CASES, ids=[c[0] for c in CASES])
def test_the_one_pass_plan_is_the_two_replay_plan(tmp_path, engine, name, verdict, flags):
    d = _copy(fixture_log(name), tmp_path / "log")
    one = repair.repair_plan(discover([d])[0], AS_OF_NS, **flags)
    assert _doc(one) == _doc(_two_replays(d, **flags))


def _damaged_copies(tmp_path, seed: int, n: int = 60) -> list[str]:
    """``n`` one-segment logs: a real segment with one bit flipped (2 in 3) or cut short (1 in 3)."""
    data = open(os.path.join(fixture_log("upstream-a-run1"), "000000001.log"), "rb").read()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        b = bytearray(data)
        if i % 3 == 2:
            b = b[:rng.randrange(9, len(b))]
        else:
            b[rng.randrange(8, len(b))] ^= 1 << rng.randrange(8)
        d = str(tmp_path / f"f{i}")
        os.makedirs(d)
        open(os.path.join(d, "000000001.log"), "wb").write(bytes(b))
        out.append(d)
    return out


def test_the_one_pass_plan_on_bit_flips_and_truncations(tmp_path, engine):
    """A real segment, damaged 60 ways (bit flips, truncations): the one-pass plan equals the two-replay plan."""
    flags = dict(salvage=True, drop_invalid=True)
    for i, d in enumerate(_damaged_copies(tmp_path, 18)):
        assert _doc(repair.repair_plan(discover([d])[0], AS_OF_NS, **flags)) == _doc(_two_replays(d, **flags)), i


def _whole_doc(plan) -> dict:
    d = plan.report_doc()
    d.pop("elapsed_s", None)
    return d


def test_a_plan_from_the_reports_own_pass_is_the_plan_repair_reads(tmp_path, monkeypatch):
    """report plans what a repair would lose from its own series pass (``LogReport.reuse``), reading nothing again:
    that plan, jobs lost included, equals the one ``repair`` reads for itself, on 60 damaged copies of a real
    segment and on every damaged fixture."""
    from wqtool.engine.workq import fastreplay
    from wqtool.engine.workq.series import fast_series
    monkeypatch.setattr(fastreplay, "KERNEL", "c")   # the kernel's pass is reused: also under WQTOOL_PURE_PYTHON=1
    logs = _damaged_copies(tmp_path, 30) + [_copy(fixture_log(name), tmp_path / name) for name, _, _ in CASES]
    pytest.importorskip("wqtool.engine.workq._kernel")
    planned = 0
    for d in logs:
        log = discover([d])[0]
        got = fast_series(log, AS_OF_NS, limit=100, max_bins=600)
        if got is None:       # the kernel handed this one back (the reference pass then: no reuse)
            continue
        report = got[0]
        if report.verdict == Verdict.CLEAN:
            continue
        assert report.reuse is not None, d
        flags = dict(salvage=True, drop_invalid=True)
        before = _files(d)
        from_pass = repair.repair_plan(log, AS_OF_NS, prior=report.reuse, **flags)
        assert _files(d) == before
        assert _whole_doc(from_pass) == _whole_doc(repair.repair_plan(discover([d])[0], AS_OF_NS, **flags)), d
        planned += 1
    assert planned > 30


def test_report_reads_a_damaged_log_once(tmp_path, monkeypatch):
    """The incident page of a damaged log states what a repair would lose without a second pass over the log."""
    from wqtool.engine.workq import fastreplay
    monkeypatch.setattr(fastreplay, "KERNEL", "c")   # the kernel's one pass: also under WQTOOL_PURE_PYTHON=1
    d = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "log")
    calls = []
    real = fastreplay.fast_run

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    from wqtool.engine.workq import replay
    digests = []
    real_digest = replay.state_digest

    def digest(state):
        digests.append(1)
        return real_digest(state)
    monkeypatch.setattr(fastreplay, "fast_run", counted)
    monkeypatch.setattr(repair, "fast_run", counted)
    monkeypatch.setattr(replay, "state_digest", digest)
    r = cli("report", "--as-of", AS_OF, d, "--out", tmp_path / "x.html")
    assert r.code == 3, r.err
    assert "What a repair would lose" in open(tmp_path / "x.html").read()
    assert len(calls) == 1
    assert len(digests) == 1       # the page and the plan state one digest: computed once


def test_a_repair_names_the_job_whose_add_it_cuts(tmp_path, engine):
    """One byte flipped in the body of an add whose job has later records: the plan names the job, where its add
    was and how many later records refer to it (they become WQ-UNKNOWN-JOB)."""
    d = _copy(fixture_log("upstream-a-run1"), tmp_path / "log")
    seg = os.path.join(d, "000000001.log")
    data = bytearray(open(seg, "rb").read())
    data[8 + 40] ^= 0x01                 # inside the first add's payload bytes (job ...0001: completed later)
    open(seg, "wb").write(bytes(data))
    plan = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True)
    assert plan.jobs_lost == [{"job_id": "00000000-0000-4000-8000-000000000001", "cmd": "add",
                               "at": "000000001.log@0x8", "later_records": 2, "id_unverified": True}]
    assert plan.lost_unread == {"ranges": 0, "bytes": 0}


def test_unreadable_bytes_are_counted_when_no_id_can_be_read(tmp_path, engine):
    d = _copy(fixture_log("upstream-a-run1"), tmp_path / "log")
    seg = os.path.join(d, "000000001.log")
    data = bytearray(open(seg, "rb").read())
    data[8:8 + 85] = b"\x00" * 85        # the first record (85 bytes) zeroed: nothing there frames
    open(seg, "wb").write(bytes(data))
    plan = repair.repair_plan(discover([d])[0], AS_OF_NS, salvage=True)
    assert plan.jobs_lost == []
    assert plan.lost_unread == {"ranges": 1, "bytes": 85}


def test_a_refusal_comes_at_the_first_decisive_finding_on_the_kernel(tmp_path, monkeypatch):
    """The kernel's pass refuses at the first corruption it meets: no later segment is opened."""
    from wqtool.engine.workq import fastreplay
    d = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "log")      # the damage is in segment 1 of 4
    opened = []
    real = fastreplay.FileView.__init__

    def spy(self, source):
        opened.append(os.path.basename(source.path))
        real(self, source)
    monkeypatch.setattr(fastreplay.FileView, "__init__", spy)
    with pytest.raises(PackRefused, match="--salvage"):
        repair.repair_plan(discover([d])[0], AS_OF_NS)
    assert opened == ["000000001.log"]


def test_a_refusal_comes_at_the_first_decisive_finding(tmp_path, monkeypatch):
    """The reference pass refuses at the first corruption it meets, without reading the rest of the log."""
    from wqtool.engine.workq import verify
    from wqtool.engine.workq.fastreplay import Bail
    d = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "log")

    def bail(*a, **kw):
        raise Bail
    monkeypatch.setattr(repair, "fast_run", bail)
    seen = []
    real = verify.LogRun.events

    def events(self):
        for ev in real(self):
            seen.append(ev)
            yield ev
    monkeypatch.setattr(verify.LogRun, "events", events)
    with pytest.raises(PackRefused, match="--salvage"):
        repair.repair_plan(discover([d])[0], AS_OF_NS)
    assert seen[-1].code == "WQ-CRC" and seen[-1].offset == 0x11c
