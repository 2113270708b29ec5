"""docs/architecture.md's "Adding a format" lists every file a built-in format needs: the same role modules,
registry list, import-linter contracts and table that the tests hold every built-in format to."""
from __future__ import annotations

import os
import re
import tomllib

from tests.conftest import ROOT
from tests.engine.test_package_roles import OPTIONAL, ROLES


def _recipe() -> str:
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    return doc[doc.index("## Adding a format"):].split("\n## ", 1)[0]


def test_the_recipe_names_every_role_module_the_tests_require():
    recipe = _recipe()
    named = set(re.findall(r"`(\w+)\.py`", recipe))
    assert set(ROLES) <= named, set(ROLES) - named
    assert set(OPTIONAL) <= named, set(OPTIONAL) - named


def test_the_recipe_names_the_contracts_a_format_package_must_be_listed_in():
    recipe = _recipe()
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    listing = [c["name"] for c in contracts
               if "wqtool.engine.workq" in c.get("modules", []) + c.get("forbidden_modules", []) + c.get("source_modules", [])]
    flat = " ".join(recipe.split())
    assert len(listing) == 6 and [n for n in listing if f'"{n}"' not in flat] == []
    for must in ("format.BUILTIN", "`wqtool/formats/<name>.py`", "table of format packages", "about.manual",
                 "tests/engine/test_conformance.py", "tests/engine/toy_format.py"):
        assert must in recipe, must


def test_the_toy_format_is_a_format_in_one_file_of_at_most_120_lines():
    with open(os.path.join(ROOT, "tests", "engine", "toy_format.py"), encoding="utf-8") as f:
        assert len(f.read().splitlines()) <= 120
