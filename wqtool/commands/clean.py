from __future__ import annotations

import time
from typing import Annotated, Optional

import typer

from ..engine.caps import Plans
from ..engine.findings import Verdict
from ..engine.format import Log, resolve_each
from ..errors import UsageError
from ..render.outcome import Outcome
from ..render.progress import track
from ._options import finish_interrupted, recovered_for, say_error
from ._options import (QuietOpt, AsOf, FormatOpt, KestrelVersion, KestrelVersionOpt, LiveOpt, Paths, ReportOutput, ReportOutputOpt,
                       SettingOpt, for_log, options, refuse_unsafe_write, report_each)

#: --apply with an --as-of this far past the clock would drop jobs a running system still holds
FUTURE_SLACK_NS = 60 * 1_000_000_000


def clean(
    paths: Paths,
    apply: Annotated[bool, typer.Option("--apply", help="Carry out the plan (atomic per step, re-verified); without "
                     "it nothing is written.")] = False,
    out: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="With --apply: write the cleaned log "
                   "into DIR (a new directory, outside the input), re-verified; the input is left byte-identical. "
                   "For the formats whose clean rewrites files (workq).")] = None,
    as_of: AsOf = None,
    quiet: QuietOpt = False,
    output: ReportOutputOpt = ReportOutput.table,
    json_report: Annotated[bool, typer.Option("--json", help="The plan / report as JSON (the same as -o json).")]
    = False,
    live: LiveOpt = False,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
) -> Outcome:
    """Retention: reclaim what the log no longer needs, the way the system's own cleaner does — without its bugs.

    workq: the server's cleaning cycle on every segment but the active one: records the replay at --as-of gives no
    effect (adds already expired, records of jobs that are gone) are dropped, emptied segments deleted, the others
    rewritten (.rw, fsync, rename, directory fsync); a delete, complete or fail that changed a live job is kept
    with its add, so a deleted job never comes back (upstream's resurrection bug). Kestrel: what Kestrel does at
    start-up — finish a half-done pack, delete ~~ temp files and superseded rotated files. The replay digest is
    compared before and after. Refused while the log's writer runs (workq: append.lock held; Kestrel: a process
    holding a journal open) and on damaged logs (repair first); a torn tail
    in the active segment is left as it is (the report says so). Every PATH gets its own report.

    --apply --out DIR writes the cleaned log into DIR instead (workq: a new directory, with the kept segments
    and the rewritten ones; replayed: the same digest) and leaves the input as it is; refused when DIR exists
    and is not empty or lies inside the input.

    A crashed --apply (killed, power cut): run the same command again. It finishes the work or finds nothing to
    do: what the crashed run left beside the log (its temp and new copies, its quarantine) is reused or removed,
    and a Kestrel rotation left half done is rolled back. A failed --apply (disk full, I/O error) exits 5 and
    leaves no file behind.

    Exit code: the INPUT's class, as verify gives it (0 healthy, 1 torn tail, 3 / 4 refused: repair first) —
    also after a successful --apply. Several PATHs: the most severe, 3 > 4 > 5 > 2 > 1 > 0.

    Example:

    \b
      wqtool clean /var/lib/workq/cmdlog                 # the plan: what would be reclaimed
      wqtool clean --apply /var/lib/workq/cmdlog
      wqtool clean --apply --out /srv/cmdlog.cleaned /var/lib/workq/cmdlog    # a cleaned copy; the input as it is
      wqtool clean --apply --json /var/spool/kestrel/jobs
    """
    opts = options(as_of, settings=settings, flags=dict(kestrel_version=kestrel_version.value))
    if apply and opts.as_of_ns > time.time_ns() + FUTURE_SLACK_NS:
        raise UsageError("--apply with an --as-of in the future would drop jobs that are still live; clean at "
                         "'now' (the default) or earlier")
    if out and not apply:
        raise UsageError("--out DIR writes the cleaned log: it needs --apply (without it nothing is written)")
    done = {}
    if apply and not out:   # what a crashed earlier --apply left is finished first (no-op otherwise)
        done = finish_interrupted(paths, fmt)
    entries = resolve_each(paths, fmt, opts, on_note=say_error)
    if out and sum(isinstance(e, Log) for e in entries) > 1:
        raise UsageError("--out names one directory: clean one log at a time with it")

    def work(log: Log) -> tuple[Verdict, dict]:
        if apply and not out:
            refuse_unsafe_write(log, "clean --apply", live=live)
        t0 = time.perf_counter()
        with track([log], "clean", passes=("read", "write", "re-verify") if apply else ("read",)):
            plan = Plans.of(log.fmt).clean(log.data, for_log(log, opts))
            doc = plan.report_doc()
            recovered = recovered_for(done, log.root)
            if recovered:       # the report says what the crashed run left and this one finished
                doc["recovered"] = recovered
            if out:         # a copy: the input is not touched
                doc["applied"] = plan.write_out(out, source=log.root).to_jsonable()
                doc["applied"]["out"] = True
            elif apply:
                doc["applied"] = plan.apply().to_jsonable()
        doc["elapsed_s"] = round(time.perf_counter() - t0, 6)     # the command's wall time, --apply included
        return plan.input_verdict, doc     # the exit code reports the input's damage class, as verify's

    return report_each("clean", entries, work, as_json=json_report or output is ReportOutput.json, applied=apply,
                       as_of=as_of)
