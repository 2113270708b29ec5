"""replay --send -O admin_release=xxl-job-2.0: callbacks to an xxl-job 2.0.0-2.1.0 admin over xxl-rpc.

The request is checked byte for byte against real Hessian (Debian libhessian-java 4.0.38) writing the upstream
field layout (java_rpc/: XxlRpcRequest as xxl-rpc 1.4.0 XxlRpcRequest.java:11-23, HandleCallbackParam as 2.1.0
HandleCallbackParam.java:8-14), and read back by that Hessian as upstream's admin does (ServletServerHandler.java:84-91,
XxlRpcProviderFactory.java:185-233). The loopback admin (rpc_admin.py) then plays the admin for the delivery tests:
a file is deleted only after ReturnT 200; a refusal, an HTTP error or an unreadable answer keeps it; a kill between
the call and the delete loses nothing."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import ROOT, cli
from tests.engine.orth.rpc_admin import RpcAdmin
from tests.engine.orth.test_send import ALL, KILLER, T, _left, _logpath
from wqtool.engine import format as registry
from wqtool.engine.format import Options
from wqtool.engine.javacodec.gson import Entry
from wqtool.engine.orth_callbacks.xxlrpc import decode_request, decode_response, encode_request, encode_response

HERE = os.path.dirname(os.path.abspath(__file__))
FMT = registry.get("orth-callbacks")
RPC = {"admin_release": "xxl-job-2.0"}


def _send(lp, url, **kw):
    (log,) = FMT.discover([lp], Options(0))
    return FMT.send(log, url, Options(0, settings={**RPC, **kw.pop("extra", {})}), **kw)


# ---------------------------------------------------------------- the bytes, against real Hessian
class Java:
    def __init__(self, classes: str, jar: str):
        self.cmd = ["java", "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-cp", f"{classes}:{jar}", "RpcOracle"]

    def run(self, *args: str) -> list[str]:
        r = subprocess.run([*self.cmd, *args], capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        return r.stdout.decode("utf-8").split("\n")[:-1]


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    jars = sorted(glob.glob("/usr/share/java/hessian*.jar"))
    if shutil.which("javac") is None or not jars:
        pytest.skip("the xxl-rpc oracle needs javac (JDK 17) and Hessian (apt-get install libhessian-java)")
    out = str(tmp_path_factory.mktemp("rpc-oracle"))
    srcs = [os.path.join(dp, n) for dp, _, ns in os.walk(os.path.join(HERE, "java_rpc")) for n in ns
            if n.endswith(".java")]
    r = subprocess.run(["javac", "-nowarn", "-cp", jars[0], "-d", out, *srcs], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return Java(out, jars[0])


CASES = [
    [Entry(12345, T, 200, None), Entry(2, T + 1, 500, "boom \u00e9 <br> \u2028")],
    [Entry(i * 977, T + i, 200 if i % 3 else 500, None if i % 2 else f"m{i}") for i in range(9)],   # 'X' list, refs
    [Entry(1 << 40, -1, 502, "x" * 1500 + "\U0001F600")],                      # a long logId, 'S' string, surrogates
]


def _args(entries):
    return [a for e in entries for a in (str(e.log_id), str(e.log_date_tim), str(e.handle_code),
                                         "-" if e.handle_msg is None else e.handle_msg)]


@pytest.mark.slow
@pytest.mark.parametrize("k", range(len(CASES)))
def test_request_is_what_real_hessian_writes_and_the_admin_reads(tmp_path, java, k):
    entries = CASES[k]
    ours = encode_request(entries, token="s3cret", request_id="5d2c1b6e-0000-4000-8000-000000000001", millis=T)
    java.run("request", str(tmp_path / "req.bin"), "5d2c1b6e-0000-4000-8000-000000000001", str(T), "s3cret",
             *_args(entries))
    assert ours == (tmp_path / "req.bin").read_bytes()
    (tmp_path / "ours.bin").write_bytes(ours)
    lines = java.run("admin", str(tmp_path / "ours.bin"), "s3cret", str(tmp_path / "resp.bin"), "200")
    assert lines[0] == f"request 5d2c1b6e-0000-4000-8000-000000000001 {T} s3cret com.xxl.job.core.biz.AdminBiz " \
                       "callback null"
    java_msg = ["null" if e.handle_msg is None else e.handle_msg for e in entries]
    assert lines[1:] == [f"{e.log_id} {e.log_date_tim} {e.handle_code} {m}" for e, m in zip(entries, java_msg)]
    resp = (tmp_path / "resp.bin").read_bytes()
    assert resp == encode_response("5d2c1b6e-0000-4000-8000-000000000001", code=200)
    assert decode_response(resp, "5d2c1b6e-0000-4000-8000-000000000001").accepted


@pytest.mark.slow
def test_real_admin_answers_refusals_the_executor_does_not_accept(tmp_path, java):
    rid = "5d2c1b6e-0000-4000-8000-000000000002"
    (tmp_path / "req.bin").write_bytes(encode_request(CASES[0], token="wrong", request_id=rid, millis=T))
    java.run("admin", str(tmp_path / "req.bin"), "s3cret", str(tmp_path / "bad-token.bin"))
    java.run("admin", str(tmp_path / "req.bin"), "-", str(tmp_path / "fail.bin"), "500", "database down")
    bad, fail = (tmp_path / "bad-token.bin").read_bytes(), (tmp_path / "fail.bin").read_bytes()
    assert bad == encode_response(rid, error="The access token[wrong] is wrong.")
    assert fail == encode_response(rid, code=500, msg="database down")
    assert decode_response(bad, rid).said == "refused: The access token[wrong] is wrong."
    assert decode_response(fail, rid).said == "refused: ReturnT code=500 msg='database down'"
    assert not decode_response(bad, rid).accepted and not decode_response(fail, rid).accepted


# ---------------------------------------------------------------- properties
_text = st.one_of(st.none(), st.text(max_size=40))
_entry = st.builds(Entry, st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1),
                   st.integers(-(1 << 31), (1 << 31) - 1), _text)


@settings(max_examples=150, deadline=None)
@given(st.lists(_entry, max_size=20), _text, st.text(max_size=40), st.integers(0, 1 << 45))
def test_request_round_trips(entries, token, rid, millis):
    req = decode_request(encode_request(entries, token=token, request_id=rid, millis=millis))
    assert (req.request_id, req.millis, req.token, req.class_name, req.method, req.version, req.param_types) == \
        (rid, millis, token, "com.xxl.job.core.biz.AdminBiz", "callback", None, ["java.util.List"])
    assert [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in req.entries] == \
        [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in entries]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.integers(-(1 << 31), (1 << 31) - 1), _text, _text)
def test_response_round_trips(rid, code, msg, error):
    ans = decode_response(encode_response(rid, code=code, msg=msg, error=error), rid)
    assert ans.accepted == (code == 200 and error is None)
    assert decode_response(encode_response(rid, code=200), rid + "x").accepted is False     # another request's


def test_an_answer_that_is_no_response_is_not_accepted():
    for data in (b"", b"com.xxl.rpc.util.XxlRpcException: xxl-rpc request data is empty.\n\tat ...",
                 encode_response("r", code=200)[:-3], encode_request([], token=None, request_id="r", millis=0)):
        ans = decode_response(data, "r")
        assert not ans.accepted and ans.said.startswith(("HTTP 200 but not an XxlRpcResponse", "refused"))


# ---------------------------------------------------------------- delivery
def test_everything_is_delivered_then_deleted(tmp_path):
    lp = _logpath(tmp_path)
    with RpcAdmin(token="s3cret") as admin:
        rep = _send(lp, admin.url, extra={"access_token": "s3cret"})
    assert (rep.sent, rep.failed, rep.target) == (4, 0, admin.url + "/api")
    assert _left(lp) == [] and set(admin.callbacks()) == ALL and admin.requests == 4
    assert all("content-type" not in h and "orth-access-token" not in h for h in admin.headers)   # token inside
    assert {r.token for r in admin.requests_seen} == {"s3cret"}
    assert len({r.request_id for r in admin.requests_seen}) == 4


def test_the_2_1_hessian_release_goes_back_to_its_own_admin(tmp_path):
    lp = str(tmp_path / "lp")
    shutil.copytree(os.path.join(ROOT, "fixtures", "orth-xxl-job", "xxl-job-2-1-hessian", "logpath"), lp)
    with RpcAdmin() as admin:
        rep = _send(lp, admin.url)
    assert rep.failed == 0 and rep.sent >= 1
    assert sorted((lid, code) for lid, code, _ in admin.callbacks()) == [(41, 200), (42, 500), (43, 200)]
    assert os.listdir(os.path.join(lp, "callbacklog")) == []


def test_the_2_0_0_jackson_file_goes_back_to_its_own_admin(tmp_path):
    """2.0.0 / 2.0.1 executors reach the admin through xxl-rpc too (JETTY transport, the same Hessian request):
    their one Jackson file, xxl-job-callback.log, is redelivered and removed once the admin accepted it."""
    lp = str(tmp_path / "lp")
    shutil.copytree(os.path.join(ROOT, "fixtures", "orth-xxl-job", "xxl-job-2-0-0-jackson", "logpath"), lp)
    want = json.load(open(os.path.join(ROOT, "fixtures", "orth-xxl-job", "xxl-job-2-0-0-jackson", "expected.json")))
    with RpcAdmin() as admin:
        rep = _send(lp, admin.url)
    assert rep.failed == 0 and rep.sent >= 1
    got = sorted((lid, code) for lid, code, _ in admin.callbacks())
    assert got and len(got) == len(set(got))
    assert not os.path.exists(os.path.join(lp, "xxl-job-callback.log"))
    ids = {e.get("log_id", e.get("logId")) for e in _entries(want)}
    assert {lid for lid, _ in got} == ids


def _entries(doc):
    """The callback entries an expected.json lists, whatever its nesting."""
    if isinstance(doc, dict):
        if "log_id" in doc or "logId" in doc:
            return [doc]
        return [e for v in doc.values() for e in _entries(v)]
    if isinstance(doc, list):
        return [e for v in doc for e in _entries(v)]
    return []


def test_refusal_http_error_and_garbage_keep_the_files(tmp_path):
    lp = _logpath(tmp_path)
    with RpcAdmin(token="right") as admin:
        rep = _send(lp, admin.url, extra={"access_token": "wrong"})
        assert (rep.sent, rep.failed) == (0, 4) and len(_left(lp)) == 4
        assert all("not accepted, kept: refused: The access token[wrong] is wrong." in ln for ln in rep.lines)
        admin.token = None
        admin.http_error, admin.garbage, admin.fail = {5}, {6}, {7}
        rep = _send(lp, admin.url)
        assert (rep.sent, rep.failed) == (1, 3) and len(_left(lp)) == 3
        said = "\n".join(rep.lines)
        assert "kept: HTTP 502" in said and "kept: HTTP 200 but not an XxlRpcResponse" in said
        assert "kept: refused: ReturnT code=500 msg='database down'" in said
        rep = _send(lp, admin.url)                    # the admin is back
    assert (rep.sent, rep.failed) == (3, 0) and _left(lp) == [] and set(admin.callbacks()) == ALL
    rep = _send(lp, admin.url, extra={"timeout": "2"})          # closed now: nothing left to send anyway
    assert rep.sent == rep.failed == 0


def test_unreachable_admin_keeps_the_files(tmp_path):
    lp = _logpath(tmp_path)
    with RpcAdmin() as admin:
        url = admin.url
    rep = _send(lp, url, extra={"timeout": "2"})
    assert rep.failed == 4 and len(_left(lp)) == 4 and all("not delivered: " in ln for ln in rep.lines)


def test_killed_between_call_and_delete_nothing_is_lost(tmp_path):
    lp = _logpath(tmp_path)
    with RpcAdmin() as admin:
        script = KILLER.format(root=ROOT, lp=lp, url=admin.url, settings={"admin_release": "xxl-job-2.0"})
        p = subprocess.run([sys.executable, "-c", script], timeout=60,
                           capture_output=True)
        assert p.returncode == -9, p.stderr
        assert admin.requests == 2 and len(_left(lp)) == 3     # one deleted; the second accepted but still there
        rep = _send(lp, admin.url)
    assert rep.sent == 3 and _left(lp) == []
    got = admin.callbacks()
    assert set(got) == ALL and len(got) == len(ALL) + len(admin.received[1])   # the killed call twice, nothing lost


def test_cli_dry_run_send_and_refusal(tmp_path):
    lp = _logpath(tmp_path)
    with RpcAdmin(token="right") as admin:
        r = cli("replay", "--send", admin.url, "-O", "admin_release=xxl-job-2.0", "--dry-run", lp)
        assert r.code == 0 and admin.requests == 0 and len(_left(lp)) == 4
        assert f"to {admin.url}/api (xxl-rpc AdminBiz.callback)" in r.out and "(dry run: nothing sent)" in r.out
        r = cli("replay", "--send", admin.url, "-O", "admin_release=xxl-job-2.0", "-O", "access_token=wrong",
                os.path.join(lp, "callbacklogs"))
        assert r.code == 5 and "not accepted, kept: refused: The access token[wrong] is wrong." in r.out
        assert len(_left(lp)) == 4
        r = cli("replay", "--send", admin.url, "-O", "admin_release=xxl-job-2.0", "-O", "access_token=right", lp)
        assert r.code == 0 and "sent 4, skipped 0, failed 0" in r.out and _left(lp) == []
        r = cli("replay", "--send", admin.url, "-O", "admin_release=xxl-job-2.1", lp)
    assert r.code == 2 and "xxl-job-2.0" in r.err


def test_2_1_1_admins_take_the_2_2_body_with_their_token_header(tmp_path):
    """2.1.1-2.1.2 executors post JSON (2.1.1 AdminBizClient.java:35-36, XxlJobRemotingUtil.java:46-57): the 2.2.0
    body to /api/callback, the token in XXL-RPC-ACCESS-TOKEN (XxlJobRemotingUtil.java:20,
    JobApiController.java:44-46)."""
    from tests.engine.orth.admin import Admin
    lp = _logpath(tmp_path)
    with Admin() as admin:
        rep = FMT.send(FMT.discover([lp], Options(0))[0], admin.url,
                       Options(0, settings={"admin_release": "xxl-job-2.2", "access_token": "s3cret",
                                         "access_token_header": "XXL-RPC-ACCESS-TOKEN"}))
    assert (rep.sent, rep.failed) == (4, 0) and _left(lp) == []
    assert {h.get("xxl-rpc-access-token") for h in admin.headers} == {"s3cret"}
    assert {(c["logId"], c["executeResult"]["code"]) for body in admin.received for c in body} == \
        {(lid, code) for lid, code, _ in ALL}
