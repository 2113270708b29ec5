"""``wqtool report``'s page and ``stats --chart``'s page: per log, the verdict, the findings (with upstream's
reaction and the command that fixes them), the records over time with the damage on the time axis, the live jobs
per queue, the job states at --as-of, wait and run times, the format's own chart and tables, the digest and the
command that reproduces it. Generic over the Format registry: everything comes from the engine's values
(``LogReport``, ``StateView``, ``RecordStats``, ``engine.series.Series``) and the format's declared members."""
from __future__ import annotations

import html
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any, Sequence

from ..engine.findings import Verdict
from ..engine.caps import Plans
from ..engine.series import DURATION_LABELS
from . import charts
from .outcome import Failed, Resolved

_e = html.escape


@dataclass
class LogPage:
    """One log's values for the page."""

    fmt: Any                 # the Format
    report: Any              # LogReport (findings kept)
    view: Any                # StateView of its replayed state
    stats: Any               # RecordStats
    series: Any              # engine.series.Series
    as_of_ns: int
    exit_code: int           # its verdict's exit code (as the edge resolved it after the command: ``Resolved``)
    repair: dict | None = None   # what `wqtool repair` would lose (report: the plan's jobs_lost), or None


def iso(ns: int) -> str:
    """An --as-of value that names exactly this instant (UTC, nanoseconds)."""
    s, n = divmod(ns, 1_000_000_000)
    base = charts.utc(s * 1_000_000_000).replace(" ", "T")
    return base + (f".{n:09d}".rstrip("0") if n else "") + "Z"


def fix_command(fmt, root: str, verdict: Verdict) -> str | None:
    """The command that repairs what a finding of this verdict says, for formats that can be repaired."""
    if verdict == Verdict.CLEAN or not Plans.can(fmt, "repair"):
        return None
    flag = {Verdict.TORN_TAIL: "", Verdict.CORRUPT: " --salvage", Verdict.INVALID_HISTORY: " --drop-invalid"}[verdict]
    root = root if "://" in root else os.path.abspath(root)
    return f"wqtool repair --format {fmt.name}{flag} {shlex.quote(root)}   # plan; add --apply to do it"


def _verdict_badge(v: Verdict, exit_code: int) -> str:
    cls = "ok" if v == Verdict.CLEAN else "bad"
    return f'<span class="verdict {cls}">{_e(v.label)} (exit {exit_code})</span>'


def _findings(p: LogPage) -> list[str]:
    r = p.report
    if not r.counts:
        return ["<p>No finding.</p>"]
    out = ["<h3>Findings</h3>"]
    rows = []
    shown, omitted = r.shown(all_findings=True)    # at most --max-findings, the most severe first
    for f in shown:
        fix = fix_command(p.fmt, r.root, f.verdict)
        where = (os.path.basename(f.path) if f.path else "-") + (f"@0x{f.offset:x}" if f.offset is not None else "")
        rows.append((f.severity, f.code, where, f.record_index, f.message, f.upstream or "-", fix or "-"))
    out.append(charts.table(("severity", "code", "where (file@offset)", "record", "what", "upstream's reaction",
                             "fix"), rows, "findings"))
    if omitted:
        out.append(f"<p>{omitted} more finding(s) not listed (--max-findings).</p>")
    out.append("<p>Counts by code: " + ", ".join(f"<code>{_e(k)}</code> {v}" for k, v in sorted(r.counts.items()))
               + "</p>")
    out += _repair_loss(p)
    if r.last_good and r.verdict == Verdict.TORN_TAIL:
        out.append(f"<p>Valid up to <code>{_e(r.last_good[0])}@0x{r.last_good[1]:x}</code>: truncating there loses "
                   "no valid record.</p>")
    return out


