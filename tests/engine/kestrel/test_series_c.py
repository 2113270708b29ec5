"""The Kestrel kernel's time series (kestrel/_kernel.c's KQueue.scan feeding the SeriesAcc of engine/_series.h:
kestrel/series.py's ``fast_series``) equal the reference's (``engine.series.reference_series``: ``KestrelRun``
with ``KestrelPasses.series_probe``, a SizeProbe of the queue and the open transactions), every field of the
``Series``, with the report, the replayed state and the record statistics beside them.

Random histories — adds at random times (out of order, jumps of hours and days: the bins widen; a few bins at most:
they widen often; add time 0: untimed), removes on an empty queue, unknown and reused xids, CONTINUE with xid 0 —
split into rotated files, with byte damage (bit flips, truncations, junk) and with a findings limit (the series
count the findings the report only counts).
"""
from __future__ import annotations

import io
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import ROOT, examples
from wqtool.engine.kestrel import fastreplay
from wqtool.engine.kestrel.format import FORMAT
from wqtool.engine.kestrel.reader import discover
from wqtool.engine.kestrel.series import fast_series
from wqtool.engine.kestrel.writer import JournalWriter
from wqtool.engine.options import Options
from wqtool.engine.series import MAX_BINS, MAX_MARKS, reference_series, series_log

from .conftest import AS_OF_NS, T, one_set, write_journal
from .test_fastreplay import kernel  # noqa: F401 (autouse: the C kernel, or skipped)

XIDS = st.integers(-1, 4)
DATA = st.binary(max_size=12)
#: steps between add times (ms): the same instant, ms, s, minutes, hours, a day, and back; None: add time 0
STEPS = st.sampled_from([0, 1, 1000, 95_000, 3_600_000, 86_400_001, -1000, -3_600_000, None])
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), DATA, STEPS),
    st.tuples(st.just("add"), DATA, STEPS),
    st.tuples(st.just("remove")),
    st.tuples(st.just("rt"), XIDS),
    st.tuples(st.just("unremove"), XIDS),
    st.tuples(st.just("confirm"), XIDS),
    st.tuples(st.just("continue"), XIDS, DATA, STEPS),
    st.tuples(st.just("add_xid"), XIDS, DATA, STEPS),
    st.tuples(st.just("save"), XIDS),
), max_size=50)


def write_timed(w: JournalWriter, ops, clock: list[int]) -> None:
    def at(step):
        if step is None:
            return 0
        clock[0] += step
        return clock[0]
    for o in ops:
        kind = o[0]
        if kind == "add":
            w.add(o[1], at(o[2]))
        elif kind == "remove":
            w.remove()
        elif kind == "rt":
            w.remove_tentative(o[1])
        elif kind == "unremove":
            w.unremove(o[1])
        elif kind == "confirm":
            w.confirm_remove(o[1])
        elif kind == "continue":
            w.continue_(o[1], o[2], at(o[3]))
        elif kind == "add_xid":
            w.add_xid(o[1], o[2], at(o[3]))
        else:
            w.save_xid(o[1])


def build(d: str, ops, cuts, damage) -> None:
    """The ops in files q.<ms>... and the live q, cut where ``cuts`` say; ``damage``: (file, how, n)."""
    bounds = sorted({min(c, len(ops)) for c in cuts})
    pieces, prev = [], 0
    for b in bounds:
        pieces.append(ops[prev:b])
        prev = b
    pieces.append(ops[prev:])
    names, clock = [], [T]
    for i, piece in enumerate(pieces):
        name = "q" if i == len(pieces) - 1 else f"q.{1000 + i * 7}"
        write_journal(os.path.join(d, name), lambda w, p=piece: write_timed(w, p, clock))
        names.append(name)
    if damage is not None:
        p = os.path.join(d, names[damage[0] % len(names)])
        data = bytearray(open(p, "rb").read())
        how, n = damage[1], damage[2]
        if how == "flip" and data:
            data[n % len(data)] ^= 1 << (n % 8)
        elif how == "cut":
            data = data[:n % (len(data) + 1)]
        elif how == "junk":
            data += bytes([0x0a, n % 256, 0xff])
        open(p, "wb").write(bytes(data))


