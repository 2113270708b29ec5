"""No dead code in the package (issue 23): vulture finds nothing unused in ``wqtool/``.

Two checks. At 80 % confidence (unused imports, variables, unreachable code) vulture reports nothing in the
package. At 60 %, every function, method, property and class of the package is referenced somewhere — in the
package, the tests, the scripts or the benches (a writer method that only tests call to build fixtures is used).
The few names that are called by a framework rather than by our code (asyncio protocol callbacks, construct's
``_parse`` hooks, http.server's ``do_GET``, module ``__getattr__``) are listed in ``tests/vulture_whitelist.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHITELIST = os.path.join("tests", "vulture_whitelist.py")

#: whole-package audits (each reads every module): make test runs them, make test-quick does not
pytestmark = pytest.mark.slow

pytest.importorskip("vulture")


def _vulture(*args: str) -> list[str]:
    r = subprocess.run([sys.executable, "-m", "vulture", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode in (0, 3), r.stderr       # 3: dead code found (the lines say what)
    return r.stdout.splitlines()


def test_vulture_at_80_percent_reports_nothing_in_the_package():
    assert _vulture("wqtool", WHITELIST, "--min-confidence", "80") == []


def test_every_function_of_the_package_is_referenced_somewhere():
    kinds = ("unused function", "unused method", "unused property", "unused class")
    lines = _vulture("wqtool", "tests", "scripts", "bench", WHITELIST, "--min-confidence", "60")
    dead = [l for l in lines if l.startswith("wqtool" + os.sep) and any(k in l for k in kinds)]
    assert dead == []
