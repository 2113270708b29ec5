"""The only place pyspark is imported: every registered format as a Spark data source, and the fleet jobs.

    from wqtool.spark import register
    register(spark)
    spark.read.format(name).load(path)      # name: any registered format (wqtool.engine.format.names())
    spark.read.format(name + "-findings").load(path)     # what verify reports, one row per finding

Importing this package does not import pyspark; ``register`` does.
"""
from __future__ import annotations


def register(spark, *, check: bool = True) -> None:
    """Register the data sources of every registered format on a SparkSession: ``spark.read.format(<name>)``
    (records) and ``spark.read.format(<name>-findings)`` (verify's findings). ``check``: first make sure Spark's
    Python workers can import wqtool (one tiny job); if they cannot, raise an error that says how to fix it."""
    from .datasources import register as _register
    _register(spark, check=check)
