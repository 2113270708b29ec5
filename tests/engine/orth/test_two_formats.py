"""The two Orth executor-side formats share a logPath but no code (``engine/orth_callbacks``,
``engine/orth_executor_logs``; import-linter's independence contract): each declares the ``-O`` settings it reads,
and where one needs the other's files or settings it goes through the registry. What crosses that line arrives:
the executor replay's retry-file references, clean's delivered retry files, the executor's retention in the retry
files' clean plan, and the interrupted clean the retry files' format finishes."""
from __future__ import annotations

import json
import os

from tests.conftest import cli
from tests.engine.orth.test_clean import NOW, _logpath
from wqtool.engine import format as registry
from wqtool.engine.format import Options

AS_OF = "2026-03-10T12:00:00Z"      # test_clean's NOW


def test_each_format_declares_the_settings_it_reads():
    cb, ex = registry.get("orth-callbacks"), registry.get("orth-executor-logs")
    assert set(cb.settings.options()) == {"access_token", "access_token_header", "timeout", "admin_release",
                                          "md5_action"}
    assert set(ex.settings.options()) == {"tz", "retention_days", "retention_rule"}


def test_the_executor_replay_reads_the_retry_files_through_the_registry(tmp_path):
    lp, delivered, pending = _logpath(tmp_path)
    fmt = registry.get("orth-executor-logs")
    (log,) = fmt.discover([lp], Options(NOW))
    run = fmt.run(log, Options(NOW))
    for _ in run.events():
        pass
    rows = {r["log_id"]: r for r in fmt.state_view(run.report.state).rows()}
    assert rows[8]["retry_files"] == [os.path.basename(pending)]
    assert rows[7]["retry_files"] == [os.path.basename(delivered)]
    assert [f.path for f in run.report.findings if f.code == "OE-RETRY-PENDING"] == [rows[7]["file"], rows[8]["file"]]


def test_a_shared_log_path_the_retry_files_plan_takes_the_executor_settings(tmp_path):
    lp, delivered, pending = _logpath(tmp_path)
    r = cli("clean", "--json", "--as-of", AS_OF, "-O", "tz=Asia/Shanghai", "-O", "retention_days=5",
            "-O", "retention_rule=xxl-job-3.2", lp)
    assert r.code == 0, r.err
    cb, ex = json.loads(r.out)["logs"]
    assert (cb["format"], ex["format"]) == ("orth-callbacks", "orth-executor-logs")
    for doc in (cb, ex):
        assert (doc["tz"], doc["retention_days"], doc["retention_rule"]) == ("Asia/Shanghai", 5, "xxl-job-3.2")
    assert cb["delete_dirs"] == [] and [f["path"] for f in cb["delete_files"]] == [delivered]
    assert ex["delete_files"] == [] and len(ex["delete_dirs"]) == 4
    assert "delivered retry files: the plan of this logPath's orth-callbacks log" in ex["notes"]


def test_the_retry_files_alone_get_the_executor_formats_whole_plan(tmp_path):
    lp, delivered, pending = _logpath(tmp_path)
    r = cli("clean", "--json", "--as-of", AS_OF, "--format", "orth-callbacks", os.path.join(lp, "callbacklogs"))
    assert r.code == 0, r.err
    (doc,) = json.loads(r.out)["logs"]
    assert doc["format"] == "orth-executor-logs" and doc["root"] == lp
    assert [f["path"] for f in doc["delete_files"]] == [delivered] and len(doc["delete_dirs"]) == 4


def test_the_retry_files_format_finishes_an_interrupted_clean(tmp_path):
    lp, _, _ = _logpath(tmp_path)
    hidden = os.path.join(lp, ".wqtool-clean-2026-01-30")
    os.makedirs(hidden)
    assert registry.get("orth-callbacks").plans.finish_interrupted(lp) == [hidden]
    assert not os.path.exists(hidden)
