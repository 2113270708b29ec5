"""orth-joblog on Spark: verify, replay and stats (analytics) equal the local engine on every fixture."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT
from wqtool.commands._options import parse_time
from wqtool.engine.format import Options, resolve

FIX = os.path.join(ROOT, "fixtures", "orth-joblog")
SCENARIOS = sorted(n for n in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, n)))


def _exp(name):
    with open(os.path.join(FIX, name, "expected-verify.json"), encoding="utf-8") as f:
        return json.load(f)


def _logs(name):
    exp = _exp(name)
    opts = Options(parse_time(exp["as_of"], "--as-of"))
    return resolve(exp["paths"], "orth-joblog", opts), opts


def _key(report):
    from wqtool.engine.serialize import finding_to_jsonable
    return (report.root, report.segments, report.records, report.bytes, report.verdict, dict(report.counts),
            dict(report.severities), report.last_good, [finding_to_jsonable(f) for f in report.findings])


@pytest.mark.parametrize("name", SCENARIOS)
def test_spark_equals_local(spark, name):
    from wqtool.spark.fleet import fleet_replay, fleet_stats, fleet_verify
    logs, opts = _logs(name)
    local = [log.fmt.passes.verify([log.data], opts, max_findings=1000).logs[0] for log in logs]
    remote = fleet_verify(spark, logs, opts, max_findings=1000).logs
    assert [_key(r) for r in remote] == [_key(r) for r in local]
    view = lambda log, r: log.fmt.state_view(r.state, log.data)  # noqa: E731
    lr = logs[0].fmt.passes.run_log(logs[0].data, opts, limit=1000)
    sr = fleet_replay(spark, logs[0], opts, limit=1000)
    assert _key(sr) == _key(lr)
    lv, sv = view(logs[0], lr), view(logs[0], sr)
    assert sv.digest() == lv.digest() == _exp(name)["digest"]
    assert list(sv.rows()) == list(lv.rows())
    assert sv.analytics() == lv.analytics()
    per, jobs = fleet_stats(spark, logs, opts)
    run = logs[0].fmt.run(logs[0].data, opts, limit=0)
    from wqtool.engine.stats import RecordStats
    st = RecordStats()
    for ev in run.events():
        if ev.__class__ is logs[0].fmt.record_cls:
            st.add(logs[0].fmt.facts(ev))
    r, sst, n = per[0]
    assert view(logs[0], r).analytics() == logs[0].fmt.state_view(run.report.state).analytics()
    assert view(logs[0], r).digest() == run.report.state.digest()
    assert sst.to_jsonable() == st.to_jsonable() and n == len(st.jobs) == jobs
    assert dict(r.counts) == dict(run.report.counts)


def _generated_table(d, cross: bool = True, prefix: str = "part"):
    """3,000 rows over two Parquet parts and a CSV part: every status, duplicate ids (``cross``: across parts,
    else within each part only), lost jobs on a dead executor, one row the reference refuses (its batch / block
    takes the reference reader). ``prefix`` ``xxl_job_log``: xxl-job's table (its rules), with handle codes on
    every trigger code (xxl-job's success+fail rows)."""
    import random

    from wqtool.engine.orth_joblog import writer
    from wqtool.formats.orth_joblog import REGISTRY_COLUMN_NAMES
    rnd = random.Random(7)
    addrs = ["http://10.0.0.1:9999/", "http://10.0.0.2:9999/", "http://10.0.0.3:9999/", None]
    rows = []
    for i in range(3000):
        tc = rnd.choice([200] * 8 + [0, 500])
        hc = rnd.choice([200] * 6 + [0, 500, 502]) if tc == 200 or prefix != "part" else 0
        t = 1769776200 - rnd.randrange(3 * 86400)
        lo = 0 if cross else (0 if i < 1200 else 1200 if i < 2000 else 2000)
        rows.append({"id": lo + rnd.randrange(1, 2900 if cross else 750), "job_group": rnd.randrange(1, 4), "job_id": rnd.randrange(9),
                     "executor_address": rnd.choice(addrs), "executor_handler": rnd.choice(["a", "b", 'q"uote']),
                     "trigger_time": _dt(t), "schedule_time": _dt(t), "trigger_code": tc,
                     "handle_time": _dt(t + rnd.randrange(60)) if hc else None, "handle_code": hc,
                     "handle_msg": rnd.choice([None, "ok", "Job result lost, marked as failure"]),
                     "alarm_status": rnd.choice([0, 0, 0, 2])})
    rows[1234]["executor_sharding_param"] = "x" * 21
    writer.write_parquet(str(d / f"{prefix}-00000.parquet"), rows[:1200], row_group_size=500)
    writer.write_parquet(str(d / f"{prefix}-00001.parquet"), rows[1200:2000])
    (d / f"{prefix}-00002.csv").write_bytes(writer.csv_bytes(rows[2000:]))
    reg = [{"id": 1, "registry_group": "EXECUTOR", "registry_key": "app", "registry_value": addrs[0],
            "update_time": "2026-01-30 12:29:50"}]
    writer.write_parquet(str(d / "orth_job_registry.parquet"), reg, REGISTRY_COLUMN_NAMES)
    return str(d)


def _dt(t):
    from wqtool.engine.orth_joblog.model import format_datetime
    return format_datetime(t)


@pytest.mark.parametrize("cross,prefix", [(True, "part"), (False, "part"), (True, "xxl_job_log")],
                         ids=["ids-across-parts", "ids-within-parts", "xxl_job_log"])
def test_spark_equals_local_on_a_generated_table(spark, tmp_path, cross, prefix):
    """Several parts, the fast path's batches and a fallback; duplicate ids across parts (Spark resolves them
    over the rows) or within parts only (each task's replay is the local one): Spark == local."""
    from wqtool.engine.orth_joblog import fastpath
    from wqtool.spark.fleet import fleet_stats, fleet_verify
    opts = Options(parse_time("2026-01-30T12:30:00Z", "--as-of"))
    logs = resolve([_generated_table(tmp_path, cross, prefix)], "orth-joblog", opts)
    assert logs[0].data.table == ("xxl_job_log" if prefix == "xxl_job_log" else "orth_job_log")
    assert fastpath.available()
    local, lst = logs[0].fmt.passes.stats_log(logs[0].data, opts)
    if prefix == "xxl_job_log":
        assert {s for s, n in local.state.tally.by_status.items() if n} == {"running", "success+fail", "success",
                                                                             "failed", "init"}
    per, jobs = fleet_stats(spark, logs, opts)
    r, sst, n = per[0]
    view = logs[0].fmt.state_view
    assert view(r.state).analytics() == view(local.state).analytics()
    assert view(r.state).digest() == view(local.state).digest()
    assert sst.to_jsonable() == lst.to_jsonable() and n == jobs == len(lst.jobs)
    assert dict(r.counts) == dict(local.counts) and r.counts["OJL-DUPLICATE-ID"] > 0
    lv = logs[0].fmt.passes.verify([logs[0].data], opts, max_findings=None).logs[0]
    sv = fleet_verify(spark, logs, opts, max_findings=None).logs[0]
    assert _key(sv) == _key(lv)
