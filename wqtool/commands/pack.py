from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from ..engine import kestrel
from ..errors import UsageError
from ._formats import resolve
from ._options import AsOf, FormatOpt, KestrelVersion, KestrelVersionOpt, LogFormat, Paths, parse_time


def pack(
    paths: Paths,
    out: Annotated[Optional[str], typer.Option("--output", "-o", metavar="FILE|DIR", help="Write the packed log "
                   "here (a new file or directory; never appended to).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Install the packed log in place of the input, atomically "
                     "(the input is kept as a backup / superseded the way the server does).")] = False,
    as_of: AsOf = None,
    drop_expired: Annotated[bool, typer.Option("--drop-expired", help="Kestrel: drop items expired at "
                            "--as-of.")] = False,
    salvage: Annotated[bool, typer.Option("--salvage", help="Pack what is readable from a corrupt log and list "
                       "exactly what is dropped (refused otherwise, exit 3/4).")] = False,
    segment_size: Annotated[int, typer.Option("--segment-size", min=64, metavar="BYTES", help="workq: segment "
                            "size of the output (upstream's -cmdlog-seg-size).")] = 67_108_864,
    json_report: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
    fmt: FormatOpt = LogFormat.auto,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
) -> int:
    """Compact a log to what its live state needs — proven lossless before anything is installed.

    Replays the input as of --as-of, writes a new log holding only what the state needs, re-verifies it and
    compares its replay digest with the input's at the same instant: a mismatch aborts with both digests and
    the first differing job or item. Without -o or --apply nothing is written: the plan is printed.
    Kestrel: exactly Kestrel 2.x's rewrite (open transactions as ADDX + REMOVE_TENTATIVE_XID in descending xid
    order, then every queued item); --apply installs it like Kestrel (q~~<ms>, fsync, rename to q.<ms>.pack,
    fsync the directory, then remove what it supersedes). workq: add/schedule records of live jobs copied
    byte-identical, with what their state needs (attempts, lease, result); deleted or finished jobs never
    come back; --apply takes workq's append.lock and read.lock so a running workq-server is never raced.

    Example:

    \b
      wqtool pack /var/lib/workq/cmdlog                      # the plan only
      wqtool pack -o /tmp/cmdlog.packed /var/lib/workq/cmdlog
      wqtool pack --apply --as-of now /var/lib/workq/cmdlog
      wqtool pack --format kestrel --drop-expired --apply /var/spool/kestrel/jobs
    """
    as_of_ns = parse_time(as_of, "--as-of")
    if out and apply:
        raise UsageError("--output and --apply exclude each other")
    if apply and fmt is not LogFormat.kestrel:
        import os
        from ..engine.workq import pack as plans
        for p in paths:  # a pack --apply that crashed mid-swap is finished first (no-op otherwise)
            if os.path.isdir(p) or not os.path.exists(p):
                plans.finish_interrupted(p)
    logs = resolve(paths, fmt.value, kestrel_version=kestrel_version.value)
    if len(logs) != 1:
        raise UsageError(f"pack takes one log; these paths name {len(logs)} (run it once per directory or queue)")
    lg = logs[0]
    with _progress(lg):
        doc = _pack(lg, as_of_ns, out, apply, drop_expired, salvage, segment_size, kestrel_version)
    _report(doc, json_report, wrote=bool(out or apply))
    return 0


def _progress(lg):
    """A spinner with the input size on stderr while pack works — only on a terminal and for large inputs."""
    import contextlib
    import os
    from ..render.progress import MIN_BYTES
    files = lg.log.files if lg.fmt == "kestrel" else lg.log.segments
    total = sum(os.path.getsize(f.path) for f in files if os.path.exists(f.path))
    if not sys.stderr.isatty() or total < MIN_BYTES:
        return contextlib.nullcontext()
    from ..render.console import stderr_console
    return stderr_console().status(f"pack: replaying, writing and re-verifying {total / 1e6:.0f} MB ...")


