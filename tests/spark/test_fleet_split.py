"""``run_fleet`` on a single log: the log is split by job over the 2 executor slots (``split=True``; verify does
it by default, replay keeps a log whole: see ``test_replay_keeps_a_log_whole_verify_splits_it``): two kernel
shares, each replaying the jobs whose id's last byte is its own. The merged report is the local engine's —
findings in file order, counts, exit code, digest and jobs — with and without a findings limit. Refused records
(WQ-UNKNOWN-JOB, WQ-DUPLICATE-JOB) and damage are read through in the shares, as locally; a log the kernel bails on
(a time beyond its table's int64 ns) goes through the reference pipeline with the same result."""
from __future__ import annotations

import json
import os
import pickle

import pytest

from tests.conftest import AS_OF, fixture_log
from tests.spark.conftest import as_of_ns

#: Logs with findings the kernel handles: split in two shares, both shares contribute findings.
SPLIT = ["upstream-a-run1", "upstream-b-after-clean", "upstream-a2-run2", "upstream-b-before-clean"]
#: Logs with WQ-UNKNOWN-JOB / WQ-DUPLICATE-JOB findings (refused records) in one share only: read through there.
REFUSED = ["double-lease-and-result", "duplicate-add"]


def _log(corpus, name):
    from wqtool.engine.workq.reader import discover
    [log] = discover([corpus[name]])
    return log


def _local(corpus, name, limit=None):
    from wqtool.engine.workq.verify import run_log
    return run_log(_log(corpus, name), as_of_ns(), limit=limit)


def _assert_same(fleet, local, name):
    from wqtool.engine.serialize import finding_to_jsonable
    a, b = fleet.report, local
    assert ([finding_to_jsonable(f) for f in a.findings]
            == [finding_to_jsonable(f) for f in b.findings]), name
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
    its own, so the driver really has two shares' findings to merge; the refused records' errors are in one
    share (an intact-log pass, ``through=False``, bails there)."""
    from wqtool.engine.findings import ERROR
    from wqtool.engine.workq.fastreplay import Bail, FastReplay
    for name in SPLIT + REFUSED:
        shares, errors = [], []
        for k in range(2):
            fr = FastReplay(_log(corpus, name), as_of_ns(), part=k, nparts=2, keep=True, through=True)
            fr.run()
            shares.append(len(fr.findings))
            errors.append(sum(f.severity == ERROR for _, f in fr.findings))
        if name == "upstream-a2-run2":      # all its findings are in share 0: share 1 merges nothing
            assert shares[0] > 0 and shares[1] == 0, (name, shares)
        elif name in SPLIT:
            assert min(shares) > 0, (name, shares)
        else:
            assert sorted(errors)[0] == 0 < sorted(errors)[1], (name, errors)
            with pytest.raises(Bail):
                FastReplay(_log(corpus, name), as_of_ns(), part=errors.index(0) ^ 1, nparts=2, keep=True).run()
        assert _local(corpus, name).findings   # every one of them has findings


@pytest.mark.parametrize("limit", [None, 2])
@pytest.mark.parametrize("name", SPLIT + REFUSED)
def test_single_log_split_by_job_equals_local(spark, corpus, name, limit):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    said: list[str] = []
    want_jobs = limit is None       # jobs shipped back: once per log; the digest-only run with the limit
    [fl] = run_fleet(Cluster(spark), [_log(corpus, name)], as_of_ns(), limit=limit, want_jobs=want_jobs,
                     progress=said.append, split=True)
    assert "spark: 1 log(s)" in said[0] and "2 task(s) on 2 slot(s)" in said[0], said
    assert not any("reference path" in m for m in said), said
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


def test_replay_keeps_a_log_whole_verify_splits_it(spark, corpus, always_a_job):
    """Without ``split``: a log whose state is wanted (digest, jobs) stays in one task — merging a split log's
    state on the driver costs more than the split saves —, while verify splits it over the slots (the summary's
    job forced: ``always_a_job``)."""
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
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    [fl] = run_fleet(Cluster(spark), [_log(corpus, "upstream-a-run1")], as_of_ns(), digest=False)
    local = _local(corpus, "upstream-a-run1")
    assert fl.report.state.digest() == ""
    assert ([finding_to_jsonable(f) for f in fl.report.findings]
            == [finding_to_jsonable(f) for f in local.findings])
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


def _far_future_log(d) -> str:
    """Two adds, one created in 2426: a time beyond the kernel table's int64 ns (it bails; the reference runs)."""
    from wqtool.engine.workq import writer
    from wqtool.formats._common import GoTime
    t = GoTime(63930899691, 0, -1)
    with writer.SegmentWriter(str(d)) as w:
        w.append(writer.add(bytes.fromhex("0123456789ab4def8123456789abcdef"), "q", ttr=60_000, ttl=86_400_000,
                            created=GoTime(t.sec + 400 * 365 * 86400, 0, -1)), t)
        w.append(writer.add(bytes.fromhex("0123456789ab4def8123456789abcd00"), "q", ttr=60_000, ttl=86_400_000,
                            created=t), t)
    return str(d)


