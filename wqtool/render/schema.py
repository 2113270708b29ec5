"""The JSON Schemas (draft 2020-12) of every command's ``-o json`` document and ``-o jsonl`` lines: what
``wqtool schema COMMAND`` prints, what the tests validate every JSON output against, and what
docs/json-output.md is generated from (scripts/gen_json_reference.py).

One vocabulary for every command:

- a job's id is ``job_id`` and a record's number ``record_index``, everywhere;
- ``findings`` is a list of finding objects (``FINDING``), their number by code under ``counts``;
- every ``-o json`` document is an object with the run's ``exit_code`` and ``verdict`` (dump's rows go under
  ``records``); every ``-o jsonl`` stream ends with one ``{"summary": {...}}`` line, the run's ``exit_code`` and
  ``verdict`` in it;
- a finding carries its ``severity``, never an exit code;
- a position is an integer ``offset`` beside its ``file``, and the same position as tables print it and options
  read it back (``000000001.log@0x11c``) under ``at``;
- an integer ``<name>_ns`` (Unix nanoseconds) has ``<name>`` beside it, the same instant in RFC 3339.

Rows whose columns are a format's own (dump's records, replay's jobs / items / entries) list the columns every
format shares and allow the format's others.
"""
from __future__ import annotations

import copy

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://wqtool.dev/schema/"

#: the keys the vocabulary replaced (old name -> new); no object of any output carries one of them
RETIRED = {"exit_class": "severity", "index": "record_index", "job": "job_id"}

_INT = {"type": "integer"}
_STR = {"type": "string"}
_NUM = {"type": "number"}
_BOOL = {"type": "boolean"}


def _n(t: dict) -> dict:
    """``t`` or null."""
    return {"anyOf": [t, {"type": "null"}]}


def _obj(props: dict, required=(), *, more: bool = True, desc: str | None = None, retired: bool = True) -> dict:
    d = {"type": "object", "properties": props, "required": list(required)}
    if not more:
        d["additionalProperties"] = False
    if retired:
        d["propertyNames"] = {"not": {"enum": sorted(RETIRED)}}
    if desc:
        d["description"] = desc
    return d


def _map(values: dict) -> dict:
    """An object keyed by data (a finding code, a state, a queue name)."""
    return {"type": "object", "additionalProperties": values}


_RECOVERED = {"type": "array", "items": {"type": "string"},
              "description": "what a crashed earlier --apply had left beside the log and this run finished or removed "
                             "first, one line each (absent when there was nothing; the apply's own finds are under "
                             "applied / installed, recovered)"}
_AT = {"type": "string", "description": "the position as tables print it and options read it back: FILE@0xOFFSET "
                                        "(the file's name alone for a finding about a whole file)"}
_EXIT = {"type": "integer", "minimum": 0, "maximum": 255, "description": "the exit code (wqtool --help: Exit codes)"}
_VERDICT = {"type": "string", "description": "the verdict in words: clean, torn tail, CORRUPT, INVALID HISTORY; or "
                                             "what a PATH that got none is: not a log, unreadable, refused, ..."}
_SEVERITY = {"enum": ["error", "warning", "note"]}

