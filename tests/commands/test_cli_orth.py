"""The Orth formats through the CLI, with no command naming them: detection, dump, verify, replay, stats; snapshots
of the outputs the README shows."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, cli
from wqtool.engine import format as registry
from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options
from wqtool.engine.javacodec.gson import Entry
from tests.writers.orth_callbacks import write_retry_file

FIX = os.path.join("fixtures", "orth")
AS_OF = "2026-02-01T00:00:00Z"


@pytest.mark.parametrize("path,fmt", [
    ("clean-retry-files/logpath/callbacklogs", "orth-callbacks"),
    ("clean-retry-files/logpath/callbacklogs/orth-callback-059538ef2afe93f9bfbc272c593e5f0f.log", "orth-callbacks"),
    ("legacy-callbacklog/logpath/callbacklog", "orth-callbacks"),
    ("executor-runs/logpath/2026-01-30", "orth-executor-logs"),
    ("executor-runs/logpath/2026-01-30/100.log", "orth-executor-logs"),
    ("callbacklogs-not-a-directory/logpath/callbacklogs", "orth-callbacks"),
])
def test_detection_is_strong(in_root, path, fmt):
    f, ev = registry.detect(os.path.join(FIX, path))
    assert f.name == fmt and ev.strong, ev


@pytest.mark.parametrize("scenario", ["clean-retry-files", "executor-runs", "callbacklogs-not-a-directory",
                                      "poison-file"])
def test_a_log_path_is_both_logs(in_root, scenario):
    """A logPath holding a retry directory is the executor logs and the retry files, each claimed strongly."""
    got = registry.detect_all(os.path.join(FIX, scenario, "logpath"))
    assert [(f.name, ev.strong) for f, ev in got] == [("orth-callbacks", True), ("orth-executor-logs", True)]
    # only a legacy callbacklog/ and nothing of an executor's: the retry files alone
    got = registry.detect_all(os.path.join(FIX, "legacy-callbacklog", "logpath"))
    assert [f.name for f, _ in got] == ["orth-callbacks"]
    # ... which --format orth-executor-logs still reads (a format sharing the directory is no evidence against it)
    assert cli("verify", "--format", "orth-executor-logs", os.path.join(FIX, "legacy-callbacklog", "logpath")).code == 0


def test_verify_a_log_path_gives_the_retry_files_their_own_verdict(in_root, tmp_path):
    lp = os.path.join(FIX, "poison-file", "logpath")
    r = cli("verify", lp)
    assert r.code == 3
    assert r.out.splitlines()[0].startswith(f"{lp}/callbacklogs: 3 segment(s), 2 records, 193 bytes: CORRUPT")
    assert "OC-REJECTED" in r.out and f"{lp}: 0 segment(s), 0 records, 0 bytes: clean (exit 0)" in r.out
    assert cli("verify", "--format", "orth-executor-logs", lp).code == 0     # forced: that format only
    r = cli("verify", os.path.join(FIX, "callbacklogs-not-a-directory", "logpath"))
    assert r.code == 3 and "OC-NOT-A-DIR" in r.out
    empty = tmp_path / "lp"
    (empty / "callbacklogs").mkdir(parents=True)
    doc = json.loads(cli("verify", "-o", "json", str(empty)).out)
    assert [(x["root"], x["verdict"]) for x in doc["logs"]] == [(str(empty / "callbacklogs"), "clean"),
                                                               (str(empty), "clean")]
    s = json.loads(cli("stats", "-o", "json", lp).out)
    assert [x["root"] for x in s["logs"]] == [f"{lp}/callbacklogs", lp]
    assert cli("stats", lp).code == 3 and cli("dump", lp).code == 3


def test_clean_a_log_path_plans_each_file_once(in_root, tmp_path):
    import shutil
    lp = str(tmp_path / "lp")
    shutil.copytree(os.path.join(FIX, "clean-retry-files", "logpath"), lp)
    forced = json.loads(cli("clean", "--json", "--format", "orth-executor-logs", "--as-of", AS_OF, lp).out)["logs"][0]
    r = cli("clean", "--json", "--as-of", AS_OF, lp)
    assert r.code == 0
    docs = json.loads(r.out)["logs"]
    assert [d["format"] for d in docs] == ["orth-callbacks", "orth-executor-logs"]
    acts = [a["file"] for d in docs for a in d["actions"]]
    assert len(acts) == len(set(acts)) and sorted(acts) == sorted(a["file"] for a in forced["actions"])


def test_weak_names_are_not_claimed_strongly(tmp_path):
    p = tmp_path / "orth-callback-x.log"
    p.write_bytes(b"hello")
    assert registry.get("orth-callbacks").detect(str(p)) == registry.get("orth-callbacks").detect(str(p))
    assert not registry.get("orth-callbacks").detect(str(p)).strong
    q = tmp_path / "12.log"
    q.write_bytes(b"not a log line\n")
    assert registry.get("orth-executor-logs").detect(str(q)) is None


def test_dump_verify_replay_stats(in_root, snapshot):
    snapshot.snapshot_dir = os.path.join(os.path.dirname(__file__), "snapshots")
    lp = os.path.join(FIX, "executor-runs", "logpath")
    r = cli("dump", "--as-of", AS_OF, lp)
    assert r.code == 0
    snapshot.assert_match(r.out, "o_dump_executor.txt")
    r = cli("verify", "--as-of", AS_OF, os.path.join(FIX, "poison-file", "logpath", "callbacklogs"),
            os.path.join(FIX, "truncated-write", "logpath", "callbacklogs"))
    assert r.code == 3
    out = "\n".join(x for x in r.out.splitlines() if "upstream:" not in x)      # readdir order varies
    snapshot.assert_match(out, "o_verify_poison.txt")
    r = cli("replay", "--as-of", AS_OF, lp)
    assert r.code == 0
    snapshot.assert_match(r.out, "o_replay_executor.txt")
    r = cli("replay", "--as-of", AS_OF, os.path.join(FIX, "clean-retry-files", "logpath", "callbacklogs"))
    snapshot.assert_match(r.out, "o_replay_callbacks.txt")
    s = json.loads(cli("stats", "-o", "json", "--format", "orth-callbacks",
                       os.path.join(FIX, "clean-retry-files", "logpath")).out)
    assert s["total"]["by_type"] == {"fail": {"records": 2, "bytes": 241}, "success": {"records": 2, "bytes": 111},
                                     "timeout": {"records": 1, "bytes": 92}}
    assert s["total"]["jobs"] == 5
    r = cli("dump", "-o", "jsonl", "--type", "callback-failed,callback-error", lp)
    kinds = {json.loads(x)["kind"] for x in r.out.splitlines()[:-1]}       # the last line: the summary
    assert kinds == {"callback-failed", "callback-error"}


def test_the_same_log_id_in_two_files_is_a_duplicate(tmp_path):
    lp = str(tmp_path / "lp")
    write_retry_file(lp, [Entry(1, 1769740800000, 500, "first")])
    write_retry_file(lp, [Entry(1, 1769740800000, 200), Entry(2, 1769740800000, 200)])
    fmt = registry.get("orth-callbacks")
    (log,) = fmt.discover([lp], Options(0))
    rep = fmt.passes.run_log(log, Options(0))
    (dup,) = [f for f in rep.findings if f.code == "OC-DUPLICATE"]
    assert dup.record_index == 1 and dup.offset == 1 and rep.verdict == Verdict.CLEAN


def test_options_are_declared_and_checked(in_root, tmp_path):
    lp = os.path.join(FIX, "executor-runs", "logpath")
    assert cli("dump", "-O", "tz=Asia/Shanghai", "--since", "2026-01-30T10:40:00Z", lp).code == 0
    r = cli("dump", "-O", "tz=Mars/Olympus", lp)
    assert r.code == 2 and "unknown time zone" in r.err
    r = cli("dump", "-O", "nosuch=1", lp)
    assert r.code == 2


def test_replay_json_of_a_log_path_is_one_document():
    """A logPath is two logs: -o json is one document holding each log's replay, retry files first (as
    replay --format of each prints it)."""
    lp = os.path.join(FIX, "executor-runs", "logpath")
    r = cli("replay", "-o", "json", "--as-of", AS_OF, lp)
    doc = json.loads(r.out)
    each = [json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, "--format", f, lp).out)
            for f in ("orth-callbacks", "orth-executor-logs")]
    assert doc == {"logs": each, "exit_code": 0, "verdict": "clean"}     # the run's, after the logs' documents


def test_jdbc_option_reads_a_database_as_a_path_does():
    """--jdbc URL (the orth-joblog table in a database) gives what the URL as PATH gives, in every reading command;
    with neither PATH nor --jdbc the command says so (exit 2)."""
    db = os.path.join(ROOT, "fixtures", "orth-joblog", "sqlite-db", "orth_job.db")
    url = "sqlite:///" + db
    for argv in (["dump", "-o", "jsonl"], ["verify", "-o", "json"], ["replay", "-o", "json"], ["stats", "-o", "json"]):
        by_path, by_opt = cli(*argv, "--as-of", AS_OF, url), cli(*argv, "--as-of", AS_OF, "--jdbc", url)
        assert (by_opt.code, by_opt.out) == (by_path.code, by_path.out) and by_path.out, argv
    r = cli("stats")
    assert r.code == 2 and "Missing argument 'PATH' (or --jdbc URL)." in r.err


def test_repair_a_changed_retry_file(tmp_path):
    """issue 19: a retry file whose bytes do not hash to its name verifies CORRUPT (exit 3); `repair` plans the
    fix for it, `--apply` carries it out (the changed bytes in the quarantine) and the logPath then verifies clean."""
    lp = str(tmp_path / "logpath")
    p = write_retry_file(lp, [Entry(12345, 1769740800000, 200)])
    data = bytearray(open(p, "rb").read())
    data[data.index(b"12345") + 4] ^= 2
    open(p, "wb").write(bytes(data))
    r = cli("verify", lp)
    assert r.code == 3 and "OC-NAME-MD5" in r.out and "logId 12345 -> 12347" in r.out, r.out
    r = cli("repair", "-O", "md5_action=restore", lp)
    assert r.code == 3 and "restore" in r.out and "(plan only: nothing written" in r.out, r.out
    q = str(tmp_path / "q")
    doc = json.loads(cli("repair", "-O", "md5_action=restore", "--apply", "--quarantine", q, "--json",
                         os.path.join(lp, "callbacklogs")).out)
    (log,) = doc["logs"]
    assert log["exit_code"] == 3 and [a["action"] for a in log["actions"]] == ["restore"]
    assert cli("verify", lp).code == 0
    assert [open(os.path.join(q, n), "rb").read() for n in os.listdir(q)] == [bytes(data)]
