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
