"""One log's ``replay --summary`` that no Spark job can speed up is read in the driver (``engine/workq/fleet.py``:
``in_driver``; ``Cluster.run_here``): where ``chain_plan`` plans no chain (it would not pay, the log is too small
to chain, one slot, ...) and the log is at most ``spark.wqtool.inDriver.threshold`` (1 GiB; 0: always a job),
the driver runs the one task's function itself — no Spark job is submitted (counted by the session's status
tracker), the output is byte for byte the job's and the local engine's, the plan line says why, and the files
are read as the driver pinned them (a file shrunk or replaced between plan and read: exit 5 naming it). A log
above the threshold, a threshold of 0, or a chain that pays: a job, as before."""
from __future__ import annotations

import os
import uuid

import pytest

from tests.conftest import AS_OF, ROOT, cli
from tests.spark import live_writer

LOG = "upstream-a-run1"


@pytest.fixture
def jobs(spark):
    """How many Spark jobs the test's thread submitted so far (a job group of its own; the status tracker)."""
    sc = spark.sparkContext
    group = f"wqtool-in-driver-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "test_in_driver")

    def count() -> int:
        return len(sc.statusTracker().getJobIdsForGroup(group))
    yield count
    sc.setLocalProperty("spark.jobGroup.id", None)
    sc.setLocalProperty("spark.job.description", None)


@pytest.fixture
def threshold(spark):
    """Set ``spark.wqtool.inDriver.threshold`` on the session for the test."""
    from wqtool.spark.session import IN_DRIVER_CONF

    def put(value: str) -> None:
        spark.conf.set(IN_DRIVER_CONF, value)
    yield put
    spark.conf.unset(IN_DRIVER_CONF)


def _size(log: str) -> int:
    return sum(os.path.getsize(os.path.join(log, n)) for n in os.listdir(log) if n.endswith(".log"))


def _plans(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("spark: ") and " log(s), " in ln]


def _busy(monkeypatch, pressure: float) -> None:
    """Any log big enough to chain; the kernel's CPU pressure as given (``chain_pays``: below 50 % a chain)."""
    from wqtool.engine.workq import fleet
    monkeypatch.setattr(fleet, "CHAIN_MIN_BYTES", 0)
    monkeypatch.setattr(fleet, "cpu_pressure", lambda path=None: pressure)


@pytest.mark.parametrize("argv", [("--summary",), ("--summary", "-o", "json")], ids=" ".join)
def test_a_summary_no_job_pays_for_runs_no_job_and_gives_the_jobs_bytes(spark, corpus, monkeypatch, jobs,
                                                                        threshold, argv):
    """A busy machine (CPU pressure 91 %: the chain would not pay): no Spark job, the plan line says so, and the
    output is the local engine's and a forced job's, byte for byte."""
    _busy(monkeypatch, 91.0)
    path = corpus[LOG]
    local = cli("replay", *argv, "--as-of", AS_OF, path)
    before = jobs()
    here = cli("replay", "--engine", "spark", *argv, "--as-of", AS_OF, path)
    assert jobs() == before, "a Spark job for a summary no job pays for"
    assert _plans(here.err) == [f"spark: 1 log(s), {_size(path)} bytes, in the driver (a job would not pay: "
                                f"CPU pressure 91 %)"], here.err
    threshold("0")
    job = cli("replay", "--engine", "spark", *argv, "--as-of", AS_OF, path)
    assert jobs() == before + 1
    assert _plans(job.err) == [f"spark: 1 log(s), {_size(path)} bytes, 1 share(s) in 1 task(s) on 2 slot(s)"]
    assert (here.code, here.out) == (job.code, job.out) == (local.code, local.out)
    assert "digest" in here.out or '"digest"' in here.out


@pytest.mark.parametrize("name", ["flip-mid-segment", "truncated-newest", "junk-tail", "crc-mismatch-mid-segment",
                                  "duplicate-add", "sample-clean"])
def test_too_small_to_chain_is_read_in_the_driver_with_the_local_report(spark, corpus, jobs, name):
    """Without a patch: a fixture (below the chain's 32 MiB) is read in the driver, damaged or not, with the
    local engine's document (findings, counts, exit code, digest)."""
    path = corpus[name]
    local = cli("replay", "--summary", "-o", "json", "--as-of", AS_OF, path)
    before = jobs()
    here = cli("replay", "--engine", "spark", "--summary", "-o", "json", "--as-of", AS_OF, path)
    assert jobs() == before
    assert _plans(here.err) == [f"spark: 1 log(s), {_size(path)} bytes, in the driver (a job would not pay: too "
                                f"small to chain (under 32 MiB))"], here.err
    assert (here.code, here.out) == (local.code, local.out)


