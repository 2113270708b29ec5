"""The Snap! formats on Spark through the generic data source of the registry: rows equal `dump -o jsonl`
(the bytes-typed columns aside), one partition per hour / events / segment file, damage as _corrupt rows."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, cli
from wqtool.engine import format as registry

AS_OF = "2026-01-30T03:30:00Z"
CASES = [("snaplist", "current-hour", 2), ("evtj", "live-and-done", 2), ("fastjournal", "history", 2),
         ("snaplist", "torn-final-line", 1), ("fastjournal", "crc-mid-segment", 1)]


@pytest.mark.parametrize("fmt,name,partitions", CASES)
def test_rows_equal_dump_jsonl(spark, fmt, name, partitions, monkeypatch):
    monkeypatch.chdir(ROOT)
    from wqtool.spark import register
    register(spark)
    path = os.path.join("fixtures", fmt, name, "journal")
    reader = spark.read.format(fmt)
    if fmt != "fastjournal":    # discovery at a clock (the current hour / events file); fastjournal's refuses as_of
        reader = reader.option("as_of", AS_OF)
    df = reader.load(path)
    assert df.rdd.getNumPartitions() == partitions
    byte_cols = {k for k, t in registry.get(fmt).record_view.types.items() if t == "bytes"}
    rows, bad = [], []
    for r in df.collect():
        r = r.asDict(recursive=True)
        c = r.pop("_corrupt")
        (rows if c is None else bad).append({k: v for k, v in r.items() if k not in byte_cols} if c is None else c)
    want = [{k: v for k, v in json.loads(x).items() if k not in byte_cols}
            for x in cli("dump", "-o", "jsonl", "--as-of", AS_OF, path).out.splitlines()[:-1]]
    assert rows == want
    verify = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, path).out)["logs"][0]
    found = spark.read.format(fmt + "-findings").option("as_of", AS_OF).load(path).collect()
    assert sorted(r["code"] for r in found) == sorted(f["code"] for f in verify["findings"])
    assert {c["code"] for c in bad} <= {f["code"] for f in verify["findings"]}   # torn / damaged bytes as rows
