"""The reports of the commands that change files (pack), for every format."""
from __future__ import annotations

from .output import json_text
from typing import TextIO

from ..offsets import at, hex_offset
from ..engine.plan import LIST_CAP, SHOWN
from ..engine.serialize import with_positions, with_times

from ..errors import PackRefused
from .outcome import Failed, Resolved


def _as_of(w, doc: dict, shown: bool) -> None:
    """The instant the plan was made at, when the command line did not fix it (``shown``: --as-of now, the
    default): the same --as-of plans (and --apply installs) the same digest."""
    if not shown:
        return
    t = with_times({"as_of_ns": doc["as_of_ns"]}).get("as_of") if isinstance(doc.get("as_of_ns"), int) else None
    if t:
        w(f"  as of {t} (--as-of {t} gives this plan and digest again)\n")


def write_pack_report(out: TextIO, doc: dict, *, as_json: bool, wrote: bool, as_of_line: bool = False) -> None:
    if as_json:
        out.write(json_text(with_times(with_positions(doc)), indent=2) + "\n")
        return
    w = out.write
    b, a = doc["before"], doc["after"]
    w(f"pack {doc['root']}{' queue ' + doc['queue'] if doc.get('queue') else ''} ({doc['format']}):\n")
    w(f"  before: {b['records']} records, {b['bytes']} bytes\n")
    w(f"  after:  {a['records']} records, {a['bytes']} bytes "
      f"({(1 - a['bytes'] / b['bytes']) * 100 if b['bytes'] else 0:.1f}% smaller)\n")
    for line in doc.get("recovered", []) + (doc.get("installed") or {}).get("recovered", []):
        w(f"  recovered: {line}\n")
    w(f"  records dropped: {doc['records_dropped']}\n")
    for line in doc["dropped"]:
        w(f"  dropped: {line}\n")
    w(f"  digest sha256:{doc['digest']}\n")
    _as_of(w, doc, as_of_line)
    if "written" in doc:
        w(f"  wrote {doc['written']['path']}: re-verified, replay digest equal\n")
    elif "installed" in doc:
        i = doc["installed"]
        w(f"  installed in {i['path']}: re-verified, replay digest equal"
          + (f"; the old log is kept as {i['backup']}" if i.get("backup") else "")
          + (f"; superseded files removed: {', '.join(i['removed'])}" if i.get("removed") else "") + "\n")
    elif not wrote:
        w("  (plan only: nothing written; use --out FILE|DIR or --apply)\n")
    w(f"  time: {doc['elapsed_s']:.3f} s\n")


def report_after_apply(out: TextIO, write, installed: list[str]) -> None:
    """``write()`` the report of a run that installed ``installed`` (the logs' roots; empty: nothing was
    installed, an error is the command's). The install is done and cannot be undone, so a write error on ``out``
    (ENOSPC, EIO; a closed pipe is the funnel's) becomes one line per log on stderr — "installed; the report could
    not be written" — and the command keeps its exit code, the input's class (issue 34: it exited 5 and nothing
    said the log had been installed; a rerun then found nothing to do)."""
    import os
    import sys
    try:
        write()
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if not installed:
            raise
        try:                        # what is still buffered must not fail again at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        why = exc.strerror or str(exc)
        for root in installed:
            sys.stderr.write(f"wqtool: {root}: installed; the report could not be written ({why})\n")


def failed_json(f: Failed, resolved: Resolved) -> dict:
    """A PATH that got no plan: not a log, unreadable, busy, or refused (a plan that needs a flag: its error)."""
    d = resolved.fill(f.to_jsonable())
    if isinstance(f.error, PackRefused):
        d["verdict"] = "refused"
    return d


