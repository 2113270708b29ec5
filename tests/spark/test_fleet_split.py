"""``run_fleet`` on a single log: the log is split by job over the 2 executor slots (``split=True``; verify does
it by default, replay keeps a log whole: see ``test_replay_keeps_a_log_whole_verify_splits_it``): two kernel
shares, each replaying the jobs whose id's last byte is its own. The merged report is the local engine's —
findings in file order, counts, exit code, digest and jobs — with and without a findings limit. Logs the kernel
bails on (in either share) go through the reference pipeline with the same result."""
from __future__ import annotations

import json

import pytest

from tests.conftest import AS_OF, fixture_log
from tests.spark.conftest import as_of_ns

#: Logs with findings the kernel handles: split in two shares, both shares contribute findings.
SPLIT = ["upstream-a-run1", "upstream-b-after-clean", "upstream-a2-run2", "upstream-b-before-clean"]
#: Logs with WQ-UNKNOWN-JOB / WQ-DUPLICATE-JOB findings where one share bails: the reference path.
BAIL = ["double-lease-and-result", "duplicate-add"]


def _log(corpus, name):
    from wqtool.engine.workq.reader import discover
    [log] = discover([corpus[name]])
    return log


def _local(corpus, name, limit=None):
    from wqtool.engine.workq.verify import run_log
    return run_log(_log(corpus, name), as_of_ns(), limit=limit)


def _assert_same(fleet, local, name):
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    a, b = fleet.report, local
    assert ([finding_to_jsonable(f, CODES.of) for f in a.findings]
            == [finding_to_jsonable(f, CODES.of) for f in b.findings]), name
    assert (a.root, a.verdict, dict(a.counts), dict(a.severities), a.records, a.bytes, a.segments,
            a.last_good) == \
        (b.root, b.verdict, dict(b.counts), dict(b.severities), b.records, b.bytes, b.segments, b.last_good), name
    assert a.state.digest() == b.state.digest(), name
    assert a.state.counts_by_state() == b.state.counts_by_state(), name
    assert a.state.queues() == b.state.queues(), name
    assert a.state.applied == b.state.applied, name


def _assert_same_jobs(fleet, local, name):
    from wqtool.engine.workq.replay import digest_line
    jobs = fleet.report.state.jobs
    assert list(jobs) == sorted(local.state.jobs), name
    assert [digest_line(j) for j in jobs.values()] == [digest_line(j) for j in local.state.sorted_jobs()], name


def test_split_logs_have_findings_in_both_shares(corpus):
    """The premise of the split tests: each share of these logs runs in the kernel and reports findings of
    its own, so the driver really has two shares' findings to merge (and the others bail)."""
    from wqtool.engine.workq.fastreplay import Bail, FastReplay
    for name in SPLIT + BAIL:
        shares = []
        for k in range(2):
            fr = FastReplay(_log(corpus, name), as_of_ns(), part=k, nparts=2, keep=True)
            try:
                fr.run()
                shares.append(len(fr.findings))
            except Bail:
                shares.append(None)
        if name == "upstream-a2-run2":      # all its findings are in share 0: share 1 merges nothing
            assert shares[0] > 0 and shares[1] == 0, (name, shares)
        elif name in SPLIT:
            assert None not in shares and min(shares) > 0, (name, shares)
        else:
            assert None in shares, (name, shares)
        assert _local(corpus, name).findings   # every one of them has findings


