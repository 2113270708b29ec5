"""Issue 22: `wqtool report` (a self-contained HTML page), `stats --chart` for every format, `stats --timeline` in
the terminal, `verify --metrics-file` (Prometheus text exposition), and the series they draw (engine/series.py)."""
from __future__ import annotations

import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import AS_OF, ROOT, cli
from tests.test_layers import fresh_python

DEMO = "docs/demo/incident-cmdlog"
SNAPSHOTS = os.path.join(os.path.dirname(__file__), "snapshots")

#: one log of every format in the registry (path, --as-of, --format)
EVERY_FORMAT = [
    ("fixtures/workq/crc-mismatch-mid-segment/log", AS_OF, "workq"),
    ("fixtures/kestrel/damage-mid-live/queue", "last", "kestrel"),
    ("fixtures/orth-joblog/clean-csv/orth_job_log.csv", "2026-01-31T00:00:00Z", "orth-joblog"),
    ("fixtures/snaplist/current-hour/journal", "last", "snaplist"),
    ("fixtures/evtj/live-and-done/journal", "last", "evtj"),
    ("fixtures/fastjournal/crc-mid-segment/journal", "last", "fastjournal"),
    ("fixtures/orth/executor-runs/logpath", "last", "orth-executor-logs"),
    ("fixtures/orth/clean-retry-files/logpath", "last", "orth-callbacks"),
]


def _existing(path: str) -> str:
    full = os.path.join(ROOT, path)
    if os.path.exists(full):
        return path
    parent = os.path.dirname(full)          # the fixture's log, whatever its folder is called
    for name in sorted(os.listdir(parent)):
        if not name.startswith("expected") and not name.endswith(".md"):
            return os.path.relpath(os.path.join(parent, name), ROOT)
    raise AssertionError(path)


class _Svg(html.parser.HTMLParser):
    """The page's series groups (data-series -> data-total, per data-kind), scripts and referenced URLs."""

    def __init__(self):
        super().__init__()
        self.series: dict[str, dict[str, int]] = {}
        self.tags = Counter()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        if "data-series" in a:
            self.series.setdefault(a.get("data-kind", ""), {})[a["data-series"]] = int(a["data-total"])
        for k, v in a.items():
            if k in ("href", "src", "xlink:href", "srcset", "xmlns", "action", "poster") or "://" in (v or ""):
                self.refs.append(v)


def parse_page(text: str) -> _Svg:
    p = _Svg()
    p.feed(text)
    return p


#: what makes a browser fetch something from a stylesheet (attributes are checked by the parser: none refers out)
EXTERNAL = re.compile(r"(@import|url\s*\()", re.I)


