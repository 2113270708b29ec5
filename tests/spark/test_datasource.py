"""The workq data sources: format("workq") rows equal `dump -o jsonl` (count() is the number of records; permissive:
a row per unreadable byte range), format("workq-findings") rows equal verify's findings (the row-level ones in
file order, then the replay's), failfast raises, Parquet round-trips."""
from __future__ import annotations

import json
import os
from decimal import Decimal

import pytest

from tests.conftest import AS_OF, cli, jsonl_rows
from tests.spark.conftest import DAMAGE, already_processed_log, as_of_ns

from wqtool.engine.workq.codes import REPLAY_CODES


def _plain(row: dict) -> dict:
    return {k: int(v) if isinstance(v, Decimal) else v for k, v in row.items()}


@pytest.fixture(scope="module")
def loaded(spark, corpus):
    """Every log of the corpus read in one Spark job per source: {name: (record rows, unreadable-range
    _corrupt dicts, finding rows)}."""
    from wqtool.spark import register
    register(spark)  # the registered source remembers the working directory: the repo root here
    names = sorted(corpus)
    paths = json.dumps([corpus[n] for n in names])
    df = spark.read.format("workq").option("payload", "true").option("paths", paths).load()
    rows = [r.asDict(recursive=True) for r in df.collect()]
    out = {n: ([], [], []) for n in names}
    owner = {corpus[n]: n for n in names}

    def of(f):
        return owner[next(d for d in owner if f.startswith(d + "/") or f == d)]
    for r in rows:
        if r["_corrupt"] is None:
            del r["_corrupt"]
            out[of(r["file"])][0].append(_plain(r))
        else:
            out[of(r["file"])][1].append(r["_corrupt"])
    found = spark.read.format("workq-findings").option("as_of", AS_OF).option("paths", paths).load()
    for r in found.collect():
        d = r.asDict()
        out[owner[d.pop("log")]][2].append(d)
    return out


def _names():
    from tests.conftest import ALL_WORKQ
    return ALL_WORKQ + sorted(DAMAGE)


@pytest.mark.parametrize("name", _names())
def test_rows_equal_dump_jsonl(name, loaded, corpus):
    res = cli("dump", "-o", "jsonl", "--as-of", AS_OF, corpus[name])
    expected = jsonl_rows(res.out)
    assert loaded[name][0] == expected


@pytest.mark.parametrize("name", _names())
def test_findings_source_yields_the_findings_verify_reports(name, loaded, corpus):
    """Each segment's partition: its reader's and payload decoder's findings; the newest segment's partition
    then adds the replay's (history: duplicates, unknown jobs, expiries at as_of, the closing notes)."""
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.engine.workq.verify import run_log
    report = run_log(discover([corpus[name]])[0], as_of_ns(), engine="reference")
    expected = ([finding_to_jsonable(f) for f in report.findings if f.code not in REPLAY_CODES]
                + [finding_to_jsonable(f) for f in report.findings if f.code in REPLAY_CODES])
    assert loaded[name][2] == expected
    assert any(f["code"] in REPLAY_CODES for f in loaded[name][2])   # every fixture has closing notes at least
    if name in DAMAGE:
        assert any(f["severity"] == "error" for f in loaded[name][2])


@pytest.mark.parametrize("name", _names())
def test_permissive_rows_are_the_records_and_the_unreadable_ranges(name, loaded, corpus):
    """count() is the number of records, plus (permissive) one row per stretch of bytes no record covers:
    exactly the reader's errors that are framing damage (torn tail, corruption) — warnings, notes and history
    findings are never rows of format("workq")."""
    unreadable = [f for f in loaded[name][2] if f["severity"] == "error" and f["verdict"] in ("torn tail", "CORRUPT")]
    assert loaded[name][1] == unreadable
    assert len(loaded[name][0]) == run_log_records(corpus[name])


