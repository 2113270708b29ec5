"""Faults named and retried (issue 35, item 5): a Python worker killed mid-task is retried on ``local[N]`` as a
cluster retries it (``local[N,F]``), and the retried fleet still gives the local answer; a worker that dies on every
attempt is reported as a worker that died (killed, or out of memory), with the log and share its task was reading,
exit 5 — not as the JVM's EOFException."""
from __future__ import annotations

import os
import signal

import pytest

from tests.spark.conftest import as_of_ns


class _Killing:
    """A task function whose Python worker is killed (SIGKILL) in task ``victim`` — on its first attempt only, or
    on every attempt (``always``) — before it does its work."""

    def __init__(self, fn, victim: int, always: bool):
        self.fn, self.victim, self.always = fn, victim, always

    def __call__(self, batches):
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if ctx.partitionId() == self.victim and (self.always or ctx.attemptNumber() == 0):
            os.kill(os.getpid(), signal.SIGKILL)
        yield from self.fn(batches)


def _killing_cluster(spark, victim: int, always: bool):
    from wqtool.spark.cluster import Cluster

    class KillingCluster(Cluster):
        def tasks(self, n, fn, fields, what=None):
            return super().tasks(n, _Killing(fn, victim, always), fields, what=what)

        def run(self, n, fn, fields, what=None):
            return super().run(n, _Killing(fn, victim, always), fields, what=what)
    return KillingCluster(spark)


def test_local_masters_retry_a_failed_task_as_a_cluster_does():
    from wqtool.spark.session import retrying
    assert retrying("local[2]", {}) == "local[2,4]"
    assert retrying("local[*]", {}) == "local[*,4]"
    assert retrying("local", {"spark.task.maxFailures": "2"}) == "local[1,2]"
    assert retrying("local[2,1]", {}) == "local[2,1]"            # given: as it is
    assert retrying("spark://host:7077", {}) == "spark://host:7077"


def test_the_session_retries(spark):
    assert spark.sparkContext.master == "local[2,4]"


def _logs(corpus):
    from wqtool.engine.workq.reader import discover
    names = ["sample-clean", "crc-mismatch-mid-segment", "duplicate-add", "upstream-a-run1"]
    return [discover([corpus[n]])[0] for n in names]


def test_a_killed_worker_is_retried_and_the_fleet_gives_the_local_answer(spark, corpus):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.verify import run_log
    logs = _logs(corpus)
    fleet = run_fleet(_killing_cluster(spark, 1, always=False), logs, as_of_ns(), want_jobs=True)
    for log, fl in zip(logs, fleet):
        local = run_log(log, as_of_ns())
        assert (fl.report.verdict, fl.report.counts, fl.report.records) == (local.verdict, local.counts,
                                                                          local.records)
        assert fl.report.state.digest() == local.state.digest()


def test_a_worker_that_dies_every_time_is_named_with_its_logs(spark, corpus):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.errors import SparkError
    from wqtool.exitcodes import exit_code_for
    logs = _logs(corpus)
    with pytest.raises(SparkError) as e:
        run_fleet(_killing_cluster(spark, 0, always=True), logs, as_of_ns(), want_jobs=True)
    msg = str(e.value)
    assert msg.startswith("--engine spark: a Spark worker died: task 0 while reading log ")
    assert "failed 4 time(s): its Python worker died (killed, or out of memory" in msg, msg
    assert any(lg.root in msg for lg in logs) and "EOFException" not in msg
    assert int(exit_code_for(e.value)) == 5


def test_a_death_message_names_the_daemon_and_the_executor():
    from wqtool.spark.session import death_message, worker_death
    daemon = ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 2.0 failed 1 "
              "times, most recent failure: Lost task 3.0: java.io.EOFException: EOFException occurred while "
              "reading the port number from pyspark.daemon's stdout")
    assert worker_death(daemon) == (3, 1, "the executor's Python worker daemon died")
    assert death_message(daemon, "log a/cmdlog").startswith(
        "--engine spark: a Spark worker died: task 3 while reading log a/cmdlog failed 1 time(s): the executor's "
        "Python worker daemon died (killed, or out of memory")
    lost = "Task 0 in stage 1.0 failed 4 times, most recent failure: ExecutorLostFailure (executor 1 exited)"
    assert worker_death(lost) == (0, 4, "its executor was lost")
    raised = ("Task 0 in stage 1.0 failed 1 times: Traceback (most recent call last):\n  File \"x\", line 1\n"
              "ConnectionResetError: [Errno 104] Connection reset by peer")
    assert worker_death(raised) is None          # the task's own error (an S3 read), not a death
