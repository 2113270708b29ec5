"""clean for an executor logPath: Orth's retention rule exactly (lenient date names, < 3 disables, gluesource/ and
callbacklogs/ untouched) and retry files already acknowledged; the plan, its apply, and a crash at every step."""
from __future__ import annotations

import datetime as dt
import os

import pytest

from wqtool.engine import format as registry
from wqtool.engine.format import Options
from wqtool.engine.javacodec.gson import Entry
from tests.writers.orth_callbacks import write_retry_file
from wqtool.engine.orth_executor_logs.clean import expired, finish_interrupted, lenient_date
from tests.writers.orth_executor_logs import ExecutorLogWriter
from wqtool.engine.plan import InjectedCrash

NOW = int(dt.datetime(2026, 3, 10, 12, tzinfo=dt.timezone.utc).timestamp()) * 10**9
T = 1769740800000      # 2026-01-30


@pytest.mark.parametrize("name,date", [
    ("2026-01-30", dt.date(2026, 1, 30)), ("2026-01-30.bak", dt.date(2026, 1, 30)),
    ("2026-02-30", dt.date(2026, 3, 2)), ("2026-13-01", dt.date(2027, 1, 1)), ("2026-1-5", dt.date(2026, 1, 5)),
    ("2026-00-00", dt.date(2025, 11, 30)), (" 2026- 01- 30", dt.date(2026, 1, 30)), ("26-01-30", dt.date(26, 1, 30)),
    ("2026--1-01", dt.date(2025, 11, 1)), ("logs-old", None), ("2026-01", None), ("-", None), ("+2026-01-30", None),
])
def test_lenient_simple_date_format(name, date):
    assert lenient_date(name) == date


def test_the_retention_comparison():
    today = dt.date(2026, 3, 10)
    assert expired(dt.date(2026, 2, 7), today, 30)            # 02-07 + 30 = 03-09 < 03-10
    assert not expired(dt.date(2026, 2, 8), today, 30)        # 02-08 + 30 = 03-10, not after it


def _logpath(tmp_path):
    lp = str(tmp_path / "lp")
    w = ExecutorLogWriter(lp)
    for day in (0, 1, 5, 39):                               # 2026-01-30, 01-31, 02-04, 03-10
        ms = T + day * 86_400_000
        w.start(day, ms, ms + 1000)
        w.finish(day, ms, ms + 2000)
        w.callback(day, ms, ms + 3000, "success")
    os.makedirs(os.path.join(lp, "2026-01-29.bak"))          # lenient: 01-29
    open(os.path.join(lp, "2026-01-29.bak", "1.log"), "w").close()
    os.makedirs(os.path.join(lp, "logs-old"))                # cannot be parsed: never cleaned
    os.makedirs(os.path.join(lp, "gluesource"))
    open(os.path.join(lp, "gluesource", "1_1.sh"), "w").close()
    # job 7 failed its callback, then a later attempt succeeded: its retry file is a leftover
    w.start(7, T, T + 1000)
    w.finish(7, T, T + 2000)
    w.callback(7, T, T + 3000, "failed")
    w.callback(7, T, T + 60_000, "success")
    delivered = write_retry_file(lp, [Entry(7, T, 200)])
    # job 8: the failure is the last word: pending, kept
    w.start(8, T, T + 1000)
    w.finish(8, T, T + 2000, 500, "x")
    w.callback(8, T, T + 3000, "failed")
    pending = write_retry_file(lp, [Entry(8, T, 500, "x")])
    return lp, delivered, pending


def _plan(lp, days="30"):
    fmt = registry.get("orth-executor-logs")
    (log,) = fmt.discover([lp], Options(NOW))
    return fmt.plans.clean(log, Options(NOW, settings={"retention_days": days}))


def test_the_plan_and_its_apply(tmp_path):
    lp, delivered, pending = _logpath(tmp_path)
    plan = _plan(lp)
    doc = plan.report_doc()
    assert [os.path.basename(d["path"]) for d in doc["delete_dirs"]] == ["2026-01-29.bak", "2026-01-30",
                                                                         "2026-01-31", "2026-02-04"]
    assert [d["path"] for d in doc["delete_files"]] == [delivered]
    assert any("logs-old" in k for k in doc["kept"])
    assert set(os.listdir(lp)) >= {"2026-01-30", "callbacklogs"}      # nothing written by planning
    res = plan.apply()
    assert sorted(os.listdir(lp)) == ["2026-03-10", "callbacklogs", "gluesource", "logs-old"]
    assert os.listdir(os.path.join(lp, "callbacklogs")) == [os.path.basename(pending)]
    assert res.steps == plan.apply_steps()


