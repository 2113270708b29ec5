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
    """The edge resolves a run after the command (``exitcodes.resolve``): the run's code by the precedence
    table, its label (what set it), and the code of each verdict and failed PATH present; a failed PATH's label
    is its error's own (``errors.failure_label``), not the table's."""
    from wqtool.errors import InputError, UsageError
    from wqtool.exitcodes import resolve
    from wqtool.render.outcome import Failed, Resolved
    gone = Failed("/x", InputError("no such file", path="/x"))
    nolog = Failed("/y", UsageError("not a log", path="/y"))
    assert (gone.label, nolog.label) == ("unreadable", "not a log")
    r = Resolved(*resolve([Verdict.TORN_TAIL], [nolog.error, gone.error]))
    assert (r.code, r.label, r.of(gone), r.of(nolog), r.of(Verdict.TORN_TAIL)) == (5, "unreadable", 5, 2, 1)
    assert resolve([Verdict.TORN_TAIL], [nolog.error])[:2] == (2, "not a log")           # 2 > 1
    assert resolve([Verdict.INVALID_HISTORY], [gone.error])[:2] == (4, "INVALID HISTORY")  # 4 > 5
    assert resolve([Verdict.CORRUPT, Verdict.INVALID_HISTORY])[:2] == (3, "CORRUPT")
    assert resolve()[:2] == (0, "clean")
    assert resolve(differ=True)[0] == 1 and resolve([Verdict.CORRUPT], differ=True)[0] == 3      # diff


def test_a_failed_paths_label_is_its_errors_own():
    """The labels the exit table used to give (by exit code: 2 "not a log", 5 "unreadable", 3 "CORRUPT", 70
    "internal error", else "error") are now the errors' own, and agree with it for every kind of error."""
    from wqtool.engine.fsops import LogBusy
    from wqtool.errors import (FileChanged, FormatError, InputError, PackMismatch, PackRefused, SparkError,
                               UsageError, WqError, failure_label)
    from wqtool.exitcodes import exit_code_for
    old = {2: "not a log", 5: "unreadable", 3: "CORRUPT", 70: "internal error"}
    cause = SparkError("task failed")
    cause.cause = UsageError
    errors = [UsageError("u"), InputError("i"), FileChanged("c"), LogBusy("b"), FormatError("f"), WqError("w"),
              PackMismatch("m", expected="a", actual="b"), PackRefused("r", verdict=Verdict.CORRUPT),
              PackRefused("r", verdict=Verdict.INVALID_HISTORY), SparkError("s"), cause, OSError(5, "EIO"),
              FileNotFoundError(2, "gone"), ValueError("bug")]
    for e in errors:
        assert failure_label(e) == old.get(int(exit_code_for(e)), "error"), e


def test_a_document_written_without_resolving_fails_loudly():
    """The engine puts a placeholder where a document shows an exit code (``ExitOf``): a writer that forgot to
    resolve it fails (json refuses it) instead of printing a verdict's severity as an exit code."""
    import json
    from wqtool.engine.findings import ExitOf
    from wqtool.exitcodes import fill, resolve
    from wqtool.render.outcome import Resolved
    doc = {"input_exit_code": ExitOf(Verdict.INVALID_HISTORY), "x": [ExitOf(Verdict.TORN_TAIL)]}
    with pytest.raises(TypeError):
        json.dumps(doc)
    assert Resolved(*resolve([Verdict.INVALID_HISTORY], shown=[Verdict.TORN_TAIL])).fill(doc) == \
        {"input_exit_code": 4, "x": [1]} == fill(doc)


