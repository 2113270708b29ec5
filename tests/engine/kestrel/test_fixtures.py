"""The golden corpus: regenerating it through the writer gives the committed bytes and expectations; every
scenario's replay survives a pack."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

from wqtool.engine.kestrel.pack import PackRefused, pack_plan
from wqtool.engine.kestrel.reader import discover
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.findings import Verdict

from tests.conftest import ROOT
FIX = os.path.join(ROOT, "fixtures", "kestrel")


def _script():
    spec = importlib.util.spec_from_file_location("make_kestrel_fixtures",
                                                  os.path.join(ROOT, "scripts", "make_kestrel_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _script()
SCENARIOS = sorted(SCRIPT.SCENARIOS)


def test_corpus_has_not_drifted(capsys):
    assert SCRIPT.main(["--check"]) == 0


@pytest.mark.parametrize("name", SCENARIOS)
def test_expected_files_match_the_engine(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    sd = os.path.join("fixtures", "kestrel", name)
    jsonl, rep = SCRIPT.expected(sd)
    assert open(os.path.join(sd, "expected.jsonl")).read() == jsonl
    assert json.load(open(os.path.join(sd, "expected-replay.json"))) == json.loads(json.dumps(rep))


@pytest.mark.parametrize("name", SCENARIOS)
def test_pack_of_each_fixture(name, tmp_path):
    d = str(tmp_path / "queue")
    shutil.copytree(os.path.join(FIX, name, "queue"), d)
    for fs in discover([d]):
        before = run_log(fs, SCRIPT.AS_OF_NS)
        if before.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY):
            with pytest.raises(PackRefused):
                pack_plan(fs, SCRIPT.AS_OF_NS)
            continue
        plan = pack_plan(fs, SCRIPT.AS_OF_NS)
        plan.apply(now_ms=SCRIPT.T)
        after = run_log(discover([d], queue=fs.queue)[0], SCRIPT.AS_OF_NS)
        assert after.state.digest() == before.state.digest()
        assert after.verdict == Verdict.CLEAN
