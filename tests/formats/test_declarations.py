"""Every schema module keeps its constants eager and builds its construct declarations on first use
(``wqtool.formats._common.declared_on_first_use``): importing a schema module imports no construct, the first
access of a declared name builds the real construct objects (the ones the property tests prove the hot paths
against), and ``DECLARED`` names exactly what ``_declare()`` makes."""
from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import construct
import pytest

from tests.conftest import ROOT

SCHEMA_MODULES = ("_common", "workq", "kestrel", "orth", "snaplist", "evtj", "fastjournal")


def test_importing_every_schema_module_imports_no_construct():
    code = ("import sys\n"
            "from wqtool.formats import _common, workq, kestrel, orth, orth_joblog, snaplist, evtj, fastjournal\n"
            "print(sorted(m for m in sys.modules if m == 'construct' or m.startswith('construct.')))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("name", SCHEMA_MODULES)
def test_declared_names_are_exactly_what_declare_makes(name):
    """``DECLARED`` lists every construct object and class ``_declare()`` makes (none left behind, none listed that
    it does not make), and the module's names are those very objects (built once)."""
    mod = importlib.import_module(f"wqtool.formats.{name}")
    made = mod._declare()
    imported = set(vars(construct)) | {"stream_read", "stream_write", "crcmod", "SimpleNamespace"} \
        | set(importlib.import_module("wqtool.formats._common").DECLARED if name != "_common" else ())
    own = {n for n, v in made.items() if n not in imported}
    assert own == set(mod.DECLARED)
    for n in mod.DECLARED:
        assert getattr(mod, n) is getattr(mod, n)
        assert n in vars(mod) and n in dir(mod)


def test_declarations_are_real_construct_objects():
    from wqtool.formats import evtj, fastjournal, kestrel, orth, snaplist, workq
    for schema in (workq.record, workq.payload, kestrel.journal_op, orth.arraylist_head, snaplist.list_line,
                   evtj.event, fastjournal.fj_request, fastjournal.fjj_record):
        assert isinstance(schema, construct.Construct)


def test_an_undeclared_name_is_an_attribute_error_without_building():
    code = ("import sys\n"
            "from wqtool.formats import workq\n"
            "print(getattr(workq, 'no_such_schema', None), hasattr(workq, 'DETECT'), 'construct' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "False", "False"]


def test_the_schemas_errors_pickle_as_themselves():
    """Built inside ``_declare()``, the error classes still pickle by module and name (worker processes)."""
    from wqtool.formats._common import BadTimeVersion, UnknownEnumValue, VarintOverflow
    for cls in (VarintOverflow, UnknownEnumValue, BadTimeVersion):
        assert type(pickle.loads(pickle.dumps(cls("x")))) is cls


def test_first_use_from_many_threads_builds_once():
    code = ("import threading\n"
            "from wqtool.formats import kestrel\n"
            "seen = []\n"
            "ts = [threading.Thread(target=lambda: seen.append(kestrel.journal_op)) for _ in range(8)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "print(len({id(s) for s in seen}), len(seen))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "8"]
