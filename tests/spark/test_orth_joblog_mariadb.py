"""A real MariaDB on loopback: the fixtures' table loaded into it, read back locally (PyMySQL) and through Spark's
JDBC reader (the Debian driver jar); both equal the fixture's expected results."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, cli
from tests.mariadb import JDBC_JAR, MariaDB, Unavailable

FIX = os.path.join(ROOT, "fixtures", "orth-joblog")


@pytest.fixture(scope="module")
def mariadb():
    pytest.importorskip("pymysql", reason="PyMySQL not installed (pip install 'wqtool[mysql]')")
    if not os.path.exists(JDBC_JAR):
        pytest.skip(f"no MariaDB JDBC driver at {JDBC_JAR} (apt-get install libmariadb-java)")
    db = MariaDB()
    try:
        db.start()
    except Unavailable as e:
        pytest.skip(str(e))
    try:
        yield db
    finally:
        db.stop()


def _load(db: MariaDB, name: str, rows, registry) -> str:
    from wqtool.engine.orth_joblog import writer
    conn = db.connect(None)
    conn.cursor().execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    conn.close()
    conn = db.connect(name)
    try:
        writer.mysql_create(conn)
        writer.insert_rows(conn, rows, registry)
    finally:
        conn.close()
    return name


def test_mariadb_table_local_and_spark_equal_the_fixture(mariadb, spark, monkeypatch):
    import sys
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_orth_joblog_fixtures as mk
    monkeypatch.chdir(ROOT)
    exp = json.load(open(os.path.join(FIX, "clean-csv", "expected-verify.json"), encoding="utf-8"))
    db = _load(mariadb, "clean", mk.base_rows(), mk.registry())
    as_of = exp["as_of"]
    local = json.loads(cli("replay", "-o", "json", "--summary", "--as-of", as_of, mariadb.url("mysql", db)).out)
    assert local["digest"] == exp["digest"] and local["counts"] == exp["state"]
    v = json.loads(cli("verify", "-o", "json", "--as-of", as_of, mariadb.url("mysql", db)).out)["logs"][0]
    assert v["counts"] == exp["counts"] and v["root"].startswith("mysql://root:***@127.0.0.1:")

    from wqtool.commands._options import parse_time
    from wqtool.engine.format import Options, resolve
    from wqtool.spark.fleet import fleet_replay, fleet_stats, fleet_verify
    opts = Options(parse_time(as_of, "--as-of"))
    for url in (mariadb.url("jdbc:mariadb", db), mariadb.url("jdbc:mysql", db)):
        logs = resolve([url], "auto", opts)
        sv = fleet_verify(spark, logs, opts).logs[0]
        lv = logs[0].fmt.passes.verify([logs[0].data], opts).logs[0]
        assert dict(sv.counts) == dict(lv.counts) == exp["counts"]
        assert [(f.code, f.message) for f in sv.findings] == [(f.code, f.message) for f in lv.findings]
        rep = fleet_replay(spark, logs[0], opts)
        view = logs[0].fmt.state_view(rep.state)
        assert view.digest() == exp["digest"]
        per, _ = fleet_stats(spark, logs, opts)
        local_stats = json.loads(cli("stats", "-o", "json", "--as-of", as_of, url).out)["logs"][0]["analytics"]
        assert json.loads(cli("stats", "-o", "json", "--as-of", as_of, "--jdbc", url).out)["logs"][0][
            "analytics"] == local_stats                                   # --jdbc URL reads it as the PATH does
        assert logs[0].fmt.state_view(per[0][0].state).analytics() == local_stats


def test_mariadb_damaged_rows(mariadb, spark, monkeypatch):
    """Rows the admin cannot write, in a real table (duplicates need a table without the primary key)."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import make_orth_joblog_fixtures as mk
    monkeypatch.chdir(ROOT)
    exp = json.load(open(os.path.join(FIX, "odd-rows", "expected-verify.json"), encoding="utf-8"))
    db = _load(mariadb, "odd", mk.odd_rows(), mk.registry())
    r = cli("verify", "-o", "json", "--as-of", exp["as_of"], mariadb.url("mysql", db))
    assert json.loads(r.out)["logs"][0]["counts"] == exp["counts"]
    from wqtool.commands._options import parse_time
    from wqtool.engine.format import Options, resolve
    from wqtool.spark.fleet import fleet_verify
    opts = Options(parse_time(exp["as_of"], "--as-of"))
    logs = resolve([mariadb.url("jdbc:mariadb", db)], "auto", opts)
    assert dict(fleet_verify(spark, logs, opts).logs[0].counts) == exp["counts"]