def test_the_funnel_takes_outcomes_only():
    """A command returns an outcome (or an iterator of them, or None): the funnel resolves each as it comes and
    hands ``finish`` the run so far; a bare number or verdict is refused (a verdict's number is no exit code)."""
    from wqtool.exitcodes import settle
    from wqtool.render.outcome import Outcome
    seen = []
    parts = iter([Outcome.of([Verdict.TORN_TAIL], (), lambda r: seen.append((r.code, r.label))),
                  Outcome.of([Verdict.CORRUPT]), Outcome.of(write=lambda r: seen.append((r.code, r.label)))])
    assert settle(parts) == 3 and seen == [(1, "torn tail"), (3, "CORRUPT")]
    assert settle(None) == 0
    for bad in (0, 3, Verdict.CORRUPT):
        with pytest.raises(TypeError):
            settle(bad)


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
                rel = os.path.relpath(path, ROOT)
                # (the argument's source only for what is reported: get_source_segment splits the whole file)
                if node.func.id == "int" and _a_verdict(node.args[0]):
                    bad.append(f"{rel}:{node.lineno}: int({ast.get_source_segment(src, node.args[0])})")
                if node.func.id == "Verdict" and rel != os.path.join("wqtool", "engine", "findings.py"):
                    bad.append(f"{rel}:{node.lineno}: Verdict({ast.get_source_segment(src, node.args[0])})")
    for path in [*_sources("wqtool", ".c"), *_sources("wqtool", ".h")]:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if re.search(r"verdict|exit_class|exit.code", line, re.I):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert bad == []


#: the modules where what a function returns may be an exit code (the commands, the CLI and its funnel, the API,
#: a server's ``__main__``): an int literal returned there is an exit number written outside the table
_EDGES = ("wqtool/commands/", "wqtool/cli.py", "wqtool/_run.py", "wqtool/api.py",
          "wqtool/server/fastjournal/__main__.py", "wqtool/render/outcome.py")
#: literal exit numbers allowed outside exitcodes.py, each proven equal to the table below: the console script
#: runs before wqtool is imported (``--version``; a Ctrl-C while importing), so it names 0 and 130 itself
_ALLOWED = {("wqtool/_entry.py", 0): "OK", ("wqtool/_entry.py", 130): "INTERRUPTED"}
_EXITS = {"exit", "_exit", "Exit", "SystemExit", "quit"}


def _ints(node) -> list[int]:
    """The int literals ``node`` is or holds (a tuple / set / list of them), bools left out."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return [v for e in node.elts for v in _ints(e)]
    if isinstance(node, ast.IfExp):
        return _ints(node.body) + _ints(node.orelse)
    return []


def _names_exit(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else \
        ""
    if isinstance(node, ast.Call):      # getattr(e, "exit_code", ...), e.exit_code()
        return _names_exit(node.func) or any(_names_exit(a) for a in node.args)
    return "exit" in str(name).lower()


def literal_exit_numbers(rel: str, src: str) -> list[tuple[int, int, str]]:
    """(line, number, what) of each exit number written as a literal in ``src``: passed to sys.exit /
    os._exit / typer.Exit / SystemExit, given to or compared with a name that says exit (``exit_code = 2``,
    ``exit_code=5``, ``getattr(e, "exit_code", 2) in (1, 2)``, ``{"exit_code": 0}``), or — in an edge module —
    returned (``return 5``)."""
    found = []
    edge = rel.startswith(_EDGES)
    for node in ast.walk(ast.parse(src, rel)):
        pairs = []
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname in _EXITS:
                pairs += [(v, f"{fname}()") for a in [*node.args, *(k.value for k in node.keywords)] for v in _ints(a)]
            pairs += [(v, f"{k.arg}=") for k in node.keywords if k.arg and "exit" in k.arg.lower()
                      for v in _ints(k.value)]
            if fname == "getattr" and len(node.args) == 3 and _names_exit(node.args[1]):
                pairs += [(v, "getattr(..., exit..., N)") for v in _ints(node.args[2])]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_names_exit(t) for t in targets) and node.value is not None:
                pairs += [(v, "exit... =") for v in _ints(node.value)]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_exit(x) for x in sides):
                pairs += [(v, "exit... compared") for x in sides for v in _ints(x)]
        elif isinstance(node, ast.Dict):
            pairs += [(v, "{exit...: N}") for k, x in zip(node.keys, node.values) if k is not None and _names_exit(k)
                      for v in _ints(x)]
        elif isinstance(node, ast.Return) and edge and node.value is not None:
            pairs += [(v, "return N") for v in _ints(node.value)]
        found += [(node.lineno, v, what) for v, what in pairs]
    return found


def test_no_exit_number_is_written_outside_the_table():
    """Every exit number is ``exitcodes.ExitCode``'s: nothing in wqtool/ writes one as a literal (a command
    returns an outcome; the funnels name the table's members), but for the console script's two, which equal
    the table's."""
    bad = []
    for path in _sources("wqtool", ".py"):
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        if rel == "wqtool/exitcodes.py":
            continue
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for line, v, what in literal_exit_numbers(rel, src):
            if (rel, v) in _ALLOWED:
                assert ExitCode[_ALLOWED[rel, v]] == v
                continue
            bad.append(f"{rel}:{line}: {what} {v}")
    assert bad == []


