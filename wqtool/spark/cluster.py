"""What a format's fleet (``engine/<format>/fleet.py``) may ask of Spark, without importing it: tasks, a shuffle,
a collect, the executor slots. A fleet is engine code; the Spark calls are here, once.

Every task function is run in the driver's working directory (``_paths.working_dir``), so relative PATHs and the
paths the engine prints mean what they meant to the caller, as with the local engine."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from ._paths import working_dir

#: the column types a fleet's rows use, as Spark DDL
_DDL = {"int8": "tinyint", "int32": "int", "int64": "bigint", "binary": "binary"}


def ddl(fields: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{n} {_DDL[k]}" for n, k in fields)


class _InDir:
    """A task function run in the driver's working directory (picklable: it is shipped to the executors)."""

    def __init__(self, fn: Callable[[Iterator], Iterator], cwd: str):
        self.fn, self.cwd = fn, cwd

    def __call__(self, batches):
        with working_dir(self.cwd):
            yield from self.fn(batches)


class Cluster:
    """One Spark session, as a fleet sees it. ``spark``: the session itself (for the generic fleet and the data
    sources in ``wqtool.spark``)."""

    def __init__(self, spark):
        import os
        self.spark = spark
        self.cwd = os.getcwd()

    def partitions(self, default: int) -> int:
        """The session's shuffle partitions (``spark.sql.shuffle.partitions``)."""
        return int(self.spark.conf.get("spark.sql.shuffle.partitions", str(default)))

    def slots(self, default: int) -> int:
        """The executor slots (task threads) the session has now."""
        from .session import slot_count
        return slot_count(self.spark, default=default)

    def tasks(self, n: int, fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]]) -> Any:
        """``n`` tasks, one per partition: ``fn`` gets Arrow batches of its task numbers (column 0) and yields
        Arrow batches of ``fields``."""
        return self.spark.range(0, n, 1, n).mapInArrow(_InDir(fn, self.cwd), ddl(fields))

    def regroup(self, frame: Any, partitions: int, key: str, order: Sequence[str],
                fn: Callable[[Iterator], Iterator], fields: Sequence[tuple[str, str]]) -> Any:
        """``frame``'s rows shuffled into ``partitions`` by ``key``, sorted by ``order`` within each, then ``fn``
        over each partition (as ``tasks``)."""
        return (frame.repartition(partitions, key).sortWithinPartitions(*order)
                .mapInArrow(_InDir(fn, self.cwd), ddl(fields)))

    def collect(self, frame: Any, *, keep_partitions: bool = False) -> list:
        """Every row of ``frame`` on the driver. ``keep_partitions``: adaptive execution may not coalesce the
        shuffle's partitions (they are the parallelism the fleet planned)."""
        if not keep_partitions:
            return frame.collect()
        key = "spark.sql.adaptive.coalescePartitions.enabled"
        conf = self.spark.conf
        old = conf.get(key, None)
        conf.set(key, "false")
        try:
            return frame.collect()
        finally:
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)
