"""Replay output: the jobs (streamed), counts per state and per queue, and the digest."""
from __future__ import annotations

import json
from typing import TextIO

from rich.table import Table

from ..engine.workq.replay import Job, ReplayState
from ..formats._common import format_unix_ns


def _t(ns: int | None) -> str | None:
    return None if ns is None else format_unix_ns(ns)


def job_to_jsonable(j: Job) -> dict:
    d = j.canonical()
    d.update(created=_t(j.created_ns), scheduled=_t(j.scheduled_ns), expires=_t(j.expires_ns),
             log_expires=_t(j.log_expires_ns), lease_expires=_t(j.lease_expires_ns))
    return d


def state_summary(state: ReplayState) -> dict:
    return {"as_of": format_unix_ns(state.as_of_ns), "job_count": len(state.jobs), "counts": state.counts_by_state(),
            "queues": state.queues(), "records": state.records, "applied": state.applied,
            "digest": state.digest()}


_HEAD = (f"{'job':<36}  {'queue':<12} {'state':<9} {'prio':>6} {'att':>4} {'ttr_ms':>9} {'ttl_ms':>11}  "
         f"{'expires (upstream)':<30} {'scheduled':<24} {'payload':>8}  result")


def write_jobs_table(out: TextIO, state: ReplayState) -> None:
    out.write(_HEAD + "\n")
    for j in state.sorted_jobs():
        att = f"{j.attempts}/{j.max_attempts}" if j.max_attempts else str(j.attempts)
        res = "" if j.result is None else json.dumps(j.result[:40].decode("utf-8", "backslashreplace"))
        out.write(f"{j.uuid:<36}  {j.name:<12} {j.state.label:<9} {j.priority:>6} {att:>4} {j.ttr:>9} {j.ttl:>11}  "
                  f"{format_unix_ns(j.expires_ns):<30} {(_t(j.scheduled_ns) or '-'):<24} {j.payload_len:>8}  {res}\n")


def counts_table(state: ReplayState) -> Table:
    t = Table(title="jobs per queue and state", title_justify="left")
    labels = list(state.counts_by_state())
    t.add_column("queue")
    for s in labels:
        t.add_column(s, justify="right")
    t.add_column("total", justify="right")
    for q, counts in state.queues().items():
        t.add_row(q, *(str(counts[s]) for s in labels), str(sum(counts.values())))
    totals = state.counts_by_state()
    t.add_row("[bold]all[/]", *(f"[bold]{totals[s]}[/]" for s in labels), f"[bold]{len(state.jobs)}[/]")
    return t
