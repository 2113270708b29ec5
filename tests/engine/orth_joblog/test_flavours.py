"""The two job-log tables read by their own admin's rules: ``orth_job_log`` by Orth's combined status (spec §5.2),
``xxl_job_log`` by xxl-job's list filters and separate trigger / handle results (spec §5.4, xxl-job 3.2.0
``xxl-job-admin/src/main/resources/mapper/XxlJobLogMapper.xml:63-75``, ``static/js/joblog.index.1.js:96-140``).

One declaration per rule set (``formats.orth_joblog.ORTH_RULES`` / ``XXL_RULES``), three users: the reference
replay (``rules.status_of``), the numpy fast path (``rules.status_index``) and the SQL of Spark and the databases
(``rules.status_sql``). The properties below hold them equal on random rows of both tables, and hold xxl-job's
rule set to upstream's SQL written out by hand.
"""
from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")
pytest.importorskip("pyarrow")

from tests.conftest import examples  # noqa: E402
from tests.engine.orth_joblog.test_fastpath import HEALTH, OPTS, TABLES, _as_text, _registry, assert_same  # noqa: E402
from wqtool.engine.orth_joblog import writer  # noqa: E402
from wqtool.engine.orth_joblog.format import FORMAT  # noqa: E402
from wqtool.engine.orth_joblog.rules import status_index, status_of, status_sql  # noqa: E402
from wqtool.engine.orth_joblog.serialize import row_to_jsonable, state_rows  # noqa: E402
from wqtool.formats.orth_joblog import (ALL_LABELS, COLUMN_NAMES, ORTH_RULES, RULE_SETS, XXL_RULES,  # noqa: E402
                                        create_table_sql, holds)

RULES = st.sampled_from([ORTH_RULES, XXL_RULES])
CODE = st.sampled_from([0, 200, 500, 502, -1, 404]) | st.integers(-2**31, 2**31 - 1)
PAIRS = st.lists(st.tuples(CODE, CODE), min_size=1, max_size=60)


@pytest.fixture(autouse=True)
def _fast_path_on(monkeypatch):
    monkeypatch.delenv("WQTOOL_PURE_PYTHON", raising=False)


def _declared(rules, tc: int, hc: int) -> str:
    """The declaration's meaning: the first rule whose condition ``holds``."""
    return next(s for s, c in rules.status_rules if holds(c, {"trigger_code": tc, "handle_code": hc}))


