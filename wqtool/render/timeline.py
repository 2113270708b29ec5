"""``stats --timeline``: a log's main series in the terminal, drawn with block characters (▁▂▃▄▅▆▇█): a row per
record type (each row scaled to its own largest column, its total on the left), a row of damage (``!`` where
findings sit), a row of the queues' depth (all queues), and a labelled UTC time axis. The width is the terminal's (or
``COLUMNS``; 80 when piped), colour only on a terminal: piped, the lines are plain text.
"""
from __future__ import annotations

from typing import Sequence

from . import charts

BLOCKS = " ▁▂▃▄▅▆▇█"
MIN_COLUMNS = 10


def _level(v: float, top: float) -> str:
    if v <= 0 or top <= 0:
        return BLOCKS[0]
    return BLOCKS[max(1, min(8, round(v / top * 8)))]


def _columns(values: Sequence[int], n: int, how: str = "sum") -> list[float]:
    """``values`` (one per bin) into ``n`` columns: a column sums (or, ``how`` "last", ends with) the bins whose
    start falls in it; with fewer bins than columns, each bin spans ``n // len(values)`` columns."""
    m = len(values)
    if m <= n:
        k = n // m
        return [v for v in values for _ in range(k)]
    out = []
    for j in range(n):
        part = values[j * m // n:(j + 1) * m // n]
        out.append((sum(part) if how == "sum" else part[-1]) if part else 0)
    return out


def timeline_lines(root: str, series, width: int) -> list[tuple[str, str | None]]:
    """(line, style) pairs: the style a colour name for a terminal, or None."""
    if series is None:
        return [(f"{root}: the timeline is drawn by the local engine (--engine local)", None)]
    per = series.per_kind()
    if not per:
        return [(f"{root}: no record carries a time: no timeline", None)]
    starts = [t for t, _ in next(iter(per.values()))]
    nb = len(starts)
    totals = {k: sum(v for _, v in pts) for k, pts in per.items()}
    rows: list[tuple[str, str, list[float], str | None]] = []     # label, total text, columns, style
    label_w = max(len(k) for k in [*per, "damage", "in queues"])
    num_w = max(len(f"{v:,}") for v in [*totals.values(), sum(series.damage.values()), max(series.peak.values(),
                                                                                           default=0)])
    cols = max(MIN_COLUMNS, width - label_w - num_w - 4)
    cols = min(cols, nb * (cols // nb)) if nb <= cols else cols
    colors = ("blue", "yellow", "green", "magenta", "cyan", "red", "bright_yellow", "white", "bright_black")
    for n, (k, pts) in enumerate(per.items()):
        if totals[k]:
            rows.append((k, f"{totals[k]:,}", _columns([v for _, v in pts], cols), colors[n % len(colors)]))
    first_bin = (starts[0] - series.origin_ns) // series.width_ns
    if series.damage:
        dmg = [series.damage.get(first_bin + i, 0) for i in range(nb)]
        rows.append(("damage", f"{sum(dmg):,}", _columns(dmg, cols), "bold red"))
    if series.has_depth:
        dep = series.depth_series()
        live = [sum(pts[i][1] for pts in dep.values()) for i in range(nb)]
        rows.append(("in queues", f"{max(live, default=0):,}", _columns(live, cols, "last"), "bold"))
    t0, t1 = starts[0], starts[-1] + series.width_ns
    per_col = (t1 - t0) // cols
    date = charts.utc(t0)[:10] + ("" if charts.utc(t1)[:10] == charts.utc(t0)[:10] else " to " + charts.utc(t1)[:10])
    per_txt = charts.duration(max(per_col, series.width_ns) if nb > cols else series.width_ns)
    head = f"{root}: records per {per_txt} a column, {date} UTC"
    import textwrap
    out: list[tuple[str, str | None]] = [(line, None) for line in textwrap.wrap(head, width, break_on_hyphens=False)]
    for label, total, values, style in rows:
        top = max(values, default=0)
        if label == "damage":
            cells = "".join("!" if v else " " for v in values)
        else:
            cells = "".join(_level(v, top) for v in values)
        out.append((f"{label:<{label_w}} {total:>{num_w}} │{cells}│", style))
    pad = " " * (label_w + num_w + 2)
    ticks = charts.time_ticks(t0, t1, most=max(2, cols // 12))
    axis = ["─"] * cols
    labels = [" "] * (cols + 20)
    next_free = 0
    for t in ticks:
        c = int((t - t0) * cols // max(t1 - t0, 1))
        if not 0 <= c < cols:
            continue
        axis[c] = "┬"
        text = charts.tick_label(t, t1 - t0)
        if c >= next_free and c + len(text) <= cols + 1:
            labels[c:c + len(text)] = list(text)
            next_free = c + len(text) + 1
    out.append((pad + "└" + "".join(axis) + "┘", None))
    out.append((pad + " " + "".join(labels).rstrip(), None))
    note = "Each row is scaled to its own largest column; the number is its total"
    if series.untimed:
        note += "; records without a time (not drawn): " + ", ".join(f"{k} {v:,}" for k, v in series.untimed.items())
    if series.has_depth:
        note += "; in queues: jobs not finished yet, the most at once"
    out += [(line, None) for line in textwrap.wrap(note + ".", width)]
    return out


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first; 80 when stdout is not a terminal)."""
    import shutil
    return shutil.get_terminal_size((80, 24)).columns


def write_timeline(items: Sequence[tuple[str, object]], out=None, width: int | None = None) -> None:
    """Each (log name, Series) as ``timeline_lines``, after a blank line; coloured only on a terminal."""
    import os
    import sys
    out = sys.stdout if out is None else out
    width = terminal_width() if width is None else width
    color = out.isatty() and not os.environ.get("NO_COLOR")
    console = None
    if color:
        from rich.console import Console
        from rich.text import Text
        console = Console(file=out, highlight=False, soft_wrap=True, width=width)
    for root, series in items:
        out.write("\n")
        for line, style in timeline_lines(root, series, width):
            if console is not None and style:
                console.print(Text(line, style=style))
            else:
                out.write(line + "\n")
