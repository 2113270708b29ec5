"""Fleet jobs: verify, replay and stats on Spark give the local engine's findings, exit codes and digests."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import AS_OF, cli
from tests.spark.conftest import already_processed_log, as_of_ns


def _local(path, limit=None):
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    return run_log(discover([path])[0], as_of_ns(), limit=limit)


def _same(a, b):
    from wqtool.engine.serialize import finding_to_jsonable
    assert ([finding_to_jsonable(f) for f in a.findings]
            == [finding_to_jsonable(f) for f in b.findings])
    assert (a.verdict, a.counts, a.severities, a.records, a.bytes, a.segments, a.last_good) == \
        (b.verdict, b.counts, b.severities, b.records, b.bytes, b.segments, b.last_good)
    assert a.state.digest() == b.state.digest()
    assert a.state.counts_by_state() == b.state.counts_by_state()
    assert a.state.queues() == b.state.queues()
    assert (a.state.records, a.state.applied) == (b.state.records, b.state.applied)


@pytest.mark.parametrize("limit", [None, 2])
@pytest.mark.parametrize("fast", [True, False])
def test_fleet_equals_local_on_every_log(spark, corpus, fast, limit):
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    names = sorted(corpus)
    logs = [discover([corpus[n]])[0] for n in names]
    fleet = run_fleet(Cluster(spark), logs, as_of_ns(), limit=limit, want_jobs=True, fast=fast)
    for name, fl in zip(names, fleet):
        local = _local(corpus[name], limit)
        _same(fl.report, local)
        assert list(fl.report.state.jobs) == sorted(local.state.jobs), name
        assert [j.canonical() for j in fl.report.state.jobs.values()] == \
            [j.canonical() for j in local.state.sorted_jobs()], name


def test_verify_cli_same_output_and_exit_code(corpus):
    paths = [corpus[n] for n in sorted(corpus)]
    local = cli("verify", "-o", "json", "--as-of", AS_OF, *paths)
    spark = cli("verify", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *paths)
    assert spark.code == local.code == 3
    assert json.loads(spark.out) == json.loads(local.out)
    assert "spark:" in spark.err


@pytest.mark.parametrize("name", ["crc-mismatch-mid-segment", "sample-clean", "truncated-newest"])
def test_replay_cli_same_state(corpus, name):
    local = cli("replay", "-o", "json", "--as-of", AS_OF, corpus[name])
    spark = cli("replay", "--engine", "spark", "-o", "json", "--as-of", AS_OF, corpus[name])
    assert (spark.code, json.loads(spark.out)) == (local.code, json.loads(local.out))


def test_stats_same_document(corpus):
    paths = [corpus[n] for n in sorted(corpus)]
    local = cli("stats", "-o", "json", "--as-of", AS_OF, *paths)
    spark = cli("stats", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *paths)
    assert spark.code == local.code == 3
    assert json.loads(spark.out) == json.loads(local.out)


def test_warm_up_starts_a_worker_per_slot_with_the_engine_loaded(spark):
    """``warm_up`` is the benchmark's definition of "started": every slot has its own Python worker, the engine
    imported, and a second call finds the same workers (reused, not respawned)."""
    from wqtool.spark.session import warm_up
    slots = spark.sparkContext.defaultParallelism
    assert slots == 2
    first = warm_up(spark)
    assert len(first) == slots
    assert warm_up(spark, hold_s=0.2) == first


def _daemons_of_this_jvm(spark) -> list[int]:
    """The pyspark.daemon processes this session's JVM started for task workers (``pyspark.daemon
    pyspark.worker``: one per pool; not Spark's own data-source lookup daemon)."""
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    out = []
    for pid in os.listdir("/proc"):
        try:
            if not pid.isdigit() or int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]) != jvm:
                continue
            if open(f"/proc/{pid}/cmdline").read().split("\0")[-3:-1] == ["pyspark.daemon", "pyspark.worker"]:
                out.append(int(pid))
        except OSError:
            continue
    return out


def test_rdd_and_dataframe_tasks_share_one_pool_of_python_workers(spark):
    """A fleet's RDD tasks (``Cluster.run``) and a DataFrame's (``mapInArrow``, the data sources) run in the same
    Python workers: the session's JVM has one worker daemon, not one per kind of task (``one_worker_pool``: the
    pools differed by SPARK_SIMPLIFIED_TRACEBACK only)."""
    from wqtool.spark.cluster import Cluster
    from wqtool.spark.session import _Warm, one_worker_pool
    assert one_worker_pool(spark)
    c = Cluster(spark)
    rdd = {r["pid"] for r in c.run(2, _Warm(0.3), [("pid", "bigint")])}
    frame = {r["pid"] for r in spark.range(0, 2, 1, 2).mapInArrow(_Warm(0.3), "pid bigint").collect()}
    assert rdd == frame and len(rdd) == 2, (rdd, frame)
    assert len(_daemons_of_this_jvm(spark)) == 1


def test_replay_shows_at_most_1000_errors_on_both_engines(tmp_path):
    """A log with 1,200 impossible start-attempts: both engines count them all and print the first 1,000."""
    d = already_processed_log(str(tmp_path / "log"), 1200)
    runs = [cli("replay", *engine, "-o", "json", "--as-of", AS_OF, d) for engine in ((), ("--engine", "spark"))]
    for res in runs:
        assert res.code == 4
        assert json.loads(res.out)["counts"]["WQ-ALREADY-PROCESSED"] == 1200
        assert sum("WQ-ALREADY-PROCESSED" in line for line in res.err.splitlines()) == 1000
    assert json.loads(runs[0].out) == json.loads(runs[1].out)
