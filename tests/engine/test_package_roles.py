"""One package per format, the same module names for the same roles (issue 23): every built-in format lives in
``wqtool/engine/<its name, '-' as '_'>/`` with the seven role modules, the import-linter independence contract
lists exactly those packages, and docs/architecture.md's table of modules is the packages as they are."""
from __future__ import annotations

import os
import re
import tomllib

from tests.conftest import ROOT
from wqtool.engine import format as registry

ROLES = ("format", "codes", "model", "reader", "replay", "verify", "serialize")
#: roles a format has only when it does that: a format that wqtool only reads has no writer (its test writers are
#: tests/writers/)
OPTIONAL = ("writer", "pack", "repair", "clean", "send", "fastpath", "fleet")
ENGINE = os.path.join(ROOT, "wqtool", "engine")


def _modules(pkg: str) -> list[str]:
    d = os.path.join(ENGINE, pkg.rsplit(".", 1)[1])
    return sorted(n[:-3] for n in os.listdir(d) if n.endswith(".py") and n != "__init__.py")


def test_every_format_has_its_package_named_after_it():
    builtin = [f for f in registry.formats() if type(f).__module__.startswith("wqtool.")]   # not a test's toy
    assert [type(f).__module__ for f in builtin] == [f"wqtool.engine.{f.name.replace('-', '_')}.format"
                                                     for f in builtin]
    assert [f.name.replace("-", "_") for f in builtin] == [p.rsplit(".", 1)[1] for p in registry.BUILTIN]


def test_every_format_package_has_the_role_modules():
    for pkg in registry.BUILTIN:
        mods = _modules(pkg)
        assert [r for r in ROLES if r not in mods] == [], pkg


def test_the_independence_contract_lists_every_format_package():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    (indep,) = [c for c in contracts if c["type"] == "independence"]
    assert sorted(indep["modules"]) == sorted(registry.BUILTIN)


def test_the_architecture_table_is_the_packages_as_they_are():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    rows = {}
    for m in re.finditer(r"^\| `(\w+)/` \| `([\w-]+)` \|(.*)\|$", doc, re.M):
        cells = [c.strip() for c in m.group(3).split("|")]
        rows[m.group(1)] = (m.group(2), cells)
    want = {}
    for pkg in registry.BUILTIN:
        mods = _modules(pkg)
        name = pkg.rsplit(".", 1)[1]
        own = ", ".join(m for m in mods if m not in ROLES + OPTIONAL)
        want[name] = (name.replace("_", "-"), ["x" if o in mods else "" for o in OPTIONAL] + [own])
    assert rows == want
