"""The replayed state as a table (issue 24 item 4): the ``workq-state`` data source and ``replay --engine spark -o
parquet --out DIR`` give the rows of ``replay -o jsonl`` (one per job, with ``log``), and the digest written beside
the table is the local replay's; ``as_of`` takes last / first as ``--as-of`` does (each log's own time)."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import AS_OF, ROOT, cli

LOGS = ["sample-clean", "double-lease-and-result", "duplicate-add", "crc-mismatch-mid-segment", "upstream-a-run1"]


@pytest.fixture(scope="module", autouse=True)
def _registered(spark):
    from wqtool.spark import register
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        register(spark)
    finally:
        os.chdir(old)


def _local(path: str, as_of: str) -> tuple[list[dict], dict]:
    """replay -o jsonl's rows and summary, by the local engine."""
    res = cli("replay", "-o", "jsonl", "--as-of", as_of, path)
    assert res.code in (0, 1, 3, 4), res.err
    lines = [json.loads(x) for x in res.out.splitlines()]
    return lines[:-1], lines[-1]["summary"]


def _rows(df) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in df.collect():
        d = r.asDict()
        out.setdefault(d.pop("log"), []).append(d)
    return out


@pytest.mark.parametrize("as_of", [AS_OF, "last", "first"])
def test_the_state_source_reads_replays_rows(spark, corpus, as_of):
    paths = [corpus[n] for n in LOGS]
    df = spark.read.format("workq-state").option("as_of", as_of).option("paths", json.dumps(paths)).load()
    assert df.columns[:4] == ["log", "job_id", "kind", "name"]
    got = _rows(df)
    for p in paths:
        rows, summary = _local(p, as_of)
        assert got.get(p, []) == rows, p            # the same rows, in the same (job id) order
        assert len(rows) == summary["job_count"]
    assert sum(len(v) for v in got.values()) > 0


def test_select_and_filter_on_the_state_source(spark, corpus):
    df = spark.read.format("workq-state").option("as_of", "last").load(corpus["double-lease-and-result"])
    rows, _ = _local(corpus["double-lease-and-result"], "last")
    want = sorted(r["job_id"] for r in rows if r["state"] == "leased")
    assert sorted(r["job_id"] for r in df.select("job_id").where("state = 'leased'").collect()) == want


def test_replay_to_parquet_writes_the_table_and_the_local_digest(spark, corpus, tmp_path):
    path = corpus["double-lease-and-result"]
    out = str(tmp_path / "state")
    res = cli("replay", "--engine", "spark", "-o", "parquet", "--out", out, "--as-of", "last", path)
    rows, summary = _local(path, "last")
    assert res.code == summary["exit_code"] == 4, res.err         # the log's findings: verify's exit code
    assert "WQ-ALREADY-LEASED" in res.err
    assert f"digest sha256:{summary['digest']}" in res.out
    doc = json.load(open(os.path.join(out, "summary.json")))
    assert doc["digest"] == summary["digest"] and doc["job_count"] == len(rows) and doc["jobs"] == []
    assert [n for n in os.listdir(os.path.join(out, "jobs")) if n.startswith("log=")]   # partitioned by log
    table = spark.read.schema(spark.read.format("workq-state").load(path).schema).parquet(os.path.join(out, "jobs"))
    got = _rows(table.orderBy("job_id"))
    assert got == {path: sorted(rows, key=lambda r: r["job_id"])}
    again = cli("replay", "--engine", "spark", "-o", "parquet", "--out", out, path)
    assert again.code != 0 and "already exists" in again.err.lower(), again.err   # never overwritten


@pytest.mark.parametrize("argv", [["-o", "parquet", "DIR"], ["--out", "/tmp/x", "DIR"],
                                  ["--out", "/tmp/x", "-o", "parquet", "--engine", "local", "DIR"]])
def test_parquet_needs_spark_and_out(argv, corpus):
    res = cli("replay", *[corpus["sample-clean"] if a == "DIR" else a for a in argv])
    assert res.code == 2 and "-o parquet and --out DIR go together" in res.err
