"""Charts as hand-written inline SVG, for ``wqtool report`` and ``stats --chart`` (one self-contained HTML page:
no script, no external font, stylesheet or image; every drawing has a title, axis titles with units, a legend in
words and the numbers it draws in a table beside it, so it reads without colour).

Every series is a ``<g class="series" data-series="NAME" data-total="N">`` with a ``<title>``, so a test (or a
person with a screen reader) finds what is drawn without reading pixels. The inputs are the engine's values
(``engine.series.Series``, a ``StateView``'s counts and chart spec); nothing here reads a log.
"""
from __future__ import annotations

import datetime as _dt
import html
import math
from typing import Iterable, Sequence

#: Okabe-Ito, distinguishable with the common colour-vision deficiencies; dash patterns tell lines apart in grey
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000", "#999999")
DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 3", "10 4", "4 4", "12 2 2 2", "3 6")
DAMAGE_COLOR = "#c00000"
MAX_LINES = 8                     # queues drawn one line each; the rest are summed as "other queues"

W, H = 900, 300                   # a chart's size (px)
LEFT, RIGHT, TOP, BOTTOM = 70, 160, 30, 50

_e = html.escape


def _fmt_num(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3g}"


def utc(ns: int, with_date: bool = True) -> str:
    s = ns // 1_000_000_000
    try:
        d = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=s)
    except OverflowError:
        return f"@{s}s"
    return d.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def duration(ns: int) -> str:
    """A bin width or span in words: 1 min, 2 min, 1 h 4 min, 2 d."""
    m = ns // 60_000_000_000
    if m < 1:
        return f"{ns / 1e9:g} s"
    if m < 60:
        return f"{m} min"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h} h" + (f" {m} min" if m else "")
    return f"{h // 24} d" + (f" {h % 24} h" if h % 24 else "")


_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
            2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 365 * 86400)


