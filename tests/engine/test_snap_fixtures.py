"""The Snap! golden corpus (list journal, EVTJ, fastjournal): regenerating it through the writers gives the
committed bytes and expectations; the CLI's dump -o jsonl gives the committed rows; every finding code of the
three formats is shown by at least one fixture (or, for the few that need a live process or an empty directory, by
a test in code)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from tests.conftest import ROOT, cli
from wqtool.engine import format as registry


def _script():
    spec = importlib.util.spec_from_file_location("make_snap_fixtures",
                                                  os.path.join(ROOT, "scripts", "make_snap_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPT = _script()
CASES = [(f, n) for f, sc in SCRIPT.CORPUS.items() for n in sc]
AS_OF = "2026-01-30T03:30:00Z"
#: codes shown in code, not by a fixture (a held lock, an empty directory)
IN_CODE = {"SL-EMPTY", "FJJ-LIVE", "FJJ-EMPTY"}


def test_corpus_has_not_drifted():
    assert SCRIPT.main(["--check"]) == 0


@pytest.mark.parametrize("fmt,name", CASES)
def test_expected_files_match_the_engine(fmt, name, monkeypatch):
    monkeypatch.chdir(ROOT)
    sd = os.path.join("fixtures", fmt, name)
    jsonl, doc = SCRIPT.expected(fmt, sd)
    assert open(os.path.join(sd, "expected.jsonl")).read() == jsonl
    assert json.load(open(os.path.join(sd, "expected-verify.json"))) == json.loads(json.dumps(doc))


@pytest.mark.parametrize("fmt,name", CASES)
def test_cli_detects_dumps_and_verifies_each_fixture(fmt, name, monkeypatch):
    monkeypatch.chdir(ROOT)
    sd = os.path.join("fixtures", fmt, name)
    doc = json.load(open(os.path.join(sd, "expected-verify.json")))
    jdir = os.path.join(sd, "journal")
    d = cli("dump", "-o", "jsonl", "--as-of", AS_OF, jdir)          # auto-detected
    rows = [json.loads(x) for x in d.out.splitlines()[:-1]]         # the last line: the summary
    want = [json.loads(x) for x in open(os.path.join(sd, "expected.jsonl"))]
    assert [r for r in rows if r.get("error") is None] == [r for r in want if r.get("error") is None]
    v = cli("verify", "-o", "json", "--as-of", AS_OF, jdir)
    got = json.loads(v.out)["logs"][0]
    assert got["verdict"] == doc["logs"][0]["verdict"] and got["counts"] == doc["logs"][0]["counts"]
    assert v.code == {0: 0, 1: 1, 3: 3, 4: 4}[doc["logs"][0]["exit_code"]]


@pytest.mark.parametrize("fmt", list(SCRIPT.CORPUS))
def test_every_finding_code_has_a_fixture(fmt):
    shown = set()
    for name in SCRIPT.CORPUS[fmt]:
        doc = json.load(open(os.path.join(ROOT, "fixtures", fmt, name, "expected-verify.json")))
        for log in doc["logs"]:
            shown |= set(log["counts"])
    codes = set(registry.get(fmt).codes)
    assert codes - shown - IN_CODE == set()
