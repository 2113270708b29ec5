"""The kernel's time series (kernel/series.c's SeriesAcc, fed by the scan and by FastReplay: workq/series.py's
``fast_series``) equal the reference's (``engine.series.reference_series``: the reference reader + replay with
``WorkqProbe``), every field of the ``Series``, with the report and the record statistics beside them.

Random histories — valid, refused, unknown jobs, expired adds, invalid fields — at random times (out of order,
jumps of hours and days: the bins widen; a few bins at most: they widen often), with byte damage (bit flips,
truncations) and with a findings limit (the series count the findings the report only counts).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import ALL_WORKQ, ROOT, examples, fixture_log
from tests.engine.workq.test_fastreplay import IDS, T, command, valid_command
from tests.engine.workq.test_fastreplay import kernel  # noqa: F401 (autouse: the C kernel, or skipped)
from tests.engine.workq.test_fastreplay import write_log as fr_write_log

from wqtool.engine.options import Options
from wqtool.engine.series import MAX_BINS, reference_series, series_log
from wqtool.engine.workq import fastreplay
from wqtool.engine.workq.format import FORMAT
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.sample import SampleSpec, generate
from wqtool.engine.workq.series import fast_series
from wqtool.formats._common import GoTime
from wqtool.engine.workq.model import Command
from wqtool.formats.workq import CmdType

S = 10**9
AS_OF = T + 60 * S


#: steps between record times: the same instant, ms, s, minutes, hours, a day, and back
steps = st.sampled_from([0, 10**6, S, 7 * S, 95 * S, 3600 * S, 86400 * S + 1, -S, -3600 * S])


def write_log(d, cmds, times, segment_size, damage):
    fr_write_log(d, cmds, segment_size, damage, times)


def times_of(start, deltas):
    out, t = [], start
    for dt in deltas:
        t += dt
        out.append(t)
    return out


def key(report):
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message) for f in report.findings],
            report.verdict, report.records, dict(report.counts), report.last_good)


def stats_key(st):
    return (st.records, st.bytes, st.by_type, st.bytes_by_type, st.first_ns, st.last_ns, st.job_count())


def both(log, as_of, limit, max_bins):
    fast = fast_series(log, as_of, limit=limit, max_bins=max_bins)
    ref = reference_series(FORMAT, log, Options(as_of_ns=as_of), limit=limit, max_bins=max_bins)
    return fast, ref


def assert_equal(fast, ref):
    (fr, fs, fser), (rr, rs, rser) = fast, ref
    assert fser == rser
    assert key(fr) == key(rr)
    assert fr.state.digest() == rr.state.digest()
    assert stats_key(fs) == stats_key(rs)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(command(), steps), max_size=40), st.sampled_from([60, 300, 1 << 20]),
       st.one_of(st.none(), st.tuples(st.integers(0, 5), st.sampled_from(["flip", "cut"]), st.integers(0, 10**6))),
       st.sampled_from([None, 0, 2]), st.sampled_from([2, 3, MAX_BINS]),
       st.sampled_from([T - 3600 * S, AS_OF, T + 40 * 86400 * S]))
def test_kernel_series_equal_the_reference(tmp_path_factory, cmds, segment_size, damage, limit, max_bins, as_of):
    d = tmp_path_factory.mktemp("s")
    write_log(d, [c for c, _ in cmds], times_of(T, [dt for _, dt in cmds]), segment_size, damage)
    log = discover([str(d)])[0]
    fast, ref = both(log, as_of, limit, max_bins)
    if fast is not None:          # (an undecodable payload: stats hand the log back, series_log runs the reference)
        assert_equal(fast, ref)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(valid_command(), steps), max_size=30), st.sampled_from([2, 4, MAX_BINS]),
       st.sampled_from([None, 0]))
def test_kernel_series_of_decodable_logs_are_its_own(tmp_path_factory, cmds, max_bins, limit):
    """Decodable records (refused or not): the kernel takes the log, and its series are the reference's."""
    d = tmp_path_factory.mktemp("v")
    write_log(d, [c for c, _ in cmds], times_of(T, [dt for _, dt in cmds]), 300, None)
    log = discover([str(d)])[0]
    fast, ref = both(log, AS_OF, limit, max_bins)
    assert fast is not None
    assert_equal(fast, ref)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 600), st.sampled_from([0.0, 0.5]), st.sampled_from([5, 40, MAX_BINS]))
