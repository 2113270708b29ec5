"""A fleet in one command (issue 35, item 2): ``replay`` takes several PATHs on both engines; ``--summary`` gives
each log's local digest, from one Spark job over the fleet; ``-o parquet --out DIR A B`` writes both logs' rows
and one summary per log."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import AS_OF, cli

LOGS = ["sample-clean", "double-lease-and-result", "duplicate-add"]


def _one(path: str, *argv: str) -> str:
    res = cli("replay", "--as-of", AS_OF, *argv, path)
    assert res.code in (0, 1, 4), res.err
    return res.out


def test_local_replay_takes_several_paths_each_log_as_alone(corpus):
    paths = [corpus[n] for n in LOGS]
    res = cli("replay", "--summary", "--as-of", AS_OF, *paths)
    assert res.code == 4, res.err                      # the worst verdict (double-lease-and-result: invalid history)
    want = "".join(f"== {p}: workq 0.2.0 command log ==\n" + _one(p, "--summary") for p in paths)
    assert res.out == want
    doc = json.loads(cli("replay", "-o", "json", "--summary", "--as-of", AS_OF, *paths).out)
    assert doc["logs"] == [json.loads(_one(p, "-o", "json", "--summary")) for p in paths]
    jl = cli("replay", "-o", "jsonl", "--as-of", AS_OF, *paths).out
    assert jl == "".join(_one(p, "-o", "jsonl") for p in paths)


def test_spark_summary_of_a_fleet_is_one_job_with_the_local_digests(corpus):
    paths = [corpus[n] for n in LOGS]
    local = cli("replay", "--summary", "--as-of", AS_OF, *paths)
    res = cli("replay", "--engine", "spark", "--summary", "--as-of", AS_OF, *paths)
    assert (res.code, res.out) == (local.code, local.out), res.err
    plans = [ln for ln in res.err.splitlines() if ln.startswith("spark: ") and " log(s), " in ln]
    assert len(plans) == 1 and plans[0].startswith(f"spark: {len(paths)} log(s), "), res.err   # one fleet job
    js = cli("replay", "--engine", "spark", "-o", "json", "--summary", "--as-of", AS_OF, *paths)
    assert js.out == cli("replay", "-o", "json", "--summary", "--as-of", AS_OF, *paths).out


def test_spark_replay_of_a_fleet_gives_each_log_its_jobs(corpus):
    paths = [corpus[n] for n in LOGS[:2]]
    local = cli("replay", "-o", "jsonl", "--as-of", AS_OF, *paths)
    res = cli("replay", "--engine", "spark", "-o", "jsonl", "--as-of", AS_OF, *paths)
    assert (res.code, res.out) == (local.code, local.out), res.err


def test_parquet_export_of_two_logs_writes_both_and_a_summary_each(spark, corpus, tmp_path):
    paths = [corpus[n] for n in LOGS[:2]]
    out = str(tmp_path / "state")
    res = cli("replay", "--engine", "spark", "-o", "parquet", "--out", out, "--as-of", AS_OF, *paths)
    assert res.code == 4, res.err
    docs = json.load(open(os.path.join(out, "summary.json")))["logs"]
    assert docs == [json.loads(_one(p, "-o", "json", "--summary")) for p in paths]
    for p, d in zip(paths, docs):
        assert f"{p}: {d['job_count']} rows in {out}/jobs, digest sha256:{d['digest']}" in res.out
    table = spark.read.parquet(os.path.join(out, "jobs"))
    got = {r["log"]: r["count"] for r in table.groupBy("log").count().collect()}
    assert got == {p: d["job_count"] for p, d in zip(paths, docs)}
    rows = {p: [json.loads(x) for x in _one(p, "-o", "jsonl").splitlines()[:-1]] for p in paths}
    for p in paths:
        mine = sorted((r.asDict() for r in table.where(table.log == p).collect()), key=lambda r: r["job_id"])
        for r in mine:
            r.pop("log")
        assert mine == sorted(rows[p], key=lambda r: r["job_id"])


@pytest.mark.parametrize("command", ["replay", "verify", "stats"])
def test_a_fleet_at_as_of_last_is_one_job_each_log_at_its_own_time(corpus, command):
    """--as-of last settles each log to its own newest record time: still one Spark job over the fleet."""
    paths = [corpus[n] for n in LOGS]
    argv = [command, *(["--summary"] if command == "replay" else []), "-o", "json", "--as-of", "last", *paths]
    local = cli(*argv)
    res = cli(*argv[:1], "--engine", "spark", *argv[1:])
    assert (res.code, res.out) == (local.code, local.out), res.err
    plans = [ln for ln in res.err.splitlines() if ln.startswith("spark: ") and " log(s), " in ln]
    assert len(plans) == 1 and plans[0].startswith(f"spark: {len(paths)} log(s), "), res.err
