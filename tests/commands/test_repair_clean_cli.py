"""repair and clean through the CLI: --as-of last|first settled per log (every format), one verdict per PATH
(table and JSON, refusals and errors included, exit code by precedence), and what the plan report shows."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import AS_OF, ROOT, cli, fixture_log

FX = os.path.join(ROOT, "fixtures")


def _copy(src: str, dst) -> str:
    shutil.copytree(src, dst)
    for n in os.listdir(dst):
        p = os.path.join(dst, n)
        if os.path.isfile(p):
            os.chmod(p, 0o644)
    return str(dst)


# ---------------------------------------------------------------- gap 1: --as-of last|first per log
def test_repair_as_of_last_sees_what_verify_sees():
    log = fixture_log("duplicate-add")
    assert cli("verify", "-q", "--as-of", "last", log).code == 4
    r = cli("repair", "--as-of", "last", log)
    assert r.code == 4 and "WQ-DUPLICATE-JOB" in r.err and "--drop-invalid" in r.out
    doc = json.loads(cli("repair", "-o", "json", "--as-of", "last", "--drop-invalid", log).out)
    [d] = doc["logs"]
    assert doc["exit_code"] == 4 and d["cut"]["by_what"] == {"refused-record": 1}
    assert [(c["offset"], c["length"], c["code"]) for c in d["cuts"]] == [(0x82, 85, "WQ-DUPLICATE-JOB")]


def test_clean_as_of_last_is_the_logs_own_time():
    """upstream-b-before-clean's newest record is at 23:16:09.232489020: at that instant no add has expired yet
    (nothing to clean); at the wall clock every add has (two segments would go)."""
    log = fixture_log("upstream-b-before-clean")
    last = json.loads(cli("clean", "-o", "json", "--as-of", "last", log).out)["logs"][0]
    now = json.loads(cli("clean", "-o", "json", log).out)["logs"][0]
    assert last["as_of_ns"] == 1795302969232489020 and last["actions"] == [] 
    assert last["reclaimed"]["records"] == 0 and now["reclaimed"]["records"] == 9
    replayed = json.loads(cli("replay", "-o", "json", "--as-of", "last", log).out)
    assert replayed["as_of"] == "2026-11-21T23:16:09.23248902Z"


def test_repair_as_of_last_kestrel_uses_the_queues_time():
    q = os.path.join(FX, "kestrel", "torn-tail", "queue")
    a = json.loads(cli("repair", "-o", "json", "--as-of", "last", q).out)["logs"][0]
    b = json.loads(cli("repair", "-o", "json", "--as-of", "last", q).out)["logs"][0]
    now = json.loads(cli("repair", "-o", "json", q).out)["logs"][0]
    assert a["as_of_ns"] == b["as_of_ns"] < now["as_of_ns"]      # reproducible, and not the wall clock
    first = json.loads(cli("repair", "-o", "json", "--as-of", "first", q).out)["logs"][0]
    assert first["as_of_ns"] <= a["as_of_ns"]


def test_clean_as_of_last_orth_executor_logs():
    lp = os.path.join(FX, "orth", "executor-runs", "logpath")
    def executor_plan(*args):     # a logPath is two logs (its retry files first): the executor logs' plan
        logs = json.loads(cli("clean", "-o", "json", *args, lp).out)["logs"]
        return next(x for x in logs if x["format"] == "orth-executor-logs")
    now, last = executor_plan(), executor_plan("--as-of", "last")
    assert now["actions"] and not last["actions"]     # at the log's own time nothing is 30 days old yet


def test_clean_as_of_last_snaplist_current_hour():
    """stale-hours at its newest line's time (2026-01-30T03:25:10Z, in 3.msg): hour 3 is current, 2 previous, so
    the exhausted 1.msg goes; at the wall clock the current hour is whatever the clock says."""
    j = os.path.join(FX, "snaplist", "stale-hours", "journal")
    last = json.loads(cli("clean", "-o", "json", "--as-of", "last", j).out)["logs"][0]
    assert last["as_of_ns"] == 1769743510000000000
    assert (last["current_hour"], last["previous_hour"]) == (3, 2)
    assert [os.path.basename(a["file"]) for a in last["actions"]] == ["1.msg"]


@pytest.mark.parametrize("hour", range(24))
def test_snaplist_time_span_does_not_depend_on_the_clock(hour):
    """The reading order is a ring starting after the current hour of discovery; --as-of last|first must give
    the same time whatever hour the command runs at (CI once ran at 03:xx and got another file last)."""
    from wqtool.engine.format import Options, get
    fmt = get("snaplist")
    j = os.path.join(FX, "snaplist", "stale-hours", "journal")
    as_of = (1769731200 + hour * 3600) * 10**9          # 2026-01-30T<hour>:00:00Z
    log = fmt.discover([j], Options(as_of_ns=as_of))[0]
    assert fmt.passes.time_span(log) == (1769731810000000000, 1769743510000000000)


# ---------------------------------------------------------------- gap 2: one verdict per PATH
def test_repair_mixed_paths_each_get_a_section(tmp_path):
    t = _copy(fixture_log("torn-tail-mid-record"), tmp_path / "T")
    b = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "B")
    r = cli("repair", "--as-of", AS_OF, t, "/nonexistent", b)
    assert r.code == 3, r.err                             # 3 > 5 > 1
    assert f"repair {t} (workq):" in r.out and "cut 000000004.log@0x24e-0x262 (20 bytes): torn-tail" in r.out
    assert "repair /nonexistent: unreadable: no such file or directory (exit 5)" in r.out
    assert f"repair {b}: refused: " in r.out and "--salvage repairs it (exit 3)" in r.out
    assert r.out.index(t) < r.out.index("/nonexistent") < r.out.index(f"repair {b}:")
    r = cli("repair", "--as-of", AS_OF, b, t)            # a refusal does not stop the next PATH
    assert r.code == 3 and f"repair {t} (workq):" in r.out
    r = cli("repair", "--as-of", AS_OF, t, "/nonexistent")
    assert r.code == 5


def test_repair_mixed_paths_json(tmp_path):
    t = _copy(fixture_log("torn-tail-mid-record"), tmp_path / "T")
    c = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "C")
    r = cli("repair", "-o", "json", "--as-of", AS_OF, c, "/nonexistent", t)
    doc = json.loads(r.out)
    assert r.code == 3 and doc["exit_code"] == 3
    rc, rn, rt = doc["logs"]
    assert rc["root"] == c and rc["verdict"] == "refused" and rc["exit_code"] == 3 and "WQ-CRC" in rc["error"]
    assert rn == {"root": "/nonexistent", "verdict": "unreadable", "exit_code": 5,
                  "error": "no such file or directory"}
    assert rt["root"] == t and rt["exit_code"] == 1 and rt["verdict"] == "torn tail"
    assert rt["cuts"][0]["offset"] == 0x24e and rt["kept"] == [
        {"file": os.path.join(t, "000000004.log"), "offset": 8, "at": "000000004.log@0x8", "end": 0x24e,
         "records": 11, "salvaged": False}]
    r = cli("repair", "--json", "--as-of", AS_OF, c)      # a refusal alone still prints its entry
    assert r.code == 3 and json.loads(r.out)["logs"][0]["verdict"] == "refused"


def test_clean_mixed_paths(tmp_path):
    good = _copy(fixture_log("upstream-b-before-clean"), tmp_path / "G")
    c = _copy(fixture_log("crc-mismatch-mid-segment"), tmp_path / "C")
    r = cli("clean", "--as-of", AS_OF, good, "/nonexistent", c)
    assert r.code == 3
    assert f"clean {good} (workq):" in r.out and "clean /nonexistent: unreadable" in r.out \
        and f"clean {c}: refused: " in r.out and "run `wqtool repair` first" in r.out
    doc = json.loads(cli("clean", "-o", "json", "--as-of", AS_OF, "/nonexistent", good).out)
    assert doc["exit_code"] == 5 and [d["exit_code"] for d in doc["logs"]] == [5, 0]


# ---------------------------------------------------------------- gap 3: the plan report
def test_repair_report_lists_kept_and_salvaged_ranges(tmp_path):
    r = cli("repair", "--salvage", "--as-of", AS_OF, fixture_log("crc-mismatch-mid-segment"))
    assert r.code == 3
    assert "cut 000000001.log@0x11c-0x194 (120 bytes): unreadable (WQ-CRC)" in r.out
    assert "kept 000000001.log@0x8-0x11c (276 bytes): 3 record(s)\n" in r.out
    assert "kept 000000001.log@0x194-0x406 (626 bytes): 8 record(s), salvaged" in r.out
    assert "kept whole: 3 file(s)" in r.out
    # the cut add is named, with the records that now refer to a job that is not there (issue 18 item 4)
    assert ("jobs lost: ae97ba94-d0ed-482f-8f6d-05584ef8aa38 (id unverified) (add at 000000001.log@0x11c; 3 later "
            "record(s) refer "
            "to it)\n") in r.out
    assert "jobs changing state: the 1 job(s) lost above" in r.out
    doc = json.loads(cli("repair", "-o", "json", "--salvage", "--as-of", AS_OF,
                         fixture_log("crc-mismatch-mid-segment")).out)["logs"][0]
    assert doc["jobs_lost"] == [{"job_id": "ae97ba94-d0ed-482f-8f6d-05584ef8aa38", "cmd": "add",
                                 "at": "000000001.log@0x11c", "later_records": 3, "id_unverified": True}]
    assert doc["jobs_lost_unread"] == {"ranges": 0, "bytes": 0}


def test_repair_report_lists_jobs_for_every_kind_and_bounds_them():
    r = cli("repair", "--as-of", AS_OF, "--truncate-to-time", "2026-11-21T23:14:53Z", fixture_log("upstream-a-run1"))
    assert "jobs changing state: 8\n" in r.out
    assert "job 00000000-0000-4000-8000-000000000001: completed -> new" in r.out
    doc = json.loads(cli("repair", "-o", "json", "--as-of", AS_OF, "--truncate-to-time",
                         "2026-11-21T23:14:53Z", fixture_log("upstream-a-run1")).out)["logs"][0]
    assert len(doc["jobs_changed"]) == 8 and doc["jobs_changed_more"] == 0


def test_bounded_lists_say_how_many_more():
    import io
    from wqtool.render.plan import write_plan_report
    doc = {"format": "x", "root": "r", "actions": [{"file": "f", "action": "rewrite"}],
           "jobs_changed": [{"job_id": str(i), "before": "pending", "after": "absent"} for i in range(12)],
           "jobs_changed_more": 5}
    out = io.StringIO()
    write_plan_report(out, "repair", doc, as_json=False, applied=False)
    text = out.getvalue()
    assert "jobs changing state: 17\n" in text and "job 9: pending -> absent" in text \
        and "job 10:" not in text and "... and 7 more (-o json lists up to 1000)" in text


def test_kestrel_repair_after_count_is_the_installed_file(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    (d / "mail").write_bytes(bytes([2, 0, 0, 0]))      # an ADD whose size is torn: nothing is kept
    doc = json.loads(cli("repair", "-o", "json", "--format", "kestrel", str(d)).out)["logs"][0]
    assert doc["after"]["files"] == 1 and doc["after"]["records"] == 0 and doc["actions"][0]["action"] == "replace"
    r = cli("repair", "--apply", "--format", "kestrel", "--no-backup", "--quarantine", str(tmp_path / "qq"), str(d))
    assert r.code == 1, r.err
    assert sorted(n for n in os.listdir(d)) == ["mail"] and os.path.getsize(d / "mail") == 0


# ---------------------------------------------------------------- gap 5: an honest clean on a damaged log
def test_clean_on_a_torn_log_says_so():
    r = cli("clean", "--as-of", AS_OF, fixture_log("torn-tail-mid-record"))
    assert r.code == 1
    assert "already as it should be" not in r.out
    assert "nothing to clean, but the log is damaged (torn tail, exit 1): `wqtool repair" in r.out


def test_clean_apply_with_nothing_to_clean_claims_no_apply(tmp_path):
    """--apply with nothing to clean writes nothing: the report says "nothing to clean", not "applied: 0 step(s),
    re-verified" (it said both)."""
    import shutil
    log = str(tmp_path / "log")
    shutil.copytree(fixture_log("upstream-b-before-clean"), log)
    r = cli("clean", "--apply", "--as-of", "last", log)
    assert r.code == 0, r.err
    assert "nothing to clean" in r.out and "applied:" not in r.out, r.out


