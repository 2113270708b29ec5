"""diff's output (``engine.diff.Diff``): the relation line, each differing job with its two sides and the records
that changed it, the findings of both reads; as a table, one JSON document, or JSON Lines ending in a summary."""
from __future__ import annotations

import json
from typing import TextIO

from ..engine.diff import Change, Diff, JobDiff, JobSide, Place, Relation
from ..engine.findings import Verdict
from ..engine.serialize import finding_to_jsonable, with_times
from ..offsets import at
from .findings import findings_lines
from .outcome import Outcome, Resolved


def relation_text(rel: Relation) -> str:
    """The header's words: how B relates to A."""
    if rel.kind == "same":
        return "A and B are byte-identical"
    if rel.kind == "a+":
        return f"B = A + {rel.records} record{'s' if rel.records != 1 else ''}"
    if rel.kind == "b+":
        return f"A = B + {rel.records} record{'s' if rel.records != 1 else ''}"
    if rel.kind == "none":
        return "no common prefix"
    if rel.kind == "across":
        return "run by run: the executor (A) against its admin's table (B)"
    if rel.kind == "instants":
        return f"{rel.records} record{'s' if rel.records != 1 else ''} between the two instants"
    return f"they diverge at A: {at(rel.a.path, rel.a.offset)} / B: {at(rel.b.path, rel.b.offset)}"


def outcome(d: Diff, write=None) -> Outcome:
    """diff's outcome: the two reads differ or not (the edge's exit code: 0 equal, 1 different); a read that
    found corruption or an impossible history counts with its verdict instead (the run's precedence); a torn tail
    is a finding here, not an exit code of its own."""
    bad = [r.report.verdict for r in (d.a, d.b) if r.report.verdict > Verdict.TORN_TAIL]
    return Outcome.of(bad, (), write, differ=not d.equal)


def _place(p: Place | None) -> dict | None:
    return None if p is None else {"file": p.path, "offset": p.offset, "at": at(p.path, p.offset)}


def _change(c: Change | None) -> dict | None:
    if c is None:
        return None
    return {"file": c.path, "offset": c.offset, "at": at(c.path, c.offset), "record_index": c.record_index,
            "time": c.time, "cmd": c.cmd}


def _side(s: JobSide | None) -> dict | None:
    if s is None:
        return None
    row = dict(s.row)
    if "id" in row:      # replay's row, in the JSON vocabulary: a job id is job_id
        row = {("job_id" if k == "id" else k): v for k, v in row.items()}
    return {"state": s.state, "attempts": s.attempts, "result": row.get("result"), "row": row}


def job_doc(j: JobDiff, instants: bool = False) -> dict:
    doc = {"job_id": j.job_id, "queue": j.queue, "a": _side(j.a), "b": _side(j.b),
           "a_change": _change(j.a_change), "b_change": _change(j.b_change)}
    if instants:
        doc.update(changes=[_change(c) for c in j.changes], expired=j.expired)
    if j.kind is not None:
        doc.update(kind=j.kind, note=j.note)
    return doc


def _finding(f, side: str) -> dict:
    doc = finding_to_jsonable(f)
    doc.pop("verdict", None)           # a finding in diff's JSON carries its severity, as in every command's
    doc["side"] = side
    doc["at"] = at(f.path, f.offset) if f.offset is not None else None
    return doc


def summary_doc(d: Diff, resolved: Resolved) -> dict:
    sides = {}
    for name, r in (("a", d.a), ("b", d.b)):
        sides[name] = {"root": r.root, "records": r.report.records,
                       "job_count": sum(r.view().counts_by_state().values()),
                       "verdict": r.report.verdict.label,
                       "counts": dict(sorted(r.report.counts.items()))}
    rel = d.relation
    doc = {"from_ns": d.from_ns, "to_ns": d.as_of_ns} if d.from_ns is not None else {"as_of_ns": d.as_of_ns}
    return with_times({
        "a": sides["a"], "b": sides["b"], **doc,
        "relation": {"kind": rel.kind, "text": relation_text(rel), "records": rel.records,
                     "a": _place(rel.a), "b": _place(rel.b)},
        "total": d.total, "shown": len(d.jobs),
        "findings": [_finding(f, s) for s, r in (("a", d.a), ("b", d.b)) for f in r.report.findings],
        "counts": {"a": sides["a"]["counts"], "b": sides["b"]["counts"]},
        "exit_code": resolved.code, "verdict": "equal" if d.equal else "different",
    })