@pytest.mark.parametrize("split", [True, False])
def test_a_log_the_kernel_bails_on_goes_to_the_reference_pipeline(spark, tmp_path, split):
    from wqtool.engine.workq.fastreplay import Bail, fast_run
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    from wqtool.spark.cluster import Cluster
    [log] = discover([_far_future_log(tmp_path / "far")])
    with pytest.raises(Bail):
        fast_run(log, as_of_ns(), through=True)
    said: list[str] = []
    [fl] = run_fleet(Cluster(spark), [log], as_of_ns(), want_jobs=True, progress=said.append, split=split)
    assert "spark: 1 log(s) need the reference path (fields beyond the kernel's table)" in said, said
    assert f"{1 + split} share(s) in {1 + split} task(s)" in said[0], said
    local = run_log(log, as_of_ns())
    _assert_same(fl, local, "far")
    _assert_same_jobs(fl, local, "far")


@pytest.mark.parametrize("split", [True, False])
def test_damage_made_in_code_is_read_through_by_the_shares(spark, tmp_path, split):
    """Bit flips in the middle of two segments (a CRC, a size, a payload: wherever they land), a torn tail and junk
    after the newest segment's last record: every share reads through them in the kernel — no log goes to the
    reference pipeline — and the merged reports, with and without a findings limit, are the local engine's."""
    import random
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.sample import SampleSpec, generate
    from wqtool.engine.workq.verify import run_log
    from wqtool.spark.cluster import Cluster
    rng = random.Random(24)
    logs = []
    for k in range(2):
        d = tmp_path / f"log{k}"
        generate(str(d), SampleSpec(records=3000, segment_size=64 << 10, seed=k + 5))
        segs = sorted(d.iterdir())
        for seg in segs[:2]:
            data = bytearray(seg.read_bytes())
            for at in rng.sample(range(8, len(data)), 3):
                data[at] ^= 1 << rng.randrange(8)
            seg.write_bytes(bytes(data))
        newest = [seg for seg in segs if seg.stat().st_size > 64][-1]
        with open(newest, "r+b") as f:
            f.truncate(newest.stat().st_size - 5)
        logs.append(str(d))
        if k:
            with open(newest, "ab") as f:
                f.write(b"\xff" * 40)
    sets = [discover([p])[0] for p in logs]
    for limit in (None, 3):
        said: list[str] = []
        fleet = run_fleet(Cluster(spark), sets, as_of_ns(), limit=limit, want_jobs=limit is None,
                          progress=said.append, split=split)
        assert not any("reference path" in m for m in said), said
        for p, lg, fl in zip(logs, sets, fleet):
            local = run_log(lg, as_of_ns(), limit=limit)
            assert local.severities.get("error"), p    # the premise: damage found
            _assert_same(fl, local, p)
            if limit is None:
                _assert_same_jobs(fl, local, p)


def _local_stats(logs):
    """Each log's (RecordStats, report) from the local kernel's pass, and the distinct jobs over all of them."""
    from wqtool.engine.workq.verify import fast_stats
    got = [fast_stats(lg, as_of_ns(), ids=True) for lg in logs]
    return got, len(set().union(*(st.jobs for _, st in got)))


def _assert_same_stats(fl, report, st, name):
    assert (fl.stats.records, fl.stats.bytes, fl.stats.by_type, fl.stats.bytes_by_type, fl.stats.first_ns,
            fl.stats.last_ns, fl.jobs) == (st.records, st.bytes, st.by_type, st.bytes_by_type, st.first_ns,
                                          st.last_ns, len(st.jobs)), name
    assert (fl.report.verdict, dict(fl.report.counts), fl.report.records, fl.report.bytes) == \
        (report.verdict, dict(report.counts), report.records, report.bytes), name
    assert fl.report.state.digest() == report.state.digest(), name


