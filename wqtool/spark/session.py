"""The one SparkSession builder every `--engine spark` command and the tests use.

Start-up costs ~6-7 s (JVM) plus ~3 s for the first job, so a command builds exactly one session. The JVM
lingers after ``stop()`` until the Python process exits; that is PySpark's behaviour, not a leak of ours.
"""
from __future__ import annotations

import os
import sys
from typing import Iterable, Sequence

DEFAULT_MASTER = "local[*]"

#: Defaults that keep a local run quiet and small; any --spark-conf of the same key wins.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.sql.session.timeZone": "UTC",
}


def parse_conf(pairs: Iterable[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` → dict; raises ValueError on an entry without '='."""
    out: dict[str, str] = {}
    for p in pairs or ():
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"--spark-conf: expected KEY=VALUE, got {p!r}")
        out[k.strip()] = v.strip()
    return out


def _prepare_env(local: bool) -> None:
    # Python workers are started with PYSPARK_PYTHON (default: python3 on PATH), which may not have wqtool;
    # a builder config does not help, the variable must be set before the JVM starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")   # loopback only; silences the hostname warning


def build_session(*, master: str | None = None, conf: dict[str, str] | Sequence[str] | None = None,
                  remote: str | None = None, app_name: str = "wqtool", log_level: str = "WARN"):
    """Return a SparkSession: Spark Connect when ``remote`` (sc://host:port), else classic on ``master``.

    The wqtool data sources are registered on it.
    """
    from pyspark.sql import SparkSession

    if conf is not None and not isinstance(conf, dict):
        conf = parse_conf(conf)
    conf = dict(conf or {})
    master = master or DEFAULT_MASTER
    local = remote is None and master.startswith("local")
    _prepare_env(local)
    builder = SparkSession.builder.appName(app_name)
    if remote:
        builder = builder.remote(remote)
        settings = dict(conf)
    else:
        builder = builder.master(master)
        settings = {**_DEFAULT_CONF, **conf}
        if local:
            settings.setdefault("spark.driver.host", "127.0.0.1")
            settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    if not remote:
        spark.sparkContext.setLogLevel(log_level)
    from . import register
    register(spark)
    return spark
