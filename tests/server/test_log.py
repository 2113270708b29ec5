"""The command log of ``wqtool serve``: records as workq-server writes them, a log that verifies clean and replays to
the server's own state digest, restarts that recover every job, upstream's logs served after start-up, segment
roll-over, locks shared with upstream and with ``pack --apply``, damaged logs refused."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import time

import pytest

from tests.conftest import AS_OF, ROOT, cli, fixture_log
from tests.server.conftest import Reply, jid

RECORDS_JSON = os.path.join(os.path.dirname(fixture_log("upstream-a-run1")), "records.json")


def dump_rows(path: str) -> list[dict]:
    r = cli("dump", "-o", "jsonl", "--payload", "hex", path)
    assert r.code == 0, r.err
    return [json.loads(line) for line in r.out.splitlines()[:-1]]       # the last line: the summary


def stop_digest(srv) -> tuple[str, str]:
    assert srv.stop() == 0
    err = srv.stderr_text()
    m = re.search(r"msg=stopped .*as_of=(\S+) digest=sha256:([0-9a-f]{64})", err)
    assert m, err
    return m.group(1), m.group(2)


def test_records_are_the_ones_workq_server_wrote(server_factory, tmp_path):
    """The command-driven part of upstream's A-run1 session, replayed against serve at the same clock: every
    record has the length and fields workq-server 0.2.0 wrote (A-run1.records.json)."""
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, env={"WQTOOL_SERVE_TIME": "2026-11-21T23:14:51Z"})
    c = srv.client()
    c.add(jid(1), b"q1", 5000, 3600000, b"hello", priority=5)
    c.add(jid(2), b"q1", 5000, 3600000, b"")
    c.add(jid(3), b"q1", 5000, 3600000, bytes(range(256)), priority=-3, max_attempts=2, max_fails=1)
    c.add(jid(4), b"q2", 5000, 3600000, b"\x07" * 70000)
    c.schedule(jid(5), b"q3", 1000, 60000, b"2026-11-22T00:14:53Z", b"later")
    assert c.lease([b"q1"], 1000)[0] == jid(1)
    c.complete(jid(1), b"done")
    assert c.lease([b"q1"], 1000)[0] == jid(2)
    c.fail(jid(2), b"oops")
    c.delete(jid(4))
    c.add(jid(6), b"q4", 1000, 1500, b"x" * 9)
    c.add(jid(7), b"q5", 500, 3600000, b"y" * 11, max_attempts=3)
    assert c.lease([b"q5"], 1000)[0] == jid(7)
    c.close()
    srv.stop()
    want = json.load(open(RECORDS_JSON))[:13]
    got = dump_rows(d)[:13]
    for w, g in zip(want, got):
        assert (g["cmd"], g["job_id"], g["length"], g["offset"]) == (w["record"], w["id"], w["length"], w["offset"])
        for k_w, k_g in (("name", "name"), ("ttr_ms", "ttr_ms"), ("ttl_ms", "ttl_ms"), ("priority", "priority"),
                         ("max_attempts", "max_attempts"), ("max_fails", "max_fails"),
                         ("payload_len", "payload_len")):
            if k_w in w:
                assert g[k_g] == w[k_w], (w, g)
        if "result" in w:
            assert bytes.fromhex(g["result"]) == w["result"].encode()
    sched = got[4]
    assert sched["scheduled"] == "2026-11-22T00:14:53Z"


def test_log_verifies_clean_and_replays_to_the_servers_digest(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, "-cmdlog-seg-size", "2000")
    c, w = srv.client(), srv.client()
    for i in range(40):
        c.add(jid(0x9000 + i), b"dg-%d" % (i % 3), 200 if i % 5 == 0 else 60000, 600000 if i % 7 else 400,
              b"p%d" % i * (i % 4), priority=i % 4 - 1, max_attempts=i % 3)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)).encode()
    c.schedule(jid(0x9100), b"dg-s", 1000, 60000, when, b"future")
    for _ in range(25):
        j = w.lease([b"dg-0", b"dg-1", b"dg-2"], 100)
        n = int(j[0][-4:], 16) - 0x9000
        if n % 3 == 0:
            w.complete(j[0], b"r%d" % n)
        elif n % 3 == 1:
            w.fail(j[0], b"")
    c.delete(jid(0x9001))
    with pytest.raises(Reply):
        c.run(jid(0x9200), b"dg-run", 1000, 10, b"r")      # nobody leases it: -TIMEOUT, job removed
    time.sleep(0.6)                                        # TTR (200 ms) and TTL (400 ms) timers fire
    as_of, digest = stop_digest(srv)
    v = cli("verify", d)
    assert v.code == 0, v.out
    r = cli("replay", "-o", "json", "--as-of", as_of, d)
    assert json.loads(r.out)["digest"] == digest
    assert len(os.listdir(d)) > 3                          # rolled over (2000-byte segments) + the lock files


@pytest.mark.slow
def test_restart_recovers_every_job(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, "-cmdlog-sync", "always")
    c = srv.client()
    c.add(jid(0xa001), b"rs", 60000, 600000, b"new")
    c.add(jid(0xa002), b"rs-l", 60000, 600000, b"leased", priority=9)
    c.add(jid(0xa003), b"rs-c", 60000, 600000, b"done")
    c.add(jid(0xa004), b"rs-f", 60000, 600000, b"failed", max_attempts=5)
    c.add(jid(0xa005), b"rs-d", 60000, 600000, b"deleted")
    c.add(jid(0xa006), b"rs-p", 150, 600000, b"pending", max_attempts=4)
    t_short = time.monotonic()
    c.add(jid(0xa007), b"rs-t", 60000, 6000, b"short ttl")
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)).encode()
    c.schedule(jid(0xa008), b"rs-s", 1000, 60000, when, b"sched", priority=-2)
    assert c.lease([b"rs-l"], 100)[0] == jid(0xa002)
    assert c.lease([b"rs-c"], 100)[0] == jid(0xa003)
    c.complete(jid(0xa003), b"result\r\nbytes")
    c.lease([b"rs-f"], 100)
    c.fail(jid(0xa004), b"nope")
    c.delete(jid(0xa005))
    c.lease([b"rs-p"], 100)
    time.sleep(0.3)                                         # rs-p's TTR expires: PENDING, 1 attempt
    ids = [jid(0xa000 + i) for i in (1, 2, 3, 4, 6, 7, 8)]
    before = {i: c.inspect_job(i) for i in ids}
    assert before[jid(0xa006)]["state"] == 3 and before[jid(0xa002)]["state"] == 4
    c.close()
    srv.kill()                                              # kill -9: nothing acknowledged may be lost
    srv2 = server_factory("-cmdlog-path", d)
    c2 = srv2.client()
    after = {i: c2.inspect_job(i) for i in ids}
    assert after == before
    with pytest.raises(Reply):
        c2.inspect_job(jid(0xa005))
    assert c2.result(jid(0xa003), 0) == (True, b"result\r\nbytes")
    assert c2.result(jid(0xa004), 0) == (False, b"nope")
    assert c2.inspect_queue(b"rs-s") == (0, 1)
    assert c2.lease([b"rs-l", b"rs-p"], 100)[0] == jid(0xa006)   # the leased job stays leased
    c2.complete(jid(0xa002), b"late")                       # ... and its worker may still complete it
    assert time.monotonic() - t_short < 5.5, "too slow to observe the TTL across the restart"
    time.sleep(max(0.0, t_short + 6.3 - time.monotonic()))
    # past its logged expiry (created + 6 s) the add-job is still there: a restart gives it a fresh TTL, as
    # upstream's (workq 0.2.0 int/cmdlog/replay.go:77-88, int/job/controller.go:163)
    assert c2.inspect_job(jid(0xa007))["ttl"] == 6000


# upstream's logs, each served at an instant shortly after it was written
UPSTREAM_AT = {
    "upstream-a-run1": "2026-11-21T23:15:20Z",
    "upstream-a2-run2": "2026-11-21T23:15:58Z",
    "upstream-b-after-clean": "2026-11-21T23:16:12Z",
    "upstream-d-single-readonly-seg": "2026-11-21T23:19:40Z",
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_AT))
def test_upstream_logs_are_served_after_start_up(server_factory, tmp_path, name):
    d = str(tmp_path / name)
    shutil.copytree(fixture_log(name), d)
    for p in os.listdir(d):
        os.chmod(os.path.join(d, p), 0o644)
    at = UPSTREAM_AT[name]
    expected = json.loads(cli("replay", "-o", "json", "--as-of", at, d).out)["jobs"]
    srv = server_factory("-cmdlog-path", d, env={"WQTOOL_SERVE_TIME": at})
    c = srv.client()
    states = {"new": 0, "completed": 1, "failed": 2, "pending": 3, "leased": 4}
    for j in expected:
        got = c.inspect_job(j["job_id"].encode())
        assert (got["name"].decode(), got["state"], got["attempts"], got["priority"], got["ttr"], got["ttl"],
                got["payload-size"], got["max-attempts"]) == (
            j["name"], states[j["state"]], j["attempts"], j["priority"], j["ttr_ms"], j["ttl_ms"], j["payload_len"],
            j["max_attempts"]), j
        if j["result"] is not None:
            assert c.result(j["job_id"].encode(), 0)[1] == base64.b64decode(j["result"])
    ready = [j for j in expected if j["state"] in ("new", "pending") and not j["scheduled"]]
    if ready:
        q = ready[0]["name"].encode()
        got = c.lease([q], 100)
        assert got[1] == q
    c.add(jid(0xb001), b"after", 1000, 60000, b"new")
    c.close()
    as_of, digest = stop_digest(srv)
    assert cli("verify", d).code == 0
    assert json.loads(cli("replay", "-o", "json", "--as-of", as_of, d).out)["digest"] == digest


def test_segments_roll_at_the_configured_size_and_restart_appends(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, "-cmdlog-seg-size", "300")
    c = srv.client()
    for i in range(12):
        c.add(jid(0xc000 + i), b"roll", 1000, 600000, b"x" * 20)
    srv.stop()
    segs = sorted(p for p in os.listdir(d) if p.endswith(".log"))
    sizes = [os.path.getsize(os.path.join(d, p)) for p in segs]
    assert len(segs) >= 4 and all(s < 300 + 100 for s in sizes) and all(s >= 300 for s in sizes[:-1])
    srv2 = server_factory("-cmdlog-path", d, "-cmdlog-seg-size", "300")
    srv2.client().add(jid(0xc100), b"roll", 1000, 600000, b"y")
    srv2.stop()
    segs2 = sorted(p for p in os.listdir(d) if p.endswith(".log"))
    assert segs2[:len(segs) - 1] == segs[:-1]
    assert cli("verify", d).code == 0


@pytest.mark.slow
def test_a_second_server_and_pack_apply_are_locked_out(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d)
    srv.client().add(jid(0xd001), b"lk", 1000, 600000, b"x")
    from tests.server.conftest import ServerProc
    with pytest.raises(RuntimeError) as e:
        ServerProc("-cmdlog-path", d)
    assert "Timeout waiting for cmdlog lock (appender)" in str(e.value)
    r = cli("pack", "--apply", d)
    assert r.code == 5 and "append.lock is held" in r.err
    srv.stop()
    assert cli("pack", "--apply", d).code == 0             # once the server is gone


@pytest.mark.parametrize("name, code, finding", [
    ("crc-mismatch-mid-segment", 3, "WQ-CRC"),
    ("torn-tail-mid-record", 1, "WQ-TRUNCATED"),
    ("duplicate-add", 4, "WQ-DUPLICATE-JOB"),
])
def test_damaged_logs_are_refused_with_the_finding(tmp_path, name, code, finding):
    import subprocess
    import sys
    d = str(tmp_path / name)
    shutil.copytree(fixture_log(name), d)
    before = {p: open(os.path.join(d, p), "rb").read() for p in os.listdir(d)}
    env = dict(os.environ, WQTOOL_SERVE_TIME=AS_OF)        # the fixtures' era: their jobs are live
    r = subprocess.run([sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", "-cmdlog-path", d],
                       capture_output=True, text=True, timeout=30, env=env, cwd=ROOT)
    assert r.returncode == code, r.stderr
    assert finding in r.stderr and "workq-server would refuse to start" in r.stderr
    assert "Listening" not in r.stdout
    # nothing modified, nothing created: no server ever ran here (no append.lock), so no lock file is left either
    assert not any(p.endswith(".lock") for p in before)
    assert {p: open(os.path.join(d, p), "rb").read() for p in os.listdir(d)} == before


def test_an_existing_empty_directory_is_a_new_log(server_factory, tmp_path):
    """As workq-server: a -cmdlog-path made beforehand (mkdir, a volume mount) starts a new log."""
    d = tmp_path / "made-by-hand"
    d.mkdir()
    srv = server_factory("-cmdlog-path", str(d))
    srv.client().add(jid(0xe001), b"q", 1000, 600000, b"x")
    srv.stop()
    assert any(p.endswith(".log") for p in os.listdir(d)) and cli("verify", str(d)).code == 0


def test_a_thousand_segment_log_replays_well_under_two_seconds(server_factory, tmp_path):
    from wqtool.engine.workq.writer import SegmentWriter, add, result, simple
    from wqtool.formats._common import GoTime
    from wqtool.formats.workq import CmdType
    d = str(tmp_path / "log")
    now = GoTime.from_unix_ns(time.time_ns())
    with SegmentWriter(d, segment_size=400) as w:
        for i in range(3000):
            j = bytes.fromhex("00000000000040008000%012x" % i)
            w.append(add(j, f"big-{i % 7}", ttr=60000, ttl=3_600_000, created=now, payload=b"x" * 40), now)
            if i % 3 == 0:
                w.append(simple(CmdType.START_ATTEMPT, j), now)
                w.append(result(CmdType.COMPLETE, j, b"ok"), now)
    assert len([p for p in os.listdir(d) if p.endswith(".log")]) >= 1000
    t0 = time.monotonic()
    srv = server_factory("-cmdlog-path", d)
    started = time.monotonic() - t0
    c = srv.client()
    assert c.inspect_job(b"00000000-0000-4000-8000-%012x" % 2999)["payload-size"] == 40
    srv.stop()
    m = re.search(r'msg="log replayed" .*segments=(\d+) .*jobs=(\d+) elapsed_ms=([\d.]+)', srv.stderr_text())
    assert m and int(m.group(1)) >= 1000 and int(m.group(2)) == 3000
    assert float(m.group(3)) < 2000, m.group(0)
    assert started < 10                                    # process start, imports and replay, on a busy machine


@pytest.mark.slow
def test_background_cleaning_drops_dead_records_and_never_resurrects(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, "-cmdlog-seg-size", "300", "-cmdlog-clean-int", "400")
    c = srv.client()
    c.add(jid(0xe101), b"cl", 1000, 3_600_000, b"deleted later")     # spec 7.5: add + delete in one segment
    c.delete(jid(0xe101))
    for i in range(4):
        c.add(jid(0xe110 + i), b"cl-short", 1000, 200, b"short-lived")
    c.add(jid(0xe120), b"cl", 1000, 3_600_000, b"keeps")
    time.sleep(0.4)                                                     # the short ones expire (logged)
    for i in range(6):                                                  # roll: the old segments are not active
        c.add(jid(0xe130 + i), b"cl-fill", 1000, 3_600_000, b"f" * 60)
    deadline = time.monotonic() + 10
    kinds = []
    while time.monotonic() < deadline:
        time.sleep(0.5)
        kinds = [json.loads(x)["job_id"] for x in cli("dump", "-o", "jsonl", d).out.splitlines()[:-1]]
        if not any(k.endswith("e110") for k in kinds):
            break
    assert not any(k.endswith(("e110", "e111", "e112", "e113")) for k in kinds), "expired adds were not cleaned"
    as_of, digest = stop_digest(srv)
    assert re.search(r"msg=cleaned records=\d+", srv.stderr_text()), srv.stderr_text()
    assert cli("verify", d).code == 0
    assert json.loads(cli("replay", "-o", "json", "--as-of", as_of, d).out)["digest"] == digest
    srv2 = server_factory("-cmdlog-path", d)
    c2 = srv2.client()
    with pytest.raises(Reply):
        c2.inspect_job(jid(0xe101))                                     # the deleted job stays deleted
    assert c2.inspect_job(jid(0xe120))["payload"] == b"keeps"