def _repair_loss(p: LogPage) -> list[str]:
    """How many jobs the repair the findings call for would lose, and which: from its plan (nothing written)."""
    rp = p.repair
    if rp is None:
        return []
    cmd = " ".join(["wqtool repair", f"--format {p.fmt.name}", *rp["flags"], shlex.quote(os.path.abspath(p.report.root)
                                                                                        if "://" not in p.report.root
                                                                                        else p.report.root)])
    jobs, more, unread = rp["jobs_lost"], rp["more"], rp["unread"]
    n = len(jobs) + more + rp.get("items_lost", 0)
    out = [f"<h3>What a repair would lose</h3><p>The plan of <code>{_e(cmd)}</code> (nothing written; add "
           f"<code>--apply</code> to do it) loses <strong>{n} job(s)</strong>"
           + (": the jobs whose add or schedule record is in the bytes it cuts." if n else ".") + "</p>"]
    if jobs:
        out.append(charts.table(("job_id", "record", "at", "later records about it"),
                                [(j["job_id"], j["cmd"], j["at"], j["later_records"]) for j in jobs], "jobs-lost"))
    if more:
        out.append(f"<p>... and {more} more (<code>wqtool repair -o json</code> lists them).</p>")
    if rp.get("items_lost_at"):
        out.append("<p>Items lost at: " + ", ".join(f"<code>{_e(a)}</code>" for a in rp["items_lost_at"]) + "</p>")
    if unread.get("bytes"):
        out.append(f"<p>Not counted: {unread['bytes']} cut byte(s) in {unread['ranges']} range(s) where no record "
                   "could be read may hold more jobs.</p>")
    return out


def _states(p: LogPage) -> list[str]:
    out = [f"<h3>Job states at --as-of {_e(iso(p.as_of_ns))}</h3>"]
    try:
        counts = p.view.counts_by_state()
    except NotImplementedError:
        counts = {}
    if not counts:
        return out + ["<p class=\"empty\">Nothing live at --as-of.</p>"]
    items = sorted(counts.items())
    out.append(charts.bar_chart(f"Jobs by state at {iso(p.as_of_ns)}", items, x_title="state",
                                y_title="jobs", kind="state"))
    try:
        queues = p.view.queues()
    except NotImplementedError:
        queues = {}
    if queues:
        labels = sorted({s for q in queues.values() for s in q})
        rows = [(q, *(c.get(s, 0) for s in labels), sum(c.values())) for q, c in sorted(queues.items())]
        out.append("<details><summary>Per queue</summary>" + charts.table(("queue", *labels, "total"), rows)
                   + "</details>")
    return out


def _durations(p: LogPage) -> list[str]:
    out: list[str] = []
    if p.series is None:
        return out
    for h, what, words in ((p.series.wait, "Wait", "from add (or schedule time) to the first start"),
                           (p.series.run, "Run", "from start to complete / fail")):
        if h.count:
            out.append(f"<h3>{what} times ({words}), {h.count:,} jobs</h3>")
            out.append(charts.bar_chart(f"{what} time distribution ({h.count} jobs)",
                                        list(zip(DURATION_LABELS, h.buckets)), x_title=f"{what.lower()} time",
                                        y_title="jobs", kind=what.lower(), color=charts.PALETTE[2]))
            out.append(f"<p>min {h.min_ns / 1e9:.3f} s, mean {h.total_ns / h.count / 1e9:.3f} s, max "
                       f"{h.max_ns / 1e9:.3f} s</p>")
    return out


def _own(p: LogPage) -> list[str]:
    """The format's own chart (a StateView's chart spec) and analytics tables."""
    out = []
    tables = p.view.analytics()
    spec = p.view.chart()
    if spec is not None:
        out.append(f"<h3>{_e(spec.get('title') or spec['table'])}</h3>")
        out.append(charts.stacked_days_chart(spec, tables.get(spec["table"], [])))
    for name, rows in tables.items():
        if rows:
            cols = list(rows[0])
            out.append(f"<details><summary>{_e(name)} ({len(rows)} rows)</summary>"
                       + charts.table(cols, [[r.get(c) for c in cols] for r in rows]) + "</details>")
    return out