def assert_self_contained(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    p = parse_page(text)
    assert p.tags["script"] == 0 and p.tags["link"] == 0 and p.tags["img"] == 0 and p.tags["iframe"] == 0
    assert p.refs == [], p.refs
    assert not EXTERNAL.search(text), EXTERNAL.search(text)


# ---------------------------------------------------------------- the series (engine)
def _series(path: str, as_of: str = "last", fmt: str = "auto"):
    from wqtool.commands._options import for_log, options
    from wqtool.engine.format import resolve
    from wqtool.engine.series import series_log
    opts = options(as_of)
    [log] = resolve([os.path.join(ROOT, path)], fmt, opts)
    o = for_log(log, opts)
    return log, o, series_log(log.fmt, log.data, o, limit=None)


def test_series_counts_every_timed_record_once_and_agrees_with_stats():
    log, o, (report, st, s) = _series(DEMO)
    ref_report, ref_st = log.fmt.passes.stats_log(log.data, o)          # the kernel's pass
    assert (report.verdict, report.records, dict(report.counts)) == (ref_report.verdict, ref_report.records,
                                                                    dict(ref_report.counts))
    assert st.by_type == ref_st.by_type
    per = s.per_kind()
    assert {k: sum(v for _, v in pts) for k, pts in per.items()} == dict(st.by_type)
    assert len(s.records) <= 600 and s.width_ns == 60 * 10**9    # six hours: minute bins
    assert report.verdict.label == "CORRUPT"


def test_series_depth_is_the_replayed_state_at_the_end():
    """The probe's running count per queue ends where the replayed state ends: jobs not finished per queue."""
    log, o, (report, st, s) = _series(DEMO)
    view = log.fmt.state_view(report.state, log.data)
    unfinished = {q: c.get("new", 0) + c.get("pending", 0) + c.get("leased", 0) for q, c in view.queues().items()}
    dep = s.depth_series()
    assert {q: pts[-1][1] for q, pts in dep.items()} == unfinished
    assert s.peak["email"] >= max(v for _, v in dep["email"]) > 150
    # the 40-minute stop of the workers at 12:00: the queues grow, and nothing starts
    noon = [v for t, v in dep["email"] if 12 * 3600 <= t // 10**9 % 86400 <= 12 * 3600 + 2400]
    assert noon == sorted(noon) and noon[-1] - noon[0] > 50
    # wait and run times: the first start of every job that started, every finished run
    assert s.wait.count == sum(1 for j in report.state.jobs.values() if j.attempts >= 1) > 2000
    assert s.run.count == sum(1 for j in report.state.jobs.values() if j.state.label in ("completed", "failed"))


def test_series_marks_damage_at_the_time_of_the_last_record_before_it():
    log, o, (report, st, s) = _series("fixtures/workq/crc-mismatch-mid-segment/log", AS_OF)
    crc = [m for m in s.marks if m.code == "WQ-CRC"]
    assert len(crc) == 1 and crc[0].offset == 0x11c and crc[0].path.endswith("000000001.log")
    from wqtool.engine.format import resolve
    from wqtool.commands._options import options
    recs = [ev for ev in log.fmt.run(log.data, o).events() if ev.__class__ is log.fmt.record_cls]
    before = [r for r in recs if r.path == crc[0].path and r.offset < crc[0].offset][-1]
    assert crc[0].time_ns == log.fmt.facts(before).time_ns
    assert sum(s.damage.values()) == sum(n for c, n in report.counts.items() if log.fmt.codes[c][0] != "note")


def test_kestrel_depth_is_queued_and_open():
    log, o, (report, st, s) = _series("fixtures/kestrel/clean-journal/queue")
    assert s.has_depth and set(s.queues) <= {"queued", "open"}
    view = log.fmt.state_view(report.state, log.data)
    dep = s.depth_series()
    assert dep and sum(pts[-1][1] for pts in dep.values()) == sum(view.counts_by_state().values()) > 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "complete", "delete"]),
                          st.integers(0, 40 * 86_400) | st.none(),
                          st.sampled_from(["q1", "q2", None]), st.integers(-1, 1)), max_size=300),
       st.integers(3, 40))
def test_collector_keeps_every_record_in_few_bins(recs, max_bins):
    """Whatever the times (out of order, weeks apart, missing), every record is counted once, in the bin that
    holds its time, the bins from the first to the last (what a page draws, empty ones included) are never more
    than max_bins, and each queue's depth ends where its moves end."""
    from wqtool.engine.format import SeriesStep
    from wqtool.engine.series import SeriesCollector
    col = SeriesCollector(max_bins=max_bins, has_depth=True)
    base = 1_795_302_000 * 10**9
    end: Counter = Counter()
    for kind, t, q, d in recs:
        step = SeriesStep(((q, d),)) if q is not None and d else None
        if step is not None:
            end[q] += d
        col.record(kind, None if t is None else base + t * 10**9, step)
    s = col.close()
    dep = s.depth_series()
    if s.span() is not None:
        assert {q: pts[-1][1] for q, pts in dep.items()} == {q: end[q] for q in s.queues}
    if s.span() is not None:
        assert s.span()[1] - s.span()[0] < max_bins
        assert all(len(pts) <= max_bins for pts in s.per_kind().values())
    timed = Counter(k for k, t, _, _ in recs if t is not None)
    assert sum((c for c in s.records.values()), Counter()) == timed
    assert s.untimed == Counter(k for k, t, _, _ in recs if t is None)
    if timed:
        last = max(t for _, t, _, _ in recs if t is not None)
        i = (base + last * 10**9 - s.origin_ns) // s.width_ns
        assert i in s.records


