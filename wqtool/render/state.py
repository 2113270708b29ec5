"""Replay output for every format (through its ``StateView``): the rows as a table, counts per group and state."""
from __future__ import annotations

from typing import TextIO

from rich.table import Table

from ..engine.format import StateView


def write_state_table(out: TextIO, view: StateView) -> None:
    out.write(view.table_header() + "\n")
    for line in view.table_lines():
        out.write(line + "\n")


def counts_table(view: StateView) -> Table | None:
    """A rich table of counts per group (queue) and state, with a total row; None when the format has none."""
    m = view.counts_matrix()
    if m is None:
        return None
    title, labels, groups = m
    t = Table(title=title, title_justify="left")
    t.add_column("queue")
    for s in labels:
        t.add_column(s, justify="right")
    t.add_column("total", justify="right")
    for q, counts in groups:
        t.add_row(q, *(str(counts[s]) for s in labels), str(sum(counts.values())))
    totals = view.counts_by_state()
    t.add_row("[bold]all[/]", *(f"[bold]{totals[s]}[/]" for s in labels), f"[bold]{sum(totals.values())}[/]")
    return t