def test_count_is_the_number_of_records(spark, corpus):
    """A 28-record log with replay warnings and notes: 28 rows (it was 56: a row per warning)."""
    path = corpus["upstream-a-run1"]
    assert spark.read.format("workq").load(path).count() == run_log_records(path) == 28
    assert spark.read.format("workq-findings").option("as_of", "2026-11-23T00:00:00Z").load(path).count() > 0


def test_history_false_yields_the_row_level_findings_only(spark, corpus):
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.engine.workq.verify import run_log
    names = ["duplicate-add", "flip-mid-segment", "upstream-a-run1"]
    df = (spark.read.format("workq-findings").option("history", "false").option("as_of", AS_OF)
          .option("paths", json.dumps([corpus[n] for n in names])).load())
    got = [{k: v for k, v in r.asDict().items() if k != "log"} for r in df.collect()]
    expected = [finding_to_jsonable(f) for n in names
                for f in run_log(discover([corpus[n]])[0], as_of_ns(), engine="reference").findings
                if f.code not in REPLAY_CODES]
    assert got == expected and any(f["code"] == "WQ-CRC" for f in got)


def test_log_wide_notes_name_the_log(spark, corpus):
    rows = spark.read.format("workq-findings").option("as_of", AS_OF).load(corpus["sample-clean"]).collect()
    notes = {r["code"]: r for r in rows}
    assert set(notes) == {"WQ-TTL-RESET", "WQ-LEASE-RESTORED"}
    assert all(r["log"] == corpus["sample-clean"] and r["file"] is None for r in notes.values())


def test_failfast_reads_records_and_history_belongs_to_the_findings_source(spark, corpus):
    """An impossible history is not a read error of the records (failfast reads them all); the replay's
    findings are rows of workq-findings, and the records source says so for option history."""
    rows = spark.read.format("workq").option("mode", "failfast").load(corpus["duplicate-add"]).collect()
    assert len(rows) == run_log_records(corpus["duplicate-add"])
    codes = [r["code"] for r in spark.read.format("workq-findings").option("as_of", AS_OF)
             .load(corpus["duplicate-add"]).collect()]
    assert "WQ-DUPLICATE-JOB" in codes
    with pytest.raises(Exception, match=r"workq: option history belongs to spark.read.format\('workq-findings'\)"):
        spark.read.format("workq").option("history", "false").load(corpus["sample-clean"]).collect()


def test_bad_history_and_as_of_options_name_the_option(spark, corpus):
    for key, value, msg in (("history", "maybe", "workq-findings: option history must be true or false"),
                            ("as_of", "yesterday", "workq-findings: option as_of: expected RFC 3339")):
        with pytest.raises(Exception, match=msg):
            spark.read.format("workq-findings").option(key, value).load(corpus["sample-clean"]).collect()


def run_log_records(path: str) -> int:
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    return run_log(discover([path])[0], as_of_ns()).records


def test_failfast_raises_on_the_first_error(spark, corpus):
    with pytest.raises(Exception, match="WQ-CRC"):
        spark.read.format("workq").option("mode", "failfast").load(corpus["flip-mid-segment"]).collect()


def test_failfast_schema_is_dump_fields(spark, corpus):
    from wqtool.engine.workq.serialize import RECORD_FIELDS
    df = spark.read.format("workq").option("mode", "failfast").load(corpus["sample-clean"])
    assert tuple(df.columns) == tuple(f for f in RECORD_FIELDS if f != "payload")
    assert dict(df.dtypes)["ttr_ms"] == "decimal(20,0)" and dict(df.dtypes)["offset"] == "bigint"


def test_globs_and_files_follow_the_engine_order(spark, corpus):
    d = corpus["sample-clean"]
    rows = spark.read.format("workq").option("mode", "failfast").load(d + "/00000000[2-4].log").collect()
    assert [r["record_index"] for r in rows] == list(range(len(rows)))   # one log: indexes run across its files
    assert rows[0]["file"].endswith("000000002.log")


