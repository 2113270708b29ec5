"""The import contract of STYLE.md (import-linter layers + forbidden modules), run by the test suite."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert exe, "import-linter is a test dependency"
    r = subprocess.run([exe, "--config", os.path.join(ROOT, "pyproject.toml")], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_local_cli_does_not_import_pyspark():
    code = ("import sys, wqtool.cli; from wqtool.cli import run; "
            "run(['verify', '-q', 'fixtures/workq/sample-clean/log']); "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
