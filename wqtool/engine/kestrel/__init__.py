"""Kestrel queue journals (0.8 / 1.x / 2.1+): discovery, reading, replay, verify, pack and qdump.

Spec: ``docs/formats/kestrel-journal.md``. Schemas live in ``wqtool.formats.kestrel``; everything here is
engine (I/O, loops, state); nothing prints. Public API (all times explicit; ``as_of_ns`` = ns since epoch)::

    from wqtool.engine import kestrel

    sets = kestrel.discover(paths, kestrel_version="auto", queue=None)   # -> list[FileSet]
        # a directory -> one FileSet per queue (2.x order: q.<ms> numerically, then q; .pack rule and ~~ temps
        # applied *virtually*; stray names / temps / half-finished packs are findings on FileSet.findings);
        # files named explicitly -> one FileSet per (dir, queue) holding just those files.

    reader = kestrel.JournalReader(fileset, resync=True, from_offset=None, to_offset=None)
    for ev in reader.events():      # Record | Finding, interleaved in file order (same shape as workq)
        ...
    kestrel.record_to_jsonable(rec, payload="base64")       # row with KESTREL_RECORD_FIELDS
    kestrel.damage_to_jsonable(finding)                       # row for a damage finding (error set)

    report = kestrel.run_log(fileset, as_of_ns, limit=None, keep_open=False, on_record=None,
                             kestrel_version=None, resync=True)
        # -> wqtool.engine.run.LogReport: root, segments, records, bytes, findings, counts, severities,
        #    verdict, last_good, state (KestrelState: .digest(), .sorted_items(), .queue, .open,
        #    .canonical_rows(), .expired(), .counts_by_state(), .version_guess)
    kestrel.verify(filesets, as_of_ns, max_findings=None, keep_open=False)   # -> VerifyReport

    plan = kestrel.pack_plan(fileset, as_of_ns, drop_expired=False, salvage=False, kestrel_version=None)
        # -> PackPlan (sizes before/after, records dropped, digests, .dropped lines, .to_jsonable());
        #    raises PackRefused (exit 3/4) on corrupt input unless salvage
    kestrel.write_pack(plan, output_path_or_dir)              # -> PackResult; new file only, re-verified
    kestrel.apply_plan(plan, now_ms=None)                     # -> ApplyResult; Kestrel-style crash-safe install
    kestrel.apply_steps(plan)                                 # the step labels (for fail_at / progress)

    for stream, chunk in kestrel.qdump(paths, now_ms=..., quiet=False, dump_contents=False, raw=False,
                                       queue_state=False):   # qdump.sh -q / -d / -A / -Q
        ...   # stream: "out" (str), "err" (str), "raw" (bytes, -A)

    kestrel.KESTREL_CODES                                     # KQ- finding codes (severity, meaning)

Verdicts (``wqtool.engine.findings.Verdict``): torn tail of the live file; corrupt for damage followed by valid
data, damage in a rotated file, negative / absurd sizes; invalid history for an open xid reused (a history Kestrel
cannot represent).
"""
from __future__ import annotations

import importlib
import sys
import types

from .codes import KESTREL_CODES, KESTREL_REPLAY_CODES
from .model import Op, Record
from .reader import KESTREL_VERSIONS, FileSet, JournalFile, JournalReader, discover

# The rest of the API is imported on first use (``engine.lazy``): the registry loads every format's package for
# detection, and a command pays only for the format it runs.
_LAZY = {
    "pack": ("ApplyResult", "InjectedCrash", "PackMismatch", "PackPlan", "PackRefused", "PackResult", "apply_plan",
             "apply_steps", "pack_plan", "write_pack"),
    "qdump": ("QDUMP_USAGE", "duration_str", "qdump", "qdump_file", "qdump_text"),
    "replay": ("Item", "KestrelReplay", "KestrelState", "first_difference", "state_digest"),
    "serialize": ("KESTREL_RECORD_FIELDS", "damage_to_jsonable", "record_to_jsonable"),
    "verify": ("KestrelRun", "replay_findings", "run_log", "verify"),
    "writer": ("JournalWriter", "rewrite_records"),
}
_WHERE = {name: mod for mod, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Importing the submodule ``verify`` (or ``qdump``) binds the package's attribute of that name to the module;
    the API's ``kestrel.verify`` / ``kestrel.qdump`` are the functions, so that binding is declined."""

    def __setattr__(self, name: str, value) -> None:
        if name in ("verify", "qdump") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "KESTREL_CODES", "KESTREL_REPLAY_CODES", "KestrelRun", "replay_findings", "Op", "Record", "ApplyResult",
    "InjectedCrash", "PackMismatch", "PackPlan", "PackRefused",
    "PackResult", "apply_plan", "apply_steps", "pack_plan", "write_pack", "QDUMP_USAGE", "duration_str", "qdump",
    "qdump_file", "qdump_text", "KESTREL_VERSIONS", "FileSet", "JournalFile", "JournalReader", "discover", "Item",
    "KestrelReplay", "KestrelState", "first_difference", "state_digest", "KESTREL_RECORD_FIELDS",
    "damage_to_jsonable", "record_to_jsonable", "run_log", "verify", "JournalWriter", "rewrite_records",
]
