"""Every output of dump / replay / stats / verify equals what the code before issue 14 wrote, under the C kernel
and under the pure-Python one (tests/golden_outputs.py lists the cases; tests/golden/outputs.json holds the
sha256 of each output, recorded before the compact state and the streaming writers existed).

``make test-quick`` runs a quarter of the cases in-process under the C kernel; the full run (``make test``) all of
them under both kernels, and some again in a subprocess with ``WQTOOL_PURE_PYTHON=1`` (the switch itself).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import golden_outputs
from tests.conftest import QUICK

from wqtool.engine.workq import fastreplay, replay


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden")
    golden_outputs.make_generated(str(d))
    return str(d)


def _want() -> dict:
    with open(golden_outputs.GOLDEN) as f:
        return json.load(f)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["c", pytest.param("python", marks=pytest.mark.slow)])
def test_every_output_equals_todays(workdir, kernel, monkeypatch):
    if kernel == "c" and fastreplay._kernel is None:
        pytest.skip("the C kernel is not built")
    monkeypatch.setattr(fastreplay, "KERNEL", kernel)
    if kernel == "python":
        monkeypatch.setattr(replay, "_C_DIGEST", None)
    want = _want()
    names = sorted(want)
    if QUICK:
        names = names[::4]
    got = golden_outputs.outputs(workdir, only=set(names).__contains__)
    bad = [n for n in names if got.get(n) != want[n]]
    assert not bad, f"{len(bad)} of {len(names)} outputs differ from the golden ones, e.g. {bad[:5]}"


@pytest.mark.skipif(QUICK, reason="subprocesses: the full run only")
def test_pure_python_switch_gives_the_same_outputs(workdir):
    """WQTOOL_PURE_PYTHON=1 in a fresh process (the switch as users set it) on the cases the compact state,
    the streaming writers and the stats pass serve."""
    want = _want()
    picked = [n for n in sorted(want) if n.startswith(("gen-reuse ", "workq/upstream-a2-run2 ", "workq/sample-clean "))
              and ("replay" in n or "stats" in n or "dump -o" in n)]
    code = ("import json, sys; from tests import golden_outputs as g; "
            "from wqtool.engine.workq import fastreplay; assert fastreplay.KERNEL == 'python'; "
            "names = set(json.loads(sys.argv[2])); print(json.dumps(g.outputs(sys.argv[1], only=names.__contains__)))")
    env = dict(os.environ, WQTOOL_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code, workdir, json.dumps(picked)], env=env, capture_output=True,
                         text=True, check=True, cwd=golden_outputs.ROOT).stdout
    got = json.loads(out)
    assert len(picked) > 50
    assert {n: got[n] for n in picked} == {n: want[n] for n in picked}