def test_below_three_days_disables_the_cleaner(tmp_path):
    lp, delivered, _ = _logpath(tmp_path)
    plan = _plan(lp, days="2")
    assert plan.dirs == [] and "disabled" in plan.notes[0]
    assert [f.path for f in plan.files] == [delivered]       # delivered retry files are still leftovers


def test_a_crash_at_every_step_loses_nothing_it_should_keep(tmp_path):
    base, _, _ = _logpath(tmp_path / "model")
    steps = _plan(base).apply_steps()
    assert len(steps) == 9
    want = ["2026-03-10", "callbacklogs", "gluesource", "logs-old"]
    for i, label in enumerate(steps):
        for when in ("before", "after", "during"):
            if when == "during" and not label.startswith("remove:"):
                continue
            lp, _, pending = _logpath(tmp_path / f"{i}-{when}")
            with pytest.raises(InjectedCrash):
                _plan(lp).apply(fail_at=f"{when}:{label}")
            # what must stay is there whatever happened
            for keep in want:
                assert os.path.isdir(os.path.join(lp, keep)), (label, when, keep)
            assert os.path.exists(pending)
            # the next run finishes the job
            _plan(lp).apply()
            assert sorted(os.listdir(lp)) == want, (label, when)
            assert finish_interrupted(lp) == []


def test_a_directory_that_changed_since_the_plan_is_not_deleted(tmp_path):
    lp, _, _ = _logpath(tmp_path)
    plan = _plan(lp)
    d = os.path.join(lp, "2026-01-30")
    os.rename(d, d + ".moved")
    os.makedirs(d)                                    # another directory under the planned name
    with pytest.raises(Exception, match="changed since the plan"):
        plan.apply()
    assert os.path.isdir(d)


@pytest.mark.parametrize("rule,tz,deleted", [
    ("orth", "UTC", []),
    ("xxl-job-3.2", "UTC", ["2026-02-13"]),          # 30 days of ms between the midnights: deleted a day earlier
    ("xxl-job-3.2", "Asia/Shanghai", ["2026-02-13"]),   # no DST: the same in any zone without a change
])
def test_retention_rule_per_release(tmp_path, rule, tz, deleted):
    """issue 19: xxl-job <= 3.2 deletes when today - date >= N x 86,400,000 ms (3.2.0 JobLogFileCleanThread.java:77),
    one day earlier than Orth's today > date + N days; the plan and its JSON name the rule applied."""
    lp = str(tmp_path / "lp")
    for d in ("2026-02-13", "2026-02-14"):
        os.makedirs(os.path.join(lp, d))
        open(os.path.join(lp, d, "1.log"), "w").close()
    fmt = registry.get("orth-executor-logs")
    as_of = int(dt.datetime(2026, 3, 15, 10, tzinfo=dt.timezone.utc).timestamp()) * 10**9
    opts = Options(as_of, settings={"retention_rule": rule, "tz": tz})
    doc = fmt.plans.clean(fmt.discover([lp], opts)[0], opts).report_doc()
    assert [os.path.basename(a["path"]) for a in doc["delete_dirs"]] == deleted
    assert doc["retention_rule"] == rule and any(f"retention rule {rule}" in x for x in doc["lines"])


def test_xxl_job_3_2_rule_counts_milliseconds_across_a_dst_change():
    berlin = __import__("zoneinfo").ZoneInfo("Europe/Berlin")
    # 2026-03-29 is Berlin's spring-forward: 03-01 -> 03-31 is 30 days minus one hour of milliseconds
    assert not expired(dt.date(2026, 3, 1), dt.date(2026, 3, 31), 30, "xxl-job-3.2", berlin)
    assert expired(dt.date(2026, 3, 1), dt.date(2026, 3, 31), 30, "xxl-job-3.2", dt.timezone.utc)
    assert expired(dt.date(2026, 3, 1), dt.date(2026, 4, 1), 30, "xxl-job-3.2", berlin)
    assert not expired(dt.date(2026, 3, 1), dt.date(2026, 3, 31), 30, "orth", berlin)
