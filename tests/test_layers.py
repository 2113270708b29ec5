"""The import contract of STYLE.md (import-linter layers + forbidden modules), run by the test suite."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported yet) at the repository root; its stdout."""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


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
    fresh_python(code)


#: what a format's ``format`` module may import at registration (detection, codes, --format choices); its
#: readers' engines, replay, plans and views load on first use (imported inside the methods that use them)
_LIGHT = ("format", "codes", "model", "reader", "fastpath", "__init__")


def test_the_registry_loads_no_format_engine():
    """Loading the registry (every CLI start: --format choices, detection) imports each format's declaration
    only; `verify` of a workq log imports nothing of the other formats' engines. (Eager imports made every start
    0.2 s slower: issue 8's `make bench` regression.)"""
    code = ("import sys, contextlib, io\n"
            "import wqtool.cli\n"
            "from wqtool.engine import format as registry\n"
            "registry.formats()\n"
            "at_import = sorted(m for m in sys.modules if m.startswith('wqtool.engine.') and m.count('.') == 3)\n"
            "from wqtool.cli import run\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert run(['verify', '-q', 'fixtures/workq/sample-clean/log']) == 0\n"
            "after = sorted(m for m in sys.modules if m.startswith('wqtool.engine.') and m.count('.') == 3)\n"
            "print(repr((at_import, after)))\n")
    at_import, after = eval(fresh_python(code))
    heavy = [m for m in at_import if m.rsplit(".", 1)[1] not in _LIGHT and m.split(".")[2] != "workq"]
    assert heavy == [], heavy
    assert "wqtool.engine.kestrel.reader" in at_import and "wqtool.engine.snaplist.format" in at_import
    others = [m for m in after if m.split(".")[2] not in ("workq",) and m.rsplit(".", 1)[1] not in _LIGHT]
    assert others == [], others
    assert "wqtool.engine.workq.verify" in after


def test_one_way_of_loading_on_first_use():
    """A format's ``format.py`` imports its heavy modules inside the methods that use them (plain local imports,
    which import-linter sees; ``TYPE_CHECKING`` only for names used in annotations), its record view is a cached
    property, and its package ``__init__`` defines nothing lazily: no lazy proxies, no class swap, no module names
    spelled as strings."""
    import ast
    for pkg in sorted(os.listdir(os.path.join(ROOT, "wqtool", "engine"))):
        fmt = os.path.join(ROOT, "wqtool", "engine", pkg, "format.py")
        if not os.path.isfile(fmt):
            continue
        tree = ast.parse(open(fmt, encoding="utf-8").read())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not names & {"lazy", "LazyInstance"}, pkg
        init = ast.parse(open(os.path.join(ROOT, "wqtool", "engine", pkg, "__init__.py"), encoding="utf-8").read())
        assert not [n for n in ast.walk(init) if isinstance(n, ast.FunctionDef)], pkg      # no __getattr__
        assert not [n for n in ast.walk(init) if isinstance(n, ast.ClassDef)], pkg         # no class swap


def test_the_package_front_door_is_the_api():
    """``wqtool/__init__.py`` imports nothing but ``wqtool.api`` (import-linter cannot hold the root package
    alone: its contracts take a package with its children)."""
    import ast
    tree = ast.parse(open(os.path.join(ROOT, "wqtool", "__init__.py"), encoding="utf-8").read())
    imported = {("." * n.level) + (n.module or "") + ("" if n.module else ",".join(a.name for a in n.names))
                for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {".api"}, imported


def test_exit_codes_are_imported_at_the_edges_only():
    """``wqtool.exitcodes`` (the verdict -> exit code mapping, the one precedence table) is imported by exactly
    these modules (the import-linter contract "exit codes only at the edges" forbids the rest; this test also
    fails when an edge stops importing it, so the contract's exceptions stay honest)."""
    import ast
    pkg = os.path.join(ROOT, "wqtool")
    importers = set()
    for d, _, names in os.walk(pkg):
        for n in names:
            if not n.endswith(".py"):
                continue
            path = os.path.join(d, n)
            rel = os.path.relpath(path, ROOT)
            mod = rel[:-3].replace(os.sep, ".").removesuffix(".__init__")
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = mod.rsplit(".", node.level)[0] if node.level else ""
                    if node.level and n == "__init__.py":
                        base = mod.rsplit(".", node.level - 1)[0] if node.level > 1 else mod
                    target = ".".join(p for p in (base, node.module or "") if p)
                    names_ = [target] + [f"{target}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names_ = [a.name for a in node.names]
                else:
                    continue
                if "wqtool.exitcodes" in names_:
                    importers.add(mod)
    # wqtool._run: the CLI's funnel, which the hot commands take without cli.py (start-up)
    assert importers == {"wqtool.cli", "wqtool._run", "wqtool.api", "wqtool.commands._help"}