def test_parquet_round_trip(spark, corpus, tmp_path, loaded):
    out = str(tmp_path / "records.parquet")
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--as-of", AS_OF, "--out", out, corpus["sample-clean"],
              corpus["flip-mid-segment"])
    assert res.code == 3, res.err        # the damaged copy: WQ-CRC with valid records after it
    assert "WQ-CRC" in res.err
    assert sorted(os.listdir(out)) == ["findings", "records"]
    back = [r.asDict(recursive=True) for r in spark.read.parquet(out + "/records").collect()]
    records = sorted((_plain({k: v for k, v in r.items() if k != "_corrupt"}) for r in back
                      if r["_corrupt"] is None), key=lambda r: (r["file"], r["offset"]))
    expected = sorted(loaded["sample-clean"][0] + loaded["flip-mid-segment"][0], key=lambda r: (r["file"], r["offset"]))
    assert records == expected
    key = lambda f: json.dumps(f, sort_keys=True)  # noqa: E731 — part files come back in any order
    assert sorted((r["_corrupt"] for r in back if r["_corrupt"] is not None), key=key) == \
        sorted(loaded["sample-clean"][1] + loaded["flip-mid-segment"][1], key=key)
    found = [{k: v for k, v in r.asDict().items() if k != "log"} for r in spark.read.parquet(out + "/findings").collect()]
    assert sorted(found, key=key) == sorted(loaded["sample-clean"][2] + loaded["flip-mid-segment"][2], key=key)


def _read_jsonl_dir(out: str) -> list[dict]:
    import glob
    rows = []
    for p in sorted(glob.glob(os.path.join(out, "*.json"))):  # noqa: — part files
        with open(p) as f:
            rows += [json.loads(line) for line in f]
    return rows


def test_jsonl_export_rows_are_dump_jsonl_lines(corpus, tmp_path):
    """``-o jsonl --out DIR``: each record row of DIR/records is the line ``dump -o jsonl`` prints (nulls kept),
    plus ``"_corrupt": null``; each row of DIR/findings is the finding ``verify -o jsonl`` prints, plus its log."""
    names = ["upstream-b-after-clean", "crc-mismatch-mid-segment"]
    out = str(tmp_path / "jsonl")
    res = cli("dump", "--engine", "spark", "-o", "jsonl", "--payload", "hex", "--as-of", AS_OF, "--out", out,
              *[corpus[n] for n in names])
    local = cli("dump", "-o", "jsonl", "--payload", "hex", "--as-of", AS_OF, *[corpus[n] for n in names])
    assert res.code == local.code == 3, res.err
    rows = _read_jsonl_dir(out + "/records")
    records = [r for r in rows if r.pop("_corrupt") is None]
    key = lambda r: (r["file"], r["offset"])  # noqa: E731
    assert sorted(records, key=key) == sorted(jsonl_rows(local.out), key=key)
    v = cli("verify", "-o", "jsonl", "--as-of", AS_OF, *[corpus[n] for n in names])
    # the findings table keeps the verdict its driver reads back (a label, never an exit code), and no printed "at"
    want = [{k: v for k, v in json.loads(line).items() if k != "at"} for line in v.out.splitlines()
            if '"summary"' not in line]
    got = [{k: v for k, v in r.items() if k not in ("log", "verdict")} for r in _read_jsonl_dir(out + "/findings")]
    key = lambda f: json.dumps(f, sort_keys=True)  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key) and len(got) > 5


@pytest.mark.parametrize("names", [["duplicate-add"], ["sample-clean", "truncated-newest"], ["double-lease-and-result",
                                                                                            "flip-first-record"]])
def test_export_exit_code_is_the_local_dumps(corpus, tmp_path, names):
    paths = [corpus[n] for n in names]
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--as-of", AS_OF, "--out", str(tmp_path / "o"), *paths)
    local = cli("dump", "-o", "jsonl", "--as-of", AS_OF, *paths)
    verify = cli("verify", "-q", "--as-of", AS_OF, *paths)
    assert res.code == local.code == verify.code != 0, (res.err, local.err)


