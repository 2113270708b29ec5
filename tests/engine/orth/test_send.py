"""replay --send: retry files delivered to a real HTTP admin on loopback; a file is deleted only after the admin
accepted it, so no callback is lost when the admin fails mid-way or the process is killed between send and
delete (duplicates are allowed: the admin ignores them)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.conftest import ROOT, cli
from tests.engine.orth.admin import Admin
from wqtool.engine import format as registry
from wqtool.engine.format import Options
from wqtool.engine.javacodec.gson import Entry
from tests.writers.orth_callbacks import write_legacy_file, write_retry_file

T = 1769740800000


def _logpath(tmp_path):
    lp = str(tmp_path / "lp")
    write_retry_file(lp, [Entry(1, T, 200), Entry(2, T, 500, "boom <br> & \u2028")])
    write_retry_file(lp, [Entry(3, T, 502, "Job execution timeout")])
    write_retry_file(lp, [Entry(4, T, 200)])
    write_legacy_file(lp, [Entry(5, T, 200, "legacy")], T + 1)
    return lp


ALL = {(1, 200, None), (2, 500, "boom <br> & \u2028"), (3, 502, "Job execution timeout"), (4, 200, None),
       (5, 200, "legacy")}


def _send(lp, url, **kw):
    fmt = registry.get("orth-callbacks")
    (log,) = fmt.discover([lp], Options(0))
    return fmt.send(log, url, Options(0, settings=kw.pop("extra", {})), **kw)


def _left(lp):
    return sorted(n for d in ("callbacklogs", "callbacklog") for n in os.listdir(os.path.join(lp, d)))


def test_everything_is_delivered_then_deleted(tmp_path):
    lp = _logpath(tmp_path)
    with Admin(token="s3cret") as admin:
        rep = _send(lp, admin.url, extra={"access_token": "s3cret"})
    assert (rep.sent, rep.failed) == (4, 0) and _left(lp) == []
    assert set(admin.callbacks()) == ALL
    assert all(h.get("orth-access-token") == "s3cret" for h in admin.headers)    # names are case-insensitive
    assert all(h.get("content-type") == "application/json;charset=UTF-8" for h in admin.headers)


def test_the_body_is_the_retry_files_bytes(tmp_path):
    lp = _logpath(tmp_path)
    files = {os.path.join(lp, "callbacklogs", n): open(os.path.join(lp, "callbacklogs", n), "rb").read()
             for n in os.listdir(os.path.join(lp, "callbacklogs"))}
    seen = []
    import urllib.request
    real = urllib.request.urlopen

    def spy(req, timeout):
        seen.append(req.data)
        return real(req, timeout=timeout)
    with Admin() as admin:
        urllib.request.urlopen = spy
        try:
            _send(lp, admin.url)
        finally:
            urllib.request.urlopen = real
    assert set(files.values()) <= set(seen)


def test_admin_fails_mid_way_nothing_is_lost(tmp_path):
    lp = _logpath(tmp_path)
    with Admin() as admin:
        admin.fail = {2}
        admin.drop = {3}
        rep = _send(lp, admin.url, extra={"timeout": "5"})
        assert (rep.sent, rep.failed) == (2, 2)
        assert len(_left(lp)) == 2                    # the refused and the dropped file stay
        rep2 = _send(lp, admin.url)                   # the admin is back
    assert (rep2.sent, rep2.failed) == (2, 0) and _left(lp) == []
    assert set(admin.callbacks()) == ALL


def test_wrong_token_and_unreachable_admin_keep_the_files(tmp_path):
    lp = _logpath(tmp_path)
    with Admin(token="right") as admin:
        rep = _send(lp, admin.url, extra={"access_token": "wrong"})
    assert rep.sent == 0 and rep.failed == 4 and len(_left(lp)) == 4
    assert "access token is wrong" in "\n".join(rep.lines)
    url = admin.url                                    # the server is closed now
    rep = _send(lp, url, extra={"timeout": "2"})
    assert rep.failed == 4 and len(_left(lp)) == 4


KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from wqtool.engine import format as registry
    from wqtool.engine.format import Options
    fmt = registry.get("orth-callbacks")
    (log,) = fmt.discover([{lp!r}], Options(0))
    posts = []
    def hook(when, label):
        if when == "after" and label.startswith("post:"):
            posts.append(label)
            if len(posts) == 2:
                os.kill(os.getpid(), signal.SIGKILL)      # after the admin's answer, before the delete
    fmt.send(log, {url!r}, Options(0, settings={settings!r}), hook=hook)
""")    # .format(root=, lp=, url=, settings=): the send's -O settings


def test_killed_between_send_and_delete_nothing_is_lost(tmp_path):
    lp = _logpath(tmp_path)
    with Admin() as admin:
        p = subprocess.run([sys.executable, "-c", KILLER.format(root=ROOT, lp=lp, url=admin.url, settings={})], timeout=60,
                           capture_output=True)
        assert p.returncode == -9, p.stderr
        assert admin.requests == 2 and len(_left(lp)) == 3     # one deleted; the second accepted but still there
        rep = _send(lp, admin.url)
    assert rep.sent == 3 and _left(lp) == []
    got = admin.callbacks()
    assert set(got) == ALL                        # nothing lost
    assert len(got) > len(set(got))               # the killed one was sent twice: a harmless duplicate


def test_refused_files_are_never_sent(tmp_path):
    lp = str(tmp_path / "lp")
    write_retry_file(lp, [Entry(1, T, 0)])                      # handleCode 0: refused
    d = os.path.join(lp, "callbacklogs")
    open(os.path.join(d, "orth-callback-" + "2" * 32 + ".log"), "wb").write(b'{"logId":1}')    # poison
    open(os.path.join(d, "orth-callback-" + "3" * 32 + ".log"), "wb").write(b"")              # empty
    with Admin() as admin:
        rep = _send(lp, admin.url)
    assert admin.requests == 0 and (rep.sent, rep.skipped, rep.failed) == (0, 1, 2)
    assert len(os.listdir(d)) == 3


def test_cli_dry_run_and_send(tmp_path):
    lp = _logpath(tmp_path)
    with Admin() as admin:
        r = cli("replay", "--send", admin.url, "--dry-run", "--format", "orth-callbacks", lp)
        assert r.code == 0 and admin.requests == 0 and len(_left(lp)) == 4
        assert "would POST 2 callback(s)" in r.out and "(dry run: nothing sent)" in r.out
        r = cli("replay", "--send", admin.url, os.path.join(lp, "callbacklogs"))
        assert r.code == 0 and "sent 3, skipped 0, failed 0" in r.out
        admin.fail = {4}
        r = cli("replay", "--send", admin.url, os.path.join(lp, "callbacklog"))
        assert r.code == 5 and "not accepted, kept" in r.out