def time_ticks(t0: int, t1: int, most: int = 8) -> list[int]:
    """Round tick times (ns, UTC) within [t0, t1], at most ``most`` of them."""
    span_s = max((t1 - t0) / 1e9, 1)
    step = next((s for s in _STEPS_S if span_s / s <= most), _STEPS_S[-1] * math.ceil(span_s / _STEPS_S[-1] / most))
    step_ns = step * 1_000_000_000
    first = -(-t0 // step_ns) * step_ns
    return list(range(first, t1 + 1, step_ns))


def tick_label(ns: int, span_ns: int) -> str:
    s = utc(ns)
    if span_ns <= 86_400 * 10**9:
        return s[11:16] if s[17:19] == "00" else s[11:19]
    return s[5:16]


def nice_max(v: float) -> float:
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


class Frame:
    """A chart's plot area: x from time (or index) to px, y from value to px; draws axes with titles."""

    def __init__(self, x0: float, x1: float, ymax: float, *, w: int = W, h: int = H):
        self.x0, self.x1 = x0, (x1 if x1 > x0 else x0 + 1)
        self.ymax = nice_max(ymax)
        self.w, self.h = w, h
        self.pw, self.ph = w - LEFT - RIGHT, h - TOP - BOTTOM

    def x(self, v: float) -> float:
        return LEFT + (v - self.x0) / (self.x1 - self.x0) * self.pw

    def y(self, v: float) -> float:
        return TOP + self.ph - v / self.ymax * self.ph

    def axes(self, y_title: str, x_title: str, x_ticks: Iterable[tuple[float, str]]) -> list[str]:
        b, r = TOP + self.ph, LEFT + self.pw
        out = [f'<g class="axes" font-size="11" fill="#222">',
               f'<line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/>',
               f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" stroke="#333"/>']
        for k in range(5):
            v = self.ymax * k / 4
            y = self.y(v)
            out.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{r}" y2="{y:.1f}" stroke="#ddd"/>'
                       f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt_num(v)}</text>')
        for xv, label in x_ticks:
            x = self.x(xv)
            out.append(f'<line x1="{x:.1f}" y1="{b}" x2="{x:.1f}" y2="{b + 5}" stroke="#333"/>'
                       f'<text x="{x:.1f}" y="{b + 17}" text-anchor="middle">{_e(label)}</text>')
        out.append(f'<text class="x-title" x="{LEFT + self.pw / 2:.0f}" y="{self.h - 8}" text-anchor="middle">'
                   f'{_e(x_title)}</text>')
        out.append(f'<text class="y-title" transform="translate(14 {TOP + self.ph / 2:.0f}) rotate(-90)" '
                   f'text-anchor="middle">{_e(y_title)}</text>')
        out.append("</g>")
        return out


def _svg_open(title: str, w: int = W, h: int = H, cls: str = "chart") -> str:
    return (f'<svg class="{cls}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'role="img" aria-label="{_e(title)}" font-family="sans-serif"><title>{_e(title)}</title>')


#: the widest a character of the legend's 11 px sans-serif is drawn (px; "m" and "W" are 10, digits 6.1)
LEGEND_CHAR_PX = 7.5


def _legend_fits(out: list[str], title: str, items: Sequence[tuple[str, str, str]], x: int, w: int = W,
                 h: int = H) -> None:
    """Widen the drawing (``out[0]``, its ``<svg>`` opening) so that the legend's longest label ends inside it:
    a label is never cut at the drawing's edge."""
    need = math.ceil(x + 24 + max((len(label) for label, _, _ in items), default=0) * LEGEND_CHAR_PX + 8)
    if need > w:
        out[0] = _svg_open(title, w=need, h=h)


def _legend(items: Sequence[tuple[str, str, str]], x: int, y: int = TOP) -> list[str]:
    """(label, colour, dash) entries at the right of a chart: a swatch and the label."""
    out = ['<g class="legend" font-size="11">']
    for i, (label, color, dash) in enumerate(items):
        yy = y + i * 16
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="{yy + 5}" x2="{x + 18}" y2="{yy + 5}" stroke="{color}" stroke-width="6"{d}/>'
                   f'<text x="{x + 24}" y="{yy + 9}">{_e(label)}</text>')
    out.append("</g>")
    return out


def _time_ticks(fr: Frame, t0: int, t1: int) -> list[tuple[float, str]]:
    return [(t, tick_label(t, t1 - t0)) for t in time_ticks(t0, t1)]


def records_chart(series, title: str = "Records over time") -> str:
    """Stacked bars: records per bin, by record kind; damage (error and warning findings) marked in red on the
    time axis. ``series`` is an ``engine.series.Series``."""
    per = series.per_kind()
    if not per:
        return '<p class="empty">No record of this log carries a time: nothing to draw over time.</p>'
    starts = [t for t, _ in next(iter(per.values()))]
    width = series.width_ns
    t0, t1 = starts[0], starts[-1] + width
    totals = [sum(per[k][i][1] for k in per) for i in range(len(starts))]
    fr = Frame(t0, t1, max(totals))
    unit = f"records per {duration(width)}"
    out = [_svg_open(f"{title} ({unit})")]
    out += fr.axes(unit, f"time (UTC, {utc(t0)[:10]}{' to ' + utc(t1)[:10] if utc(t1)[:10] != utc(t0)[:10] else ''})",
                   _time_ticks(fr, t0, t1))
    base = [0] * len(starts)
    bw = max(fr.x(t0 + width) - fr.x(t0), 0.5)
    legend = []
    for n, (kind, pts) in enumerate(per.items()):
        color = PALETTE[n % len(PALETTE)]
        total = sum(v for _, v in pts)
        path = []
        for i, (t, v) in enumerate(pts):
            if v:
                y_top, y_bot = fr.y(base[i] + v), fr.y(base[i])
                path.append(f"M{fr.x(t):.1f} {y_top:.1f}h{bw:.1f}V{y_bot:.1f}h{-bw:.1f}Z")
                base[i] += v
        out.append(f'<g class="series" data-series="{_e(kind)}" data-total="{total}" data-kind="records">'
                   f'<title>{_e(kind)}: {total:,} records</title><path d="{"".join(path)}" fill="{color}"/></g>')
        legend.append((f"{kind} ({total:,})", color, ""))
    # damage: a red tick under the axis for every bin holding findings
    if series.damage:
        marks = []
        codes_by_bin: dict[int, list[str]] = {}
        for m in series.marks:
            if m.time_ns is not None:
                i = (m.time_ns - series.origin_ns) // width
                codes_by_bin.setdefault(i, []).append(m.code)
        b = TOP + fr.ph
        for i in sorted(series.damage):
            t = series.bin_start(i)
            x = fr.x(t) + bw / 2
            codes = sorted(set(codes_by_bin.get(i, ())))
            marks.append(f'<g class="mark"><title>{series.damage[i]} finding(s) at {utc(t)}'
                         f'{": " + ", ".join(codes) if codes else ""}</title>'
                         f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{b}" stroke="{DAMAGE_COLOR}" '
                         f'stroke-width="1.5" stroke-dasharray="4 2"/>'
                         f'<path d="M{x - 5:.1f} {b + 10}l5 -9l5 9Z" fill="{DAMAGE_COLOR}"/></g>')
        n = sum(series.damage.values())
        out.append(f'<g class="series" data-series="damage" data-total="{n}" data-kind="findings">'
                   f'<title>damage: {n} finding(s) on the time axis</title>{"".join(marks)}</g>')
        legend.append((f"damage ({n} findings)", DAMAGE_COLOR, "4 2"))
    out += _legend(legend, W - RIGHT + 10)
    _legend_fits(out, f"{title} ({unit})", legend, W - RIGHT + 10)
    out.append("</svg>")
    return "".join(out)


def depth_chart(series, title: str = "Queue depth") -> str:
    """A step line per queue (the ``MAX_LINES`` deepest; the rest summed as "other queues"): its depth at the
    last record of each bin, as the replay had it."""
    dep = series.depth_series()
    if not dep:
        return ('<p class="empty">This format tells no queue depth over time (its replay has no '
                'series probe).</p>')
    order = sorted(dep, key=lambda q: (-series.peak[q], q))
    shown = order[:MAX_LINES]
    rest = order[MAX_LINES:]
    lines = {q: dep[q] for q in shown}
    if rest:
        pts = dep[rest[0]]
        lines[f"other queues ({len(rest)})"] = [(t, sum(dep[q][i][1] for q in rest)) for i, (t, _) in enumerate(pts)]
    ends = [t for t, _ in next(iter(lines.values()))]
    t0, t1 = ends[0] - series.width_ns, ends[-1]
    top = max((v for pts in lines.values() for _, v in pts), default=0)
    fr = Frame(t0, t1, top)
    out = [_svg_open(f"{title} (jobs, sampled every {duration(series.width_ns)})")]
    out += fr.axes("jobs in the queue", "time (UTC)", _time_ticks(fr, t0, t1))
    legend = []
    for n, (q, pts) in enumerate(lines.items()):
        color, dash = PALETTE[n % len(PALETTE)], DASHES[n % len(DASHES)]
        d = [f"M{fr.x(t0):.1f} {fr.y(pts[0][1]):.1f}"]
        for t, v in pts:
            d.append(f"H{fr.x(t):.1f}V{fr.y(v):.1f}")
        peak = series.peak[q] if q in series.peak else max(v for _, v in pts)   # most at once, not only sampled
        last = pts[-1][1]
        dd = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="series" data-series="{_e(q)}" data-total="{last}" data-peak="{peak}" '
                   f'data-kind="depth"><title>{_e(q)}: {last:,} at the end, {peak:,} at most</title>'
                   f'<path d="{"".join(d)}" fill="none" stroke="{color}" stroke-width="2"{dd}/></g>')
        legend.append((f"{q} (max {peak:,})", color, dash))
    out += _legend(legend, W - RIGHT + 10)
    _legend_fits(out, f"{title} (jobs, sampled every {duration(series.width_ns)})", legend, W - RIGHT + 10)
    out.append("</svg>")
    return "".join(out)


