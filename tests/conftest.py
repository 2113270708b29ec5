"""Shared test helpers: the repo root, fixture paths, and an in-process CLI runner."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKQ_FIXTURES = os.path.join(ROOT, "fixtures", "workq")
UPSTREAM = sorted(n for n in os.listdir(WORKQ_FIXTURES) if n.startswith("upstream-"))
ALL_WORKQ = sorted(n for n in os.listdir(WORKQ_FIXTURES) if os.path.isdir(os.path.join(WORKQ_FIXTURES, n, "log")))
AS_OF = "2026-11-21T23:30:00Z"

# Pinned terminal for snapshot stability.
os.environ["COLUMNS"] = "120"
os.environ["TERMINAL_WIDTH"] = "120"
os.environ["NO_COLOR"] = "1"


#: ``make test-quick`` (WQTOOL_TESTS=quick): property tests run a tenth of their examples (at least 10); the full
#: run (``make test``, CI) runs every example. Use ``max_examples=examples(N)``.
QUICK = os.environ.get("WQTOOL_TESTS", "") == "quick"


def examples(n: int) -> int:
    return max(10, n // 10) if QUICK else n


def fixture_log(name: str) -> str:
    return os.path.join(WORKQ_FIXTURES, name, "log")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def cli(*argv: str) -> CliResult:
    """Run wqtool in-process through the same funnel as the console script."""
    from wqtool.cli import run
    from wqtool.render.console import reset
    out, err = io.StringIO(), io.StringIO()
    reset()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in argv])
    reset()
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def in_root(monkeypatch):
    """Run from the repo root so paths in outputs are the relative fixtures/... paths."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture
def copy_log(tmp_path):
    """Copy a fixture's log into tmp_path (writable) and return the new directory."""
    def _copy(name: str) -> str:
        dst = tmp_path / name
        shutil.copytree(fixture_log(name), dst)
        for p in dst.iterdir():
            p.chmod(0o644)
        return str(dst)
    return _copy
