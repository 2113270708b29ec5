"""stats' analytics for every format (``StateView.analytics()``): text tables and files (``--out DIR``: CSV or
Parquet, one file per table). Their chart (``StateView.chart()``) is drawn by ``render.charts`` on the page of
``stats --chart`` and ``report`` (``render.htmlreport``)."""
from __future__ import annotations

import csv
import io
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