# ---------------------------------------------------------------- report
def test_report_page_is_self_contained_and_carries_the_series(in_root, tmp_path):
    out = tmp_path / "incident.html"
    r = cli("report", "--as-of", "last", DEMO, "--out", str(out))
    assert r.code == 3 and r.out == "" and "wrote" in r.err         # verify's exit code: CORRUPT
    text = out.read_text()
    assert_self_contained(text)
    p = parse_page(text)
    log, o, (report, st, s) = _series(DEMO)
    assert p.series["records"] == dict(st.by_type)                 # records over time, by kind
    assert p.series["findings"] == {"damage": 3}                   # WQ-CRC + 2 WQ-UNKNOWN-JOB on the time axis
    assert set(p.series["depth"]) == {"email", "thumbnail", "invoice", "webhook"}
    assert p.series["state"] == {"completed": 2329, "failed": 109, "leased": 3, "new": 145, "pending": 0}
    assert sum(p.series["wait"].values()) == s.wait.count and sum(p.series["run"].values()) == s.run.count
    assert "WQ-CRC" in text and "000000004.log@0x7d01" in text and "Replay error, crc mismatch" in text
    assert f"wqtool repair --format workq --salvage {os.path.abspath('docs/demo/incident-cmdlog')}" in text
    digest = log.fmt.state_view(report.state, log.data).digest()
    assert digest in text and f"wqtool stats --format workq --as-of 2026-11-21T14:59:59Z {os.path.abspath(DEMO)}" \
        in text
    for axis in ("records per 1 min", "time (UTC", "jobs in the queue", "jobs", "wait time", "run time"):
        assert axis in text
    # the digest command reproduces the digest
    r2 = cli("stats", "-o", "json", "--format", "workq", "--as-of", "2026-11-21T14:59:59Z", DEMO)
    assert digest in r2.out


def test_report_never_overwrites_and_names_unreadable_paths(in_root, tmp_path):
    out = tmp_path / "r.html"
    out.write_text("keep")
    r = cli("report", DEMO, "--out", str(out))
    assert r.code == 2 and "already exists" in r.err and out.read_text() == "keep"
    out2 = tmp_path / "r2.html"
    r = cli("report", "--as-of", AS_OF, "fixtures/workq/sample-clean/log", str(tmp_path / "missing"), "--out",
            str(out2))
    assert r.code == 5 and "missing" in r.err
    text = out2.read_text()
    assert_self_contained(text)
    assert "unreadable" in text and "sample-clean" in text


def test_every_format_is_covered():
    from wqtool.engine.format import names
    assert sorted(f for _, _, f in EVERY_FORMAT) == sorted(names())


@pytest.mark.parametrize("path,as_of,fmt", EVERY_FORMAT, ids=[f for _, _, f in EVERY_FORMAT])
def test_report_and_chart_for_every_format(in_root, tmp_path, path, as_of, fmt):
    path = _existing(path)
    v = cli("verify", "-q", "--format", fmt, "--as-of", as_of, path)
    out = tmp_path / "r.html"
    r = cli("report", "--format", fmt, "--as-of", as_of, path, "--out", str(out))
    assert r.code == v.code, r.err
    text = out.read_text()
    assert_self_contained(text)
    p = parse_page(text)
    log, o, (report, st, s) = _series(path, as_of, fmt)
    timed = {k: sum(n for _, n in pts) for k, pts in s.per_kind().items()}
    assert p.series.get("records", {}) == timed
    assert f"<code>--format {fmt}</code>" in text and report.verdict.label in text
    if fmt not in ("workq", "orth-joblog", "orth-executor-logs", "orth-callbacks"):
        # the formats whose probe reads the sizes of their replay's containers: the depth ends at the state's size
        view = log.fmt.state_view(report.state, log.data)
        assert s.has_depth and set(p.series["depth"]) == set(s.queues)
        assert sum(s.peak.values()) > 0
        assert sum(pts[-1][1] for pts in s.depth_series().values()) == sum(view.counts_by_state().values())
    # stats --chart draws the same series (the findings table aside)
    chart = tmp_path / "c.html"
    c = cli("stats", "--format", fmt, "--as-of", as_of, "--chart", str(chart), path)
    assert c.code == v.code
    ctext = chart.read_text()
    assert_self_contained(ctext)
    assert parse_page(ctext).series.get("records", {}) == timed and "<h3>Findings</h3>" not in ctext


