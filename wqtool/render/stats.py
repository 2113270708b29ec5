"""stats' output for every format: per log and in total, records and bytes per kind, state, damage."""
from __future__ import annotations

from .output import json_text
from collections import Counter
from typing import TextIO

from ..engine.findings import worst
from ..engine.stats import RecordStats
from .analytics import write_tables_text
from .outcome import Failed, Resolved


def stats_doc(per_log, total_jobs: int, resolved: Resolved) -> dict:
    """The stats document from (LogReport, StateView, RecordStats, distinct jobs) per log — the same for both
    engines — or a ``render.outcome.Failed`` for a PATH that could not be read (an entry with its error; its
    exit code counts in the total's). The total's states are every log's, in the order they first appear."""
    logs = []
    tot = RecordStats()
    tot_states: Counter = Counter()
    tot_queues: dict[str, Counter] = {}
    tot_counts: Counter = Counter()
    tot_sev: Counter = Counter()
    verdicts = []
    failed = []
    for item in per_log:
        if isinstance(item, Failed):
            logs.append(resolved.fill(item.to_jsonable()))
            failed.append(item)
            continue
        report, view, st, jobs = item
        d = st.to_jsonable()
        d["jobs"] = jobs
        by_state = view.counts_by_state()
        queues = view.queues()
        # bytes: the log's files, as verify counts them (segment headers included); record_bytes: its records'
        # (what by_type adds up to)
        d["record_bytes"] = d["bytes"]
        d["bytes"] = report.bytes
        doc = {"root": report.root, "verdict": report.verdict.label, "exit_code": resolved.of(report.verdict),
               "segments": report.segments, **d,
               "state": {"jobs": sum(by_state.values()), "by_state": by_state, "queues": queues,
                         "digest": view.digest()},
               "damage": _damage(report.verdict, report.counts, report.severities)}
        tables = view.analytics()
        if tables:
            doc["analytics"] = tables
        logs.append(doc)
        verdicts.append(report.verdict)
        tot.merge(st)
        for k, v in by_state.items():
            tot_states[k] += v
        for q, c in queues.items():
            tot_queues.setdefault(q, Counter()).update(c)
        tot_counts.update(report.counts)
        tot_sev.update(report.severities)
    t = tot.to_jsonable()
    t["jobs"] = total_jobs
    t["record_bytes"] = t["bytes"]
    t["bytes"] = sum(d.get("bytes", 0) for d in logs if "error" not in d)
    total = {"logs": len(logs) - len(failed), "exit_code": resolved.code,
             "segments": sum(d.get("segments", 0) for d in logs), **t,
             "state": {"jobs": sum(tot_states.values()), "by_state": dict(tot_states),
                       "queues": {q: dict(c) for q, c in sorted(tot_queues.items())}},
             "damage": _damage(worst(verdicts), tot_counts, tot_sev)}
    return {**resolved.summary, "logs": logs, "total": total}


def _damage(verdict, counts, severities) -> dict:
    """The findings of a log (the exit code is the entry's own ``exit_code``: one place, for readable and
    unreadable logs alike)."""
    return {"errors": severities.get("error", 0),
            "warnings": severities.get("warning", 0), "counts": dict(sorted(counts.items()))}


def write_stats(out: TextIO, doc: dict, output: str) -> None:
    if output == "json":
        out.write(json_text(doc, indent=2) + "\n")
        return
    if output == "jsonl":
        for d in doc["logs"]:
            out.write(json_text(d) + "\n")
        out.write(json_text({"summary": {"exit_code": doc["exit_code"], "verdict": doc["verdict"],
                                         "total": doc["total"]}}) + "\n")
        return
    w = out.write
    for d in doc["logs"] + [dict(doc["total"], root=f"total ({doc['total']['logs']} log(s))")]:
        if "error" in d:
            w(f"{d['root']}: {d['verdict']}: {d['error']} (exit {d['exit_code']})\n")
            continue
        s, dm = d["state"], d["damage"]
        in_records = f" ({d['record_bytes']} in records)" if d["record_bytes"] != d["bytes"] else ""
        w(f"{d['root']}: {d['segments']} segment(s), {d['records']} records, {d['bytes']} bytes{in_records}, "
          f"{d['jobs']} job id(s)\n")
        if d["first_time"]:
            w(f"  written {d['first_time']} .. {d['last_time']}\n")
        for k, v in d["by_type"].items():
            w(f"  {k:<16} {v['records']:>10} records {v['bytes']:>14} bytes\n")
        w("  jobs at --as-of: " + ", ".join(f"{k} {v}" for k, v in s["by_state"].items()) + f" ({s['jobs']} live)\n")
        if s["queues"]:
            w("  queues: " + ", ".join(f"{q} {sum(c.values())}" for q, c in s["queues"].items()) + "\n")
        if s.get("digest"):
            w(f"  digest sha256:{s['digest']}\n")
        w(f"  damage: exit {d['exit_code']}, {dm['errors']} error(s), {dm['warnings']} warning(s)"
          + (": " + ", ".join(f"{k} {v}" for k, v in dm["counts"].items()) if dm["counts"] else "") + "\n")
        if d.get("analytics"):
            write_tables_text(out, d["analytics"])


def write_record_stats(out: TextIO, st: RecordStats, output: str, run: dict | None = None) -> None:
    """dump --stats; ``run``: the run's ``exit_code`` and ``verdict``, at the top of the JSON document (``-o
    jsonl``: its one line is the summary line, ``{"summary": ...}``)."""
    d = st.to_jsonable()
    if output == "json":
        out.write(json_text({**(run or {}), **d}, indent=2) + "\n")
        return
    if output == "jsonl":
        out.write(json_text({"summary": {**(run or {}), **d}}) + "\n")
        return
    from rich.table import Table

    from .console import stdout_console
    out.write(f"{d['records']} records, {d['bytes']} bytes, {d['jobs']} jobs\n"
              f"records written {d['first_time']} .. {d['last_time']}\n")
    t = Table()
    t.add_column("command")
    t.add_column("records", justify="right")
    t.add_column("bytes", justify="right")
    for k, v in d["by_type"].items():
        t.add_row(k, str(v["records"]), str(v["bytes"]))
    stdout_console().print(t)