def test_kernel_series_equal_the_reference_on_generated_logs(tmp_path_factory, seed, n, reuse, max_bins):
    """Valid histories by construction: leases, timeouts, results, ids re-added after their job is gone."""
    d = tmp_path_factory.mktemp("g")
    generate(str(d), SampleSpec(records=n, segment_size=2000, seed=seed, reuse_ids=reuse))
    log = discover([str(d)])[0]
    fast, ref = both(log, AS_OF, None, max_bins)
    assert fast is not None and fast[2].has_depth
    assert_equal(fast, ref)


def test_a_leased_job_runs_and_waits_in_the_histograms(tmp_path):
    jid = IDS[0]
    add = Command(CmdType.SCHEDULE, jid, b"q1", 5000, 3_600_000, 0, 0, 0, b"p", GoTime.from_unix_ns(T - 2 * S),
                  GoTime.from_unix_ns(T - 5 * S))
    cmds = [add, Command(CmdType.START_ATTEMPT, jid), Command(CmdType.TIMEOUT_ATTEMPT, jid),
            Command(CmdType.START_ATTEMPT, jid), Command(CmdType.COMPLETE, jid, result=b"ok")]
    write_log(tmp_path, cmds, [T, T + 3 * S, T + 9 * S, T + 10 * S, T + 10 * S + 50 * 10**6], 1 << 20, None)
    fast, ref = both(discover([str(tmp_path)])[0], AS_OF, None, MAX_BINS)
    assert_equal(fast, ref)
    s = fast[2]
    assert (s.wait.count, s.wait.total_ns) == (1, 5 * S)           # first start - scheduled time
    assert (s.run.count, s.run.total_ns) == (1, 50 * 10**6)          # the second lease: start -> complete
    assert s.peak == {"q1": 1} and s.depth_series()["q1"][-1][1] == 0


def test_marks_and_damage_count_the_findings_over_the_limit(tmp_path):
    """A warning per record (records of jobs never added): the report keeps none (limit 0), the series count
    every one, in the bin of its record, and mark the first MAX_MARKS."""
    from wqtool.engine.series import MAX_MARKS
    n = MAX_MARKS + 20
    write_log(tmp_path, [Command(CmdType.DELETE, IDS[i % 8]) for i in range(n)], [T + i * S for i in range(n)],
              1 << 20, None)
    fast, ref = both(discover([str(tmp_path)])[0], AS_OF, 0, MAX_BINS)
    assert_equal(fast, ref)
    s = fast[2]
    assert fast[0].findings == [] and sum(s.damage.values()) == n and len(s.marks) == MAX_MARKS
    assert s.marks[-1].time_ns == T + (MAX_MARKS - 1) * S and s.marks[0].code == "WQ-UNKNOWN-JOB"


def test_a_time_beyond_the_bins_goes_to_the_reference(tmp_path):
    write_log(tmp_path, [Command(CmdType.DELETE, IDS[0])], [(1 << 62) + 1], 1 << 20, None)
    log = discover([str(tmp_path)])[0]
    assert fast_series(log, AS_OF, limit=None, max_bins=MAX_BINS) is None
    _, _, s = series_log(FORMAT, log, Options(as_of_ns=AS_OF))
    assert s.first_ns == (1 << 62) + 1


def test_the_accumulator_takes_only_what_it_can_hold():
    acc = fastreplay._kernel.SeriesAcc(10, 5, (1, 2), (10,))
    with pytest.raises(ValueError):
        acc.record(9, T, -1, -1, 0, None, None, None)
    with pytest.raises(ValueError):
        acc.record(1, T, -1, 0, 0, None, None, IDS[0])      # a live job without its queue's name
    with pytest.raises(ValueError):
        fastreplay._kernel.SeriesAcc(0, 5, (1,), (10,))