def both(fs, as_of, limit, max_bins, keep_open=False):
    fast = fast_series(fs, as_of, limit=limit, keep_open=keep_open, max_bins=max_bins)
    opts = Options(as_of_ns=as_of, settings={"keep_open": keep_open})
    ref = reference_series(FORMAT, fs, opts, limit=limit, max_bins=max_bins)
    return fast, ref


def key(report):
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message, f.verdict, f.resumes_at)
             for f in report.findings], report.verdict, report.records, report.bytes, report.segments,
            dict(report.counts), dict(report.severities), report.last_good)


def stats_key(s):
    return (s.records, s.bytes, list(s.by_type.items()), list(s.bytes_by_type.items()), s.first_ns, s.last_ns,
            s.job_count())


def assert_equal(fast, ref):
    (fr, fs, fser), (rr, rs, rser) = fast, ref
    assert fser == rser
    assert list(fser.untimed.items()) == list(rser.untimed.items())     # dict(untimed) is printed in this order
    assert list(fser.peak.items()) == list(rser.peak.items())
    assert key(fr) == key(rr)
    assert fr.state.digest() == rr.state.digest()
    assert stats_key(fs) == stats_key(rs)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS, st.lists(st.integers(0, 50), max_size=3),
       st.one_of(st.none(), st.tuples(st.integers(0, 3), st.sampled_from(["flip", "cut", "junk"]),
                                      st.integers(0, 10**6))),
       st.sampled_from([None, 0, 2]), st.sampled_from([2, 3, MAX_BINS]), st.booleans())
def test_kernel_series_equal_the_reference(ops, cuts, damage, limit, max_bins, keep_open):
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, damage)
        fs = one_set(d)
        fast, ref = both(fs, AS_OF_NS, limit, max_bins, keep_open)
        if fast is None:
            # handed back: a legacy opcode (a flip can make one: 02 -> 03), a reused open xid, a foreign file
            assert damage is not None or ref[0].counts.get("KQ-XID-REUSED")
        else:
            assert_equal(fast, ref)


@settings(max_examples=examples(200), deadline=None)
@given(OPS, st.lists(st.integers(0, 50), max_size=2), st.sampled_from([2, 5, MAX_BINS]))
def test_intact_journals_are_the_kernels_own(ops, cuts, max_bins):
    """Without damage the kernel takes every journal but one with a reused open xid, and its series are the
    reference's."""
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, None)
        fs = one_set(d)
        fast, ref = both(fs, AS_OF_NS, None, max_bins)
        assert (fast is None) == bool(ref[0].counts.get("KQ-XID-REUSED"))
        if fast is not None:
            assert fast[2].has_depth
            assert_equal(fast, ref)


def test_depth_untimed_records_and_a_replay_warning(qdir):
    """Two adds, a transaction opened, confirmed; a remove on the empty queue (a warning in the bin of the last
    add); an add at time 0 (untimed)."""
    def b(w):
        w.add(b"a", T)
        w.add(b"b", T + 1500)
        w.remove_tentative(1)
        w.confirm_remove(1)
        w.remove()
        w.remove()
        w.add(b"c", 0)
    write_journal(os.path.join(qdir, "q"), b)
    fast, ref = both(one_set(qdir), AS_OF_NS, None, MAX_BINS)
    assert_equal(fast, ref)
    s = fast[2]
    assert s.queues == ["queued", "open"] and s.peak == {"queued": 2, "open": 1}
    assert list(s.untimed.items()) == [("remove-tentative-xid", 1), ("confirm-remove", 1), ("remove", 2), ("addx", 1)]
    bin_of = (T * 10**6 - s.origin_ns) // s.width_ns          # 1 s bins: the two adds 1.5 s apart
    assert s.depth == {bin_of: {"queued": 1}, bin_of + 1: {"queued": 1, "open": 0}}
    assert dict(s.damage) == {bin_of + 1: 1} and [m.code for m in s.marks] == ["KQ-REMOVE-EMPTY"]
    assert s.marks[0].offset == 55 and fast[1].bytes_by_type["addx"] == 66
    assert s.marks[0].time_ns == (T + 1500) * 10**6


