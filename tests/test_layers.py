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
    """--engine local (the default) never imports pyspark: every command, workq and Kestrel."""
    runs = [["verify", "-q", "fixtures/workq/sample-clean/log", "fixtures/kestrel/clean-journal/queue"],
            ["replay", "--summary", "fixtures/workq/sample-clean/log"],
            ["replay", "--summary", "fixtures/kestrel/clean-journal/queue"],
            ["dump", "-o", "jsonl", "fixtures/workq/sample-clean/log"],
            ["stats", "-o", "json", "fixtures/workq/sample-clean/log", "fixtures/kestrel/clean-journal/queue"]]
    code = ("import contextlib, io, sys, wqtool.cli; from wqtool.cli import run\n"
            f"for argv in {runs!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert run(argv) == 0, argv\n"
            "    assert 'pyspark' not in sys.modules, ('pyspark imported by', argv)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