DEFS: dict[str, dict] = {
    "finding": _obj({
        "severity": _SEVERITY, "code": _STR, "file": _n(_STR), "offset": _n(_INT), "at": _n(_AT),
        "record_index": _n({"type": "integer", "minimum": 0}), "last_good_offset": _n(_INT), "message": _STR,
        "upstream": _n(_STR), "job_id": _n(_STR), "resumes_at": _n(_INT),
        "count": {"type": "integer", "description": "a folded note: how many findings of this code it stands for"},
        "last_file": _n(_STR), "last_offset": _n(_INT)},
        ["severity", "code", "file", "offset", "at", "record_index", "message", "job_id"], more=False,
        desc="One finding: its severity (never an exit code), code, position (offset and at) and record."),
    "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}},
    "counts": {**_map(_INT), "description": "findings by code (every one counted, also those not listed)"},
    "failed": _obj({"root": _STR, "verdict": _VERDICT, "exit_code": _EXIT, "error": _STR},
                   ["root", "verdict", "exit_code", "error"], more=False,
                   desc="A PATH that got no verdict: not a log, unreadable, busy, refused."),
    "run": _obj({"exit_code": _EXIT, "verdict": _VERDICT}, ["exit_code", "verdict"]),
    "position": _obj({"file": _STR, "offset": _INT, "at": _AT}, ["file", "offset", "at"]),
    "record": _obj({"file": _STR, "offset": _INT, "at": _AT, "length": _INT,
                    "record_index": {"type": "integer", "minimum": 0}, "error": _n(_STR)},
                   ["file", "offset", "at", "length", "record_index"],
                   desc="One record (dump): where it is, its number in the log, then its format's own columns."),
    "verify_log": _obj({
        "root": _STR, "verdict": _VERDICT, "exit_code": _EXIT, "segments": _INT, "records": _INT, "bytes": _INT,
        "counts": {"$ref": "#/$defs/counts"},
        "last_good": _n(_obj({"at": _AT, "file": _STR, "offset": _INT}, ["at", "file", "offset"], more=False)),
        "omitted_findings": _INT, "findings": {"$ref": "#/$defs/findings"}},
        ["root", "verdict", "exit_code", "segments", "records", "bytes", "counts", "last_good",
         "omitted_findings"], more=False),
    "replay_log": _obj({
        "root": _STR, "exit_code": _EXIT, "verdict": _VERDICT, "digest": _STR,
        "by_state": _map(_INT), "counts": {"$ref": "#/$defs/counts"}, "findings": {"$ref": "#/$defs/findings"},
        "jobs": {"type": "array", "items": {"$ref": "#/$defs/job"}}},
        ["root", "exit_code", "verdict", "digest", "counts", "findings"],
        desc="One log's replayed state: its summary (the format's own fields), its rows under the format's key "
             "(workq: jobs; Kestrel: items; ...), its exit code, verdict and findings."),
    "job": _obj({
        "job_id": _STR, "kind": _STR, "name": _STR, "state": _STR, "priority": _INT, "attempts": _INT,
        "max_attempts": _INT, "max_fails": _INT, "ttr_ms": _INT, "ttl_ms": _INT, "created_ns": _INT,
        "created": _STR, "scheduled_ns": _n(_INT), "scheduled": _n(_STR), "expires_ns": _INT, "expires": _STR,
        "log_expires_ns": _INT, "log_expires": _STR, "lease_expires_ns": _n(_INT), "lease_expires": _n(_STR),
        "payload_len": _INT, "payload_crc32c": _STR, "result": _n(_STR)},
        ["job_id", "kind", "name", "state"], more=False, desc="A workq job in the replayed state."),
    "stats_damage": _obj({"errors": _INT, "warnings": _INT, "counts": {"$ref": "#/$defs/counts"}},
                         ["errors", "warnings", "counts"], more=False),
    "stats_state": _obj({"jobs": _INT, "by_state": _map(_INT), "queues": _map(_map(_INT)), "digest": _n(_STR)},
                        ["jobs", "by_state", "queues"], more=False),
    "stats_log": _obj({
        "root": _STR, "verdict": _VERDICT, "exit_code": _EXIT, "segments": _INT, "records": _INT, "bytes": _INT,
        "record_bytes": _INT, "jobs": _INT, "first_time": _n(_STR), "last_time": _n(_STR),
        "first_time_ns": _n(_INT), "last_time_ns": _n(_INT),
        "by_type": _map(_obj({"records": _INT, "bytes": _INT}, ["records", "bytes"], more=False)),
        "state": {"$ref": "#/$defs/stats_state"}, "damage": {"$ref": "#/$defs/stats_damage"},
        "analytics": _map({"type": "array", "items": {"type": "object"}})},
        ["root", "verdict", "exit_code", "segments", "records", "bytes", "record_bytes", "by_type", "state",
         "damage"]),
    "stats_total": _obj({
        "logs": _INT, "exit_code": _EXIT, "segments": _INT, "records": _INT, "bytes": _INT, "record_bytes": _INT,
        "jobs": _INT, "by_type": _map(_obj({"records": _INT, "bytes": _INT}, ["records", "bytes"])),
        "state": {"$ref": "#/$defs/stats_state"}, "damage": {"$ref": "#/$defs/stats_damage"}},
        ["logs", "exit_code", "records", "bytes", "state", "damage"]),
    "record_stats": _obj({"records": _INT, "bytes": _INT, "jobs": _INT, "by_type": _map(_obj({"records": _INT,
                                                                                               "bytes": _INT}))},
                         ["records", "bytes", "by_type"]),
    "plan": _obj({
        "root": _STR, "format": _STR, "verdict": _VERDICT, "exit_code": _EXIT,
        "cuts": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/position"}, _STR]}},
        "kept": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/position"}, _STR]}},
        "dropped_records": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/position"}, _STR]}},
        "jobs_lost": {"type": "array", "items": _obj({"job_id": _STR, "cmd": _STR, "at": _AT,
                                                      "later_records": _INT, "id_unverified": {"type": "boolean"}},
                                                     ["job_id", "cmd", "at", "later_records"], more=False)},
        "jobs_changed": {"type": "array", "items": _obj({"job_id": _STR, "at": _AT, "before": _STR, "after": _STR},
                                                        ["before", "after"], more=False)},
        "recovered": _RECOVERED},
        ["root", "format", "verdict", "exit_code"],
        desc="What a repair or clean plans (or did, with --apply): the ranges it cuts and keeps, the jobs it "
             "loses and changes."),
}


