"""One log's ``replay --summary`` on Spark as the CLI reads it (``engine.read.read`` with the ``SparkRunner``), the
log whole in one task (a job forced: ``spark.wqtool.inDriver.threshold`` 0): its result comes back through ``Cluster.run`` (one RDD stage; no DataFrame is planned for
it) and the report — findings in file order, counts, exit code, counts per state and per queue and the digest,
byte for byte — is the local engine's, on every fixture, every damaged copy and random logs intact, with bit
flips or truncated."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ALL_WORKQ, examples
from tests.spark.conftest import DAMAGE, as_of_ns, random_log


@pytest.fixture
def through_run(monkeypatch, always_a_job):
    """Counts ``Cluster.run``'s jobs; a DataFrame of tasks (``Cluster.tasks``) fails the test. A job always
    (``always_a_job``: else the driver reads such a log itself, ``test_in_driver.py``)."""
    from wqtool.spark.cluster import Cluster
    calls = []
    real = Cluster.run

    def run(self, n, fn, fields, what=None):
        calls.append(n)
        return real(self, n, fn, fields, what=what)

    def tasks(self, *a, **kw):
        raise AssertionError("a DataFrame of tasks for one log's summary")
    monkeypatch.setattr(Cluster, "run", run)
    monkeypatch.setattr(Cluster, "tasks", tasks)
    return calls


def _both(spark, path: str):
    """(the local engine's result, the Spark runner's) of ``replay --summary`` of ``path``, as the CLI reads."""
    from wqtool.engine.format import resolve
    from wqtool.engine.options import Options
    from wqtool.engine.read import Want, read
    from wqtool.spark.runner import SparkRunner
    opts = Options(as_of_ns=as_of_ns())
    logs = resolve([path], "auto", opts)
    local = read(logs, opts, want=Want.REPLAY, max_findings=1000).results[0]
    on_spark = read(logs, opts, want=Want.REPLAY, runner=SparkRunner(spark), max_findings=1000,
                    summary=True).results[0]
    return local, on_spark


def _assert_same(local, on_spark, name):
    from wqtool.engine.serialize import finding_to_jsonable
    a, b = on_spark.report, local.report
    assert (on_spark.error, local.error) == (None, None), name
    assert [finding_to_jsonable(f) for f in a.findings] == [finding_to_jsonable(f) for f in b.findings], name
    assert (a.verdict, dict(a.counts), dict(a.severities), a.records, a.bytes, a.segments, a.last_good) == \
        (b.verdict, dict(b.counts), dict(b.severities), b.records, b.bytes, b.segments, b.last_good), name
    va, vb = on_spark.view(), local.view()
    assert (va.digest(), va.counts_by_state(), va.queues()) == (vb.digest(), vb.counts_by_state(), vb.queues()), \
        name


@pytest.mark.parametrize("name", ALL_WORKQ + sorted(DAMAGE))
def test_one_log_summary_comes_back_through_run_with_the_local_report(spark, corpus, through_run, name):
    local, on_spark = _both(spark, corpus[name])
    _assert_same(local, on_spark, name)
    assert through_run == [1], through_run        # one job of one task


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from(["intact", "flips", "truncated"]))
def test_one_log_summary_through_run_equals_local_on_random_logs(spark, tmp_path_factory, through_run, seed, damage):
    """Random logs (random v4 ids, ids reused), intact, with bit flips or truncated at a random offset."""
    d = str(tmp_path_factory.mktemp("summary"))
    random_log(d, seed, damage)
    n = len(through_run)
    local, on_spark = _both(spark, d)
    _assert_same(local, on_spark, f"{seed} {damage}")
    assert len(through_run) == n + 1