def _over_time(p: LogPage) -> list[str]:
    s = p.series
    if s is None:
        return ['<p class="empty">Records over time are drawn by the local engine (--engine local).</p>']
    out = ["<h3>Records over time</h3>", charts.records_chart(s)]
    if s.records:
        out.append("<p>The bars stack the record types bottom to top in the legend's order; the dashed red lines "
                   "mark the bins that hold findings (errors and warnings). The numbers are in the table below.</p>")
    if s.untimed:
        out.append("<p>Records without a time (not drawn): " + ", ".join(f"{_e(k)} {v:,}"
                                                                          for k, v in s.untimed.items()) + "</p>")
    if s.marks:
        rows = [(charts.utc(m.time_ns) if m.time_ns is not None else "before the first record", m.severity, m.code,
                 (os.path.basename(m.path) if m.path else "-") + (f"@0x{m.offset:x}" if m.offset is not None else ""))
                for m in s.marks]
        out.append("<details><summary>Damage on the time axis (time of the last record read before each "
                   "finding)</summary>" + charts.table(("time (UTC)", "severity", "code", "where"), rows)
                   + "</details>")
    if s.has_depth:
        out += ["<h3>Queue depth (replayed, at record times: jobs not finished yet, per queue)</h3>",
                charts.depth_chart(s)]
    per = s.per_kind()
    if per:
        starts = [t for t, _ in next(iter(per.values()))]
        kinds = list(per)
        rows = [(charts.utc(t), *(per[k][i][1] for k in kinds)) for i, t in enumerate(starts)]
        out.append(f"<details><summary>The numbers (records per {charts.duration(s.width_ns)})</summary>"
                   + charts.table(("bin start (UTC)", *kinds), rows) + "</details>")
    return out


def log_section(p: LogPage, *, full: bool = True) -> list[str]:
    r, st = p.report, p.stats
    span = ""
    if st.first_ns is not None:
        span = f", {_e(charts.utc(st.first_ns))} to {_e(charts.utc(st.last_ns))} UTC"
    out = [f"<h2>{_e(r.root)}</h2>",
           f"<p>{_e(p.fmt.title)} (<code>--format {_e(p.fmt.name)}</code>): {r.segments} file(s), {r.records:,} "
           f"records, {r.bytes:,} bytes{span}. Verdict: {_verdict_badge(r.verdict, p.exit_code)}</p>"]
    if full:
        out += _findings(p)
    out += _over_time(p)
    out += _states(p)
    out += _durations(p)
    out += _own(p)
    digest = p.view.digest()
    root = r.root if "://" in r.root else os.path.abspath(r.root)      # the page is read from elsewhere
    stats_cmd = f"wqtool stats --format {p.fmt.name} --as-of {iso(p.as_of_ns)} {shlex.quote(root)}"
    out.append(f"<h3>Digest</h3><p>Replay digest at --as-of {_e(iso(p.as_of_ns))}: <code>{_e(digest)}</code></p>"
               f"<p>Reproduce it: <code>{_e(stats_cmd)}</code></p>")
    return out


def failed_section(f: Failed, exit_code: int) -> list[str]:
    return [f"<h2>{_e(f.root)}</h2>", f"<p><strong>{_e(f.label)}</strong>: {_e(f.message)} (exit "
            f"{exit_code})</p>"]


def report_page(items: Sequence[LogPage | Failed], command: str, resolved: Resolved | None = None, *,
                title: str = "wqtool report") -> str:
    """The incident page: a section per log (or per PATH that could not be read: its exit code from
    ``resolved``, the run's codes), and the command line that makes the same page again."""
    body = [f"<h1>{_e(title)}</h1>", f"<p>Made by (run it again for the same page): <code>{_e(command)}</code></p>"]
    summary = []
    for i in items:
        if isinstance(i, Failed):
            summary.append((i.root, "-", i.label, resolved.of(i)))
        else:
            summary.append((i.report.root, i.fmt.name, i.report.verdict.label, i.exit_code))
    body.append(charts.table(("log", "format", "verdict", "exit"), summary, "summary"))
    for i in items:
        body += failed_section(i, resolved.of(i)) if isinstance(i, Failed) else log_section(i)
    return charts.page(title, body)


