"""How a fleet's work becomes Spark tasks: ``workq.fleet.pack`` plans a task per executor slot (a second wave of
tasks costs each slot ~0.1 s of scheduling), and ``cluster._Numbered`` starts a task on its work before the JVM
has sent its one input row — and fails the task if that row is not its number."""
from __future__ import annotations

import pyarrow as pa
import pytest


def test_pack_balances_units_over_the_slots():
    from wqtool.engine.workq.fleet import pack
    assert pack([4, 4, 4, 4], 2) == [[0, 2], [1, 3]]
    assert pack([10, 1, 1, 1, 9], 2) == [[0, 2], [4, 1, 3]]        # biggest first, each to the lightest bin
    assert pack([5], 4) == [[0]]                                  # never an empty task
    assert pack([], 2) == []
    got = pack([7, 3, 3, 2, 2, 2, 1], 3)
    assert sorted(u for b in got for u in b) == list(range(7))   # every unit once
    assert max(sum([7, 3, 3, 2, 2, 2, 1][u] for u in b) for b in got) == 7


class _Ctx:
    def __init__(self, k):
        self.k = k

    def partitionId(self):  # noqa: N802 (pyspark's name)
        return self.k


def _echo(batches):
    for b in batches:
        yield pa.RecordBatch.from_arrays([pa.array([x * 10 for x in b.column(0).to_pylist()], pa.int64())],
                                         names=["x"])


def _rows(*ids):
    return iter([pa.RecordBatch.from_arrays([pa.array(list(ids), pa.int64())], names=["id"])])


def test_a_numbered_task_works_from_its_partition_id(monkeypatch):
    from pyspark import TaskContext

    from wqtool.spark.cluster import _Numbered
    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: _Ctx(3)))
    out = [x for b in _Numbered(_echo, None)(_rows(3)) for x in b.column(0).to_pylist()]
    assert out == [30]


def test_a_numbered_task_given_another_row_fails(monkeypatch):
    from pyspark import TaskContext

    from wqtool.spark.cluster import _Numbered
    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: _Ctx(3)))
    with pytest.raises(RuntimeError, match=r"Spark task 3 was given the rows \[1\], not \[3\]"):
        list(_Numbered(_echo, None)(_rows(1)))


def _pair(batches):
    for b in batches:
        ks = b.column(0).to_pylist()
        yield pa.RecordBatch.from_arrays([pa.array(ks, pa.int64()), pa.array([f"task {k}".encode() for k in ks])],
                                         names=["k", "blob"])


def test_an_indexed_task_works_from_its_partition_index():
    from wqtool.spark.cluster import _Indexed
    assert list(_Indexed(_pair, None)(3, iter([3]))) == [(3, b"task 3")]


def test_an_indexed_task_given_another_row_fails():
    from wqtool.spark.cluster import _Indexed
    with pytest.raises(RuntimeError, match=r"Spark task 3 was given the rows \[1\], not \[3\]"):
        list(_Indexed(_pair, None)(3, iter([1])))


def test_run_collects_every_task_on_reused_workers(spark):
    """``Cluster.run``: each task's rows by field name, on the same Python workers job after job (a worker whose
    input was left unread exits after its task: each job would start new ones)."""
    import os

    from wqtool.spark.cluster import Cluster

    def whose(batches):
        for b in batches:
            ks = b.column(0).to_pylist()
            yield pa.RecordBatch.from_arrays([pa.array(ks, pa.int64()), pa.array([os.getpid()] * len(ks))],
                                             names=["k", "pid"])
    cl = Cluster(spark)
    fields = (("k", "int64"), ("pid", "int64"))
    rows = cl.run(2, whose, fields)
    assert sorted(r["k"] for r in rows) == [0, 1]
    pids = {r["pid"] for r in rows}
    for _ in range(3):
        again = cl.run(2, whose, fields)
        assert sorted(r["k"] for r in again) == [0, 1]
        assert {r["pid"] for r in again} <= pids, (pids, again)