def test_marks_and_damage_count_the_findings_over_the_limit(qdir):
    """A warning per record (removes on an empty queue): the report keeps none (limit 0), the series count every
    one and mark the first MAX_MARKS."""
    n = MAX_MARKS + 20
    write_journal(os.path.join(qdir, "q"), lambda w: [w.remove() for _ in range(n)] and w.add(b"x", T))
    fast, ref = both(one_set(qdir), AS_OF_NS, 0, MAX_BINS)
    assert_equal(fast, ref)
    s = fast[2]
    assert fast[0].findings == [] and len(s.marks) == MAX_MARKS and s.marks[0].time_ns is None
    assert sum(s.damage.values()) == 0          # before the first timed record: marked, in no bin


def test_an_add_time_beyond_the_bins_goes_to_the_reference(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: w.add(b"x", (1 << 62) // 10**6 + 1))
    fs = one_set(qdir)
    assert fast_series(fs, AS_OF_NS, limit=None, keep_open=False, max_bins=MAX_BINS) is None
    _, _, s = series_log(FORMAT, fs, Options(as_of_ns=AS_OF_NS))
    assert s.first_ns == ((1 << 62) // 10**6 + 1) * 10**6


def test_series_log_of_a_kestrel_queue_is_the_kernels_pass(qdir, monkeypatch):
    """``series_log`` (report, stats --chart / --timeline) asks the format first: the kernel, no reference pass;
    a journal the kernel hands back (a legacy opcode) goes to the reference."""
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.remove_tentative(1), w.unremove(1)))
    fs = one_set(qdir)
    ref = reference_series(FORMAT, fs, Options(as_of_ns=AS_OF_NS))

    def no_reference(*a, **k):
        raise AssertionError("the reference pass ran")
    monkeypatch.setattr(type(FORMAT), "run", no_reference)
    assert_equal(series_log(FORMAT, fs, Options(as_of_ns=AS_OF_NS)), ref)
    monkeypatch.undo()
    write_journal(os.path.join(qdir, "q.5"), lambda w: w.legacy_add(b"x", 0))
    fs = one_set(qdir)
    assert fast_series(fs, AS_OF_NS, limit=None, keep_open=False, max_bins=MAX_BINS) is None
    assert "add" in series_log(FORMAT, fs, Options(as_of_ns=AS_OF_NS))[2].kinds


KESTREL_FIXTURES = sorted(n for n in os.listdir(os.path.join(ROOT, "fixtures", "kestrel"))
                          if os.path.isdir(os.path.join(ROOT, "fixtures", "kestrel", n)))


@pytest.mark.parametrize("name", KESTREL_FIXTURES)
def test_pages_and_timelines_are_the_references_on_every_fixture(name):
    """What report, stats --chart and stats --timeline draw from the kernel's series is byte for byte what they
    draw from the reference's (every Kestrel fixture the kernel takes)."""
    from wqtool.render.htmlreport import LogPage, chart_page, report_page
    from wqtool.render.timeline import write_timeline
    for fs in FORMAT.discover([os.path.join(ROOT, "fixtures", "kestrel", name)], Options(as_of_ns=0)):
        span = FORMAT.passes.time_span(fs)
        as_of = (span[1] if span[1] is not None else T * 10**6) + 10**9
        fast, ref = both(fs, as_of, 100, MAX_BINS)
        if fast is None:
            continue               # a legacy journal: the reference draws it
        assert_equal(fast, ref)
        out = []
        for report, st_, s in (fast, ref):
            page = LogPage(FORMAT, report, FORMAT.state_view(report.state, fs), st_, s, as_of, 0)
            text = io.StringIO()
            write_timeline([(report.root, s)], out=text, width=100)
            out.append((report_page([page], "wqtool report"), chart_page([page], "wqtool stats"), text.getvalue()))
        assert out[0] == out[1]


@pytest.mark.parametrize("name", KESTREL_FIXTURES)
def test_stats_is_the_kernels_pass_and_the_references(name, monkeypatch):
    """``stats`` (``Passes.stats_log``) of every Kestrel fixture: the kernel's pass gives the reference pass's
    report and record statistics (the reference: the default ``Passes.stats_log``), without running it."""
    from wqtool.engine.caps import Passes
    for fs in FORMAT.discover([os.path.join(ROOT, "fixtures", "kestrel", name)], Options(as_of_ns=0)):
        opts = Options(as_of_ns=AS_OF_NS)
        ref_report, ref_st = Passes.stats_log(FORMAT.passes, fs, opts)
        if fast_series(fs, AS_OF_NS, limit=0, keep_open=False, max_bins=MAX_BINS) is not None:
            monkeypatch.setattr(type(FORMAT), "run", lambda *a, **k: pytest.fail("the reference pass ran"))
        report, st_ = FORMAT.passes.stats_log(fs, opts)
        monkeypatch.undo()
        assert key(report) == key(ref_report) and report.findings == []
        assert report.state.digest() == ref_report.state.digest()
        assert stats_key(st_) == stats_key(ref_st)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS, st.lists(st.integers(0, 50), max_size=3),
       st.tuples(st.integers(0, 3), st.sampled_from(["flip", "cut", "junk"]), st.integers(0, 10**6)),
       st.sampled_from([None, 0, 2]))