@pytest.mark.parametrize("path", [fixture_log(n) for n in ALL_WORKQ] + ["docs/demo/incident-cmdlog"])
def test_pages_and_timelines_are_the_references_on_every_fixture(path):
    """What report, stats --chart and stats --timeline draw from the kernel's series is byte for byte what they
    draw from the reference's (every workq fixture, the demo log)."""
    import io
    from wqtool.render.htmlreport import LogPage, chart_page, report_page
    from wqtool.render.timeline import write_timeline
    log = discover([os.path.join(ROOT, path)])[0]
    span = FORMAT.passes.time_span(log)
    as_of = (span[1] if span is not None and span[1] is not None else T) + S
    fast, ref = both(log, as_of, 100, MAX_BINS)
    if fast is None:
        pytest.skip("the kernel hands this log back (an undecodable record): the reference draws it")
    out = []
    for report, st, s in (fast, ref):
        page = LogPage(FORMAT, report, FORMAT.state_view(report.state, log), st, s, as_of, 0)
        text = io.StringIO()
        write_timeline([(report.root, s)], out=text, width=100)
        out.append((report_page([page], "wqtool report"), chart_page([page], "wqtool stats"), text.getvalue()))
    assert out[0] == out[1]


def test_series_log_of_a_workq_log_is_the_kernels_pass(tmp_path, monkeypatch):
    """``series_log`` (report, stats --chart / --timeline) asks the format first: workq's kernel, no reference
    pass; a log the kernel hands back goes to the reference."""
    generate(str(tmp_path / "a"), SampleSpec(records=200, segment_size=2000, seed=3))
    log = discover([str(tmp_path / "a")])[0]
    ref = reference_series(FORMAT, log, Options(as_of_ns=AS_OF))

    def no_reference(*a, **k):
        raise AssertionError("the reference pass ran")
    monkeypatch.setattr(type(FORMAT), "run", no_reference)
    assert_equal(series_log(FORMAT, log, Options(as_of_ns=AS_OF)), ref)
    monkeypatch.undo()
    write_log(tmp_path / "b", [b"\x09"], [T], 1 << 20, None)     # undecodable: stats hand it back
    log = discover([str(tmp_path / "b")])[0]
    assert fast_series(log, AS_OF, limit=None, max_bins=MAX_BINS) is None
    assert series_log(FORMAT, log, Options(as_of_ns=AS_OF))[2].kinds == ["(undecodable)"]


def test_a_timeline_of_a_day_has_an_hour_axis(tmp_path):
    import io
    import re
    from wqtool.render.timeline import write_timeline
    n = 97
    write_log(tmp_path, [Command(CmdType.DELETE, IDS[i % 8]) for i in range(n)],
              [T + i * 900 * S for i in range(n)], 1 << 20, None)          # every 15 minutes for 24 hours
    _, _, s = fast_series(discover([str(tmp_path)])[0], AS_OF, limit=None, max_bins=MAX_BINS)
    text = io.StringIO()
    write_timeline([("log", s)], out=text, width=100)
    axis = text.getvalue().splitlines()[-3]
    assert len(re.findall(r"\b\d\d:00\b", axis)) >= 3, axis


def test_records_a_day_apart_are_drawn_in_few_bins(tmp_path):
    """The bins widen on the span a page draws (every bin from the first record's to the last's), not on the bins
    that hold records: three records, two of them a second apart and one a day later, were three 1 s bins, and
    the page of that log drew 86,402 of them (a 10 MB table). The kernel's series are the reference's."""
    write_log(tmp_path, [Command(CmdType.DELETE, IDS[i]) for i in range(3)], [T, T + S, T + 86400 * S], 1 << 20,
              None)
    log = discover([str(tmp_path)])[0]
    for s in both(log, T + 86400 * S, None, MAX_BINS):
        s = s[2]
        assert s.span()[1] - s.span()[0] < MAX_BINS and s.width_ns == 600 * S
        assert [len(pts) for pts in s.per_kind().values()] == [145]
