"""A changed retry file is never clean: the name's md5 is the file's only checksum (issue 19). Every single-bit
flip of a real retry file is an error (exit 3) at the flipped byte; the entries that now parse differently are
named; the repair (quarantine / restore / rename / keep) is a plan on the plan framework, crash-safe at every step."""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from tests.conftest import ROOT
from wqtool.engine import format as registry
from wqtool.engine.format import Options, RepairOptions
from wqtool.engine.javacodec.gson import Entry, encode
from wqtool.engine.orth_callbacks.md5name import FLIP_SEARCH_MAX, recover_flip
from tests.writers.orth_callbacks import write_retry_file
from wqtool.engine.plan import InjectedCrash
from wqtool.engine.findings import Verdict

FMT = registry.get("orth-callbacks")
#: Orth's own bytes (the spec's derived example; the Java oracle checks them against real Gson)
REAL = os.path.join(ROOT, "fixtures", "orth", "clean-retry-files", "logpath", "callbacklogs",
                    "orth-callback-a7e132630520268f2c18291b3a366933.log")
T = 1769740800000


def _verify(path: str):
    log = FMT.discover([path], Options(0))[0]
    run = FMT.run(log, Options(0))
    for _ in run.events():
        pass
    return run.report


def _flip(data: bytes, i: int, bit: int) -> bytes:
    return data[:i] + bytes((data[i] ^ (1 << bit),)) + data[i + 1:]


def test_every_single_bit_flip_of_a_real_file_is_an_error_at_the_flipped_byte(tmp_path):
    data = open(REAL, "rb").read()
    d = tmp_path / "callbacklogs"
    d.mkdir()
    p = d / os.path.basename(REAL)
    named = 0
    for i in range(len(data)):
        for bit in range(8):
            p.write_bytes(_flip(data, i, bit))
            rep = _verify(str(d))
            assert rep.verdict == Verdict.CORRUPT, (i, bit, [(f.code, f.message) for f in rep.findings])
            md5 = [f for f in rep.findings if f.code == "OC-NAME-MD5"]
            if md5:       # the rest are rejected by Gson: poison files, errors of their own
                named += 1
                (f,) = md5
                assert f.offset == i and f"bit {bit} of byte {i} flipped" in f.message, (i, bit, f.message)
            else:
                assert {f.code for f in rep.findings} & {"OC-REJECTED", "OC-TRUNCATED", "OC-INVALID-UTF8"}
    assert named > len(data) * 8 // 3        # 765 of 1192: most flips still parse; none of them is clean


def test_the_issues_examples_name_what_changed(tmp_path):
    lp = str(tmp_path)
    p1 = write_retry_file(lp, [Entry(12345, T, 200)])
    write_retry_file(lp, [Entry(12347, T, 500, "boom")])
    p2 = write_retry_file(lp, [Entry(7, T, 500, "downstream error")])
    data1, data2 = open(p1, "rb").read(), open(p2, "rb").read()
    at = data1.index(b"12345") + 4                      # '5' (0x35) -> '7' (0x37): bit 1
    open(p1, "wb").write(_flip(data1, at, 1))
    rep = _verify(os.path.join(lp, "callbacklogs"))
    (f,) = [x for x in rep.findings if x.code == "OC-NAME-MD5" and x.path == p1]
    assert f.offset == at and "entry 0 (log id 12345): logId 12345 -> 12347" in f.message
    assert any(x.code == "OC-DUPLICATE" for x in rep.findings)     # it now duplicates another file's entry
    for key, new, bit, want in ((b"logDateTim", b"logDapeTim", 2, f"logDateTim {T} -> 0"),
                                (b"handleMsg", b"handleMwg", 2, 'handleMsg "downstream error" -> null')):
        at = data2.index(key) + key.index(bytes(a for a, b in zip(key, new) if a != b)[:1])
        changed = _flip(data2, at, bit)
        assert new in changed
        open(p2, "wb").write(changed)
        rep = _verify(os.path.join(lp, "callbacklogs"))
        (f,) = [x for x in rep.findings if x.code == "OC-NAME-MD5" and x.path == p2]
        assert rep.verdict == Verdict.CORRUPT and f.offset == at and want in f.message, f.message