def test_the_exit_code_of_apply_is_documented():
    """The exit code of --apply is the input's class (1 after a torn tail is cut): --help, README, man pages."""
    import re
    from wqtool.exitcodes import APPLY_TEXT
    for cmd in ("repair", "clean"):
        text = re.sub(r"[\s│]+", " ", cli(cmd, "--help").out)
        assert "also after a successful --apply" in text, cmd
    assert "also after a successful --apply" in re.sub(r"\s+", " ", cli("verify", "--help").out.replace("│", " "))
    readme = re.sub(r"\s+", " ", open(os.path.join(ROOT, "README.md")).read())
    assert APPLY_TEXT in readme
    man = re.sub(r"\s+", " ", open(os.path.join(ROOT, "man", "wqtool-repair.1")).read())
    assert "also after a successful \\-\\-apply" in man or "also after a successful --apply" in man


def test_repair_apply_on_a_torn_tail_exits_1_then_verify_exits_0(tmp_path):
    d = _copy(fixture_log("torn-tail-mid-record"), tmp_path / "log")
    r = cli("repair", "--apply", "--as-of", AS_OF, d)
    assert r.code == 1 and "applied:" in r.out
    assert cli("verify", "-q", d).code == 0
    assert cli("repair", "--as-of", AS_OF, d).code == 0
