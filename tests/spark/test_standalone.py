"""Issue 24 item 1 on a real cluster: a standalone master and worker (Spark's own, from the pyspark install) on
loopback, started by the test. The bug was there: a cluster driver kept Spark's 1 GiB default, replay shipped
every job to it, and results lost on the way made a report with exit 0. Here: a replay whose results exceed the
driver's cap exits 5 naming the setting, and replay --summary (no job leaves a task) gives the local digest."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import AS_OF, ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: str, pattern: str, proc, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode}: {open(path).read()[-2000:]}")
        m = re.search(pattern, open(path, errors="replace").read())
        if m:
            return m
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {path} within {timeout} s: {open(path).read()[-2000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import pyspark
    home = os.path.dirname(pyspark.__file__)
    cls = os.path.join(home, "bin", "spark-class")
    d = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_WORKER_DIR": str(d / "work")}
    port = _free_port()
    procs = []
    try:
        mlog = str(d / "master.log")
        m = subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                              "--webui-port", str(_free_port())], stdout=open(mlog, "w"), stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
        procs.append(m)
        _wait_for(mlog, r"New state: ALIVE", m, 180)
        url = f"spark://127.0.0.1:{port}"
        wlog = str(d / "worker.log")
        w = subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
                              "--memory", "2g", "--webui-port", str(_free_port())], stdout=open(wlog, "w"),
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
        procs.append(w)
        _wait_for(wlog, r"Successfully registered with master", w, 180)
        yield url, env
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("standalone-log") / "log")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_sample.py"), d, "--records", "4000"],
                   check=True, capture_output=True)
    return d


def _wqtool(*argv, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "wqtool", *argv], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_results_over_the_drivers_cap_are_an_error_on_a_cluster(cluster, log):
    url, env = cluster
    r = _wqtool("replay", "--engine", "spark", "--master", url, "--spark-conf", "spark.driver.maxResultSize=48k",
                "--as-of", AS_OF, log, env=env)
    assert r.returncode == 5, (r.stdout[-1500:], r.stderr[-1500:])
    assert "digest" not in r.stdout and "spark.driver.maxResultSize" in r.stderr


def test_replay_summary_on_a_cluster_gives_the_local_digest(cluster, log):
    url, env = cluster
    local = json.loads(_wqtool("replay", "--summary", "-o", "json", "--as-of", AS_OF, log, env=env).stdout)
    r = _wqtool("replay", "--engine", "spark", "--master", url, "--summary", "-o", "json", "--as-of", AS_OF, log,
                "--spark-conf", "spark.wqtool.inDriver.threshold=0", env=env)   # a job (else read in the driver)
    assert r.returncode == 0, r.stderr[-1500:]
    assert json.loads(r.stdout) == local
    assert "1 share(s) in 1 task(s)" in r.stderr, r.stderr[-1500:]
