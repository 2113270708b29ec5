"""stats' analytics for every format (``StateView.analytics()``): text tables, files (``--out DIR``: CSV or
Parquet, one file per table) and a chart (``--chart FILE``: a self-contained HTML page with an inline SVG)."""
from __future__ import annotations

import csv
import html
import io
import json
import os
from typing import TextIO

from ..errors import UsageError


def write_tables_text(out: TextIO, tables: dict[str, list[dict]], indent: str = "  ") -> None:
    """Each table as aligned text columns under its name."""
    for name, rows in tables.items():
        if not rows:
            out.write(f"{indent}{name}: (none)\n")
            continue
        cols = list(rows[0])
        cells = [[_cell(r.get(c)) for c in cols] for r in rows]
        widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
        num = [all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in rows) for c in cols]
        out.write(f"{indent}{name}:\n")
        out.write(indent + "  " + "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cols, widths, num))
                  .rstrip() + "\n")
        for row in cells:
            out.write(indent + "  " + "  ".join(x.rjust(w) if n else x.ljust(w) for x, w, n in zip(row, widths, num))
                      .rstrip() + "\n")


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write_tables_files(out_dir: str, per_log: list[tuple[str, dict[str, list[dict]]]], fmt: str) -> list[str]:
    """One file per table name (``<name>.csv`` / ``<name>.parquet``) in a new directory ``out_dir``; each row
    starts with the log it comes from. Returns the paths written."""
    if os.path.lexists(out_dir):
        raise UsageError(f"--out {out_dir}: already exists; stats never overwrites: name a new directory")
    names: list[str] = []
    for _, tables in per_log:
        for n in tables:
            if n not in names:
                names.append(n)
    if not names:
        raise UsageError("--out: these logs' format has no analytics tables")
    os.makedirs(out_dir)
    written = []
    for n in names:
        rows = [{"log": root, **r} for root, tables in per_log for r in tables.get(n, [])]
        cols = ["log"] + [c for c in _columns(per_log, n)]
        path = os.path.join(out_dir, f"{n}.{fmt}")
        if fmt == "csv":
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            for r in rows:
                w.writerow({c: r.get(c) for c in cols})
            with open(path, "x", encoding="utf-8") as f:
                f.write(buf.getvalue())
        else:
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError:
                raise UsageError("--out-format parquet needs pyarrow (pip install 'wqtool[spark]')") from None
            pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows]), path)
        written.append(path)
    return written


def _columns(per_log, name) -> list[str]:
    cols: list[str] = []
    for _, tables in per_log:
        for r in tables.get(name, []):
            for c in r:
                if c not in cols:
                    cols.append(c)
    return cols


def chart_html(charts: list[tuple[str, dict, list[dict]]]) -> str:
    """A self-contained HTML page: per log, stacked bars of the chart's series per x value (inline SVG, no
    script, no external resource), with the numbers in a table under each chart."""
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\"><title>wqtool stats</title>",
             "<style>body{font:14px sans-serif;margin:24px}table{border-collapse:collapse;margin:8px 0 32px}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#f4f4f4}"
             ".k span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}</style>",
             "</head><body>"]
    for root, spec, rows in charts:
        parts.append(f"<h2>{html.escape(spec.get('title', ''))}</h2><p>{html.escape(root)}</p>")
        parts.append(_svg(spec, rows))
        labels = spec.get("labels") or spec["series"]
        colors = spec.get("colors") or ["#4472c4"] * len(labels)
        parts.append("<div class=\"k\">" + "".join(f"<span style=\"background:{c}\"></span>{html.escape(lbl)}"
                                                   for lbl, c in zip(labels, colors)) + "</div>")
        parts.append("<table><tr><th>" + "</th><th>".join(html.escape(c) for c in [spec["x"], *spec["series"]])
                     + "</th></tr>")
        for r in rows:
            parts.append("<tr><td>" + "</td><td>".join(html.escape(_cell(r.get(c))) for c in [spec["x"],
                                                                                          *spec["series"]])
                         + "</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _svg(spec: dict, rows: list[dict]) -> str:
    series = spec["series"]
    colors = spec.get("colors") or ["#4472c4"] * len(series)
    n = max(len(rows), 1)
    bar = max(4, min(40, 800 // n))
    w, h, left, bottom = left_w = 60 + n * (bar + 4) + 20, 300, 60, 60
    del left_w
    top = max((sum(int(r.get(s) or 0) for s in series) for r in rows), default=0) or 1
    scale = (h - bottom - 20) / top
    out = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">",
           f"<line x1=\"{left}\" y1=\"{h - bottom}\" x2=\"{w - 10}\" y2=\"{h - bottom}\" stroke=\"#333\"/>",
           f"<line x1=\"{left}\" y1=\"20\" x2=\"{left}\" y2=\"{h - bottom}\" stroke=\"#333\"/>",
           f"<text x=\"{left - 6}\" y=\"24\" text-anchor=\"end\" font-size=\"11\">{top}</text>",
           f"<text x=\"{left - 6}\" y=\"{h - bottom}\" text-anchor=\"end\" font-size=\"11\">0</text>"]
    for i, r in enumerate(rows):
        x = left + 4 + i * (bar + 4)
        y = h - bottom
        for s, c in zip(series, colors):
            v = int(r.get(s) or 0)
            if v:
                hh = v * scale
                y -= hh
                out.append(f"<rect x=\"{x}\" y=\"{y:.1f}\" width=\"{bar}\" height=\"{hh:.1f}\" fill=\"{c}\">"
                           f"<title>{html.escape(str(r.get(spec['x'])))} {html.escape(s)}: {v}</title></rect>")
        out.append(f"<text x=\"{x + bar / 2:.1f}\" y=\"{h - bottom + 12}\" font-size=\"10\" text-anchor=\"end\" "
                   f"transform=\"rotate(-45 {x + bar / 2:.1f} {h - bottom + 12})\">{html.escape(str(r.get(spec['x'])))}"
                   "</text>")
    out.append("</svg>")
    return "".join(out)


def write_chart(path: str, charts: list[tuple[str, dict, list[dict]]]) -> None:
    if not charts:
        raise UsageError("--chart: these logs' format draws no chart")
    if os.path.lexists(path):
        raise UsageError(f"--chart {path}: already exists; stats never overwrites: name a new file")
    with open(path, "x", encoding="utf-8") as f:
        f.write(chart_html(charts))


def analytics_json(tables: dict[str, list[dict]]) -> str:
    return json.dumps(tables)
