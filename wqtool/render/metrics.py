"""``verify --metrics-file FILE``: the check's result in Prometheus' text exposition format (version 0.0.4), for
node_exporter's textfile collector, written atomically (a temp file in the same directory, fsync, rename, directory
fsync: the collector never reads half a file; the temp name does not end in ``.prom``, so it never reads the temp).

Metrics (every one a gauge: each run replaces the values; labels ``path`` — the log, as reports name it — and
``format``):

  wqtool_verify_up{path,format}                  1: the PATH was read as a log; 0: it could not be
  wqtool_verify_exit_code{path,format}           verify's exit code for this PATH (0 clean ... 5)
  wqtool_verify_verdict{path,format,verdict}     1 for its verdict, 0 for clean|torn_tail|corrupt|invalid_history
  wqtool_verify_findings{path,format,code,severity}  findings of each code in this check
  wqtool_verify_duration_seconds{path,format}    how long the check of this log took
  wqtool_log_records{path,format}                records read
  wqtool_log_size_bytes{path,format}             bytes read
  wqtool_log_files{path,format}                  files read (segments, journals, tables)
  wqtool_log_live_jobs{path,format}              jobs in the replayed state at --as-of
  wqtool_log_jobs{path,format,state}             those jobs by state
  wqtool_log_newest_record_timestamp_seconds{path,format}  the newest record's time (Unix s)
  wqtool_verify_run_exit_code                    the run's exit code (every PATH)
  wqtool_verify_last_run_timestamp_seconds       when the file was written (alert when it is stale)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from ..engine.findings import Verdict
from ..offsets import printable
from .outcome import Failed, Resolved

PREFIX = "wqtool_"


@dataclass
class LogMetrics:
    """What verify measured of one log beyond its LogReport."""

    fmt: str
    duration_s: float
    jobs: dict[str, int] | None = None           # by state; None: no replayed state
    newest_ns: int | None = None


@dataclass
class _Family:
    name: str
    help: str
    samples: list[tuple[dict, float]] = field(default_factory=list)


def _escape(v: str) -> str:
    """A label value: a byte of a path that is not UTF-8 as ``\\xff`` (``printable``), then the exposition
    format's escapes (so the file holds ``\\\\xff``, which a reader of the format reads back as ``\\xff``)."""
    return printable(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _value(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return repr(float(v))


#: the order ``wqtool_verify_verdict`` lists the verdicts in (as it always has; not their severity order)
_VERDICTS_LISTED = (Verdict.CLEAN, Verdict.TORN_TAIL, Verdict.CORRUPT, Verdict.INVALID_HISTORY)


def _verdict_name(v: Verdict) -> str:
    return v.label.lower().replace(" ", "_")


def exposition(items: Sequence[tuple[object, LogMetrics | None]], resolved: Resolved,
               now_s: float | None = None) -> str:
    """The text of the metrics file: (LogReport or Failed, its LogMetrics or None) per PATH; ``resolved``: the
    run's codes, as the edge resolved them."""
    fam: dict[str, _Family] = {}

    def add(name: str, help_: str, labels: dict, value: float) -> None:
        f = fam.get(name)
        if f is None:
            f = fam[name] = _Family(PREFIX + name, help_)
        f.samples.append((labels, value))

    for item, m in items:
        if isinstance(item, Failed):
            lab = {"path": item.root, "format": ""}
            add("verify_up", "1 if the PATH was read as a log, 0 if it could not be.", lab, 0)
            add("verify_exit_code", "wqtool verify's exit code for this PATH.", lab, resolved.of(item))
            continue
        lr = item
        lab = {"path": lr.root, "format": m.fmt if m else ""}
        add("verify_up", "1 if the PATH was read as a log, 0 if it could not be.", lab, 1)
        add("verify_exit_code", "wqtool verify's exit code for this PATH.", lab, resolved.of(lr.verdict))
        for v in _VERDICTS_LISTED:
            add("verify_verdict", "The log's verdict: 1 for the one it has, 0 for the others.",
                {**lab, "verdict": _verdict_name(v)}, int(v == lr.verdict))
        from ..engine.format import format_of_code
        for code, n in sorted(lr.counts.items()):
            fmt = format_of_code(code)
            sev = fmt.codes[code][0] if fmt is not None else "unknown"
            add("verify_findings", "Findings of this code in the check.", {**lab, "code": code, "severity": sev}, n)
        add("log_records", "Records read.", lab, lr.records)
        add("log_size_bytes", "Bytes read.", lab, lr.bytes)
        add("log_files", "Files read (segments, journals, tables).", lab, lr.segments)
        if m is not None:
            add("verify_duration_seconds", "How long the check of this log took.", lab, round(m.duration_s, 6))
            if m.jobs is not None:
                add("log_live_jobs", "Jobs in the replayed state at --as-of.", lab, sum(m.jobs.values()))
                for state, n in sorted(m.jobs.items()):
                    add("log_jobs", "Jobs in the replayed state at --as-of, by state.", {**lab, "state": state}, n)
            if m.newest_ns is not None:
                add("log_newest_record_timestamp_seconds", "The newest record's time (Unix seconds).", lab,
                    m.newest_ns / 1e9)
    add("verify_run_exit_code", "The exit code of the whole wqtool verify run.", {}, resolved.code)
    add("verify_last_run_timestamp_seconds", "When wqtool verify wrote this file (Unix seconds).", {},
        round(time.time() if now_s is None else now_s, 3))
    out = []
    for f in fam.values():
        out.append(f"# HELP {f.name} {f.help}\n# TYPE {f.name} gauge\n")
        for labels, v in f.samples:
            lab = ",".join(f'{k}="{_escape(str(x))}"' for k, x in labels.items())
            out.append(f"{f.name}{{{lab}}} {_value(v)}\n" if lab else f"{f.name} {_value(v)}\n")
    return "".join(out)


def write_metrics(path: str, text: str) -> None:
    """Replace ``path`` atomically: ``.NAME.PID.tmp`` beside it, fsync, rename over, directory fsync; an error
    names ``path`` (``output.write_file``)."""
    from .output import write_file
    write_file(path, text, "--metrics-file", replace=True)
