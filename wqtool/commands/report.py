from __future__ import annotations

import shlex
import sys
from typing import Annotated

import typer

from ..engine.caps import Plans
from ..engine.format import Log, resolve_each
from ..engine.read import Want, read
from ..errors import UsageError
from ..offsets import printable
from ..render.outcome import Failed, Outcome, error_text, split
from ..render.progress import track
from ._options import (QuietOpt, AsOf, FormatOpt, Horizon, JdbcOpt, KeepOpen, KestrelVersion, KestrelVersionOpt, LiveOpt,
                       MaxFindings, ReadPaths, SettingOpt, for_log, options, read_paths, say_error)


def report(
    ctx: typer.Context,
    paths: ReadPaths = None,
    quiet: QuietOpt = False,
    out: Annotated[str, typer.Option("--out", metavar="FILE.html", help="The page to write (a new file, unless "
                   "--force).", show_default=False)] = ...,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists (atomically: a reader sees "
                     "the old page or the new one).")] = False,
    jdbc: JdbcOpt = None,
    as_of: AsOf = None,
    fmt: FormatOpt = "auto",
    settings: SettingOpt = None,
    max_findings: MaxFindings = 100,
    horizon: Horizon = False,
    live: LiveOpt = False,
    kestrel_version: KestrelVersionOpt = KestrelVersion.auto,
    keep_open: KeepOpen = False,
) -> Outcome:
    """Write one self-contained HTML page about the logs, to attach to an incident ticket.

    Per log: the verdict and the findings (code, file and offset, upstream's reaction, the command that fixes
    them); records per minute by record type over time, with the damage marked on the time axis; live jobs per
    queue over time, as the replay had them at record times; job states at --as-of; wait and run time
    distributions where the format has them (workq); the format's own chart and tables (Orth job-log tables:
    daily success / fail / running); the replay digest and the command line that reproduces it. One pass per
    log (verify's and stats' reader and replay); the series are aggregated as the records stream (at most 600
    time bins a log: a longer log gets wider bins). Inline SVG and an inline stylesheet: no script, nothing
    fetched. The exit code is verify's.

    Example:

    \b
      wqtool report /var/lib/workq/cmdlog --out incident-4711.html
      wqtool report --as-of last --max-findings 1000 /srv/fleet/*/cmdlog --out fleet.html
      wqtool report -O timezone=Asia/Shanghai orth_job_log.csv --out joblog.html
    """
    from ..render.htmlreport import LogPage, report_page
    from ..render.output import write_file
    import os
    if os.path.lexists(out) and not force:
        raise UsageError(f"--out {out}: already exists; never overwritten: name a new file or pass --force")
    paths = read_paths(ctx, paths, jdbc)
    opts = options(as_of, settings=settings, horizon=horizon,
                   flags=dict(kestrel_version=kestrel_version.value, keep_open=keep_open))
    entries = resolve_each(paths, fmt, opts, on_note=say_error)
    with track([e for e in entries if isinstance(e, Log)], "report"):
        reading = read(entries, opts, want=Want.SERIES, live=live, max_findings=max_findings,
                       on_error=lambda e: say_error(error_text(e)))
    reads = [(r, r.view(), _repair_loss(r.log, opts, r.report.verdict, r.report.reuse)) if r.ok
             else Failed(r.root, r.error) for r in reading]
    done, failed = split(reads)
    flags = [*(["--max-findings", str(max_findings)] if max_findings != 100 else []),
             *(["--horizon"] if horizon else []), *(["--live"] if live else []),
             *(["--kestrel-version", kestrel_version.value] if kestrel_version is not KestrelVersion.auto else []),
             *(["--keep-open"] if keep_open else [])]

    def write(resolved) -> None:
        items = [LogPage(r.log.fmt, r.report, view, r.stats, r.series, r.as_of_ns, resolved.of(r.report.verdict),
                         repair=loss) for r, view, loss in done]
        pages = iter(items)
        items = [i if isinstance(i, Failed) else next(pages) for i in reads]    # in PATH order
        write_file(out, report_page(items, command_line("report", paths, fmt=fmt, as_of=as_of, opts=opts,
                                                        settings=settings, flags=[*flags, "--out", out]), resolved),
                   "--out", replace=force, hint="name a new file or pass --force")
        if not quiet:   # a note, not an error: -q leaves it out
            sys.stderr.write(f"wqtool: wrote {printable(out)}: {len(done)} log(s)"
                             + (f", {len(failed)} PATH(s) not read" if failed else "") + "\n")
    return Outcome.of([r.report.verdict for r, _, _ in done], failed, write)


def _repair_loss(log, opts, verdict, prior) -> dict | None:
    """What ``wqtool repair`` would do to a damaged log (its plan, nothing written): the flags it takes for this
    verdict and the plan's jobs lost (``jobs_lost``, ``jobs_lost_more``, ``jobs_lost_unread``); None for a clean
    log, a format without repair, or a plan that cannot be made (its error is the repair command's to tell).
    ``prior``: the page's own pass (``LogReport.reuse``), which a format plans from instead of reading again."""
    from ..engine.findings import Verdict
    from ..engine.options import RepairOptions
    from ..errors import WqError
    from dataclasses import fields, replace
    if verdict == Verdict.CLEAN or not Plans.can(log.fmt, "repair"):   # no repair: nothing to say
        return None
    salvage, drop = verdict == Verdict.CORRUPT, verdict == Verdict.INVALID_HISTORY
    base = {f.name: getattr(opts, f.name) for f in fields(opts)}
    ropts = RepairOptions(**{**base, "salvage": salvage, "drop_invalid": drop})
    try:
        doc = Plans.of(log.fmt).repair_loss(log.data, for_log(log, ropts), prior)
    except (WqError, OSError):
        return None
    return {"flags": [*(["--salvage"] if salvage else []), *(["--drop-invalid"] if drop else [])],
            "jobs_lost": doc.get("jobs_lost") or [], "more": doc.get("jobs_lost_more", 0),
            "unread": doc.get("jobs_lost_unread") or doc.get("items_lost_unread") or {},
            "items_lost": doc.get("items_lost") or 0, "items_lost_at": doc.get("items_lost_at") or []}


def command_line(command: str, paths, *, fmt: str, as_of, opts, settings, flags) -> str:
    """The command line that makes the same page again: --as-of as the time this run used (``last`` / ``first``
    stay words: each log's own time, the same on every run; ``now`` and relative times become the instant)."""
    from ..engine.format import AS_OF_WORDS
    from ..render.htmlreport import iso
    word = (as_of or "").strip().lower()
    parts = ["wqtool", command, *(["--format", fmt] if fmt != "auto" else []),
             "--as-of", word if word in AS_OF_WORDS else iso(opts.as_of_ns)]
    for item in settings or ():
        parts += ["-O", item]
    return shlex.join([*parts, *flags, *(_no_password(_absolute(p)) for p in paths)])


def _absolute(path: str) -> str:
    """A PATH as the page's commands name it: absolute (the page is read elsewhere, from another directory); a
    URL stays as it is."""
    import os
    return path if "://" in path or path.startswith("jdbc:") else os.path.abspath(path)


def _no_password(path: str) -> str:
    """A database URL without its password (the page is attached to tickets)."""
    import re
    if "://" not in path and not path.startswith("jdbc:"):
        return path
    path = re.sub(r"(//[^/:@]*:)[^/@]*@", r"\1***@", path)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", path, flags=re.I)
