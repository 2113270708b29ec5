"""bench/bench_orth.py's Spark side still runs and still measures the CLI's output: its ``spark_stats_json`` (stats
over the fleet, in the suite's session) gives the bytes ``wqtool stats -o json`` prints for the same Parquet parts.
A bench that stops running says nothing; this one raised TypeError for a whole round before anyone ran it."""
from __future__ import annotations

import importlib.util
import os

from tests.conftest import ROOT


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))        # as `python bench/bench_orth.py` has it
    spec = importlib.util.spec_from_file_location("bench_orth", os.path.join(ROOT, "bench", "bench_orth.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_bench_spark_stats_are_the_cli_s(spark, tmp_path, monkeypatch):
    b = _bench(monkeypatch)
    d = b.generate(str(tmp_path), 3_000, 2)
    local = b.run_stats(d)
    assert local["exit"] in (0, 1), local["stderr"]
    assert b.spark_stats_json(spark, d) == local["out"]