def write_plan_reports(out: TextIO, kind: str, items: list, resolved: Resolved, *, as_json: bool,
                       applied: bool, as_of_line: bool = False) -> None:
    """clean / repair over several PATHs: one section (table) or one entry of ``logs`` (JSON) per PATH, in PATH
    order — a plan's report, or a PATH that got none (its error: not a log, unreadable, busy, refused);
    ``resolved``: the run's codes."""
    exit_code = resolved.code
    if as_json:
        logs = [failed_json(i, resolved) if isinstance(i, Failed) else i for i in items]
        verdict = next((d["verdict"] for d in logs if d.get("exit_code") == exit_code), "clean")
        doc = {"exit_code": exit_code, "verdict": verdict, "logs": logs}
        out.write(json_text(with_times(with_positions(doc)), indent=2) + "\n")
        return
    for i in items:
        if isinstance(i, Failed):
            d = failed_json(i, resolved)
            out.write(f"{kind} {i.root}: {d['verdict']}: {i.message} (exit {d['exit_code']})\n")
        else:
            write_plan_report(out, kind, i, as_json=False, applied=applied, as_of_line=as_of_line)


def _at(path: str, start: int, end: int) -> str:
    return f"{at(path, start)}-{hex_offset(end)}"


def _bounded(w, doc: dict, key: str, line) -> None:
    """The first ``SHOWN`` items of ``doc[key]``, then "... and K more" (K counts what JSON left off too)."""
    items = doc.get(key) or []
    for it in items[:SHOWN]:
        w(f"  {line(it)}\n")
    more = len(items) - SHOWN + doc.get(key + "_more", 0)
    if more > 0:
        w(f"  ... and {more} more (-o json lists up to {LIST_CAP})\n")


