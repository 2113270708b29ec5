"""The workq data source: rows equal `dump -o jsonl`, permissive findings equal verify's row-level findings,
failfast raises, Parquet round-trips."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.conftest import AS_OF, cli
from tests.spark.conftest import DAMAGE, as_of_ns

# Findings that need the whole log replayed: verify reports them, a row-level reader cannot.
HISTORY = {"WQ-DUPLICATE-JOB", "WQ-INVALID-ID", "WQ-INVALID-NAME", "WQ-INVALID-TTR", "WQ-INVALID-TTL",
           "WQ-INVALID-PAYLOAD", "WQ-INVALID-PRIORITY", "WQ-INVALID-RESULT", "WQ-ALREADY-LEASED",
           "WQ-ALREADY-PROCESSED", "WQ-MAX-ATTEMPTS", "WQ-DUPLICATE-RESULT", "WQ-UNKNOWN-JOB", "WQ-ADD-EXPIRED",
           "WQ-FIELD-TRUNCATED", "WQ-TTL-RESET", "WQ-LEASE-RESTORED"}


def _plain(row: dict) -> dict:
    return {k: int(v) if isinstance(v, Decimal) else v for k, v in row.items()}


@pytest.fixture(scope="module")
def loaded(spark, corpus):
    """Every log of the corpus read in one Spark job: {name: (record rows, _corrupt dicts)}."""
    from wqtool.spark import register
    register(spark)  # the registered source remembers the working directory: the repo root here
    names = sorted(corpus)
    df = spark.read.format("workq").option("payload", "true").option("paths",
                                                                      json.dumps([corpus[n] for n in names])).load()
    rows = [r.asDict(recursive=True) for r in df.collect()]
    out = {n: ([], []) for n in names}
    owner = {corpus[n]: n for n in names}
    for r in rows:
        f = r["file"] or r["_corrupt"]["file"]
        d = next(d for d in owner if f.startswith(d + "/") or f == d)
        if r["_corrupt"] is None:
            del r["_corrupt"]
            out[owner[d]][0].append(_plain(r))
        else:
            out[owner[d]][1].append(r["_corrupt"])
    return out


def _names():
    from tests.conftest import ALL_WORKQ
    return ALL_WORKQ + sorted(DAMAGE)


@pytest.mark.parametrize("name", _names())
def test_rows_equal_dump_jsonl(name, loaded, corpus):
    res = cli("dump", "-o", "jsonl", "--as-of", AS_OF, corpus[name])
    expected = [json.loads(line) for line in res.out.splitlines()]
    assert loaded[name][0] == expected


@pytest.mark.parametrize("name", _names())
def test_permissive_yields_the_row_level_findings_verify_reports(name, loaded, corpus):
    from wqtool.engine.reader import discover
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.engine.verify import run_log
    report = run_log(discover([corpus[name]])[0], as_of_ns(), engine="reference")
    expected = [finding_to_jsonable(f) for f in report.findings if f.code not in HISTORY]
    assert loaded[name][1] == expected
    if name in DAMAGE:
        assert any(f["severity"] == "error" for f in loaded[name][1])


def test_failfast_raises_on_the_first_error(spark, corpus):
    with pytest.raises(Exception, match="WQ-CRC"):
        spark.read.format("workq").option("mode", "failfast").load(corpus["flip-mid-segment"]).collect()


def test_failfast_schema_is_dump_fields(spark, corpus):
    from wqtool.engine.serialize import RECORD_FIELDS
    df = spark.read.format("workq").option("mode", "failfast").load(corpus["sample-clean"])
    assert tuple(df.columns) == tuple(f for f in RECORD_FIELDS if f != "payload")
    assert dict(df.dtypes)["ttr_ms"] == "decimal(20,0)" and dict(df.dtypes)["offset"] == "bigint"


def test_globs_and_files_follow_the_engine_order(spark, corpus):
    d = corpus["sample-clean"]
    rows = spark.read.format("workq").option("mode", "failfast").load(d + "/00000000[2-4].log").collect()
    assert [r["index"] for r in rows] == list(range(len(rows)))   # one log: indexes run across its files
    assert rows[0]["file"].endswith("000000002.log")


def test_parquet_round_trip(spark, corpus, tmp_path, loaded):
    out = str(tmp_path / "records.parquet")
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--out", out, corpus["sample-clean"],
              corpus["flip-mid-segment"])
    assert res.code == 3, res.err        # the damaged copy: WQ-CRC with valid records after it
    assert "WQ-CRC" in res.err
    back = [r.asDict(recursive=True) for r in spark.read.parquet(out).collect()]
    records = sorted((_plain({k: v for k, v in r.items() if k != "_corrupt"}) for r in back
                      if r["_corrupt"] is None), key=lambda r: (r["file"], r["offset"]))
    expected = sorted(loaded["sample-clean"][0] + loaded["flip-mid-segment"][0], key=lambda r: (r["file"], r["offset"]))
    assert records == expected
    key = lambda f: (f["file"], f["offset"] or 0, f["code"])  # noqa: E731 — part files come back in any order
    assert sorted((r["_corrupt"] for r in back if r["_corrupt"] is not None), key=key) == \
        sorted(loaded["flip-mid-segment"][1], key=key)