def test_what_a_repair_would_lose_from_the_kernels_pass_is_the_plans(ops, cuts, damage, limit):
    """report tells what a repair would lose from its own kernel pass (``LogReport.reuse``: every error finding,
    when all were kept; ``KestrelPlans.repair_loss``), reading nothing again: the same items, unread bytes and
    refusal as the plan (``repair_plan``, which reads and replays the journal twice)."""
    from wqtool.engine.kestrel.repair import repair_plan
    from wqtool.engine.options import RepairOptions
    from wqtool.errors import PackRefused
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, damage)
        fs = one_set(d)
        fast = fast_series(fs, AS_OF_NS, limit=limit, keep_open=False, max_bins=MAX_BINS)
        if fast is None or fast[0].verdict.name == "CLEAN":
            return
        report = fast[0]
        if report.reuse is None:          # some error not kept (the limit): the plan is made instead
            assert limit is not None and len([f for f in report.findings if f.severity == "error"]) <= limit
            return
        salvage, drop = report.verdict.name == "CORRUPT", report.verdict.name == "INVALID_HISTORY"
        try:
            plan = repair_plan(one_set(d), AS_OF_NS, salvage=salvage, drop_invalid=drop)
        except PackRefused as exc:
            with pytest.raises(PackRefused) as got:
                FORMAT.plans.repair_loss(fs, RepairOptions(as_of_ns=AS_OF_NS, salvage=salvage, drop_invalid=drop),
                                   report.reuse)
            assert str(got.value) == str(exc)
            return
        want = {k: v for k, v in plan.report_doc().items() if k.startswith("items_lost")}
        got = FORMAT.plans.repair_loss(fs, RepairOptions(as_of_ns=AS_OF_NS, salvage=salvage, drop_invalid=drop),
                                 report.reuse)
        assert got == want


def test_report_tells_the_loss_of_damaged_fixtures_without_a_second_pass(tmp_path, monkeypatch):
    """The damaged Kestrel fixtures (and a bit flip in a rotated file): report's page states what a repair would
    lose as the plan does, and reads the journal once (no JournalReader pass of the plan's)."""
    import shutil
    from tests.conftest import cli
    from wqtool.engine.kestrel import repair
    q = tmp_path / "q"
    shutil.copytree(os.path.join(ROOT, "fixtures", "kestrel", "damage-mid-live", "queue"), q)
    calls = []
    real = repair.JournalReader

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(repair, "JournalReader", counted)
    r = cli("report", "--as-of", "2011-03-20T00:00:00Z", q, "--out", tmp_path / "x.html")
    assert r.code == 3, r.err
    page = open(tmp_path / "x.html").read()
    assert "What a repair would lose" in page
    assert calls == []
    monkeypatch.setattr(repair, "JournalReader", real)
    from wqtool.engine.caps import Plans
    monkeypatch.setattr(type(FORMAT.plans), "repair_loss",          # the plan itself, as without the kernel's pass
                        lambda self, log, opts, prior=None: Plans.repair_loss(self, log, opts))
    r2 = cli("report", "--as-of", "2011-03-20T00:00:00Z", q, "--out", tmp_path / "x.html", "--force")
    assert r2.code == 3
    assert open(tmp_path / "x.html").read() == page          # the plan's own reading says the same