def write_plan_report(out: TextIO, kind: str, doc: dict, *, as_json: bool, applied: bool,
                      as_of_line: bool = False) -> None:
    """clean / repair: what the plan does (or did, with --apply), for every format."""
    if as_json:
        out.write(json_text(with_times(with_positions(doc)), indent=2) + "\n")
        return
    w = out.write
    w(f"{kind} {doc['root']}{' queue ' + doc['queue'] if doc.get('queue') else ''} ({doc['format']}):\n")
    damaged = doc.get("exit_code") or 0
    for line in doc.get("recovered", []) + (doc.get("applied") or {}).get("recovered", []):
        w(f"  recovered: {line}\n")     # what a crashed earlier --apply left, finished by this one
    if doc.get("nothing_to_do") or not doc.get("actions"):
        if damaged:       # clean leaves damage as it is: say so rather than "as it should be"
            w(f"  nothing to {kind}, but the log is damaged ({doc.get('verdict')}, exit {damaged}): "
              f"`wqtool repair {doc['root']}` plans the fix\n")
        else:
            w(f"  nothing to {kind}: {doc.get('why') or 'the log is already as it should be'}\n")
    elif damaged and kind != "repair":
        w(f"  the log is damaged ({doc.get('verdict')}, exit {damaged}): {kind} leaves the damage as it is; "
          f"`wqtool repair {doc['root']}` plans the fix\n")
    for label, key in (("before:", "before"), ("after: ", "after")):
        if key in doc:
            x = doc[key]
            w(f"  {label} {x['files']} file(s), {x['records']} records, {x['bytes']} bytes\n")
    if "reclaimed" in doc:
        r = doc["reclaimed"]
        w(f"  reclaimed: {r['bytes']} bytes, {r['files']} file(s), {r['records']} record(s)"
          + (" (" + ", ".join(f"{k} {v}" for k, v in r.get("by_kind", {}).items()) + ")" if r.get("by_kind") else "")
          + "\n")
    for act in doc.get("actions", []):
        extra = "".join(f" {k}={v}" for k, v in act.items() if k not in ("file", "action"))
        w(f"  {act['action']:<8} {act['file']}{extra}\n")
    for line in doc.get("lines", []):
        w(f"  {line}\n")
    _bounded(w, doc, "cuts", lambda c: f"cut {_at(c['file'], c['offset'], c['offset'] + c['length'])} "
             f"({c['length']} bytes): {c['what']}" + (f" ({c['code']})" if c.get("code") else ""))
    _bounded(w, doc, "kept", lambda r: f"kept {_at(r['file'], r['offset'], r['end'])} ({r['end'] - r['offset']} "
             f"bytes): {r['records']} record(s)" + (", salvaged" if r.get("salvaged") else ""))
    _bounded(w, doc, "dropped_records", lambda r: f"drop {_at(r['file'], r['offset'], r['offset'] + r['length'])} "
             f"({r['length']} bytes): no effect at --as-of")
    if doc.get("kept_whole") and not doc.get("nothing_to_do"):
        w(f"  kept whole: {doc['kept_whole']} file(s)\n")
    lost = len(doc.get("jobs_lost") or ()) + doc.get("jobs_lost_more", 0)
    _bounded(w, doc, "jobs_lost", lambda j: f"jobs lost: {j['job_id']}"
             f"{' (id unverified)' if j.get('id_unverified') else ''} ({j['cmd']} at {j['at']}; "
             f"{j['later_records']} later record(s) refer to it)")
    unread = doc.get("jobs_lost_unread") or {}
    if unread.get("bytes"):
        w(f"  jobs lost: unknown in {unread['bytes']} cut byte(s) of {unread['ranges']} range(s) where no record "
          "could be read\n")
    if doc.get("items_lost"):
        at = doc.get("items_lost_at") or []
        more = doc["items_lost"] - len(at[:SHOWN])
        w(f"  items lost: {doc['items_lost']} (item adds in the cut bytes: {', '.join(at[:SHOWN])}"
          + (f", ... and {more} more" if more > 0 else "") + ")\n")
    unread = doc.get("items_lost_unread") or {}
    if unread.get("bytes"):
        w(f"  items lost: unknown in {unread['bytes']} cut byte(s) of {unread['ranges']} range(s) where no record "
          "could be read\n")
    if "jobs_changed" in doc and not doc.get("nothing_to_do") and doc.get("actions"):
        if doc["jobs_changed"]:
            n = len(doc["jobs_changed"]) + doc.get("jobs_changed_more", 0)
            w(f"  jobs changing state: {n}\n")
            _bounded(w, doc, "jobs_changed", lambda j: f"job {j.get('job_id') or j.get('at')}: {j['before']} -> {j['after']}")
        elif lost or doc.get("items_lost"):
            what = f"{lost} job(s)" if lost else f"{doc['items_lost']} item(s)"
            w(f"  jobs changing state: the {what} lost above (their records were never readable, so the "
              "replay digest is the same before and after)\n")
        else:
            w("  jobs changing state: none (the same replay digest before and after)\n")
    if doc.get("digest_before") and doc.get("digest_after") and doc["digest_before"] != doc["digest_after"]:
        w(f"  digest before: sha256:{doc['digest_before']}\n  digest after:  sha256:{doc['digest_after']}\n")
    elif doc.get("digest") or doc.get("digest_after"):
        w(f"  digest sha256:{doc.get('digest') or doc.get('digest_after')}\n")
    _as_of(w, doc, as_of_line)
    ap = doc.get("applied") or {}
    if ap.get("out"):
        w(f"  wrote {ap['path']}: re-verified, replay digest equal; the input is unchanged"
          + (f"; quarantine: {', '.join(ap['quarantine'])}" if ap.get("quarantine") else "") + "\n")
    elif doc.get("nothing_to_do") or (applied and not ap.get("steps") and not doc.get("actions")):
        pass                # (nothing was written: the "nothing to ..." line above says it)
    elif applied:
        w(f"  applied: {len(ap.get('steps', []))} step(s), re-verified"
          + (f"; backup: {ap['backup']}" if ap.get("backup") else "")
          + ("; no backup kept (--no-backup): the old log is gone, the cut bytes are in the quarantine"
             if doc.get("backup") is False else "")
          + (f"; quarantine: {', '.join(ap['quarantine'])}" if ap.get("quarantine") else "") + "\n")
    else:
        if doc.get("backup") is False:
            w("  --no-backup: the old log will not be kept; only the cut bytes are (in the quarantine)\n")
        w("  (plan only: nothing written; use --apply)\n")
    w(f"  time: {doc.get('elapsed_s', 0):.3f} s\n")