def _with_run(d: dict, *required: str) -> dict:
    """``d`` with the run's exit code and verdict required beside its own members."""
    d = copy.deepcopy(d)
    d["properties"] = {"exit_code": _EXIT, "verdict": _VERDICT, **d["properties"]}
    d["required"] = ["exit_code", "verdict", *d["required"], *required]
    return d


def _summary_line(summary: dict) -> dict:
    return _obj({"summary": summary}, ["summary"], more=False, desc="The stream's last line: the run's summary.")


_LOGS_OR_FAILED = lambda ref: {"type": "array", "items": {"anyOf": [{"$ref": ref}, {"$ref": "#/$defs/failed"}]}}  # noqa: E731

#: command -> (the -o json document's schema, the schema of one -o jsonl line or None, what each is)
COMMANDS: dict[str, tuple[dict, dict | None, str]] = {
    "verify": (
        _with_run(_obj({"logs": _LOGS_OR_FAILED("#/$defs/verify_log")}, ["logs"], more=False)),
        {"anyOf": [{"$ref": "#/$defs/finding"},
                   _summary_line(_with_run(_obj({"logs": _LOGS_OR_FAILED("#/$defs/verify_log")}, ["logs"],
                                                more=False)))]},
        "Every PATH's verdict with its findings. JSON Lines: a finding a line (each log's in turn), then the "
        "summary line with every log's entry (without its findings)."),
    "dump": (
        {"anyOf": [
            _with_run(_obj({"records": {"type": "array", "items": {"$ref": "#/$defs/record"}},
                            "shown": _INT, "counts": {"$ref": "#/$defs/counts"},
                            "findings": {"$ref": "#/$defs/findings"}},
                           ["records", "shown", "counts", "findings"], more=False)),
            _with_run({"$ref": "#/$defs/record_stats", "type": "object", "properties": {}, "required": []}),
        ]},
        {"anyOf": [{"$ref": "#/$defs/record"},
                   _summary_line(_with_run(_obj({"shown": _INT, "counts": {"$ref": "#/$defs/counts"},
                                                 "findings": {"$ref": "#/$defs/findings"}},
                                                ["shown", "counts", "findings"], more=False))),
                   _summary_line(_with_run({"$ref": "#/$defs/record_stats", "type": "object", "properties": {},
                                            "required": []}))]},
        "The records (under records), then the run's exit code and verdict, how many records were written "
        "(shown) and the findings dump met on the way. --stats: the record statistics instead. JSON Lines: a "
        "record a line, then the summary line."),
    "replay": (
        {"anyOf": [_with_run({"$ref": "#/$defs/replay_log", "type": "object", "properties": {}, "required": []}),
                   _with_run(_obj({"logs": {"type": "array", "items": {"$ref": "#/$defs/replay_log"}}}, ["logs"],
                                  more=False))]},
        {"anyOf": [{"$ref": "#/$defs/job"},
                   {"type": "object", "properties": {"summary": False}, "description": "a row of another format"},
                   _summary_line({"$ref": "#/$defs/replay_log"})]},
        "One log's replayed state at --as-of (several logs: their documents under logs). JSON Lines: a row "
        "(a job, an item, ...) a line, then the summary line: the document without its rows."),
    "stats": (
        _with_run(_obj({"logs": _LOGS_OR_FAILED("#/$defs/stats_log"), "total": {"$ref": "#/$defs/stats_total"}},
                       ["logs", "total"], more=False)),
        {"anyOf": [{"$ref": "#/$defs/stats_log"}, {"$ref": "#/$defs/failed"},
                   _summary_line(_with_run(_obj({"total": {"$ref": "#/$defs/stats_total"}}, ["total"],
                                                more=False)))]},
        "Per log and in total: records and bytes per record type, state, damage. JSON Lines: a log a line, "
        "then the summary line with the total."),
    "pack": (
        _with_run(_obj({"root": _STR, "format": _STR, "digest": _STR, "records_dropped": _INT,
                        "before": {"type": "object"}, "after": {"type": "object"}, "recovered": _RECOVERED},
                       ["root", "format", "digest", "before", "after"])),
        None,
        "The packed log's plan (and what --out / --apply wrote), with the input's exit code and verdict."),
    "repair": (
        _with_run(_obj({"logs": _LOGS_OR_FAILED("#/$defs/plan")}, ["logs"], more=False)),
        None,
        "Each PATH's repair plan (or what --apply did), or why it got none."),
    "clean": (
        _with_run(_obj({"logs": _LOGS_OR_FAILED("#/$defs/plan")}, ["logs"], more=False)),
        None,
        "Each PATH's clean plan (or what --apply did), or why it got none."),
}


def _used(node, found: set) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] not in found:
            found.add(ref[8:])
            _used(DEFS[ref[8:]], found)
        for v in node.values():
            _used(v, found)
    elif isinstance(node, list):
        for v in node:
            _used(v, found)


def schema(command: str, *, lines: bool = False) -> dict:
    """The JSON Schema of ``command``'s ``-o json`` document, or (``lines``) of one line of its ``-o jsonl``
    stream; KeyError for a command without JSON output (or without JSON Lines)."""
    doc, line, what = COMMANDS[command]
    top = line if lines else doc
    if top is None:
        raise KeyError(command)
    used: set = set()
    _used(top, used)
    out = {"$schema": DRAFT, "$id": f"{BASE}{command}{'.line' if lines else ''}.json",
           "title": f"wqtool {command} -o {'jsonl (one line)' if lines else 'json'}", "description": what,
           **copy.deepcopy(top)}
    if used:
        out["$defs"] = {k: copy.deepcopy(DEFS[k]) for k in sorted(used)}
    return out


def commands() -> list[str]:
    """The commands that write JSON, in help's order."""
    return list(COMMANDS)