@pytest.mark.parametrize("limit", [None, 2])
@pytest.mark.parametrize("name", SPLIT + BAIL)
def test_single_log_split_by_job_equals_local(spark, corpus, name, limit):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    said: list[str] = []
    want_jobs = limit is None       # jobs shipped back: once per log; the digest-only run with the limit
    [fl] = run_fleet(Cluster(spark), [_log(corpus, name)], as_of_ns(), limit=limit, want_jobs=want_jobs,
                     progress=said.append, split=True)
    assert "spark: 1 log(s)" in said[0] and "2 task(s) on 2 slot(s)" in said[0], said
    assert any("reference path" in m for m in said) == (name in BAIL), said
    local = _local(corpus, name, limit)
    if limit is not None:
        from collections import Counter
        from wqtool.engine.findings import quota
        assert max(Counter(quota(f) for f in local.findings).values()) <= limit    # per quota (FindingSink)
    _assert_same(fl, local, name)
    if want_jobs:
        assert fl.report.state.jobs
        _assert_same_jobs(fl, local, name)
    else:
        assert fl.report.state.jobs == {}


def test_two_logs_big_one_split_small_one_whole(spark, corpus):
    """Two logs on two slots: shares in proportion to size — upstream-a-run1 (72 KB) two, sample-clean one —
    packed into a task per slot."""
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    names = ["upstream-a-run1", "sample-clean"]
    said: list[str] = []
    fleet = run_fleet(Cluster(spark), [_log(corpus, n) for n in names], as_of_ns(), limit=1, want_jobs=True,
                      progress=said.append, split=True)
    assert "3 share(s) in 2 task(s) on 2 slot(s)" in said[0] and not any("reference path" in m for m in said), said
    for name, fl in zip(names, fleet):
        local = _local(corpus, name, 1)
        _assert_same(fl, local, name)
        _assert_same_jobs(fl, local, name)


def test_replay_keeps_a_log_whole_verify_splits_it(spark, corpus):
    """Without ``split``: a log whose state is wanted (digest, jobs) stays in one task — merging a split log's
    state on the driver costs more than the split saves —, while verify splits it over the slots."""
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    for kw, tasks in (({}, 1), ({"want_jobs": True}, 1), ({"digest": False}, 2)):
        said: list[str] = []
        [fl] = run_fleet(Cluster(spark), [_log(corpus, "upstream-a-run1")], as_of_ns(), progress=said.append, **kw)
        assert f"{tasks} share(s) in {tasks} task(s)" in said[0], (kw, said)
        if kw.get("digest", True):
            _assert_same(fl, _local(corpus, "upstream-a-run1"), "upstream-a-run1")


def test_run_fleet_without_digest_same_findings(spark, corpus):
    """``digest=False`` (what ``verify --engine spark`` asks for): no digest, the findings and counts unchanged."""
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    [fl] = run_fleet(Cluster(spark), [_log(corpus, "upstream-a-run1")], as_of_ns(), digest=False)
    local = _local(corpus, "upstream-a-run1")
    assert fl.report.state.digest() == ""
    assert ([finding_to_jsonable(f, CODES.of) for f in fl.report.findings]
            == [finding_to_jsonable(f, CODES.of) for f in local.findings])
    assert (fl.report.verdict, dict(fl.report.counts)) == (local.verdict, dict(local.counts))


@pytest.mark.parametrize("extra", [(), ("--max-findings", "2")])
def test_verify_cli_spark_equals_local_on_a_split_log(corpus, extra):
    from tests.conftest import cli
    path = corpus["upstream-a-run1"]
    assert path == "fixtures/workq/upstream-a-run1/log" or path.endswith("upstream-a-run1/log")
    local = cli("verify", "-o", "json", "--as-of", AS_OF, *extra, path)
    spark = cli("verify", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *extra, path)
    assert spark.code == local.code == 0, spark.err
    assert json.loads(spark.out) == json.loads(local.out)
    doc = json.loads(local.out)
    [log] = doc["logs"]
    assert log["counts"] == {"WQ-ADD-EXPIRED": 2, "WQ-TTL-RESET": 1, "WQ-UNKNOWN-JOB": 5}
    assert len(log["findings"]) == (8 if not extra else 2)
    with open(fixture_log("upstream-a-run1") + "/../expected-verify.json") as f:
        expected = json.load(f)["logs"][0]
    if not extra:
        assert log["findings"] == expected["findings"]
    assert "2 task(s) on 2 slot(s)" in spark.err, spark.err
