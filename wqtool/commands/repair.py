from __future__ import annotations

import time
from typing import Annotated, Optional

import typer

from ..engine.caps import Plans
from ..engine.findings import Verdict
from ..engine.format import Log, resolve_each
from ..engine.options import RepairOptions
from ..engine.live import refuse_live
from ..errors import UsageError
from ..render.outcome import Outcome
from ..render.progress import track
from ._options import finish_interrupted, recovered_for, say_error
from ._options import (QuietOpt, AsOf, FormatOpt, KestrelVersion, KestrelVersionOpt, LiveOpt, Paths, ReportOutput, ReportOutputOpt,
                       SettingOpt, for_log, options, parse_time, refuse_unsafe_write, report_each)


def repair(
    paths: Paths,
    apply: Annotated[bool, typer.Option("--apply", help="Install the repaired log (atomic; the old one kept as a "
                     "backup, every cut byte in the quarantine); without it nothing is written.")] = False,
    salvage: Annotated[bool, typer.Option("--salvage", help="Also cut damage with valid data after it (each damaged "
                       "range up to where valid records provably resume); refused otherwise (exit 3).")] = False,
    drop_invalid: Annotated[bool, typer.Option("--drop-invalid", help="Also remove exactly the records the server "
                            "refuses (each listed); refused otherwise (exit 4).")] = False,
    truncate_to_time: Annotated[Optional[str], typer.Option("--truncate-to-time", metavar="TIME", help="Point-in-time "
                                "rollback: drop every record written after TIME (the first one and all that follow)."
                                )] = None,
    quarantine: Annotated[Optional[str], typer.Option("--quarantine", metavar="DIR", help="Where the cut bytes go, "
                          "one file per range named <file>@0x<offset>-0x<end>.bin [default: <log>.quarantine-<stamp>, "
                          "or .2, .3... when another repair's is there; a crashed run's is reused]."
                          )] = None,
    no_backup: Annotated[bool, typer.Option("--no-backup", help="Do not keep the old log after the swap.")] = False,
    out: Annotated[Optional[str], typer.Option("--out", metavar="DIR", help="With --apply: write the repaired log "
                   "into DIR (a new directory; a Kestrel queue as DIR/<queue>), re-verified, with the quarantine "
                   "beside it (DIR.quarantine-<stamp>); the input is left byte-identical.")] = None,
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
    """Repair a damaged log so that its server starts on it — plan first, without losing a byte.

    The plan says which byte ranges are cut (a torn tail at the last good offset; with --salvage every damaged
    range up to where valid records provably resume — CRC for workq, an opcode chain for Kestrel; with
    --drop-invalid the records the server refuses), which jobs change state, and the replay digests before and
    after: the readable part keeps its digest. With --apply the repaired log is written beside the old one,
    re-verified (it must be clean) and its digest compared with the plan's, then swapped in atomically; the old
    log is kept as a backup (--no-backup to skip) and every cut byte is in the quarantine. Refused while the log's
    writer runs. Every PATH gets its own report (a refusal or an error included).

    A crashed --apply (killed, power cut): run the same command again. It finishes the work or finds nothing to
    do: what the crashed run left beside the log (its temp and new copies, its quarantine) is reused or removed,
    and a Kestrel rotation left half done is rolled back. A failed --apply (disk full, I/O error) exits 5 and
    leaves no file behind.

    Exit code: the INPUT's class, as verify gives it (0 healthy, 1 torn tail, 3 corrupt, 4 invalid history) —
    also after a successful --apply (1 after a torn tail is cut): the repaired log is proven clean before the
    swap, and `wqtool verify` on it exits 0. Several PATHs: the most severe, 3 > 4 > 5 > 2 > 1 > 0.

    Example:

    \b
      wqtool repair /var/lib/workq/cmdlog                     # the plan
      wqtool repair --apply /var/lib/workq/cmdlog             # a torn tail: truncate, quarantine, swap
      wqtool repair --salvage --drop-invalid --apply --quarantine /root/cut DIR
      wqtool repair --truncate-to-time '2026-11-21 23:15:00' --apply DIR
    """
    opts = options(as_of, settings=settings, flags=dict(kestrel_version=kestrel_version.value), kind=RepairOptions,
                   salvage=salvage, drop_invalid=drop_invalid,
                   truncate_to_ns=parse_time(truncate_to_time, "--truncate-to-time", default_now=False))
    if out and not apply:
        raise UsageError("--out DIR writes the repaired log: it needs --apply (without it nothing is written)")
    if out and no_backup:
        raise UsageError("--out leaves the input as it is: --no-backup has nothing to drop")
    done = {}
    if apply and not out:   # what a crashed earlier --apply left is finished first (no-op otherwise)
        done = finish_interrupted(paths, fmt)
    entries = resolve_each(paths, fmt, opts, on_note=say_error)
    if apply and (quarantine or out) and sum(isinstance(e, Log) for e in entries) > 1:
        raise UsageError(f"{'--out' if out else '--quarantine'} names one directory: repair one log at a time "
                         "with it")

    def work(log: Log) -> tuple[Verdict, dict]:
        in_flight = "; a partial last record is in flight, not damage"
        if apply and not out:
            refuse_unsafe_write(log, "repair --apply", live=live, why=in_flight)
        else:   # a plan for a live log would call the record in flight damage
            refuse_live(log, "repair", live=live, why=in_flight)
        t0 = time.perf_counter()
        with track([log], "repair", passes=("read", "write", "re-verify", "quarantine") if apply else ("read",)):
            plan = Plans.of(log.fmt).repair(log.data, for_log(log, opts))
            doc = plan.report_doc()
            recovered = recovered_for(done, log.root)
            if recovered:       # the report says what the crashed run left and this one finished
                doc["recovered"] = recovered
            doc["backup"] = not no_backup and not out
            if out:         # a copy: the input is not touched, so nothing to back up
                doc["applied"] = plan.write_out(out, source=log.root, quarantine=quarantine).to_jsonable()
                doc["applied"]["out"] = True
            elif apply and not doc.get("nothing_to_do"):
                doc["applied"] = plan.apply(quarantine=quarantine, keep_backup=not no_backup).to_jsonable()
        doc["elapsed_s"] = round(time.perf_counter() - t0, 6)     # the command's wall time, --apply included
        return plan.input_verdict, doc     # the exit code reports the input's damage class, as verify's

    return report_each("repair", entries, work, as_json=json_report or output is ReportOutput.json, applied=apply,
                       as_of=as_of)
