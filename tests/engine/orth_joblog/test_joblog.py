"""orth-joblog: golden fixtures (every finding code, exact offsets), the declared rules == the spec's table ==
their SQL (SQLite), every source reads the same table, the dump scanner on hostile input, the CLI."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, cli
from wqtool.engine.findings import Verdict
from wqtool.engine.orth_joblog import writer
from wqtool.engine.orth_joblog.codes import JOBLOG_CODES
from wqtool.engine.orth_joblog.reader import Source, TableLog, TableReader, split_csv
from wqtool.engine.orth_joblog.rules import report_bucket, report_bucket_sql, status_of, status_sql
from wqtool.engine.orth_joblog.sqldump import VALUE_CAP, DumpScanner, Tuple
from wqtool.engine.orth_joblog.model import Row
from wqtool.formats.orth_joblog import COLUMN_NAMES, Status

FIX = os.path.join(ROOT, "fixtures", "orth-joblog")
SCENARIOS = sorted(n for n in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, n)))


def expected(name: str) -> dict:
    with open(os.path.join(FIX, name, "expected-verify.json"), encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- golden corpus
@pytest.mark.slow
def test_fixtures_are_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_orth_joblog_fixtures.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixture_verify_and_dump(name, in_root):
    exp = expected(name)
    v = cli("verify", "-o", "json", "--max-findings", "1000", "--as-of", exp["as_of"], "--format", "orth-joblog",
            *exp["paths"])
    doc = json.loads(v.out)["logs"][0]
    assert v.code == exp["exit"]
    assert doc["counts"] == exp["counts"]
    assert [[f["code"], f["offset"], f["record_index"], f["job_id"]] for f in doc["findings"]] == exp["findings"]
    d = cli("dump", "-o", "jsonl", "--format", "orth-joblog", *exp["paths"])
    with open(os.path.join(FIX, name, "expected.jsonl"), encoding="utf-8") as f:
        assert d.out == f.read()
    r = json.loads(cli("replay", "-o", "json", "--summary", "--as-of", exp["as_of"], *exp["paths"],
                       "--format", "orth-joblog").out)
    assert r["digest"] == exp["digest"] and r["total_rows"] == exp["rows"]


def test_every_code_has_a_fixture():
    seen = set()
    for n in SCENARIOS:
        seen |= set(expected(n)["counts"])
    assert seen == set(JOBLOG_CODES)


def test_every_source_kind_reads_the_same_table(in_root):
    digests = {n: expected(n)["digest"] for n in ("clean-csv", "clean-jsonl", "clean-parquet", "mysqldump",
                                                  "sqlite-db")}
    assert len(set(digests.values())) == 1, digests


def test_detection_picks_the_format(in_root):
    for name in ("clean-csv", "clean-jsonl", "clean-parquet", "mysqldump", "sqlite-db"):
        exp = expected(name)
        r = cli("verify", "-q", "--as-of", exp["as_of"], *exp["paths"])
        assert r.code == 0, (name, r.err)


# ---------------------------------------------------------------- the rules
SPEC_TABLE = [  # §5.2, written out by hand from the spec, independent of the declaration
    (lambda t, h: t == 0, Status.INIT),
    (lambda t, h: t == 200 and h == 0, Status.PENDING),
    (lambda t, h: h == 200, Status.SUCCESS),
    (lambda t, h: h == 502, Status.TIMEOUT),
    (lambda t, h: t != 200, Status.TRIGGER_FAILED),
    (lambda t, h: True, Status.FAILED),
]
CODES = st.one_of(st.sampled_from([0, 200, 500, 502, -1, 404]), st.integers(-2**31, 2**31 - 1))


@given(CODES, CODES)
@settings(max_examples=300, deadline=None)
def test_status_rules_equal_the_spec_and_their_sql(tc, hc):
    spec = next(s for cond, s in SPEC_TABLE if cond(tc, hc))
    assert status_of(tc, hc) == spec.value
    running = tc in (0, 200) and hc == 0
    assert report_bucket(tc, hc) == ("running" if running else "suc" if hc == 200 else "fail")
    db = sqlite3.connect(":memory:")
    got = db.execute(f"SELECT {status_sql()}, {report_bucket_sql()} FROM (SELECT ? AS trigger_code, "
                     "? AS handle_code)", (tc, hc)).fetchone()
    assert got == (spec.value, report_bucket(tc, hc))


# ---------------------------------------------------------------- sources: writer -> reader round trips
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
ROWS = st.lists(st.fixed_dictionaries({
    "id": st.integers(1, 10**12), "job_group": st.integers(-5, 5), "job_id": st.integers(0, 10**6),
    "executor_address": st.none() | TEXT, "executor_handler": st.none() | TEXT,
    "executor_param": st.none() | TEXT, "executor_sharding_param": st.none() | st.text(max_size=5),
    "executor_fail_retry_count": st.integers(0, 3),
    "trigger_time": st.none() | st.sampled_from(["2026-01-30 12:00:00", "1999-12-31 23:59:59"]),
    "schedule_time": st.none() | st.just("2026-01-30 12:00:00"),
    "trigger_code": st.sampled_from([0, 200, 500]), "trigger_msg": st.none() | TEXT,
    "handle_time": st.none() | st.just("2026-01-30 12:00:09"), "handle_code": st.sampled_from([0, 200, 500, 502]),
    "handle_msg": st.none() | TEXT, "alarm_status": st.sampled_from([-1, 0, 1, 2, 3])}), min_size=1, max_size=6)


def _read(tmp_path, name, data) -> list[dict]:
    p = tmp_path / name
    p.write_bytes(data)
    kind = {"csv": "csv", "jsonl": "jsonl", "sql": "sqldump"}[name.rsplit(".", 1)[1]]
    log = TableLog(str(p), [Source(kind, str(p))])
    out = []
    for ev in TableReader(log).events():
        assert isinstance(ev, Row), ev
        out.append({c: v for c, v in zip(COLUMN_NAMES, ev.values())})
    return out


def _norm(rows):
    from wqtool.engine.orth_joblog.model import parse_datetime
    return [{c: (parse_datetime(r[c]) if c.endswith("_time") and r[c] is not None else r[c]) for c in COLUMN_NAMES}
            for r in rows]


@given(ROWS)
@settings(max_examples=60, deadline=None)
def test_jsonl_and_dump_round_trip(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("rt")
    want = _norm(rows)
    for name, data in (("a.jsonl", writer.jsonl_bytes(rows)), ("a.sql", writer.dump_bytes(rows, per_statement=2))):
        assert _read(tmp, name, data) == want, name


@given(ROWS)
@settings(max_examples=60, deadline=None)
def test_csv_round_trip_keeps_null_and_empty_apart(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("csv")
    assert _read(tmp, "a.csv", writer.csv_bytes(rows)) == _norm(rows)


def test_split_csv_nulls_and_quotes():
    assert split_csv('1,,"",\\N,"a,""b""\nc"') == ["1", None, "", None, 'a,"b"\nc']
    assert split_csv('1,"x"y') is None


# ---------------------------------------------------------------- the dump scanner on hostile input
def _scan(data: bytes):
    return list(DumpScanner(data, frozenset({"orth_job_log"})).events())


@pytest.mark.parametrize("data,kinds", [
    (b"INSERT INTO `orth_job_log` VALUES (1,'a\\'b'),(2,NULL);", ["Stmt", "Tuple", "Tuple"]),
    (b"INSERT INTO `orth_job_log` VALUES (1,'never closed", ["Stmt", "Damage"]),
    (b"INSERT INTO `orth_job_log` VALUES (1,@x);\nINSERT INTO `orth_job_log` VALUES (2);", ["Stmt", "Damage", "Stmt",
                                                                                           "Tuple"]),
    (b"/* ; ' */ -- '\nINSERT INTO `other` VALUES (';');INSERT INTO `orth_job_log` VALUES (3);", ["Stmt", "Tuple"]),
    (b"INSERT INTO `orth_job_log` VALUES " + b"(" * 5000, ["Stmt", "Damage"]),
    (b"\x00\xff" * 1000, ["Damage"]),
])
def test_dump_scanner_events(data, kinds):
    assert [type(e).__name__ for e in _scan(data)] == kinds


def test_dump_scanner_caps_a_value_and_resumes():
    big = b"INSERT INTO `orth_job_log` VALUES (1,'" + b"x" * (VALUE_CAP + 10) + b"');\n"
    ev = _scan(big + b"INSERT INTO `orth_job_log` VALUES (2);")
    assert [type(e).__name__ for e in ev] == ["Stmt", "Damage", "Stmt", "Tuple"]
    assert ev[1].kind == "too-large" and ev[1].offset == big.index(b"'") and ev[3].values == [2]


def test_dump_truncated_at_every_offset_never_raises(tmp_path):
    data = writer.dump_bytes([{"id": i, "job_group": 1, "job_id": 1, "trigger_code": 200, "handle_code": 0,
                               "trigger_time": "2026-01-30 12:00:00", "trigger_msg": "a'b;c\"d\n"}
                              for i in range(1, 4)], per_statement=2)
    start = data.index(b"INSERT INTO")
    for cut in range(start, len(data), 7):
        p = tmp_path / f"c{cut}.sql"
        p.write_bytes(data[:cut])
        log = TableLog(str(p), [Source("sqldump", str(p))])
        evs = list(TableReader(log).events())
        rows = [e for e in evs if isinstance(e, Row)]
        assert len(rows) <= 3
        torn = [e for e in evs if not isinstance(e, Row) and e.code == "OJL-TRUNCATED"]
        for f in torn:
            assert f.verdict == Verdict.TORN_TAIL


def test_csv_row_over_the_cap_is_a_finding(tmp_path):
    from wqtool.engine.orth_joblog.reader import ROW_CAP
    head = writer.csv_bytes([]).rstrip(b"\n")
    p = tmp_path / "orth_job_log.csv"
    p.write_bytes(head + b"\n1," + b"9" * (ROW_CAP + 5) + b"\n" + writer.csv_bytes([{"id": 2, "job_group": 1,
                  "job_id": 1, "trigger_code": 0, "handle_code": 0, "trigger_time": "2026-01-30 12:00:00"}])
                  .split(b"\n", 1)[1])
    evs = list(TableReader(TableLog(str(p), [Source("csv", str(p))])).events())
    assert [getattr(e, "code", "row") for e in evs] == ["OJL-TOO-LARGE", "row"]
    assert evs[0].offset == len(head) + 1


# ---------------------------------------------------------------- CLI
def test_stats_out_and_chart(tmp_path, in_root):
    exp = expected("clean-csv")
    out, chart = tmp_path / "out", tmp_path / "daily.html"
    r = cli("stats", "-o", "json", "--as-of", exp["as_of"], "--out", str(out), "--chart", str(chart), *exp["paths"])
    assert r.code == 0
    doc = json.loads(r.out)["logs"][0]
    daily = doc["analytics"]["daily"]
    assert [d["trigger_day"] for d in daily] == ["2026-01-28", "2026-01-29", "2026-01-30"]
    assert sum(d["total"] for d in daily) == exp["rows"]
    assert sorted(os.listdir(out)) == ["daily.csv", "executors.csv", "handlers.csv", "latency.csv", "lost.csv",
                                       "status.csv"]
    html = chart.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "2026-01-29" in html and "<script" not in html
    assert cli("stats", "--out", str(out), *exp["paths"]).code == 2     # never overwrites


def test_mysql_url_without_a_driver_is_a_clear_usage_error(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pymysql(name, *a, **kw):
        if name == "pymysql":
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_pymysql)
    r = cli("verify", "mysql://u:secret@127.0.0.1:1/orth_job")
    assert r.code == 2 and "PyMySQL" in r.err and "secret" not in r.err