@pytest.mark.parametrize("over", [True, False], ids=["above", "at"])
def test_a_log_above_the_threshold_runs_a_job(spark, corpus, monkeypatch, jobs, threshold, over):
    _busy(monkeypatch, 91.0)
    path = corpus[LOG]
    size = _size(path)
    threshold(str(size - 1 if over else size))
    before = jobs()
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, path)
    assert res.code == 0, res.err
    assert jobs() == before + (1 if over else 0)
    assert ("in the driver" in _plans(res.err)[0]) is not over, res.err


@pytest.mark.parametrize("value, size", [("1g", 1 << 30), ("512m", 512 << 20), ("2KB", 2048), ("70000", 70000),
                                         (" 1 G ", 1 << 30), ("0", 0)])
def test_the_threshold_is_a_spark_size(value, size):
    from wqtool.spark.session import IN_DRIVER_CONF, size_setting
    assert size_setting(IN_DRIVER_CONF, value) == size


def test_a_threshold_that_is_no_size_is_a_usage_error(spark, corpus, threshold):
    threshold("lots")
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, corpus[LOG])
    assert res.code == 2 and "spark.wqtool.inDriver.threshold: not a size" in res.err and "'lots'" in res.err, \
        res.err


def test_a_chain_that_pays_still_chains(spark, corpus, monkeypatch, jobs):
    """CPU pressure 10 %: the chain pays — one job of two tasks, by job-id range, with the local digest."""
    pytest.importorskip("wqtool.engine.workq._sha", reason="wqtool.engine.workq._sha is not built")
    _busy(monkeypatch, 10.0)
    path = corpus[LOG]
    local = cli("replay", "--summary", "-o", "json", "--as-of", AS_OF, path)
    before = jobs()
    res = cli("replay", "--engine", "spark", "--summary", "-o", "json", "--as-of", AS_OF, path)
    assert jobs() == before + 1
    assert _plans(res.err) == [f"spark: 1 log(s), {_size(path)} bytes, 2 share(s) in 2 task(s) on 2 slot(s), by "
                               f"job-id range, hashed in turn"], res.err
    assert (res.code, res.out) == (local.code, local.out)


def test_two_logs_are_one_job(spark, corpus, jobs):
    """A fleet's summary stays one job (the rule is for exactly one log)."""
    paths = [corpus[LOG], corpus["sample-clean"]]
    before = jobs()
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, *paths)
    assert res.code == 0, res.err
    assert jobs() == before + 1 and "in the driver" not in res.err


def test_verify_and_a_full_replay_of_one_log_stay_jobs(spark, corpus, jobs):
    before = jobs()
    for argv in (("verify",), ("replay",)):
        res = cli(*argv, "--engine", "spark", "--as-of", AS_OF, corpus[LOG])
        assert res.code == 0 and "in the driver" not in res.err, res.err
    assert jobs() == before + 2


@pytest.mark.parametrize("change", ["shrunk", "replaced"])
def test_a_file_changed_between_plan_and_read_is_exit_5_naming_it(spark, tmp_path, monkeypatch, jobs, change):
    """The driver pinned the log's files when it planned; one changes before its own read: the same named exit 5
    as in a task (``FileChanged``), no report, no job."""
    from wqtool.spark.cluster import Cluster
    log = str(tmp_path / "cmdlog")
    live_writer.build(log, 3_000)
    seg = os.path.join(log, "000000001.log")
    real = Cluster.run_here

    def changed_first(self, *a, **kw):
        if change == "shrunk":
            os.truncate(seg, os.path.getsize(seg) - 7)
        else:
            data = open(seg, "rb").read()
            os.rename(seg, seg + ".old")
            with open(seg, "wb") as f:      # the same bytes in a new file (another inode)
                f.write(data)
        return real(self, *a, **kw)
    monkeypatch.setattr(Cluster, "run_here", changed_first)
    before = jobs()
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, log)
    assert res.code == 5, (res.code, res.err)
    word = "shrank" if change == "shrunk" else "replaced"
    assert f"{seg}: {word} since the job was planned" in res.err, res.err
    assert "digest" not in res.out and jobs() == before


def test_a_log_the_driver_cannot_read_runs_a_job(spark, corpus, monkeypatch, jobs):
    """Every file must be readable in the driver (a local path, a staged copy); else the executors read it."""
    from wqtool.spark.cluster import Cluster
    reads_here = Cluster.reads_here
    first = os.path.join(ROOT, corpus[LOG], "000000001.log")
    assert reads_here([first]) and not reads_here([first, first + ".gone"])
    monkeypatch.setattr(Cluster, "reads_here", staticmethod(lambda paths: False))
    before = jobs()
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, corpus[LOG])
    assert res.code == 0 and jobs() == before + 1 and "1 share(s) in 1 task(s)" in res.err, res.err
