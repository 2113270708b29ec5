"""The reports of the commands that change files (pack), for every format."""
from __future__ import annotations

import json
from typing import TextIO


def write_pack_report(out: TextIO, doc: dict, *, as_json: bool, wrote: bool) -> None:
    if as_json:
        out.write(json.dumps(doc, indent=2) + "\n")
        return
    w = out.write
    b, a = doc["before"], doc["after"]
    w(f"pack {doc['root']}{' queue ' + doc['queue'] if doc.get('queue') else ''} ({doc['format']}):\n")
    w(f"  before: {b['records']} records, {b['bytes']} bytes\n")
    w(f"  after:  {a['records']} records, {a['bytes']} bytes "
      f"({(1 - a['bytes'] / b['bytes']) * 100 if b['bytes'] else 0:.1f}% smaller)\n")
    w(f"  records dropped: {doc['records_dropped']}\n")
    for line in doc["dropped"]:
        w(f"  dropped: {line}\n")
    w(f"  digest sha256:{doc['digest']}\n")
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


def write_plan_report(out: TextIO, kind: str, doc: dict, *, as_json: bool, applied: bool) -> None:
    """clean / repair: what the plan does (or did, with --apply), for every format."""
    if as_json:
        out.write(json.dumps(doc, indent=2) + "\n")
        return
    w = out.write
    w(f"{kind} {doc['root']}{' queue ' + doc['queue'] if doc.get('queue') else ''} ({doc['format']}):\n")
    if doc.get("nothing_to_do") or not doc.get("actions"):
        w(f"  nothing to {kind}: {doc.get('why') or 'the log is already as it should be'}\n")
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
    if doc.get("digest_before") and doc.get("digest_after") and doc["digest_before"] != doc["digest_after"]:
        w(f"  digest before: sha256:{doc['digest_before']}\n  digest after:  sha256:{doc['digest_after']}\n")
    elif doc.get("digest") or doc.get("digest_after"):
        w(f"  digest sha256:{doc.get('digest') or doc.get('digest_after')}\n")
    if doc.get("nothing_to_do"):
        pass
    elif applied:
        ap = doc.get("applied") or {}
        w(f"  applied: {len(ap.get('steps', []))} step(s), re-verified"
          + (f"; backup: {ap['backup']}" if ap.get("backup") else "")
          + (f"; quarantine: {', '.join(ap['quarantine'])}" if ap.get("quarantine") else "") + "\n")
    else:
        w("  (plan only: nothing written; use --apply)\n")
    w(f"  time: {doc.get('elapsed_s', 0):.3f} s\n")
