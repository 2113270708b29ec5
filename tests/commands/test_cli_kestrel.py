"""The CLI over Kestrel journals and `wqtool pack` (Kestrel half): snapshots, exit codes, golden rows."""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from tests.conftest import ROOT, cli

KF = os.path.join(ROOT, "fixtures", "kestrel")
AS_OF = "2026-11-21T23:30:00Z"
SCENARIOS = sorted(n for n in os.listdir(KF) if os.path.isdir(os.path.join(KF, n)))


@pytest.mark.parametrize("argv,name", [
    (["dump", "fixtures/kestrel/clean-journal/queue"], "k_dump_table.txt"),
    (["dump", "--qdump", "-d", "fixtures/kestrel/clean-journal/queue"], "k_qdump.txt"),
    (["dump", "--qdump", "-Q", "fixtures/kestrel/rotated-set-with-pack/queue"], "k_qdump_queue.txt"),
    (["verify", "fixtures/kestrel/torn-tail/queue"], "k_verify_torn.txt"),
    (["verify", "fixtures/kestrel/stray-names/queue"], "k_verify_stray.txt"),
    (["replay", "fixtures/kestrel/rotated-set-with-pack/queue"], "k_replay.txt"),
    (["replay", "--keep-open", "-o", "json", "fixtures/kestrel/rotated-set-with-pack/queue"], "k_replay_open.json"),
    (["pack", "fixtures/kestrel/rotated-set-with-pack/queue"], "k_pack_plan.txt"),
])
def test_kestrel_cli_snapshots(in_root, snapshot, argv, name):
    r = cli(*argv, "--as-of", AS_OF)
    snapshot.snapshot_dir = os.path.join(os.path.dirname(__file__), "snapshots")
    out = r.out.replace("elapsed_s", "elapsed_s")
    out = "\n".join(l for l in out.splitlines() if not l.strip().startswith("time:")) + "\n"
    snapshot.assert_match(f"exit {r.code}\n--- stdout\n{out}--- stderr\n{r.err}", name)


@pytest.mark.parametrize("name", SCENARIOS)
def test_dump_jsonl_matches_the_kestrel_golden_rows(in_root, name):
    exp = os.path.join(KF, name, "expected.jsonl")
    if not os.path.exists(exp):
        pytest.skip("no expected rows")
    r = cli("dump", "-o", "jsonl", "--format", "kestrel", "--as-of", AS_OF, f"fixtures/kestrel/{name}/queue")
    got = [json.loads(l) for l in r.out.splitlines()]
    assert set(got.pop()) == {"summary"}          # the stream's last line: the run's summary
    want = [json.loads(l) for l in open(exp) if not l.startswith('{"summary"')]
    want_records = [w for w in want if w.get("error") is None]
    assert [g for g in got if g.get("error") is None] == want_records


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("keep_open", [False, True])
def test_replay_digest_matches_the_kestrel_golden_state(in_root, name, keep_open):
    """Every queue of every scenario replays, at the fixture's own time, to the digest and exit code that
    scripts/make_kestrel_fixtures.py recorded (``digest`` / ``digest_keep_open``)."""
    want = json.load(open(os.path.join(KF, name, "expected-replay.json")))
    ns = want["as_of_ns"]
    as_of = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"
    [q] = want["queues"]            # one queue per scenario directory
    path = os.path.join("fixtures", "kestrel", name, "queue")
    argv = ["replay", "-o", "json", "--summary", "--format", "kestrel", "--as-of", as_of, path] + (
        ["--keep-open"] if keep_open else [])
    r = cli(*argv)
    assert r.code == q["exit_code"], r.err
    got = json.loads(r.out)
    assert got["queue"] == q["queue"]
    assert got["digest"] == q["digest_keep_open" if keep_open else "digest"]


def test_auto_detects_kestrel_and_workq_side_by_side(in_root):
    r = cli("verify", "-q", "--as-of", AS_OF, "fixtures/kestrel/clean-journal/queue", "fixtures/workq/sample-clean/log")
    assert r.code == 0


