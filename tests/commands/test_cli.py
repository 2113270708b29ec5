"""The CLI end to end: golden snapshots of dump/verify/replay, exit codes, one-line errors."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import AS_OF, ALL_WORKQ, cli
from wqtool.engine.findings import Verdict

A2 = "fixtures/workq/upstream-a2-run2/log"
SAMPLE = "fixtures/workq/sample-clean/log"


@pytest.mark.parametrize("argv,name", [
    (["dump", A2], "dump_table.txt"),
    (["dump", "-o", "json", "--payload", "text", A2], "dump_json.json"),
    (["dump", "-o", "hex", "--limit", "2", A2], "dump_hex.txt"),
    (["dump", "--stats", SAMPLE], "dump_stats.txt"),
    (["dump", "--type", "add,complete", "--job", "00000000-0000-4000-8000-000000000103", A2], "dump_filtered.txt"),
    (["verify", A2], "verify_table.txt"),
    (["verify", "-o", "json", A2], "verify_json.json"),
    (["verify", "fixtures/workq/crc-mismatch-mid-segment/log"], "verify_crc_table.txt"),
    (["verify", "-o", "jsonl", "fixtures/workq/torn-tail-mid-record/log"], "verify_torn.jsonl"),
    (["replay", A2], "replay_table.txt"),
    (["replay", "-o", "json", A2], "replay_json.json"),
    (["replay", "-o", "jsonl", SAMPLE], "replay_jsonl.jsonl"),
])
def test_cli_snapshots(in_root, snapshot, argv, name):
    r = cli(*argv, "--as-of", AS_OF)
    snapshot.snapshot_dir = os.path.join(os.path.dirname(__file__), "snapshots")
    snapshot.assert_match(f"exit {r.code}\n--- stdout\n{r.out}--- stderr\n{r.err}", name)


@pytest.mark.parametrize("name", ALL_WORKQ)
def test_golden_dump_matches_expected_jsonl(in_root, name):
    rel = f"fixtures/workq/{name}"
    r = cli("dump", "-o", "jsonl", "--payload", "base64", "--as-of", AS_OF, rel + "/log")
    assert r.out == open(os.path.join(rel, "expected.jsonl"), encoding="utf-8").read()
    v = cli("verify", "-o", "json", "--as-of", AS_OF, "--max-findings", "1000", rel + "/log")
    assert v.out == open(os.path.join(rel, "expected-verify.json"), encoding="utf-8").read()
    # dump exits with the verify code
    assert r.code == v.code == json.loads(v.out)["exit_code"]


EXPECTED_EXIT = {
    "sample-clean": 0, "torn-tail-mid-record": 1, "junk-appended": 1, "empty-newest-segment": 1,
    "crc-mismatch-mid-segment": 3, "bad-header-middle-segment": 3, "duplicate-add": 4, "unknown-command": 4,
    "double-lease-and-result": 4,
}


@pytest.mark.parametrize("name,code", sorted(EXPECTED_EXIT.items()))
@pytest.mark.parametrize("command", ["verify", "dump", "replay"])
def test_exit_code_per_command(in_root, name, code, command):
    r = cli(command, "--as-of", AS_OF, f"fixtures/workq/{name}/log", *(["-q"] if command == "verify" else []))
    assert r.code == code
    if command == "verify":
        assert r.out == "" and r.err == ""  # --quiet


def test_damaged_dump_prints_everything_readable_and_the_finding_at_its_offset(in_root):
    r = cli("dump", "-o", "jsonl", "--as-of", AS_OF, "fixtures/workq/crc-mismatch-mid-segment/log")
    rows = [json.loads(l) for l in r.out.splitlines()]
    clean = [json.loads(l) for l in open("fixtures/workq/sample-clean/expected.jsonl")]
    assert len(rows) == len(clean) - 1
    assert r.err.count("\n") == 1 and "WQ-CRC" in r.err and "000000001.log@0x" in r.err
    assert r.code == 3


@pytest.mark.parametrize("argv,code,needle", [
    (["verify", "/nonexistent/dir"], 5, "/nonexistent/dir: no such file or directory"),
    (["dump", "/nonexistent/000000001.log"], 5, "no such file or directory"),
    (["verify", "--as-of", "yesterday", A2], 2, "--as-of: expected RFC 3339"),
    (["dump", "--type", "launch", A2], 2, "--type: unknown command 'launch'"),
    (["dump", "--job", "nope", A2], 2, "--job: not a UUID"),
    (["verify", "-o", "yaml", A2], 2, "yaml"),
    (["frobnicate"], 2, "frobnicate"),
])
def test_usage_and_io_errors_are_one_line(in_root, argv, code, needle):
    r = cli(*argv)
    assert r.code == code
    assert needle in r.err
    assert "Traceback" not in r.err


def test_directory_without_segments(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    r = cli("verify", str(tmp_path))
    assert r.code == 2 and r.err.count("\n") == 1 and "no log found in this directory" in r.err, r.err
    r = cli("verify", "--format", "workq", str(tmp_path))       # the forced format says what it expected
    assert r.code == 2 and r.err.count("\n") == 1 and "not a workq log directory" in r.err, r.err


def test_fresh_directory_with_only_lock_files_is_an_empty_clean_log(tmp_path):
    (tmp_path / "append.lock").touch()
    (tmp_path / "read.lock").touch()
    r = cli("verify", str(tmp_path))
    assert r.code == 0 and "WQ-NO-SEGMENTS" in r.out


def test_non_log_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some text\n")
    r = cli("dump", str(p))
    assert r.code == 2 and "cannot detect the log format" in r.err and r.err.count("\n") == 1


def test_ignored_files_are_reported_not_skipped(tmp_path, copy_log):
    d = copy_log("upstream-a2-run1")
    for n in ("00000002.log", "000000002.log.rw", "000000003.LOG", "x.log"):
        open(os.path.join(d, n), "wb").close()
    r = cli("verify", "-o", "json", d)
    doc = json.loads(r.out)
    ignored = sorted(os.path.basename(f["file"]) for f in doc["logs"][0]["findings"] if f["code"] == "WQ-IGNORED-FILE")
    assert ignored == ["000000002.log.rw", "000000003.LOG", "00000002.log", "x.log"]
    assert r.code == 0


def test_unreadable_file_is_an_io_error(tmp_path, copy_log, monkeypatch):
    d = copy_log("upstream-a2-run1")
    seg = os.path.join(d, "000000001.log")
    real_open = os.open

    def deny(path, *a, **k):
        if os.fspath(path) == seg:
            raise PermissionError(13, "Permission denied", seg)
        return real_open(path, *a, **k)
    monkeypatch.setattr(os, "open", deny)   # running as root: a chmod would not deny
    r = cli("verify", d)
    assert r.code == 5 and "000000001.log: permission denied" in r.err and "Traceback" not in r.err


def test_internal_errors_are_one_line_unless_traceback(monkeypatch):
    import wqtool.engine.workq.verify as v
    monkeypatch.setattr(v, "verify", lambda *a, **k: 1 / 0)
    r = cli("verify", A2)
    assert r.code == 70 and "internal error: ZeroDivisionError" in r.err and "Traceback" not in r.err
    r = cli("--traceback", "verify", A2)
    assert "Traceback" in r.err


def test_max_findings_caps_the_list_not_the_counts(in_root):
    r = cli("verify", "-o", "json", "--max-findings", "2", "--as-of", "2026-11-23T00:00:00Z",
            "fixtures/workq/upstream-a-run1/log")
    lg = json.loads(r.out)["logs"][0]
    assert len(lg["findings"]) == 2 and lg["omitted_findings"] == sum(lg["counts"].values()) - 2


def test_as_of_forms(in_root):
    a = json.loads(cli("replay", "-o", "json", "--as-of", "2026-11-21T23:30:00Z", A2).out)["digest"]
    b = json.loads(cli("replay", "-o", "json", "--as-of", "1795303800", A2).out)["digest"]
    c = json.loads(cli("replay", "-o", "json", "--as-of", "2026-11-22T00:30:00+01:00", A2).out)["digest"]
    assert a == b == c and len(a) == 64


def test_horizon_pins_sizes(tmp_path, copy_log):
    d = copy_log("upstream-a2-run1")
    from wqtool.engine.workq.reader import discover
    log = discover([d], horizon=True)[0]
    seg = log.segments[0].path
    with open(seg, "ab") as f:
        f.write(b"\x01\x02\x03")  # the log grows (a torn append in progress) after start
    from wqtool.engine.workq.verify import run_log
    assert run_log(log, 0).verdict == Verdict.CLEAN
    assert run_log(discover([d])[0], 0).verdict == Verdict.TORN_TAIL


def test_version():
    from wqtool import __version__
    r = cli("--version")
    assert r.code == 0 and r.out.strip() == f"wqtool {__version__}"
