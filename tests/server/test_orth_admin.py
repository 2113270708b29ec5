"""serve --orth-admin over real HTTP on loopback: the admin's update rules (§7), the token, the answers."""
from __future__ import annotations

import json
import sqlite3
import threading
import urllib.request

import pytest

from wqtool.engine.orth_joblog import writer
from wqtool.server.orth_admin import serve_orth_admin


@pytest.fixture
def admin(tmp_path):
    db = str(tmp_path / "orth_job.db")
    writer.write_sqlite(db, [
        {"id": 1, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 0,
         "trigger_time": "2026-01-30 12:00:00", "executor_address": "http://10.0.0.5:9999/"},
        {"id": 2, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 0, "handle_msg": "before",
         "trigger_time": "2026-01-30 12:00:00", "executor_address": "http://10.0.0.5:9999/"},
        {"id": 3, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 500, "handle_msg": "first",
         "handle_time": "2026-01-30 12:00:09", "trigger_time": "2026-01-30 12:00:00",
         "executor_address": "http://10.0.0.5:9999/"}])
    stop, addr = threading.Event(), []
    ready = threading.Event()
    t = threading.Thread(target=serve_orth_admin, args=("127.0.0.1", 0), kwargs=dict(
        store=db, token="s3cret", context_path="/orth-admin", ready=lambda a: (addr.append(a), ready.set()),
        stop=stop), daemon=True)
    t.start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{addr[0][1]}/orth-admin", db
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


def rows(db):
    c = sqlite3.connect(db)
    try:
        return {r[0]: r[1:] for r in c.execute('SELECT id, handle_code, handle_msg, handle_time IS NOT NULL '
                                                'FROM orth_job_log ORDER BY id')}
    finally:
        c.close()


def test_callbacks_follow_the_admin_rules(admin):
    url, db = admin
    body = [{"logId": 1, "logDateTim": 1769774400000, "handleCode": 0},          # 0: stored, stays Pending
            {"logId": 1, "logDateTim": 1769774400000, "handleCode": 200, "handleMsg": "ok"},  # then accepted
            {"logId": 2, "logDateTim": 1769774400000, "handleCode": 500, "handleMsg": "boom"},
            {"logId": 3, "logDateTim": 1769774400000, "handleCode": 200, "handleMsg": "late"},  # duplicate
            {"logId": 99, "logDateTim": 1769774400000, "handleCode": 200}]                      # no such row
    assert post(url + "/api/callback", body) == (200, b'{"code":200,"msg":"Success"}')
    assert rows(db) == {1: (200, "<br>ok", 1), 2: (500, "before<br>boom", 1), 3: (500, "first", 1)}


def test_token_and_requests_refused(admin):
    url, db = admin
    before = rows(db)
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 200}], token="nope") == \
        (200, b'{"code":500,"msg":"The access token is wrong."}')
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 200}], token=None)[0] == 400
    assert post(url + "/api/callback", b"  ")[0] == 400
    assert post(url + "/api/callback", b"[{logId:1")[0] == 400
    assert post(url + "/api/callback", {"logId": 1})[0] == 400
    assert post(url.replace("/orth-admin", "") + "/api/callback", [])[0] == 404
    assert rows(db) == before


def test_handle_msg_is_cut_to_15000_java_chars(admin):
    url, db = admin
    msg = "\U0001F600" * 8000          # 16,000 UTF-16 units
    assert post(url + "/api/callback", [{"logId": 1, "handleCode": 500, "handleMsg": msg}])[0] == 200
    stored = rows(db)[1][1]
    assert len(stored.encode("utf-16-le", "surrogatepass")) == 30000


def test_registry_beats(admin):
    url, db = admin
    beat = {"registryGroup": "EXECUTOR", "registryKey": "demo", "registryValue": "http://10.0.0.5:9999/"}
    assert post(url + "/api/registry", beat)[0] == 200
    assert post(url + "/api/registry", beat)[0] == 200
    c = sqlite3.connect(db)
    assert c.execute("SELECT count(*) FROM orth_job_registry").fetchone()[0] == 1
    assert post(url + "/api/registryRemove", beat)[0] == 200
    assert c.execute("SELECT count(*) FROM orth_job_registry").fetchone()[0] == 0
    c.close()