def test_a_rename_or_a_rewrite_is_an_error_too(tmp_path):
    lp = str(tmp_path)
    p = write_retry_file(lp, [Entry(1, T, 200)])
    other = os.path.join(os.path.dirname(p), "orth-callback-" + "0" * 32 + ".log")
    os.rename(p, other)
    rep = _verify(os.path.dirname(p))
    (f,) = [x for x in rep.findings if x.code == "OC-NAME-MD5"]
    assert rep.verdict == Verdict.CORRUPT and "cannot be known" in f.message and f.offset == 0
    os.rename(other, p)
    open(p, "wb").write(b'[ {"logId":1,"logDateTim":1769740800000,"handleCode":200} ]')
    rep = _verify(os.path.dirname(p))
    (f,) = [x for x in rep.findings if x.code == "OC-NAME-MD5"]
    assert rep.verdict == Verdict.CORRUPT and "the value written" in f.message


def test_recover_flip_is_bounded():
    data = encode([Entry(1, T, 500, "x" * FLIP_SEARCH_MAX)])
    md5 = hashlib.md5(data).hexdigest()
    assert recover_flip(_flip(data, 5, 0), md5) is None           # too large to search: not guessed at
    small = encode([Entry(1, T, 500, "x")])
    assert recover_flip(_flip(small, 5, 3), hashlib.md5(small).hexdigest())[:2] == (5, 3)
    assert recover_flip(small, "0" * 32) is None


# ---------------------------------------------------------------- the repair plan
def _changed(tmp_path) -> tuple[str, str, bytes, bytes]:
    lp = str(tmp_path / "logpath")
    p = write_retry_file(lp, [Entry(12345, T, 200), Entry(9, T, 500, "m")])
    good = open(p, "rb").read()
    bad = _flip(good, good.index(b"12345") + 4, 1)
    open(p, "wb").write(bad)
    return lp, p, good, bad


def _plan(lp: str, action: str | None):
    log = FMT.discover([lp], Options(0))[0]
    return FMT.plans.repair(log, RepairOptions(0, settings={"md5_action": action} if action else {}))


@pytest.mark.parametrize("action", ["quarantine", "restore", "rename", "keep"])
def test_repair_each_action(tmp_path, action):
    lp, p, good, bad = _changed(tmp_path)
    plan = _plan(lp, action)
    doc = plan.report_doc()
    assert plan.input_verdict == Verdict.CORRUPT
    assert [a["action"] for a in doc["actions"]] == [action or "quarantine"]
    q = str(tmp_path / "q")
    res = plan.apply(quarantine=q)
    rep = _verify(os.path.join(lp, "callbacklogs"))
    if action == "keep":
        assert doc["nothing_to_do"] and open(p, "rb").read() == bad
        return
    assert rep.verdict == Verdict.CLEAN, [(f.code, f.message) for f in rep.findings]
    if action in ("quarantine", "restore"):
        assert [open(x, "rb").read() for x in res.quarantine] == [bad]      # every changed byte kept
    if action == "quarantine":
        assert not os.path.exists(p)
    elif action == "restore":
        assert open(p, "rb").read() == good
    else:
        (n,) = os.listdir(os.path.dirname(p))
        assert n == f"orth-callback-{hashlib.md5(bad).hexdigest()}.log"


def test_repair_default_is_quarantine_and_the_executor_logs_have_nothing_to_repair(tmp_path):
    lp, p, _, _ = _changed(tmp_path)
    assert [a["action"] for a in _plan(lp, None).report_doc()["actions"]] == ["quarantine"]
    ex = registry.get("orth-executor-logs")
    os.makedirs(os.path.join(lp, "2026-01-30"))
    plan = ex.plans.repair(ex.discover([lp], Options(0))[0], RepairOptions(0))
    assert plan.report_doc()["nothing_to_do"]
    with pytest.raises(Exception, match="md5_action"):
        _plan(lp, "delete")


@pytest.mark.parametrize("action", ["quarantine", "restore", "rename"])
def test_a_crash_at_any_step_loses_nothing(tmp_path, action):
    lp0, p0, good, bad = _changed(tmp_path / "ref")
    steps = _plan(lp0, action).apply_steps()
    assert steps
    for i, step in enumerate(steps):
        for when in ("before", "after"):
            base = tmp_path / f"{action}-{i}-{when}"
            shutil.copytree(lp0, base / "logpath")
            lp = str(base / "logpath")
            q = str(base / "q")
            with pytest.raises(InjectedCrash):
                _plan(lp, action).apply(quarantine=q, fail_at=f"{when}:{step}")
            held = [open(os.path.join(dp, n), "rb").read() for root in (lp, q) if os.path.isdir(root)
                    for dp, _, ns in os.walk(root) for n in ns]
            assert bad in held or good in held, (step, when)
            if os.listdir(os.path.join(lp, "callbacklogs")):          # the rerun finishes the job
                _plan(lp, action).apply(quarantine=q)
            assert _verify(os.path.join(lp, "callbacklogs")).verdict == Verdict.CLEAN