def bar_chart(title: str, items: Sequence[tuple[str, int]], *, x_title: str, y_title: str, kind: str,
              color: str = PALETTE[0]) -> str:
    """Vertical bars, one per (label, value), the value written on each bar."""
    n = max(len(items), 1)
    top = max((v for _, v in items), default=0)
    fr = Frame(0, n, top)
    out = [_svg_open(title)]
    slot = fr.pw / n
    out += fr.axes(y_title, x_title, [(i + 0.5, label) for i, (label, _) in enumerate(items)])
    for i, (label, v) in enumerate(items):
        x = fr.x(i) + slot * 0.15
        y = fr.y(v)
        out.append(f'<g class="series" data-series="{_e(label)}" data-total="{v}" data-kind="{_e(kind)}">'
                   f'<title>{_e(label)}: {v:,}</title>'
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{TOP + fr.ph - y:.1f}" '
                   f'fill="{color}"/><text x="{x + slot * 0.35:.1f}" y="{y - 4:.1f}" font-size="11" '
                   f'text-anchor="middle">{v:,}</text></g>')
    out.append("</svg>")
    return "".join(out)


def stacked_days_chart(spec: dict, rows: list[dict]) -> str:
    """A format's own chart (``StateView.chart()``: a bar per ``x`` value, the series stacked), e.g. Orth's daily
    success / fail / running."""
    series = spec["series"]
    labels = spec.get("labels") or series
    colors = spec.get("colors") or PALETTE
    n = max(len(rows), 1)
    top = max((sum(int(r.get(s) or 0) for s in series) for r in rows), default=0)
    fr = Frame(0, n, top, w=max(W, LEFT + RIGHT + n * 14))
    title = spec.get("title") or spec["table"]
    out = [_svg_open(title, w=fr.w)]
    every = max(1, n // 12)
    out += fr.axes(spec.get("y_title", "rows"), spec.get("x_title", spec["x"]),
                   [(i + 0.5, str(r.get(spec["x"]))) for i, r in enumerate(rows) if i % every == 0])
    slot = fr.pw / n
    legend = []
    base = [0] * len(rows)
    for s, label, color in zip(series, labels, colors):
        parts = []
        total = 0
        for i, r in enumerate(rows):
            v = int(r.get(s) or 0)
            if v:
                total += v
                y0, y1 = fr.y(base[i]), fr.y(base[i] + v)
                parts.append(f'<rect x="{fr.x(i) + slot * 0.1:.1f}" y="{y1:.1f}" width="{slot * 0.8:.1f}" '
                             f'height="{y0 - y1:.1f}" fill="{color}"><title>{_e(str(r.get(spec["x"])))} {_e(label)}: '
                             f'{v:,}</title></rect>')
                base[i] += v
        out.append(f'<g class="series" data-series="{_e(s)}" data-total="{total}" data-kind="{_e(spec["table"])}">'
                   f'<title>{_e(label)}: {total:,}</title>{"".join(parts)}</g>')
        legend.append((f"{label} ({total:,})", color, ""))
    out += _legend(legend, fr.w - RIGHT + 10)
    _legend_fits(out, title, legend, fr.w - RIGHT + 10, fr.w)
    out.append("</svg>")
    return "".join(out)


def table(cols: Sequence[str], rows: Iterable[Sequence], cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    out = [f"<table{c}><tr>" + "".join(f"<th>{_e(str(h))}</th>" for h in cols) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_e(_cell(v))}</td>" for v in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    return str(v)


STYLE = ("body{font:14px/1.4 sans-serif;margin:24px;color:#111;max-width:1100px}"
         "h1{font-size:22px}h2{font-size:18px;border-top:2px solid #333;padding-top:12px;margin-top:36px}"
         "h3{font-size:15px;margin:22px 0 6px}"
         "table{border-collapse:collapse;margin:6px 0 14px;font-size:13px}"
         "td,th{border:1px solid #bbb;padding:2px 8px;text-align:left;vertical-align:top}th{background:#eee}"
         ".verdict{display:inline-block;padding:2px 10px;border:2px solid #111;font-weight:bold}"
         ".verdict.bad{background:#fdd;border-color:#900}.verdict.ok{background:#dfd;border-color:#070}"
         "code,.mono{font-family:monospace;font-size:12px}details{margin:4px 0 12px}"
         "svg{display:block;max-width:100%;height:auto;background:#fff}p.empty{color:#555;font-style:italic}")


def page(title: str, body: Sequence[str]) -> str:
    """A complete self-contained HTML page (an inline stylesheet, no script, nothing fetched)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