def test_parquet_payload_binary_holds_the_bytes(spark, corpus, tmp_path):
    import base64
    out = str(tmp_path / "bin.parquet")
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--payload", "binary", "--as-of", AS_OF, "--out", out,
              corpus["sample-clean"])
    assert res.code == 0, res.err
    df = spark.read.parquet(out + "/records")
    assert dict(df.dtypes)["payload"] == "binary" and dict(df.dtypes)["result"] == "binary"
    local = jsonl_rows(cli("dump", "-o", "jsonl", corpus["sample-clean"]).out)
    got = {(r["file"], r["offset"]): (r["payload"], r["result"]) for r in df.where("_corrupt is null").collect()}
    assert got == {(r["file"], r["offset"]): (None if r["payload"] is None else base64.b64decode(r["payload"]),
                                              None if r["result"] is None else base64.b64decode(r["result"]))
                   for r in local}
    assert any(p for p, _ in got.values())
    bad = cli("dump", "--engine", "spark", "-o", "jsonl", "--payload", "binary", "--out", str(tmp_path / "j"),
              corpus["sample-clean"])
    assert bad.code == 2 and "--payload binary needs -o parquet" in bad.err


def test_export_errors_on_stderr_are_capped_and_counted(tmp_path):
    """1,200 impossible start-attempts: the export's rows hold them all; stderr shows the first 1,000 by offset
    and counts the rest; the exit code is the local dump's."""
    d = already_processed_log(str(tmp_path / "log"), 1200)
    out = str(tmp_path / "o")
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--as-of", AS_OF, "--out", out, d)
    assert res.code == cli("dump", "-o", "jsonl", "--as-of", AS_OF, d).code == 4
    shown = [ln for ln in res.err.splitlines() if "WQ-ALREADY-PROCESSED" in ln]
    assert len(shown) == 1000 and "... 200 more error finding(s)" in res.err
    import re
    offsets = [int(re.search(r"@0x([0-9a-f]+)", ln).group(1), 16) for ln in shown]
    assert offsets == sorted(offsets)


def test_export_as_of_beyond_rfc3339_years(corpus, tmp_path):
    """An --as-of past year 9999 still reaches the data source exactly (as '@<ns>ns')."""
    path = corpus["duplicate-add"]
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--as-of", "300000000000", "--out",
              str(tmp_path / "o"), path)
    local = cli("dump", "-o", "jsonl", "--as-of", "300000000000", path)
    assert res.code == local.code, res.err


def test_a_segment_split_over_the_slots_reads_its_rows_once_in_order(spark, corpus):
    """Fewer files than executor slots: a big file is read by several tasks, one byte-range share each
    (``RecordSourceReader._shared``); Spark's rows are the unsplit read's, in order, and count() their number.
    Shares of at least 1 byte here (a subclass of the registered source), so a fixture's segment is split."""
    from wqtool.spark import register
    from wqtool.spark.datasources import RecordSource
    register(spark)
    path = corpus["flip-mid-segment"] + "/000000002.log"

    class Split(RecordSource):
        fmt_name, cwd, slots, share_bytes = "workq", os.getcwd(), 3, 1

        @classmethod
        def name(cls):
            return "workq-split-test"
    Split.__module__ = "wqtool.spark.datasources._registered"
    spark.dataSource.register(Split)
    split = spark.read.format("workq-split-test").load(path)
    whole = spark.read.format("workq").load(path)
    assert split.rdd.getNumPartitions() == 3 and whole.rdd.getNumPartitions() == 1
    rows = [r.asDict(recursive=True) for r in split.collect()]
    assert rows == [r.asDict(recursive=True) for r in whole.collect()]
    assert any(r["_corrupt"] for r in rows) and split.count() == len(rows)
