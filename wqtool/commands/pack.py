from __future__ import annotations

import contextlib
import os
import sys
from typing import Annotated, Optional

import typer

from ..engine import format as registry
from ..engine.findings import Verdict
from ..engine.format import resolve
from ..errors import UsageError
from ..render.plan import write_pack_report
from ._options import MAX_SEGMENT_SIZE, SettingOpt, AsOf, FormatOpt, KestrelVersion, KestrelVersionOpt, Paths, options


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
    segment_size: Annotated[Optional[int], typer.Option("--segment-size", min=64, max=MAX_SEGMENT_SIZE, metavar="BYTES", help="workq: "
                            "segment size of the output (upstream's -cmdlog-seg-size) [default: 67108864].")] = None,
    json_report: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
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
    opts = options(as_of, settings=settings, kestrel_version=kestrel_version.value, drop_expired=drop_expired or None,
                   salvage=salvage or None, segment_size=segment_size)
    if out and apply:
        raise UsageError("--output and --apply exclude each other")
    if apply:   # a pack --apply that crashed mid-swap is finished first (no-op otherwise)
        for p in paths:
            for f in ([registry.get(fmt)] if fmt != "auto" else registry.formats()):
                f.finish_interrupted(p)
    logs = resolve(paths, fmt, opts)
    if len(logs) != 1:
        raise UsageError(f"pack takes one log; these paths name {len(logs)} (run it once per directory or queue)")
    log = logs[0]
    if (apply or out) and log.weak:
        raise UsageError(f"auto-detected as {log.fmt.title} from weak evidence only; pass --format {log.fmt.name} "
                         "to write anything", path=log.root)
    with _progress(log.files):
        plan = log.fmt.pack_plan(log.data, opts)
        doc = plan.report_doc()
        if out:
            doc["written"] = plan.write(out).to_jsonable()
        elif apply:
            doc["installed"] = plan.apply().to_jsonable()
    write_pack_report(sys.stdout, doc, as_json=json_report, wrote=bool(out or apply))
    return Verdict(plan.input_verdict)   # the input's damage class, as verify reports it


def _progress(files: list[str]):
    """A spinner with the input size on stderr while pack works — only on a terminal and for large inputs."""
    from ..render.progress import MIN_BYTES
    total = sum(os.path.getsize(f) for f in files if os.path.exists(f))
    if not sys.stderr.isatty() or total < MIN_BYTES:
        return contextlib.nullcontext()
    from ..render.console import stderr_console
    return stderr_console().status(f"pack: replaying, writing and re-verifying {total / 1e6:.0f} MB ...")
