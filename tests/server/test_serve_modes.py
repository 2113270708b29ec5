"""``wqtool serve --fastjournal DIR`` and ``wqtool serve --orth-admin STORE``: the same command, real processes on
loopback, stopped by SIGTERM (exit 0) — and the option checks that keep the modes apart."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from wqtool.engine.fastjournal.client import Client, parse_value
from wqtool.engine.orth_joblog import writer

from tests.conftest import ROOT, jsonl_rows

URI = b"http://example.com/blog"


def wqtool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wqtool", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


@pytest.mark.slow
def test_fastjournal_mode_serves_journals_and_restarts(server_factory, tmp_path):
    d = str(tmp_path / "fifo")
    s = server_factory("--fastjournal", d, "--journal-sync", "write")
    with Client(*s.addr, timeout=5) as c:
        assert c.set(URI, 10, 1_769_741_110_000_000, 1_769_741_110_000_000).error == b""
        assert c.set(b"http://example.com/later", 5, 1_769_741_110_000_000, 1).error == b""
        r = c.next(timeout=300_000_000)
        assert r.error == b"" and r.pairs[0][0] == b"http://example.com/later"
    assert s.stop() == 0
    assert "per the unimplemented libfastjournal design" in s.stderr_text()
    assert "fastjournal: stopped" in s.stderr_text()

    # the journal is a fastjournal log for every command: two sets and the worked-on mark
    dump = wqtool("dump", "-o", "jsonl", d)
    assert dump.returncode == 0, dump.stderr
    ops = [r["op"] for r in jsonl_rows(dump.stdout)]
    assert ops == ["set", "set", "mark"]
    assert wqtool("verify", "--quiet", d).returncode == 0

    s2 = server_factory("--fastjournal", d)
    with Client(*s2.addr, timeout=5) as c:
        r = c.get(URI)
        assert r.error == b"" and parse_value(r.pairs[0][2]) == (10, 1_769_741_110_000_000)
        # a second server on the same journal is refused while the first holds it
        busy = wqtool("serve", "--fastjournal", d, "-listen", "127.0.0.1:0", timeout=30)
        assert busy.returncode != 0
        assert len(busy.stderr.strip().splitlines()) == 1 and "Traceback" not in busy.stderr
        assert d in busy.stderr
    assert s2.stop() == 0


def _post(url: str, body, token: str | None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json;charset=UTF-8"})
    if token is not None:
        req.add_header("ORTH-ACCESS-TOKEN", token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_orth_admin_mode_stores_callbacks(server_factory, tmp_path):
    db = str(tmp_path / "orth_job.db")
    writer.write_sqlite(db, [{"id": 1, "job_group": 1, "job_id": 7, "trigger_code": 200, "handle_code": 0,
                              "trigger_time": "2026-01-30 12:00:00",
                              "executor_address": "http://10.0.0.5:9999/"}])
    s = server_factory("--orth-admin", db, "--context-path", "/orth-admin", "--access-token", "s3cret")
    base = f"http://{s.addr[0]}:{s.addr[1]}/orth-admin/api/callback"
    item = [{"logId": 1, "logDateTim": 1769774409000, "handleCode": 200, "handleMsg": "ok"}]
    assert _post(base, item, "wrong") == (200, b'{"code":500,"msg":"The access token is wrong."}')
    assert _post(base, item, "s3cret") == (200, b'{"code":200,"msg":"Success"}')
    assert s.stop() == 0
    assert "storing callbacks in" in s.stderr_text() and "orth-admin: stopped" in s.stderr_text()
    c = sqlite3.connect(db)
    try:
        assert c.execute("SELECT handle_code, handle_msg FROM orth_job_log WHERE id = 1").fetchone() == (200, "ok")
    finally:
        c.close()


@pytest.mark.slow
def test_modes_refuse_each_others_options(tmp_path):
    cases = [
        (["--fastjournal", str(tmp_path / "a"), "--orth-admin", str(tmp_path / "b.db")], "choose one server"),
        (["--fastjournal", str(tmp_path / "a"), "-cmdlog-path", str(tmp_path / "c")], "-cmdlog-path"),
        (["--fastjournal", str(tmp_path / "a"), "--context-path", "/x"], "--context-path: not an option of"),
        (["--orth-admin", str(tmp_path / "b.db"), "--journal-sync", "full"], "--journal-sync: not an option of"),
        (["--journal-sync", "full"], "only with --fastjournal or --orth-admin"),
        (["--fastjournal", str(tmp_path / "a"), "--journal-sync", "sometimes"], "expected full or write"),
        (["--fastjournal", str(tmp_path / "a"), "-listen", "nowhere"], "expected HOST:PORT"),
    ]
    for args, message in cases:
        r = wqtool("serve", *args, timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "a").exists()          # nothing created by a refused start


def test_unknown_single_dash_flags_get_workq_servers_message(tmp_path):
    """workq-server (Go's flag package): ``flag provided but not defined: -bogus`` + usage, exit 2; the check
    skips the values of known flags (a value may start with '-'), and nothing is created."""
    from tests.conftest import cli
    hint = "Usage: wqtool serve [OPTIONS]\nTry 'wqtool serve -h' for help.\n"
    for args, flag in ((["-bogus"], "-bogus"), (["-bogus=1"], "-bogus"),
                       (["-listen", "127.0.0.1:0", "-cmdlog-path", str(tmp_path / "d"), "-nope"], "-nope"),
                       (["-cmdlog-sync", "-x", "-y"], "-y")):
        r = cli("serve", *args)
        assert (r.code, r.err) == (2, f"flag provided but not defined: {flag}\n{hint}"), args
    r = cli("serve", "--bogus")                      # a double-dash option keeps click's message
    assert r.code == 2 and "No such option: --bogus" in r.err
    assert not (tmp_path / "d").exists()
    r = wqtool("serve", "-bogus", timeout=30)        # the console script, end to end
    assert r.returncode == 2 and r.stderr.startswith("flag provided but not defined: -bogus\n")
