"""Verdicts are severities; exit codes live at the edges (issue 23 item 3).

``engine.findings.Verdict`` is ordered by severity and knows no exit code; ``wqtool.exitcodes`` holds the one
verdict -> exit-code mapping and the one precedence table, imported only by the edges (import-linter:
``tests/test_layers.py``). These tests hold the mapping, the agreement of the two orders, and that no code turns a
verdict's number into an exit code."""
from __future__ import annotations

import ast
import itertools
import os
import re

import pytest

from tests.conftest import ROOT
from wqtool.engine.findings import Verdict, worst
from wqtool.exitcodes import CODES, ExitCode, PRECEDENCE, for_verdict, most_severe


def test_verdict_is_ordered_by_severity_and_worst_is_max():
    assert sorted(Verdict) == [Verdict.CLEAN, Verdict.TORN_TAIL, Verdict.INVALID_HISTORY, Verdict.CORRUPT]
    assert worst([]) == Verdict.CLEAN
    assert worst([Verdict.TORN_TAIL, Verdict.INVALID_HISTORY]) == Verdict.INVALID_HISTORY
    assert worst(iter([Verdict.INVALID_HISTORY, Verdict.CORRUPT, Verdict.TORN_TAIL])) == Verdict.CORRUPT
    assert type(worst([Verdict.TORN_TAIL])) is Verdict
    with pytest.raises(ValueError):
        worst([4])          # an exit code (invalid history's) is no verdict


def test_the_one_mapping_of_verdicts_to_exit_codes():
    assert {v: CODES.of(v) for v in Verdict} == {Verdict.CLEAN: 0, Verdict.TORN_TAIL: 1, Verdict.CORRUPT: 3,
                                                  Verdict.INVALID_HISTORY: 4}
    assert all(CODES.verdict_of(CODES.of(v)) is v for v in Verdict)
    with pytest.raises(TypeError):
        for_verdict(2)      # a verdict's number (invalid history's severity) is not taken for a verdict
    with pytest.raises(KeyError):
        CODES.verdict_of(int(ExitCode.IO))      # an I/O error is no verdict


def test_the_precedence_table_orders_verdicts_as_their_severity():
    """The run's precedence table (exit codes, with USAGE and IO between) and the verdicts' severity order
    agree: the exit code of several verdicts is the exit code of the worst of them."""
    for n in range(4):
        for vs in itertools.product(Verdict, repeat=n):
            assert most_severe([for_verdict(v) for v in vs]) == for_verdict(worst(vs)), vs
    ranks = [PRECEDENCE.index(for_verdict(v)) for v in sorted(Verdict)]
    assert ranks == sorted(ranks)


def test_a_failed_path_and_a_run_get_their_codes_from_the_table():
    from wqtool.errors import InputError, UsageError
    from wqtool.render.outcome import failed_path, run_exit_code
    gone = failed_path(CODES, "/x", InputError("no such file", path="/x"))
    assert (gone.exit_code, gone.label) == (5, "unreadable")
    nolog = failed_path(CODES, "/y", UsageError("not a log", path="/y"))
    assert (nolog.exit_code, nolog.label) == (2, "not a log")
    assert run_exit_code(CODES, [Verdict.TORN_TAIL], [nolog]) == 2          # 2 > 1
    assert run_exit_code(CODES, [Verdict.INVALID_HISTORY], [gone]) == 4     # 4 > 5
    assert run_exit_code(CODES, [Verdict.CORRUPT, Verdict.INVALID_HISTORY]) == 3
    assert run_exit_code(CODES) == 0


def _sources(top: str, ext: str):
    for d, dirs, names in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [x for x in dirs if not (top == "bench" and x == "out")]   # bench/out: generated, git-ignored
        for n in sorted(names):
            if n.endswith(ext):
                yield os.path.join(d, n)


def _a_verdict(node: ast.AST) -> bool:
    """``verdict``, ``rep.verdict``, ``f.verdict or 0``: an expression that is a verdict (not a call of the
    mapping with it, nor a comparison)."""
    if isinstance(node, ast.BoolOp):
        return any(_a_verdict(v) for v in node.values)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "verdict" in name.lower()


def test_no_code_takes_a_verdicts_number_for_an_exit_code():
    """No ``int(...verdict...)`` and no ``Verdict(<number>)`` in the package, the scripts and the benches (a
    verdict's number is its severity: 2 is invalid history, exit 2 a usage error); ``Verdict(...)`` only in
    ``findings.worst``. The C kernels return no verdict: they stop at what they do not take whole, and Python
    names the damage (``Verdict.TORN_TAIL`` / ``Verdict.CORRUPT``)."""
    bad = []
    for top in ("wqtool", "scripts", "bench"):
        for path in _sources(top, ".py"):
            with open(path, encoding="utf-8") as f:
                src = f.read()
            for node in ast.walk(ast.parse(src, path)):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or not node.args:
                    continue
                arg = ast.get_source_segment(src, node.args[0]) or ""
                rel = os.path.relpath(path, ROOT)
                if node.func.id == "int" and _a_verdict(node.args[0]):
                    bad.append(f"{rel}:{node.lineno}: int({arg})")
                if node.func.id == "Verdict" and rel != os.path.join("wqtool", "engine", "findings.py"):
                    bad.append(f"{rel}:{node.lineno}: Verdict({arg})")
    for path in [*_sources("wqtool", ".c"), *_sources("wqtool", ".h")]:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if re.search(r"verdict|exit_class|exit.code", line, re.I):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert bad == []
