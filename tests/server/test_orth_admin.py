"""serve --orth-admin over real HTTP on loopback: the admin's update rules (§7), the token, the answers — stored in
SQLite (the default) and in MariaDB (``mysql://``: a private server on loopback, tests/mariadb.py; skipped with the
reason when MariaDB or PyMySQL is missing)."""
from __future__ import annotations

import json
import sqlite3
import threading
import urllib.request

import pytest

from wqtool.engine.orth_joblog import writer
from wqtool.server.orth_admin import serve_orth_admin


ROWS = [
    {"id": 1, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 0,
     "trigger_time": "2026-01-30 12:00:00", "executor_address": "http://10.0.0.5:9999/"},
    {"id": 2, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 0, "handle_msg": "before",
     "trigger_time": "2026-01-30 12:00:00", "executor_address": "http://10.0.0.5:9999/"},
    {"id": 3, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 500, "handle_msg": "first",
     "handle_time": "2026-01-30 12:00:09", "trigger_time": "2026-01-30 12:00:00",
     "executor_address": "http://10.0.0.5:9999/"}]


class SqliteStore:
    """The default storage: a SQLite file."""

    def __init__(self, tmp_path):
        self.target = str(tmp_path / "orth_job.db")
        writer.write_sqlite(self.target, ROWS)

    def query(self, sql: str) -> list[tuple]:
        c = sqlite3.connect(self.target)
        try:
            return list(c.execute(sql))
        finally:
            c.close()


class MariaDBStore:
    """``--orth-admin mysql://...``: a fresh database on the test MariaDB (tests/mariadb.py)."""

    count = 0

    def __init__(self, server):
        MariaDBStore.count += 1
        self.server, self.db = server, f"admin_{MariaDBStore.count}"
        conn = server.connect(None)
        conn.cursor().execute(f"CREATE DATABASE `{self.db}` CHARACTER SET utf8mb4")
        conn.close()
        conn = server.connect(self.db)
        try:
            writer.mysql_create(conn)
            writer.insert_rows(conn, ROWS)
        finally:
            conn.close()
        self.target = server.url("mysql", self.db)

    def query(self, sql: str) -> list[tuple]:
        conn = self.server.connect(self.db)
        try:
            cur = conn.cursor()
            cur.execute(sql.replace('"', "`"))
            return [tuple(r) for r in cur.fetchall()]
        finally:
            conn.close()


@pytest.fixture(scope="module")
def mariadb_server():
    pytest.importorskip("pymysql", reason="PyMySQL not installed (pip install 'wqtool[mysql]'): MariaDB storage "
                        "of serve --orth-admin not tested")
    from tests.mariadb import MariaDB, Unavailable
    db = MariaDB()
    try:
        db.start()
    except Unavailable as e:
        pytest.skip(f"serve --orth-admin over MariaDB not tested: {e}")
    try:
        yield db
    finally:
        db.stop()


@pytest.fixture(params=["sqlite", "mariadb"])
def admin(request, tmp_path):
    store = SqliteStore(tmp_path) if request.param == "sqlite" else \
        MariaDBStore(request.getfixturevalue("mariadb_server"))
    stop, addr = threading.Event(), []
    ready = threading.Event()
    t = threading.Thread(target=serve_orth_admin, args=("127.0.0.1", 0), kwargs=dict(
        store=store.target, token="s3cret", context_path="/orth-admin",
        ready=lambda a: (addr.append(a), ready.set()), stop=stop), daemon=True)
    t.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{addr[0][1]}/orth-admin", store
    stop.set()
    t.join(10)
    assert not t.is_alive()


def post(url, body, token="s3cret"):
    req = urllib.request.Request(url, data=body if isinstance(body, bytes) else json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json;charset=UTF-8"})
    if token is not None:
        req.add_header("ORTH-ACCESS-TOKEN", token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def rows(store):
    return {r[0]: tuple(r[1:]) for r in store.query('SELECT id, handle_code, handle_msg, handle_time IS NOT NULL '
                                                    'FROM orth_job_log ORDER BY id')}


def test_callbacks_follow_the_admin_rules(admin):
    url, store = admin
    body = [{"logId": 1, "logDateTim": 1769774400000, "handleCode": 0},          # 0: stored, stays Pending
            {"logId": 1, "logDateTim": 1769774400000, "handleCode": 200, "handleMsg": "ok"},  # then accepted
            {"logId": 2, "logDateTim": 1769774400000, "handleCode": 500, "handleMsg": "boom"},
            {"logId": 3, "logDateTim": 1769774400000, "handleCode": 200, "handleMsg": "late"},  # duplicate
            {"logId": 99, "logDateTim": 1769774400000, "handleCode": 200}]                      # no such row
    assert post(url + "/api/callback", body) == (200, b'{"code":200,"msg":"Success"}')
    assert rows(store) == {1: (200, "<br>ok", 1), 2: (500, "before<br>boom", 1), 3: (500, "first", 1)}


def test_token_and_requests_refused(admin):
    url, store = admin
    before = rows(store)
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 200}], token="nope") == \
        (200, b'{"code":500,"msg":"The access token is wrong."}')
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 200}], token=None)[0] == 400
    assert post(url + "/api/callback", b"  ")[0] == 400
    assert post(url + "/api/callback", b"[{logId:1")[0] == 400
    assert post(url + "/api/callback", {"logId": 1})[0] == 400
    assert post(url.replace("/orth-admin", "") + "/api/callback", [])[0] == 404
    assert rows(store) == before


def test_handle_msg_is_cut_to_15000_java_chars(admin):
    url, store = admin
    msg = "\U0001F600" * 8000          # 16,000 UTF-16 units
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 500, "handleMsg": msg}])[0] == 200
    stored = rows(store)[1][1]
    assert len(stored.encode("utf-16-le", "surrogatepass")) == 30000


def test_registry_beats(admin):
    url, store = admin
    beat = {"registryGroup": "EXECUTOR", "registryKey": "demo", "registryValue": "http://10.0.0.5:9999/"}
    assert post(url + "/api/registry", beat)[0] == 200
    assert post(url + "/api/registry", beat)[0] == 200
    count = 'SELECT count(*) FROM orth_job_registry'
    assert store.query(count)[0][0] == 1
    assert post(url + "/api/registryRemove", beat)[0] == 200
    assert store.query(count)[0][0] == 0
