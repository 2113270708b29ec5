"""wqtool.spark.register(spark) checks that Spark's Python workers can import wqtool, and says how to fix it."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

#: A worker Python that has pyspark and pyarrow (this venv's) but cannot import wqtool, as an unactivated venv
#: or a cluster's system Python would be.
BLOCKER = '''
import sys
class _NoWqtool:
    def find_spec(self, name, path=None, target=None):
        if name == "wqtool" or name.startswith("wqtool."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoWqtool())
'''

SCRIPT = '''
import os, sys
from wqtool.spark.session import build_session
try:
    spark = build_session(master="local[1]")
except Exception as exc:
    print(type(exc).__name__ + ": " + str(exc))
    sys.exit(3)
print("registered")
'''


def test_register_says_how_to_fix_workers_that_cannot_import_wqtool(tmp_path):
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER)
    worker = tmp_path / "worker-python"
    worker.write_text(f"#!/bin/sh\nPYTHONPATH={block}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    worker.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(worker), "SPARK_LOCAL_IP": "127.0.0.1"}
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 3, (r.stdout, r.stderr[-2000:])
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("WorkersCannotImportWqtool: Spark's Python workers cannot import wqtool (worker Python ")
    assert "ModuleNotFoundError: No module named 'wqtool'" in line
    assert f"PYSPARK_PYTHON={sys.executable}" in line and "pip install 'wqtool[spark]" in line


def test_register_passes_when_the_workers_have_wqtool(spark):
    from wqtool.spark import register
    from wqtool.spark.datasources import check_workers
    check_workers(spark)          # no error: the session's workers run this Python
    register(spark)
    assert spark.read.format("workq").load(os.path.join(ROOT, "fixtures/workq/upstream-a-run1/log")).count() == 28


def test_workers_without_pyarrow_are_told_the_real_cause(tmp_path):
    """Issue 20 item 8: a worker Python without pyarrow (an unactivated venv, a cluster's system Python) fails
    before the probe runs; the error names the cause (No module named 'pyarrow'), not only PYSPARK_PYTHON."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER.replace('name == "wqtool" or name.startswith("wqtool.")',
                                                            'name == "pyarrow" or name.startswith("pyarrow.")'))
    worker = tmp_path / "worker-python"
    worker.write_text(f"#!/bin/sh\nPYTHONPATH={block}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    worker.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(worker), "SPARK_LOCAL_IP": "127.0.0.1"}
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 3, (r.stdout, r.stderr[-2000:])
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("WorkersCannotImportWqtool: Spark's Python workers could not run wqtool's check ")
    assert "ModuleNotFoundError: No module named 'pyarrow'" in line
    assert f"PYSPARK_PYTHON={sys.executable}" in line and len(line) < 1200


def test_no_pyspark_is_exit_5_as_the_exit_table_says(tmp_path):
    """Issue 20 item 8: without the [spark] extra, --engine spark is "no session" (exit 5 in the exit table),
    not a usage error (it was exit 2), with the way out on one line."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER.replace('name == "wqtool" or name.startswith("wqtool.")',
                                                            'name == "pyspark" or name.startswith("pyspark.")'))
    env = {**os.environ, "PYTHONPATH": str(block)}
    log = os.path.join("fixtures", "workq", "upstream-a-run1", "log")
    for argv in (["verify", log], ["replay", "--summary", log], ["stats", log],
                 ["dump", "-o", "parquet", "--out", str(tmp_path / "out"), log]):
        r = subprocess.run([sys.executable, "-m", "wqtool", argv[0], "--engine", "spark", *argv[1:]], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stdout, r.stderr) == (5, "", "wqtool: --engine spark: no session: pyspark is not "
                                                      "installed here (pip install 'wqtool[spark]', and Java 17)\n")


class _Frame:
    def __init__(self, session):
        self.session = session

    def mapInArrow(self, fn, schema):  # noqa: N802 (pyspark's names)
        self.session.probes += 1
        return self

    def collect(self):
        return [{"status": "ok", "version": self.session.version, "python": "py", "error": ""}]

    def createOrReplaceGlobalTempView(self, name):  # noqa: N802
        self.session.views.add(f"global_temp.{name}")


class _Catalog:
    def __init__(self, session):
        self.session = session

    def tableExists(self, name):  # noqa: N802
        return name in self.session.views


def _connect_session(views, version):
    """A stand-in for a Spark Connect session (its class lives in pyspark.sql.connect): the probe job and the
    server's global temporary views, counted."""
    cls = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    s = cls()
    s.views, s.version, s.probes = views, version, 0
    s.catalog = _Catalog(s)
    s.range = lambda *a: _Frame(s)
    return s


def test_a_connect_server_probed_once_is_not_probed_again():
    """Issue 24 item 6: each CLI call through a Connect server is a new session; the first one's probe leaves a
    global temporary view naming this wqtool version on the server, and the next sessions look it up instead of
    running the probe job. Another version's view does not count."""
    import wqtool
    from wqtool.spark.datasources import _probe_marker, check_workers
    server: set[str] = set()
    first = _connect_session(server, wqtool.__version__)
    check_workers(first)
    assert first.probes == 1 and server == {f"global_temp.{_probe_marker(wqtool.__version__)}"}
    second = _connect_session(server, wqtool.__version__)
    check_workers(second)
    assert second.probes == 0
    other = {f"global_temp.{_probe_marker('0.0.1')}"}
    third = _connect_session(other, wqtool.__version__)
    check_workers(third)
    assert third.probes == 1