# ---------------------------------------------------------------- one declaration, three users
@given(RULES, PAIRS)
@settings(max_examples=examples(300), deadline=None)
def test_the_three_users_of_a_rule_set_agree(rules, pairs):
    want = [_declared(rules, t, h) for t, h in pairs]
    assert [status_of(t, h, rules) for t, h in pairs] == want                        # the reference replay
    cols = {"trigger_code": np.array([t for t, _ in pairs], np.int64),
            "handle_code": np.array([h for _, h in pairs], np.int64)}
    assert [ALL_LABELS[i] for i in status_index(cols, rules)] == want                # the fast path
    db = sqlite3.connect(":memory:")                                                 # the SQL (Spark's, the DBs')
    db.execute("CREATE TABLE t (k INTEGER, trigger_code INTEGER, handle_code INTEGER)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(k, t, h) for k, (t, h) in enumerate(pairs)])
    got = [s for (s,) in db.execute(f"SELECT {status_sql(rules=rules)} FROM t ORDER BY k")]
    assert got == want
    assert set(want) <= set(rules.labels)


# ---------------------------------------------------------------- xxl-job's rules are upstream's
@given(CODE, CODE)
@settings(max_examples=examples(300), deadline=None)
def test_xxl_labels_are_the_admin_list_filters(tc, hc):
    """XxlJobLogMapper.xml:63-75 (3.2.0), by hand: logStatus 1 Success, 2 Fail, 3 Running. A row's label names
    exactly the filters that list it."""
    listed = set()
    if hc == 200:                                                        # :63-65
        listed.add("Success")
    if tc not in (0, 200) or hc not in (0, 200):                         # :66-71
        listed.add("Fail")
    if tc == 200 and hc == 0:                                            # :72-75
        listed.add("Running")
    want = {frozenset(): "init", frozenset({"Success"}): "success", frozenset({"Fail"}): "failed",
            frozenset({"Running"}): "running", frozenset({"Success", "Fail"}): "success+fail"}[frozenset(listed)]
    assert status_of(tc, hc, XXL_RULES) == want
    # joblog.index.1.js:98-108 (Trigger Result) and :127-139 (Handle Result): labels, blank for 0, else the code
    assert XXL_RULES.trigger_result(tc) == {200: "success", 500: "fail", 0: ""}.get(tc, str(tc))
    assert XXL_RULES.handle_result(hc) == {200: "Success", 500: "Fail", 502: "Timeout", 0: ""}.get(hc, str(hc))
    assert ORTH_RULES.trigger_result(tc) is None and ORTH_RULES.handle_result(hc) is None


def test_the_two_tables_disagree_where_upstream_does():
    """The rows Orth and xxl-job show differently (hand-checked against both admins' sources)."""
    cases = {(200, 0): ("pending", "running"), (0, 0): ("init", "init"), (0, 500): ("init", "failed"),
             (500, 0): ("trigger-failed", "failed"), (500, 200): ("success", "success+fail"),
             (200, 502): ("timeout", "failed"), (200, 500): ("failed", "failed"), (0, 200): ("init", "success")}
    for (tc, hc), (orth, xxl) in cases.items():
        assert (status_of(tc, hc, ORTH_RULES), status_of(tc, hc, XXL_RULES)) == (orth, xxl), (tc, hc)


# ---------------------------------------------------------------- whole tables of both kinds
def _sql_counts(rows, rules) -> dict:
    db = sqlite3.connect(":memory:")
    db.execute(create_table_sql("t", mysql=False).replace("PRIMARY KEY", ""))
    db.executemany(f"INSERT INTO t ({', '.join(COLUMN_NAMES)}) VALUES ({', '.join('?' * len(COLUMN_NAMES))})",
                   [tuple(r[c] for c in COLUMN_NAMES) for r in rows])
    return dict(db.execute(f"SELECT {status_sql(rules=rules)} AS s, count(*) FROM t GROUP BY s").fetchall())


@given(TABLES, RULES)
@settings(max_examples=examples(80), deadline=None, suppress_health_check=HEALTH)
def test_random_table_of_each_kind_fast_equals_reference_equals_sql(tmp_path_factory, rows, rules):
    d = tmp_path_factory.mktemp("flav")
    _registry(d, "csv")
    path = d / f"{rules.table}.csv"
    path.write_bytes(writer.csv_bytes(_as_text(rows)))
    log = FORMAT.discover([str(path)], OPTS)[0]
    assert log.table == rules.table
    ref = assert_same(log)
    assert ref.state.ctx.rules is rules
    kept, seen = [], set()
    for r in rows:                                   # the rows the table holds: valid, first of each id
        if len(r["executor_sharding_param"] or "") <= 20 and r["id"] not in seen:
            seen.add(r["id"])
            kept.append(r)
    by_status = {k: v for k, v in ref.state.tally.by_status.items() if v}
    assert by_status == _sql_counts(kept, rules)
    assert set(ref.state.counts_by_state()) == set(rules.labels)


# ---------------------------------------------------------------- which table: detected from the source
ROW_VALUES = ("1, 1, 7, 'http://x/', 'h', NULL, NULL, 0, '2026-01-28 01:00:00', 500, 'no route', "
              "'2026-01-28 01:00:03', 200, 'ok', 0")
XXL_COLS = [c for c in COLUMN_NAMES if c != "schedule_time"]


def _write(p, text):
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("make,table", [
    (lambda d: _write(d / "backup.sql", "CREATE TABLE `xxl_job_group` (`id` int);\n"
                      f"INSERT INTO `xxl_job_log` ({', '.join('`' + c + '`' for c in XXL_COLS)}) VALUES "
                      f"({ROW_VALUES});\n"), "xxl_job_log"),
    (lambda d: _write(d / "backup.sql", f"INSERT INTO `orth_job_log` ({', '.join(XXL_COLS)}) VALUES ({ROW_VALUES});\n"),
     "orth_job_log"),
    (lambda d: _write(d / "xxl_job_log.csv", ",".join(XXL_COLS) + "\n"
                      + "1,1,7,http://x/,h,,,0,2026-01-28 01:00:00,500,no route,2026-01-28 01:00:03,200,ok,0\n"),
     "xxl_job_log"),
    (lambda d: _write(d / "part-00000.csv", ",".join(XXL_COLS) + "\n"
                      + "1,1,7,http://x/,h,,,0,2026-01-28 01:00:00,500,no route,2026-01-28 01:00:03,200,ok,0\n")
     and str(d), "orth_job_log"),
], ids=["dump-xxl_job_log", "dump-orth_job_log", "xxl_job_log.csv", "part-csv-dir"])
def test_the_table_is_detected_and_its_rules_apply(tmp_path, make, table):
    path = make(tmp_path)
    log = FORMAT.discover([path], OPTS)[0]
    assert log.table == table
    report = FORMAT.passes.run_log(log, OPTS, limit=None, state=True)
    notes = [f for f in report.findings if f.code == "OJL-TABLE"]
    rules = RULE_SETS[table]
    assert len(notes) == (table == "xxl_job_log")
    if notes:
        assert notes[0].message.startswith("rows of xxl_job_log (xxl-job's table)")
    want = {"xxl_job_log": "success+fail", "orth_job_log": "success"}[table]
    assert row_to_jsonable(report.state.rows[1])["status"] == status_of(500, 200, rules) == want   # dump
    d = next(state_rows(report.state))                                                            # replay
    assert (d["status"], d["ui_status"]) == (want, rules.ui[want])
    if table == "xxl_job_log":
        assert (d["trigger_result"], d["handle_result"]) == ("fail", "Success")
    else:
        assert "trigger_result" not in d and "handle_result" not in d


def test_a_database_table_named_xxl_job_log_is_read_by_xxl_jobs_rules(tmp_path):
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute(create_table_sql("xxl_job_log", mysql=False))
    ins = f"INSERT INTO xxl_job_log ({', '.join(XXL_COLS)}) VALUES "
    con.execute(ins + f"({ROW_VALUES})")                                                   # 500 / 200
    con.execute(ins + "(2, 1, 7, 'http://x/', 'h', NULL, NULL, 0, '2026-01-30 12:25:00', 200, 'ok', NULL, 0, "
                "NULL, 0)")                                                                 # 200 / 0
    con.commit()
    con.close()
    log = FORMAT.discover([f"sqlite:///{db}?table=xxl_job_log"], OPTS)[0]
    assert log.table == "xxl_job_log"
    report = FORMAT.passes.run_log(log, OPTS, limit=None, state=True)
    assert report.state.counts_by_state() == {"running": 1, "success+fail": 1, "success": 0, "failed": 0,
                                              "init": 0}
    rows = {d["id"]: d for d in state_rows(report.state)}
    assert (rows[1]["trigger_result"], rows[1]["handle_result"], rows[1]["ui_status"]) == \
        ("fail", "Success", "Success + Fail")
    assert (rows[2]["trigger_result"], rows[2]["handle_result"], rows[2]["ui_status"]) == ("success", "", "Running")