def chart_page(items: Sequence[LogPage], command: str) -> str:
    """``stats --chart``: the same drawings without the findings table."""
    body = ["<h1>wqtool stats</h1>", f"<p>Made by: <code>{_e(command)}</code></p>"]
    for i in items:
        body += log_section(i, full=False)
    return charts.page("wqtool stats", body)


def _drawings(p: LogPage) -> list[tuple[str, str]]:
    """(heading, drawing) of one log as ``log_section`` draws them; a drawing is an ``<svg>`` or, where there is
    nothing to draw, a sentence."""
    out: list[tuple[str, str]] = []
    s = p.series
    if s is None:
        out.append(("Records over time", "Records over time are drawn by the local engine (--engine local)."))
    else:
        out.append(("Records over time", charts.records_chart(s)))
        if s.has_depth:
            out.append(("Queue depth (replayed, at record times: jobs not finished yet, per queue)",
                        charts.depth_chart(s)))
    try:
        counts = p.view.counts_by_state()
    except NotImplementedError:
        counts = {}
    heading = f"Job states at --as-of {iso(p.as_of_ns)}"
    out.append((heading, charts.bar_chart(f"Jobs by state at {iso(p.as_of_ns)}", sorted(counts.items()),
                                          x_title="state", y_title="jobs", kind="state")
                if counts else "Nothing live at --as-of."))
    if s is not None:
        for h, what in ((s.wait, "Wait"), (s.run, "Run")):
            if h.count:
                out.append((f"{what} times, {h.count:,} jobs",
                            charts.bar_chart(f"{what} time distribution ({h.count} jobs)",
                                             list(zip(DURATION_LABELS, h.buckets)), x_title=f"{what.lower()} time",
                                             y_title="jobs", kind=what.lower(), color=charts.PALETTE[2])))
    spec = p.view.chart()
    if spec is not None:
        out.append((spec.get("title") or spec["table"],
                    charts.stacked_days_chart(spec, p.view.analytics().get(spec["table"], []))))
    return out


_SIZE = re.compile(r'<svg [^>]*?width="(\d+)" height="(\d+)"')
_TAG = re.compile(r"<[^>]+>")


def chart_svg(items: Sequence[LogPage], command: str) -> str:
    """``stats --chart FILE.svg``: one standalone SVG document (an XML file any viewer opens) holding every
    log's drawings one below the other, each under its heading; the tables stay in the .html page."""
    parts: list[str] = []
    y, width = 0, charts.W

    def line(text: str, size: int, bold: bool = False) -> None:
        nonlocal y
        y += size + 8
        weight = ' font-weight="bold"' if bold else ""
        parts.append(f'<text x="10" y="{y}" font-size="{size}"{weight}>{_e(text)}</text>')

    line("wqtool stats", 20, True)
    line(f"Made by: {command}", 11)
    for p in items:
        r = p.report
        y += 12
        line(r.root, 16, True)
        line(f"{p.fmt.title} (--format {p.fmt.name}): {r.segments} file(s), {r.records:,} records, {r.bytes:,} "
             f"bytes. Verdict: {r.verdict.label} (exit {p.exit_code})", 12)
        for heading, drawing in _drawings(p):
            line(heading, 13, True)
            m = _SIZE.match(drawing)
            if m is None:
                line(html.unescape(_TAG.sub("", drawing)), 12)
                continue
            w, h = int(m[1]), int(m[2])
            parts.append(drawing.replace("<svg ", f'<svg x="0" y="{y + 6}" ', 1))
            y += h + 12
            width = max(width, w)
    y += 10
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" viewBox="0 0 {width} {y}" '
            f'font-family="sans-serif"><title>wqtool stats</title><rect width="100%" height="100%" fill="#fff"/>'
            + "".join(parts) + "</svg>\n")
