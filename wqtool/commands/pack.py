from __future__ import annotations

import sys
import time
from typing import Annotated, Optional

import typer

from ..engine.findings import Verdict
from ..engine.caps import Plans
from ..engine.format import resolve
from ..engine.options import PackOptions
from ..engine.live import LiveWatch
from ..errors import UsageError
from ..render.outcome import Outcome
from ..render.plan import report_after_apply, write_pack_report
from ..render.progress import track
from ._options import as_of_moves, finish_interrupted, recovered_for, say_error
from ._options import (QuietOpt, MAX_SEGMENT_SIZE, AsOf, FormatOpt, KeepOpen, KestrelVersion, KestrelVersionOpt, LiveOpt, Paths,
                       ReportOutput, ReportOutputOpt, SettingOpt, for_log, options, refuse_unsafe_write, whole_number)


def pack(
    paths: Paths,
    quiet: QuietOpt = False,
    output: ReportOutputOpt = ReportOutput.table,
    out: Annotated[Optional[str], typer.Option("--out", metavar="FILE|DIR", help="Write the packed log here (a new "
                   "file or directory; never appended to).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Install the packed log in place of the input, atomically "
                     "(the input is kept as a backup / superseded the way the server does). Refused while a "
                     "writer is live.")] = False,
    as_of: AsOf = None,
    drop_expired: Annotated[bool, typer.Option("--drop-expired", help="Kestrel: drop items expired at "
                            "--as-of.")] = False,
    salvage: Annotated[bool, typer.Option("--salvage", help="Pack what is readable from a corrupt log and list "
                       "exactly what is dropped (refused otherwise, exit 3/4).")] = False,
    segment_size: Annotated[Optional[int], typer.Option("--segment-size", parser=whole_number(64, MAX_SEGMENT_SIZE),
                            metavar="BYTES", help="workq: segment size of the output (upstream's -cmdlog-seg-size) "
                            "[default: 67108864].")] = None,
    json_report: Annotated[bool, typer.Option("--json", help="The report as JSON (the same as -o json).")] = False,
    live: LiveOpt = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
) -> Outcome:
    """Compact a log to what its live state needs — proven lossless before anything is installed.

    Replays the input as of --as-of, writes a new log holding only what the state needs, re-verifies it and
    compares its replay digest with the input's at the same instant: a mismatch aborts with both digests and
    the first differing job or item. Without --out or --apply nothing is written: the plan is printed. The
    digest printed is the one `wqtool replay` prints for the input with the same options (--as-of,
    --keep-open). --apply refuses a log that is being written (a running server, a process holding a journal
    open, --live): stop the writer first.
    Kestrel: exactly Kestrel 2.x's rewrite (open transactions as ADDX + REMOVE_TENTATIVE_XID in descending xid
    order, then every queued item); --apply installs it like Kestrel (q~~<ms>, fsync, rename to q.<ms>.pack,
    fsync the directory, then remove what it supersedes). workq: add/schedule records of live jobs copied
    byte-identical, with what their state needs (attempts, lease, result); deleted or finished jobs never
    come back; --apply takes workq's append.lock and read.lock so a running workq-server is never raced.

    A crashed --apply (killed, power cut): run the same command again. It finishes the work or finds nothing to
    do: what the crashed run left beside the log (its temp and new copies, its quarantine) is reused or removed,
    and a Kestrel rotation left half done is rolled back. A failed --apply (disk full, I/O error) exits 5 and
    leaves no file behind.

    Example:

    \b
      wqtool pack /var/lib/workq/cmdlog                      # the plan only
      wqtool pack --out /tmp/cmdlog.packed /var/lib/workq/cmdlog
      wqtool pack -o json --as-of last /var/lib/workq/cmdlog
      wqtool pack --apply --as-of now /var/lib/workq/cmdlog
      wqtool pack --format kestrel --drop-expired --apply /var/spool/kestrel/jobs
    """
    t0 = time.perf_counter()
    opts = options(as_of, settings=settings, flags=dict(kestrel_version=kestrel_version.value, keep_open=keep_open),
                   kind=PackOptions, drop_expired=drop_expired, salvage=salvage, segment_size=segment_size)
    if out and apply:
        raise UsageError("--out and --apply exclude each other")
    # a pack --apply that crashed mid-swap is finished first (no-op otherwise); a plan alone writes nothing
    done = finish_interrupted(paths, fmt) if apply else {}
    logs = resolve(paths, fmt, opts, on_note=say_error)
    if len(logs) != 1:
        if len(paths) == 1 and len({lg.fmt.name for lg in logs}) == len(logs):   # a directory formats share
            raise UsageError(f"pack takes one log; this directory holds {len(logs)} "
                             f"({', '.join(lg.fmt.name for lg in logs)}): pass --format NAME to pack one",
                             path=paths[0])
        raise UsageError(f"pack takes one log; these paths name {len(logs)} (run it once per directory or queue)")
    log = logs[0]
    if apply:
        refuse_unsafe_write(log, "pack --apply", live=live)
    elif out and log.weak:
        raise UsageError(f"auto-detected as {log.fmt.title} from weak evidence only; pass --format {log.fmt.name} "
                         "to write anything", path=log.root)
    watch = LiveWatch(log, live=live)
    passes = ("read", "plan the packed log") + (("write", "re-verify") if out or apply else ())
    with track(logs, "pack", passes=passes):
        plan = Plans.of(log.fmt).pack(log.data, for_log(log, opts))
        doc = plan.report_doc()
        recovered = recovered_for(done, log.root)
        if recovered:
            doc["recovered"] = recovered + doc.get("recovered", [])
        if out:
            doc["written"] = plan.write(out).to_jsonable()
        elif apply:
            doc["installed"] = plan.apply().to_jsonable()
    doc["elapsed_s"] = round(time.perf_counter() - t0, 6)     # the command's wall time, the write included
    verdict = plan.input_verdict             # the input's damage class, as verify reports it
    if verdict == Verdict.TORN_TAIL and not apply and watch.live():
        verdict = Verdict.CLEAN              # a record in flight (verify: WQ-IN-FLIGHT / KQ-IN-FLIGHT)

    def write(resolved) -> None:
        top = resolved.fill({"exit_code": resolved.of(verdict), "verdict": verdict.label, **doc})  # the run's, on top
        report_after_apply(sys.stdout, lambda: write_pack_report(sys.stdout, top, as_json=json_report or output is
                                                                 ReportOutput.json, wrote=bool(out or apply),
                                                                 as_of_line=as_of_moves(as_of)),
                           [top["root"]] if "installed" in top else [])
    return Outcome.of([verdict], (), write, shown=(plan.input_verdict,))