def _cell(s: JobSide | None) -> str:
    if s is None:
        return "-  (not live)"
    if s.cell is not None:
        return s.cell
    res = "-" if s.result is None else json.dumps(s.result[:40].decode("utf-8", "backslashreplace"))
    return f"{s.state:<9} attempts {s.attempts:<3} result {res}"


def _by(c: Change | None) -> str:
    if c is None:
        return "(not changed past the divergence)"
    idx = "#-" if c.record_index is None else f"#{c.record_index}"
    return f"{at(c.path, c.offset)} {idx} {c.time or '-'} {c.cmd or '?'}"


def write_diff(out: TextIO, d: Diff, output: str, resolved: Resolved) -> None:
    if output == "json":
        doc = summary_doc(d, resolved)
        doc["jobs"] = [job_doc(j, d.from_ns is not None) for j in d.jobs]
        out.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    if output == "jsonl":
        for j in d.jobs:
            out.write(json.dumps(job_doc(j, d.from_ns is not None), ensure_ascii=False) + "\n")
        out.write(json.dumps({"summary": summary_doc(d, resolved)}, ensure_ascii=False) + "\n")
        return
    doc = summary_doc(d, resolved)
    two = d.from_ns is not None
    for name, r in (("A", d.a), ("B", d.b)):
        when = f" at {doc['from' if name == 'A' else 'to']}" if two else ""
        side = doc[name.lower()]
        out.write(f"{name}: {r.root}{when} ({side['records']} records, {side['job_count']} jobs, "
                  f"{side['verdict']})\n")
    out.write(f"{'from ' + doc['from'] + ' to ' + doc['to'] if two else 'as of ' + doc['as_of']}: "
              f"{relation_text(d.relation)}\n")
    if d.equal:
        out.write("no job differs\n")
    else:
        more = f" ({len(d.jobs)} shown: --limit)" if len(d.jobs) < d.total else ""
        noun = "run" if d.relation.kind == "across" else "job"      # across sources: a run (log id) of a job
        out.write(f"{d.total} {noun}{'s' if d.total != 1 else ''} differ{'s' if d.total == 1 else ''}{more}:\n")
    for j in d.jobs:
        out.write(f"\n{j.job_id}  queue {j.queue}\n")
        if two:
            out.write(f"  A: {_cell(j.a)}\n  B: {_cell(j.b)}\n")
            if j.expired:
                out.write("  expired by time (no record in between)\n")
            for c in j.changes:
                out.write(f"  by {_by(c)}\n")
            continue
        if j.kind is not None:       # two sources of one system: each side's words, where, and what it means
            out.write(f"  {j.kind}: {j.note}\n")
            out.write(f"  A: {_cell(j.a)}" + (f"  ({_by(j.a_change)})" if j.a_change else "") + "\n")
            out.write(f"  B: {_cell(j.b)}" + (f"  ({_by(j.b_change)})" if j.b_change else "") + "\n")
            continue
        out.write(f"  A: {_cell(j.a):<52} by {_by(j.a_change)}\n")
        out.write(f"  B: {_cell(j.b):<52} by {_by(j.b_change)}\n")
    for name, r in (("A", d.a), ("B", d.b)):
        counts = r.report.counts
        if not counts:
            continue
        out.write(f"\nfindings of {name}: " + ", ".join(f"{n} {code}" for code, n in sorted(counts.items())) + "\n")
        for line in findings_lines([f for f in r.report.findings if f.severity == "error"]):
            out.write(line + "\n")