def _pack(lg, as_of_ns, out, apply, drop_expired, salvage, segment_size, kestrel_version) -> dict:
    if lg.fmt == "kestrel":
        plan = kestrel.pack_plan(lg.log, as_of_ns, drop_expired=drop_expired, salvage=salvage,
                                 kestrel_version=kestrel_version.value)
        d = plan.to_jsonable()
        doc = {"format": "kestrel", "root": d["root"], "queue": d["queue"], "as_of_ns": as_of_ns,
               "before": {"records": d["records_before"], "bytes": d["bytes_before"], "files": len(d["inputs"])},
               "after": {"records": d["records_after"], "bytes": d["bytes_after"], "items": d["items_queued"],
                         "open_transactions": d["open_transactions"]},
               "records_dropped": d["records_dropped"], "dropped": d["dropped"], "digest": d["digest_expected"],
               "digest_input": d["digest_input"], "elapsed_s": d["elapsed_s"], "plan": d}
        if out:
            res = kestrel.write_pack(plan, out)
            doc["written"] = {"path": res.path, "bytes": res.bytes, "records": res.records, "digest": res.digest}
        elif apply:
            res = kestrel.apply_plan(plan)
            doc["installed"] = {"path": res.installed, "removed": res.removed, "bytes_after": res.bytes_after,
                                "steps": res.steps}
    else:
        if drop_expired:
            raise UsageError("--drop-expired applies to Kestrel journals (workq replay already skips expired jobs)")
        from ..engine.workq import pack as plans
        plan = plans.pack_plan(lg.log, as_of_ns, segment_size=segment_size, salvage=salvage)
        d = plan.to_jsonable()
        doc = {"format": "workq", "root": d["root"], "as_of_ns": as_of_ns, "before": d["before"],
               "after": d["after"], "records_dropped": d["records_dropped"],
               "dropped": [f"{x['path'] or '-'}@0x{x['offset'] or 0:x}: {x['what']} ({x['code']}"
                           + (f", {x['length']} bytes" if x["length"] is not None else "") + f"): {x['message']}"
                           for x in d["dropped"]] + d["recovered"],
               "digest": d["digest_before"], "elapsed_s": d["elapsed_s"], "plan": d}
        if out:
            res = plans.write_pack(plan, out)
            doc["written"] = {"path": res.path, "segments": res.segments, "bytes": res.bytes, "records": res.records,
                              "digest": res.digest}
        elif apply:
            res = plans.apply_plan(plan)
            doc["installed"] = {"path": res.path, "backup": res.backup, "swap": res.swap,
                                "bytes_after": res.bytes_after, "steps": res.steps}
    return doc


def _report(doc: dict, as_json: bool, wrote: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    w = sys.stdout.write
    b, a = doc["before"], doc["after"]
    w(f"pack {doc['root']}{' queue ' + doc['queue'] if doc.get('queue') else ''} ({doc['format']}):\n")
    w(f"  before: {b['records']} records, {b['bytes']} bytes\n")
    w(f"  after:  {a['records']} records, {a['bytes']} bytes "
      f"({(1 - a['bytes'] / b['bytes']) * 100 if b['bytes'] else 0:.1f}% smaller)\n")
    w(f"  records dropped: {doc['records_dropped']}\n")
    for line in doc["dropped"]:
        w(f"  dropped: {line}\n")
    w(f"  state digest: {doc['digest']}\n")
    if "written" in doc:
        w(f"  wrote {doc['written']['path']}: re-verified, replay digest equal\n")
    elif "installed" in doc:
        i = doc["installed"]
        w(f"  installed in {i['path']}: re-verified, replay digest equal"
          + (f"; the old log is kept as {i['backup']}" if i.get("backup") else "")
          + (f"; superseded files removed: {', '.join(i['removed'])}" if i.get("removed") else "") + "\n")
    elif not wrote:
        w("  (plan only: nothing written; use -o FILE|DIR or --apply)\n")
    w(f"  time: {doc['elapsed_s']:.3f} s\n")