@pytest.mark.parametrize("names", [["upstream-a-run1"], ["upstream-a-run1", "upstream-a-run1", "duplicate-add",
                                                         "crc-mismatch-mid-segment", "double-lease-and-result"]],
                         ids=["one log", "five logs, two the same"])
def test_stats_run_in_the_kernel_with_the_local_union(spark, corpus, names):
    """stats on the fast path: each log whole in one kernel pass with its record statistics (the local engine's,
    damaged and refused records included), and the distinct jobs over all logs — a log given twice counted once —
    as the local union of the logs' job ids; equal to the reference pipeline's."""
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    logs = [_log(corpus, n) for n in names]
    local, union = _local_stats(logs)
    for fast in (True, False):
        said, total = [], []
        fleet = run_fleet(Cluster(spark), logs, as_of_ns(), limit=0, stats=True, stats_total=total, fast=fast,
                          progress=said.append)
        assert any("job partition(s)" in m for m in said) == (not fast), said    # the reference's stage line
        assert sum(total) == union, (fast, total)
        for name, fl, (report, st) in zip(names, fleet, local):
            _assert_same_stats(fl, report, st, (name, fast))


def test_stats_of_a_fleet_with_a_log_the_kernel_bails_on(spark, corpus, tmp_path):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.reader import discover
    from wqtool.spark.cluster import Cluster
    logs = [_log(corpus, "upstream-a-run1"), discover([_far_future_log(tmp_path / "far")])[0]]
    said, total = [], []
    fleet = run_fleet(Cluster(spark), logs, as_of_ns(), limit=0, stats=True, stats_total=total,
                      progress=said.append)
    assert any("all 2 log(s) go there" in m for m in said), said
    from wqtool.engine.workq.format import FORMAT
    from wqtool.engine.format import Options
    local = [FORMAT.passes.stats_log(lg, Options(as_of_ns())) for lg in logs]
    assert sum(total) == len(set().union(*(st.jobs for _, st in local)))
    for fl, (report, st) in zip(fleet, local):
        _assert_same_stats(fl, report, st, report.root)


def test_the_ids_are_cut_by_their_first_byte_for_the_union_shuffle():
    """``_by_prefix``: sorted packed ids cut at each first byte (the union's shuffle key): every id once, in its
    byte's piece, in order."""
    from wqtool.engine.workq.fleet import _by_prefix
    ids = sorted({bytes([a]) + bytes([b]) * 15 for a in (0, 1, 7, 255) for b in (0, 3, 9)})
    packed = b"".join(ids)
    cut = _by_prefix(packed)
    assert [p for p, _ in cut] == [0, 1, 7, 255]
    assert b"".join(b for _, b in cut) == packed
    assert all(len(b) == 48 and all(b[i] == p for i in range(0, len(b), 16)) for p, b in cut)
    assert _by_prefix(b"") == []


@pytest.mark.parametrize("on_driver", [True, False], ids=["small fleet: on the driver", "distributed"])
def test_the_union_of_a_fleet_is_counted_where_the_ids_are(spark, corpus, monkeypatch, on_driver):
    """stats over several logs: the distinct count is the local union; over DRIVER_UNION_IDS ids no id reaches the
    driver (the tasks' results hold only the prefixes they sent, the union's rows only counts)."""
    from wqtool.engine.workq import fleet as wf
    if not on_driver:
        monkeypatch.setattr(wf, "DRIVER_UNION_IDS", 0)
    from wqtool.spark.cluster import Cluster
    names = ["upstream-a-run1", "upstream-a-run1", "duplicate-add", "crc-mismatch-mid-segment"]
    logs = [_log(corpus, n) for n in names]
    _, union = _local_stats(logs)
    got = []

    class Watching(Cluster):
        def collect(self, frame, **kw):
            rows = super().collect(frame, **kw)
            got.extend(rows)
            return rows

        def run(self, n, fn, fields, what=None):       # a small fleet's results come back through run()
            rows = super().run(n, fn, fields, what=what)
            got.extend(rows)
            return rows
    total = []
    wf.run_fleet(Watching(spark), logs, as_of_ns(), limit=0, stats=True, stats_total=total)
    assert sum(total) == union
    shipped = any("ids" in (pickle.loads(r["blob"]) or {}) for r in got if r["kind"] == wf._LOG and r["log"] >= 0)
    assert shipped == on_driver                                  # the ids on the driver, or none there
    assert not any(r["kind"] == wf._IDS and r["log"] >= 0 for r in got)      # the union's rows: counts only
