"""The Orth golden corpus: regenerated through the writers it matches the committed bytes and expectations; every
finding code has a damaged fixture where verify reports it at the exact file and offset."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from tests.conftest import ROOT
from wqtool.engine import format as registry
from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options
from wqtool.engine.orth_callbacks.codes import CALLBACK_CODES
from wqtool.engine.orth_executor_logs.codes import EXECUTOR_CODES

FIX = os.path.join(ROOT, "fixtures", "orth")


def _script():
    spec = importlib.util.spec_from_file_location("make_orth_fixtures",
                                                  os.path.join(ROOT, "scripts", "make_orth_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _script()
SCENARIOS = sorted(SCRIPT.SCENARIOS)


def test_corpus_has_not_drifted():
    assert SCRIPT.main(["--check"]) == 0


@pytest.mark.parametrize("name", SCENARIOS)
def test_expected_matches_the_engine(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    sd = os.path.join("fixtures", "orth", name)
    assert json.load(open(os.path.join(sd, "expected.json"), encoding="utf-8")) == \
        json.loads(json.dumps(SCRIPT.expected(sd), ensure_ascii=False))


#: (scenario, code, file relative to logpath, offset): each code at its damage
WHERE = [
    ("callbacklogs-not-a-directory", "OC-NOT-A-DIR", "callbacklogs", None),
    ("empty-files", "OC-EMPTY", "callbacklogs/orth-callback-d41d8cd98f00b204e9800998ecf8427e.log", 0),
    ("foreign-names", "OC-NOT-A-FILE", "callbacklogs/subdir", None),
    ("foreign-names", "OC-FOREIGN-NAME", "callbacklogs/copied-by-hand.json", None),
    ("handle-codes", "OC-UNKNOWN-HANDLE-CODE", "callbacklogs/orth-callback-8511862db05832ea1dc70ad8d8f031ba.log", 1),
    ("handle-codes", "OC-BAD-HANDLE-CODE", "callbacklogs/orth-callback-c9a4a69e82368877028606a6a6633427.log", 1),
    ("invalid-utf8", "OC-INVALID-UTF8", "callbacklogs/orth-callback-8cdf85bafde1d499e0b0ad5b3c03ddd5.log", 70),
    ("legacy-callbacklog", "OC-STRANDED", "callbacklog/xxl-job-callback-1769740805000.log", 0),
    ("legacy-hostile-stream", "OC-JAVA-BAD", "callbacklog/xxl-job-callback-1769740806000.log", 61),
    ("legacy-hessian-hostile", "OC-HESSIAN-BAD", "callbacklog/xxl-job-callback-1769740808000.log", 1),
    ("legacy-hostile-stream", "OC-TRUNCATED", "callbacklog/xxl-job-callback-1769740807000.log", 208),
    ("lenient-only-json", "OC-LENIENT-JSON", "callbacklogs/orth-callback-ff234de2b9ee5bae82414bae2645d46d.log", 0),
    ("name-md5-mismatch", "OC-NAME-MD5", "callbacklogs/orth-callback-00000000000000000000000000000000.log", 0),
    ("name-md5-mismatch", "OC-NOT-CANONICAL", "callbacklogs/orth-callback-9dad3f7ee45f5a73c99daff588788009.log", 1),
    ("null-entries", "OC-NULL", "callbacklogs/orth-callback-b6111699e78d01a210dbd8d6a142f2f9.log", 0),
    ("poison-file", "OC-REJECTED", "callbacklogs/orth-callback-22222222222222222222222222222222.log", 1),
    ("truncated-write", "OC-TRUNCATED", "callbacklogs/orth-callback-8a2fdec8be9b66dfe8ca4ddea757fcad.log", 94),
    ("executor-bad-dates", "OE-BAD-DATE", "2026-01-30.bak", None),
    ("executor-bad-dates", "OE-STRAY-FILE", "README.txt", None),
    ("executor-bad-dates", "OE-UNPREFIXED", "2026-02-30/301.log", 0),
    ("executor-runs", "OE-ORPHAN", "2026-01-30/107.log", 0),
    ("executor-runs", "OE-NO-END", "2026-01-31/104.log", 0),
    ("executor-runs", "OE-CALLBACK-FAILED", "2026-01-30/106.log", 403),
    ("executor-runs", "OE-RETRY-PENDING", "2026-01-30/105.log", 0),
    ("executor-script-output", "OE-INVALID-UTF8", "2026-01-30/200.log", 460),
    ("executor-script-output", "OE-PARTIAL-LINE", "2026-01-30/200.log", 462),
]


def _verify(name: str, code: str):
    fmt = registry.get("orth-callbacks" if code.startswith("OC-") else "orth-executor-logs")
    lp = os.path.join(FIX, name, "logpath")
    (rep,) = fmt.passes.verify(fmt.discover([lp], Options(SCRIPT.AS_OF_NS)), Options(SCRIPT.AS_OF_NS)).logs
    return lp, rep


@pytest.mark.parametrize("name,code,rel,offset", WHERE)
def test_each_code_at_its_damage(name, code, rel, offset):
    lp, rep = _verify(name, code)
    hits = [f for f in rep.findings if f.code == code and f.path == os.path.join(lp, rel)]
    assert hits, [(f.code, f.path) for f in rep.findings]
    assert hits[0].offset == offset


def test_every_code_has_a_fixture_or_a_test():
    covered = {c for _, c, _, _ in WHERE} | {"OC-DUPLICATE"}     # OC-DUPLICATE: test_callbacks.py
    assert covered == set(CALLBACK_CODES) | set(EXECUTOR_CODES)


def test_every_code_is_in_the_man_page():
    page = open(os.path.join(ROOT, "man", "wqtool-formats.5"), encoding="utf-8").read().replace("\\-", "-")
    for code in (*CALLBACK_CODES, *EXECUTOR_CODES):
        assert code in page, code


def test_the_poison_file_names_what_it_blocks_in_readdir_order():
    lp, rep = _verify("poison-file", "OC-REJECTED")
    (f,) = [x for x in rep.findings if x.code == "OC-REJECTED"]
    d = os.path.join(lp, "callbacklogs")
    names = os.listdir(d)
    after = names[names.index(os.path.basename(f.path)) + 1:]
    if after:
        assert f.upstream.endswith(", ".join(after)) and f"the {len(after)} file(s) listed after it" in f.upstream
    else:
        assert "listed last" in f.upstream
    # the replay marks the entries of the blocked files
    fmt = registry.get("orth-callbacks")
    run = fmt.run(fmt.discover([lp], Options(0))[0], Options(0))
    for _ in run.events():
        pass
    rows = {r["log_id"]: r["delivery"] for r in run.report.state.rows()}
    assert set(rows) == {11, 12}
    assert all(v in ("pending", "blocked") for v in rows.values())
    assert sum(v == "blocked" for v in rows.values()) == len(after)


def test_verdicts():
    assert _verify("clean-retry-files", "OC-X")[1].verdict == Verdict.CLEAN
    assert _verify("poison-file", "OC-X")[1].verdict == Verdict.CORRUPT
    assert _verify("handle-codes", "OC-X")[1].verdict == Verdict.INVALID_HISTORY
