"""A Spark job whose results do not all reach the driver gives an error (exit 5) naming the setting that fixes it,
never a report: PySpark's ``collect()`` returns what arrived, without an error, when the driver's serving thread
dies of OutOfMemoryError (issue 24 item 1: three logs reported 0 records and the empty-state digest, exit 0).

The loss is simulated by a ``collect()`` that drops its last row (what a serving thread that dies mid-stream
leaves); a driver cap too small for the results (``spark.driver.maxResultSize``) is the real thing."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import AS_OF, ROOT, cli
from tests.spark.conftest import as_of_ns


@pytest.fixture
def lossy_collect(spark, monkeypatch):
    """Every collect() of a fleet's results loses its last row (as a serving thread that dies mid-stream does):
    a DataFrame's, and an RDD's (``Cluster.run``)."""
    DataFrame = type(spark.range(1))       # Spark 4: the classic DataFrame subclass has its own collect()
    real = DataFrame.collect

    def collect(self):
        rows = real(self)
        return rows[:-1] if rows and "blob" in self.columns else rows   # the fleets' result rows
    monkeypatch.setattr(DataFrame, "collect", collect)
    from pyspark import RDD
    real_rdd = RDD.collect

    def rdd_collect(self):      # Cluster.run's: (..., blob) tuples
        rows = real_rdd(self)
        return rows[:-1] if rows and isinstance(rows[-1], tuple) and isinstance(rows[-1][-1], bytes) else rows
    monkeypatch.setattr(RDD, "collect", rdd_collect)


@pytest.mark.parametrize("fast", [True, False])
def test_a_lost_result_of_the_workq_fleet_is_an_error(spark, corpus, lossy_collect, fast):
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.fleet import ResultsLost
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    logs = [discover([corpus[n]])[0] for n in ("sample-clean", "upstream-a-run1", "crc-mismatch-mid-segment")]
    with pytest.raises(ResultsLost, match=r"of \d+ result\(s\) reached the driver.*spark\.driver\.memory"):
        run_fleet(Cluster(spark), logs, as_of_ns(), want_jobs=True, fast=fast)


def test_a_lost_result_of_the_stats_fleet_is_an_error(spark, corpus, lossy_collect):
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.fleet import ResultsLost
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    logs = [discover([corpus[n]])[0] for n in ("sample-clean", "upstream-a-run1")]
    with pytest.raises(ResultsLost):
        run_fleet(Cluster(spark), logs, as_of_ns(), limit=0, stats=True, stats_total=[])


def test_a_lost_result_of_a_task_per_log_is_an_error(spark, lossy_collect):
    from wqtool.engine.format import Options, get
    from wqtool.engine.fleet import ResultsLost
    from wqtool.spark.cluster import Cluster
    from wqtool.spark.fleet import PerLogFleet
    fmt = get("kestrel")
    opts = Options(as_of_ns=as_of_ns())
    datas = [d for p in ("clean-journal", "torn-tail")
             for d in fmt.discover([os.path.join(ROOT, "fixtures", "kestrel", p, "queue")], opts)]
    assert len(datas) == 2
    with pytest.raises(ResultsLost, match="a task per log"):
        PerLogFleet(fmt).verify(Cluster(spark), datas, opts)


def test_the_cli_exits_5_and_prints_no_digest(corpus, lossy_collect):
    r = cli("replay", "--engine", "spark", "--as-of", AS_OF, corpus["sample-clean"])
    assert r.code == 5, r.err
    assert "digest" not in r.out
    assert "reached the driver" in r.err and "spark.driver.memory" in r.err


def test_replay_summary_ships_no_job_to_the_driver(spark, corpus, monkeypatch):
    """--summary: the digest and counts come back, no job objects (what ran the driver out of memory)."""
    from wqtool.engine.workq import fleet as workq_fleet
    shipped = []
    real = workq_fleet.run_fleet

    def spy(*a, **kw):
        shipped.append(kw.get("want_jobs"))
        out = real(*a, **kw)
        assert all(not fl.report.state.jobs for fl in out) or kw.get("want_jobs")
        return out
    monkeypatch.setattr(workq_fleet, "run_fleet", spy)
    local = cli("replay", "--summary", "-o", "json", "--as-of", AS_OF, corpus["upstream-a-run1"])
    remote = cli("replay", "--engine", "spark", "--summary", "-o", "json", "--as-of", AS_OF,
                 corpus["upstream-a-run1"])
    assert shipped == [False]
    assert (remote.code, remote.out) == (local.code, local.out)
    assert '"job_count": 8' in remote.out


@pytest.mark.slow
def test_a_driver_cap_smaller_than_the_results_exits_5(tmp_path):
    """The real thing, in its own driver: spark.driver.maxResultSize below what the replay's tasks send back
    (the jobs of a 4,000-record log) — exit 5 with the setting named, and no digest on stdout."""
    log = tmp_path / "log"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_sample.py"), str(log), "--records", "4000"],
                   check=True, env=env, capture_output=True)
    r = subprocess.run([sys.executable, "-m", "wqtool", "replay", "--engine", "spark", "--master", "local[1]",
                        "--spark-conf", "spark.driver.maxResultSize=48k", "--as-of", AS_OF, str(log)],
                       env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 5, (r.stdout[-2000:], r.stderr[-2000:])
    assert "digest" not in r.stdout
    assert "spark.driver.maxResultSize" in r.stderr
    assert "Python workers" not in r.stderr        # not blamed on the workers' Python