def test_pack_kestrel_writes_a_new_file_and_refuses_to_overwrite(tmp_path, in_root):
    out = tmp_path / "out"
    out.mkdir()
    r = cli("pack", "--as-of", AS_OF, "--out", str(out), "fixtures/kestrel/rotated-set-with-pack/queue")
    assert r.code == 0 and "re-verified, replay digest equal" in r.out
    packed = out / "jobs"
    a = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, "fixtures/kestrel/rotated-set-with-pack/queue").out)
    b = json.loads(cli("replay", "-o", "json", "--format", "kestrel", "--as-of", AS_OF, str(packed)).out)
    assert a["digest"] == b["digest"]
    r2 = cli("pack", "--as-of", AS_OF, "--out", str(packed), "fixtures/kestrel/rotated-set-with-pack/queue")
    assert r2.code != 0 and "Traceback" not in r2.err


def test_pack_refuses_corruption_unless_salvage(in_root, tmp_path):
    r = cli("pack", "--as-of", AS_OF, "fixtures/kestrel/damage-mid-live/queue")
    assert r.code == 3 and "refusing to pack corruption" in r.err and r.err.count("\n") == 1
    r = cli("pack", "--salvage", "--as-of", AS_OF, "--out", str(tmp_path), "fixtures/kestrel/damage-mid-live/queue")
    assert r.code == 3 and "dropped:" in r.out   # written, but the exit code reports the input's damage, as verify


@pytest.mark.parametrize("path,code", [("fixtures/kestrel/torn-tail/queue", 1),
                                       ("fixtures/workq/torn-tail-mid-record/log", 1),
                                       ("fixtures/workq/sample-clean/log", 0)])
def test_pack_exit_code_is_the_inputs_verdict(in_root, path, code):
    """pack (plan only, or writing) exits with the input's damage class exactly as verify does."""
    assert cli("verify", "-q", "--as-of", AS_OF, path).code == code
    assert cli("pack", "--as-of", AS_OF, path).code == code


def test_pack_apply_kestrel_in_place(tmp_path, in_root):
    d = tmp_path / "queue"
    shutil.copytree(os.path.join(KF, "rotated-set-with-pack", "queue"), d)
    before = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, str(d)).out)["digest"]
    r = cli("pack", "--apply", "--as-of", AS_OF, str(d))
    assert r.code == 0, r.err
    after = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, str(d)).out)["digest"]
    assert before == after
    assert cli("verify", "-q", "--as-of", AS_OF, str(d)).code == 0


# ---------------------------------------------------------------- wqtool pack, workq half (engine: tests/engine/test_pack_workq.py)
def test_workq_pack_plan_snapshot(in_root, snapshot):
    r = cli("pack", "--as-of", AS_OF, "fixtures/workq/sample-clean/log")
    snapshot.snapshot_dir = os.path.join(os.path.dirname(__file__), "snapshots")
    out = "\n".join(l for l in r.out.splitlines() if not l.strip().startswith("time:")) + "\n"
    snapshot.assert_match(f"exit {r.code}\n--- stdout\n{out}--- stderr\n{r.err}", "w_pack_plan.txt")


def test_workq_pack_output_and_apply_keep_the_digest(tmp_path, in_root):
    src = tmp_path / "log"
    shutil.copytree(os.path.join(ROOT, "fixtures", "workq", "sample-clean", "log"), src)
    digest = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, str(src)).out)["digest"]
    r = cli("pack", "--as-of", AS_OF, "--out", str(tmp_path / "packed"), str(src))
    assert r.code == 0, r.err
    assert json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, str(tmp_path / "packed")).out)["digest"] == digest
    r = cli("pack", "--as-of", AS_OF, "--apply", "--json", str(src))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["installed"]["backup"] and os.path.isdir(doc["installed"]["backup"])
    assert json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, str(src)).out)["digest"] == digest
    assert cli("verify", "-q", "--as-of", AS_OF, str(src)).code == 0


@pytest.mark.parametrize("name,code", [("crc-mismatch-mid-segment", 3), ("duplicate-add", 4)])
def test_workq_pack_refuses_damage_unless_salvage(in_root, name, code):
    r = cli("pack", "--as-of", AS_OF, f"fixtures/workq/{name}/log")
    assert r.code == code and r.err.count("\n") == 1 and "--salvage" in r.err
    r = cli("pack", "--salvage", "--json", "--as-of", AS_OF, f"fixtures/workq/{name}/log")
    assert r.code == code and json.loads(r.out)["dropped"]
