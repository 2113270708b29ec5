"""The CLI and the Python API read through one entry point (``engine.read``), so they cannot disagree: a log
with a live writer gets the same verdict, exit code and finding codes from ``wqtool verify`` and from
``wqtool.open(path).verify()`` — for every format whose logs have a live writer (issue 23, item 1).

Each log below has a torn tail. The writer is real: flock(1) holding workq's append.lock as workq-server does, or
a process holding every file of the log open for append (Kestrel, EVTJ, fastjournal, the Snap! list journal).
Formats with an in-flight note (WQ-IN-FLIGHT, KQ-IN-FLIGHT) turn the torn tail into it and verify clean; the
others cannot tell a record in flight from damage, and keep the torn tail — both ways, the two agree.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import wqtool
from tests.conftest import ROOT, cli

AS_OF = "last"

#: (fixture with a torn tail, how the writer holds it, the verdict both must give while it writes)
CASES = {
    "workq": ("fixtures/workq/torn-tail-mid-record/log", "flock", "clean"),
    "kestrel": ("fixtures/kestrel/torn-tail/queue", "open", "clean"),
    "evtj": ("fixtures/evtj/truncated/journal", "open", "torn tail"),
    "fastjournal": ("fixtures/fastjournal/torn-tail/journal", "open", "torn tail"),
    "snaplist": ("fixtures/snaplist/torn-final-line/journal", "open", "torn tail"),
}


def _hold(root: str, how: str) -> subprocess.Popen:
    if how == "flock":
        p = subprocess.Popen(["flock", "-x", os.path.join(root, "append.lock"), "sh", "-c", "echo ok; sleep 60"],
                             stdout=subprocess.PIPE)
    else:
        files = sorted(os.path.join(root, n) for n in os.listdir(root))
        p = subprocess.Popen([sys.executable, "-c", "import sys, time; fs = [open(a, 'ab') for a in sys.argv[1:]]; "
                              "print('ok', flush=True); time.sleep(60)", *files], stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ok"      # the writer holds the log from here on
    return p


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_cli_and_api_give_a_live_log_the_same_verdict(tmp_path, fmt):
    src, how, verdict = CASES[fmt]
    root = str(tmp_path / "log")
    shutil.copytree(os.path.join(ROOT, src), root)
    quiet_api = wqtool.open(root).verify(as_of=AS_OF)
    assert quiet_api.verdict.label == "torn tail"            # nobody writes it yet: a torn tail for both
    holder = _hold(root, how)
    try:
        r = cli("verify", "-o", "json", "--as-of", AS_OF, root)
        api = wqtool.open(root).verify(as_of=AS_OF)
    finally:
        holder.kill()
        holder.wait()
    [doc] = json.loads(r.out)["logs"]
    assert (doc["verdict"], doc["exit_code"]) == (api.verdict.label, api.exit_code) == (
        verdict, 0 if verdict == "clean" else 1)
    assert r.code == api.exit_code
    assert sorted(doc["counts"]) == sorted(api.counts)
    assert [f["code"] for f in doc["findings"]] == [f.code for f in api.findings]


def test_the_api_takes_live_as_the_cli_takes_live(tmp_path):
    """``--live`` (a writer this host cannot see) and ``verify(live=True)`` settle the torn tail alike."""
    root = str(tmp_path / "log")
    shutil.copytree(os.path.join(ROOT, CASES["workq"][0]), root)
    r = cli("verify", "-o", "json", "--live", "--as-of", AS_OF, root)
    api = wqtool.open(root).verify(as_of=AS_OF, live=True)
    assert json.loads(r.out)["logs"][0]["verdict"] == api.verdict.label == "clean"
    assert "WQ-IN-FLIGHT" in api.counts