def test_orth_joblog_daily_chart_on_the_page(in_root, tmp_path):
    out = tmp_path / "r.html"
    r = cli("report", "--as-of", "2026-01-31T00:00:00Z", "fixtures/orth-joblog/clean-csv/orth_job_log.csv",
            "--out", str(out))
    assert r.code == 0
    p = parse_page(out.read_text())
    daily = p.series["daily"]
    assert set(daily) == {"suc_count", "fail_count", "running_count"} and sum(daily.values()) > 0


# ---------------------------------------------------------------- stats --timeline
@pytest.mark.parametrize("argv,name", [
    (["--as-of", "last", DEMO], "timeline_demo.txt"),
    (["--as-of", AS_OF, "fixtures/workq/upstream-a-run1/log", "fixtures/kestrel/clean-journal/queue"],
     "timeline_fixtures.txt"),
])
def test_timeline_snapshot(in_root, snapshot, argv, name):
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": ""}
    r = subprocess.run([sys.executable, "-m", "wqtool", "stats", "--timeline", *argv], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert "\x1b" not in r.stdout                                  # piped: plain
    timeline = r.stdout[r.stdout.index("\n\n") + 2:]
    assert all(len(line) <= 100 for line in timeline.splitlines())
    snapshot.snapshot_dir = SNAPSHOTS
    snapshot.assert_match(f"exit {r.returncode}\n{timeline}", name)


def test_timeline_follows_the_width_and_wants_table_output(in_root):
    r = subprocess.run([sys.executable, "-m", "wqtool", "stats", "--timeline", "--as-of", "last", DEMO], cwd=ROOT,
                       env={**os.environ, "COLUMNS": "60"}, capture_output=True, text=True, timeout=120)
    rows = r.stdout[r.stdout.index("\n\n") + 2:].splitlines()[1:]
    assert rows and all(len(line) <= 60 for line in rows) and max(len(line) for line in rows) >= 55
    assert cli("stats", "--timeline", "-o", "json", DEMO).code == 2


# ---------------------------------------------------------------- verify --metrics-file
def test_metrics_file_parses_and_says_what_verify_says(in_root, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    prom = tmp_path / "wqtool.prom"
    prom.write_text("old\n")
    r = cli("verify", "-q", "--as-of", "last", "--metrics-file", str(prom), DEMO, "fixtures/workq/sample-clean/log",
            str(tmp_path / "missing"))
    assert r.code == 3 and r.out == ""                             # CORRUPT outranks an unreadable PATH
    assert os.listdir(tmp_path) == ["wqtool.prom"]                 # replaced; no temp left
    fams = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    name_ok = re.compile(r"^wqtool_[a-z_]+$")
    assert all(name_ok.match(n) and fams[n].type == "gauge" for n in fams)

    def value(name, **labels):
        [v] = [s.value for s in fams[name].samples if all(s.labels.get(k) == x for k, x in labels.items())]
        return v
    assert value("wqtool_verify_exit_code", path=DEMO) == 3
    assert value("wqtool_verify_verdict", path=DEMO, verdict="corrupt") == 1
    assert value("wqtool_verify_verdict", path=DEMO, verdict="clean") == 0
    assert value("wqtool_verify_up", path=str(tmp_path / "missing")) == 0
    assert value("wqtool_verify_exit_code", path=str(tmp_path / "missing")) == 5
    assert value("wqtool_verify_findings", path=DEMO, code="WQ-CRC", severity="error") == 1
    assert value("wqtool_verify_findings", path=DEMO, code="WQ-UNKNOWN-JOB", severity="warning") == 2
    assert value("wqtool_log_records", path=DEMO) == 7467
    assert value("wqtool_log_size_bytes", path=DEMO) == sum(
        os.path.getsize(os.path.join(DEMO, n)) for n in os.listdir(DEMO) if n.endswith(".log"))
    assert value("wqtool_log_live_jobs", path=DEMO) == 2586
    assert value("wqtool_log_jobs", path=DEMO, state="new") == 145
    assert value("wqtool_log_newest_record_timestamp_seconds", path=DEMO) == 1795273199   # 14:59:59Z
    assert 0 < value("wqtool_verify_duration_seconds", path=DEMO) < 60
    assert value("wqtool_verify_run_exit_code") == 3
    assert value("wqtool_verify_exit_code", path="fixtures/workq/sample-clean/log") == 0


def test_metrics_label_values_are_escaped(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    from wqtool.exitcodes import resolve
    from wqtool.render.metrics import exposition
    from wqtool.render.outcome import Failed, Resolved
    odd = 'a "quoted"\\path\nwith newline'
    gone = Failed(odd, FileNotFoundError(2, "No such file or directory", odd))
    text = exposition([(gone, None)], Resolved(*resolve(errors=[gone.error])), now_s=1.5)
    [up] = [f for f in text_string_to_metric_families(text) if f.name == "wqtool_verify_up"]
    assert up.samples[0].labels["path"] == odd


def test_verify_imports_no_drawing_code():
    """A chart module never loads for verify (cron), also with --metrics-file."""
    code = ("import sys, contextlib, io, tempfile, os\n"
            "from wqtool.cli import run\n"
            "d = tempfile.mkdtemp()\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert run(['verify', '-q', 'fixtures/workq/sample-clean/log']) == 0\n"
            "    assert run(['verify', '-q', '--as-of', 'last', '--metrics-file', os.path.join(d, 'm.prom'), "
            "'fixtures/workq/sample-clean/log']) == 0\n"
            "print(sorted(m for m in sys.modules if m in ('wqtool.render.charts', 'wqtool.render.htmlreport', "
            "'wqtool.render.timeline', 'wqtool.engine.series', 'pygal', 'altair', 'plotext', 'asciichartpy')))\n")
    assert fresh_python(code).strip() == "[]"


# ---------------------------------------------------------------- a real browser
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw (filtered) scanlines of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    return w, h, zlib.decompress(idat)


@pytest.mark.slow
def test_page_in_headless_chromium(in_root, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    page = tmp_path / "incident.html"
    assert cli("report", "--as-of", "last", DEMO, "--out", str(page)).code == 3
    shot = tmp_path / "shot.png"
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1150,1600"]
    subprocess.run([*args, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    w, h, raw = _png_pixels(shot.read_bytes())
    assert (w, h) == (1150, 1600)
    assert len(set(raw[i:i + 3] for i in range(0, len(raw), 997))) > 20        # not blank: many colours
    dom = subprocess.run([*args, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    p = parse_page(dom)                                              # as the browser parsed it
    assert set(p.series["records"]) == {"add", "start-attempt", "complete", "fail"}
    assert set(p.series["depth"]) == {"email", "thumbnail", "invoice", "webhook"}
    assert p.tags["svg"] >= 5


def test_the_page_names_the_command_that_makes_it_again(in_root, tmp_path):
    """--as-of now becomes the instant used; last stays a word (the log's own time); the page made by the named
    command carries the same digest."""
    out = tmp_path / "a.html"
    assert cli("report", "--as-of", "-1h", "-O", "tz=UTC", "fixtures/workq/sample-clean/log", "--out", str(out)).code \
        == 0
    m = re.search(r"Made by \(run it again for the same page\): <code>([^<]*)</code>", out.read_text())
    argv = __import__("shlex").split(__import__("html").unescape(m.group(1)))
    assert argv[:3] == ["wqtool", "report", "--as-of"] and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", argv[3])
    assert argv[4:] == ["-O", "tz=UTC", "--out", str(out), os.path.abspath("fixtures/workq/sample-clean/log")]
    out2 = tmp_path / "b.html"
    argv[argv.index(str(out))] = str(out2)
    assert cli(*argv[1:]).code == 0
    digest = re.compile(r"Replay digest at --as-of \S+: <code>([0-9a-f]+)</code>")
    assert digest.search(out.read_text()).group(1) == digest.search(out2.read_text()).group(1)
    chart = tmp_path / "c.html"
    assert cli("stats", "--as-of", "last", "--chart", str(chart), DEMO).code == 3
    assert f"wqtool stats --as-of last --chart {chart} {os.path.abspath(DEMO)}" in chart.read_text()


def test_the_command_line_on_the_page_hides_passwords():
    from wqtool.commands.report import _no_password
    assert _no_password("mysql://orth:s3cret@db:3306/orth_job") == "mysql://orth:***@db:3306/orth_job"
    assert _no_password("jdbc:mariadb://db/orth_job?user=orth&password=s3cret&table=t") == \
        "jdbc:mariadb://db/orth_job?user=orth&password=***&table=t"
    assert _no_password("docs/demo/a:b@c") == "docs/demo/a:b@c"
