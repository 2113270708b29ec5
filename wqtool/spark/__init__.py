"""The only place pyspark is imported: wqtool's formats as Spark data sources, and the fleet jobs.

    from wqtool.spark import register
    register(spark)
    spark.read.format("workq").load("/var/lib/workq/cmdlog").groupBy("cmd").count().show()

Importing this package does not import pyspark; ``register`` does.
"""
from __future__ import annotations


def register(spark) -> None:
    """Register the ``workq`` and ``kestrel`` data sources on a SparkSession."""
    from .datasources import register as _register
    _register(spark)