def test_the_literal_finder_finds_what_the_old_code_wrote():
    """The finder above, on the shapes the edge had before its funnel (each one an exit number outside the
    table): a server's ``return 5``, a typer ``Exit(0)``, ``exit_code = 2``, ``in (1, 2)``."""
    old = ("def main():\n    try:\n        run()\n    except WqError:\n        return 5\n    return 0\n"
           "def version(v):\n    raise typer.Exit(0)\n"
           "class GoFlagError(TyperException):\n    exit_code = 2\n"
           "def outcome(e):\n    return USAGE if getattr(e, 'exit_code', 2) in (1, 2) else e.exit_code\n"
           "def d(run):\n    return {'exit_code': 1, **run}\n")
    got = sorted((v, what) for _, v, what in literal_exit_numbers("wqtool/server/fastjournal/__main__.py", old))
    assert got == [(0, "Exit()"), (0, "return N"), (1, "exit... compared"), (1, "{exit...: N}"),
                   (2, "exit... ="), (2, "exit... compared"), (2, "getattr(..., exit..., N)"), (5, "return N")]


@pytest.mark.slow
def test_nothing_hands_exit_codes_down():
    """No mapping, callback or context variable carries exit codes into the middle: no ``code_of`` parameter
    (the Spark rows carry a finding's verdict, as a label), no ``ContextVar``
    in the commands, the renderers or the edges (the engine's own carry its file snapshots), no ``ExitCodes``
    protocol, no ``commands._edge``."""
    bad = []
    for path in _sources("wqtool", ".py"):
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for node in ast.walk(ast.parse(src, rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
                if "code_of" in names:
                    bad.append(f"{rel}:{node.lineno}: code_of")
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
            if name == "ExitCodes" or (name == "ContextVar" and rel.startswith(_EDGES + ("wqtool/render/",))):
                bad.append(f"{rel}:{node.lineno}: {ast.get_source_segment(src, node)}")
    assert bad == []
    assert not os.path.exists(os.path.join(ROOT, "wqtool", "commands", "_edge.py"))


def test_a_writer_that_fails_closes_the_commands_iterator_at_once():
    """A command that writes log after log (an iterator of outcomes) holds resources while it runs (a Spark
    session, a progress bar): when a writer fails — the reader of stdout went away — the funnel closes it before
    the error goes on, not whenever the generator is collected."""
    from wqtool.exitcodes import settle
    from wqtool.render.outcome import Outcome
    closed = []

    def command():
        try:
            yield Outcome.of([Verdict.CLEAN], (), lambda r: (_ for _ in ()).throw(BrokenPipeError()))
            yield Outcome.of([Verdict.CLEAN])
        finally:
            closed.append(True)
    gen = command()
    with pytest.raises(BrokenPipeError):
        settle(gen)
    assert closed == [True]
