"""repair and clean for Kestrel queues: damage cut (quarantined byte for byte) and the readable part's digest kept;
clean does what Kestrel's start-up does; both crash-safe at every step and refused while a writer holds a file."""
from __future__ import annotations

import os
import random
import shutil

import pytest

from tests.conftest import ROOT, cli
from wqtool.engine import kestrel as k
from wqtool.engine.findings import Verdict
from wqtool.engine.kestrel import clean, repair
from wqtool.engine.plan import InjectedCrash
from wqtool.errors import PackRefused

from .conftest import AS_OF_NS, T, dir_snapshot, one_set, write_journal

KF = os.path.join(ROOT, "fixtures", "kestrel")


def _copy(name: str, dst) -> str:
    shutil.copytree(os.path.join(KF, name, "queue"), dst)
    return str(dst)


def digests(d, queue=None):
    fs = one_set(d, **({"queue": queue} if queue else {}))
    rep = k.run_log(fs, AS_OF_NS, keep_open=True)
    return rep.verdict, rep.state.digest()


@pytest.mark.parametrize("name, verdict, flags", [("torn-tail", Verdict.TORN_TAIL, {}),
                                                  ("damage-mid-live", Verdict.CORRUPT, {"salvage": True}),
                                                  ("negative-size", Verdict.CORRUPT, {"salvage": True})])
def test_repair_every_damaged_fixture(tmp_path, name, verdict, flags):
    d = _copy(name, tmp_path / "q")
    original = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    if flags:
        with pytest.raises(PackRefused, match="--salvage repairs it"):
            repair.repair_plan(one_set(d), AS_OF_NS)
    plan = repair.repair_plan(one_set(d), AS_OF_NS, **flags)
    assert plan.input_verdict == verdict and plan.digest_before == plan.digest_expected
    res = plan.apply(now_ms=1000, fsync=False)
    assert digests(d) == (Verdict.CLEAN, plan.digest_expected)
    assert sorted(os.listdir(res.backup)) == sorted(original) and \
        all(open(os.path.join(res.backup, n), "rb").read() == b for n, b in original.items())
    for q in res.quarantine:
        fname, span = os.path.basename(q)[:-4].split("@")
        a, b = (int(x, 16) for x in span.split("-"))
        assert open(q, "rb").read() == original[fname][a:b]
    assert repair.repair_plan(one_set(d), AS_OF_NS).nothing_to_do


def test_bit_flips_in_a_journal_repair_to_a_clean_queue(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    write_journal(str(src / "q"), lambda w: [w.add(b"item %d" % i * 3, T + i) for i in range(40)]
                  + [w.remove_tentative(1), w.confirm_remove(1), w.remove()])
    data = open(src / "q", "rb").read()
    rng = random.Random(7)
    for i in range(60):
        pos = rng.randrange(len(data))
        d = tmp_path / f"f{i}"
        d.mkdir()
        flipped = bytearray(data)
        flipped[pos] ^= 1 << rng.randrange(8)
        (d / "q").write_bytes(bytes(flipped))
        try:
            plan = repair.repair_plan(one_set(str(d)), AS_OF_NS, salvage=True, drop_invalid=True)
        except PackRefused:
            raise AssertionError(f"flip at {pos}")
        if plan.nothing_to_do:       # no checksum: a flip inside item data or a time is not detectable (KQ-NO-CHECKSUM)
            continue
        plan.apply(now_ms=1000, fsync=False)
        assert digests(str(d)) == (Verdict.CLEAN, plan.digest_expected), pos


def test_repair_crash_at_every_step(tmp_path):
    base = _copy("damage-mid-live", tmp_path / "base")
    old = digests(base)
    plan = repair.repair_plan(one_set(base), AS_OF_NS, salvage=True)
    labels = plan.apply_steps(now_ms=1000, fsync=False)
    assert labels[0] == "quarantine" and "rename-temp-to-pack" in labels and "backup" in labels
    for when in ("before", "after"):
        for label in labels:
            d = _copy("damage-mid-live", tmp_path / f"{when}-{label}".replace(":", "_"))
            p = repair.repair_plan(one_set(d), AS_OF_NS, salvage=True)
            with pytest.raises(InjectedCrash):
                p.apply(now_ms=1000, fail_at=f"{when}:{label}", fsync=False)
            assert digests(d) in (old, (Verdict.CLEAN, plan.digest_expected)), f"{when}:{label}"


def test_clean_finishes_what_kestrel_would(tmp_path):
    d = _copy("half-finished-pack", tmp_path / "q")
    fs = one_set(d)
    before = digests(d)
    plan = clean.clean_plan(fs, AS_OF_NS)
    doc = plan.report_doc()
    assert {os.path.basename(a["file"]) for a in doc["actions"] if a["action"] == "delete"} == \
        {"test~~4000", "test.50", "test.100"}
    plan.apply()
    assert sorted(os.listdir(d)) == ["test", "test.100", "test.3000"]
    assert digests(d) == before
    assert clean.clean_plan(one_set(d), AS_OF_NS).report_doc()["actions"] == []


def test_clean_crash_at_every_step(tmp_path):
    base = _copy("half-finished-pack", tmp_path / "base")
    before = digests(base)
    labels = clean.clean_plan(one_set(base), AS_OF_NS).apply_steps()
    for when in ("before", "after"):
        for label in labels:
            d = _copy("half-finished-pack", tmp_path / f"{when}-{label}".replace(":", "_").replace("~", "T"))
            with pytest.raises(InjectedCrash):
                clean.clean_plan(one_set(d), AS_OF_NS).apply(fail_at=f"{when}:{label}")
            assert digests(d) == before, f"{when}:{label}"


def test_clean_and_repair_refuse_a_live_writer(tmp_path):
    d = _copy("half-finished-pack", tmp_path / "q")
    snap = dir_snapshot(d)
    fd = os.open(os.path.join(d, "test"), os.O_RDONLY)
    import subprocess
    import sys
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); "
                               "print('ok', flush=True); time.sleep(30)", os.path.join(d, "test")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        r = cli("clean", "--apply", d)
        assert r.code == 5 and "must be stopped before clean --apply" in r.err and f"pid {holder.pid}" in r.err
        r = cli("repair", "--apply", "--format", "kestrel", d)
        assert r.code == 5
    finally:
        holder.kill()
        holder.wait()
        os.close(fd)
    assert dir_snapshot(d) == snap
