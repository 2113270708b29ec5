"""The only place pyspark is imported: every registered format as a Spark data source, and the fleet jobs.

    from wqtool.spark import register
    register(spark)
    spark.read.format(name).load(path)      # name: any registered format (wqtool.engine.format.names())

Importing this package does not import pyspark; ``register`` does.
"""
from __future__ import annotations


def register(spark) -> None:
    """Register a data source per registered format on a SparkSession (``spark.read.format(<name>)``)."""
    from .datasources import register as _register
    _register(spark)
