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
    local = [log.fmt.verify([log.data], opts, max_findings=1000).logs[0] for log in logs]
    remote = fleet_verify(spark, logs, opts, max_findings=1000).logs
    assert [_key(r) for r in remote] == [_key(r) for r in local]
    view = lambda log, r: log.fmt.state_view(r.state, log.data)  # noqa: E731
    lr = logs[0].fmt.run_log(logs[0].data, opts, limit=1000)
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
