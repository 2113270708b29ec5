"""One JSON vocabulary with a published schema: ``wqtool schema COMMAND`` prints a valid JSON Schema (draft 2020-12)
of each command's -o json document and -o jsonl lines, and every golden JSON output (the snapshots, the fixtures'
expected files) and every JSON output over the fixture corpus validates against it."""
from __future__ import annotations

import glob
import json
import os

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import AS_OF, ROOT, cli
from wqtool.render.schema import RETIRED, commands, schema

CRC = "fixtures/workq/crc-mismatch-mid-segment/log"
_VALIDATORS: dict = {}


def validator(command: str, lines: bool) -> Draft202012Validator:
    key = (command, lines)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = Draft202012Validator(schema(command, lines=lines))
    return _VALIDATORS[key]


def check(command: str, text: str, lines: bool) -> list:
    """Validate one output (a document, or a JSON Lines stream: every line, the last one the summary); the
    parsed document(s)."""
    docs = [json.loads(x) for x in text.split("\n") if x] if lines else [json.loads(text)]
    if lines:
        assert docs and set(docs[-1]) == {"summary"}, "a JSON Lines stream ends with its summary line"
    for d in docs:
        errors = sorted(validator(command, lines).iter_errors(d), key=lambda e: len(list(e.absolute_path)))
        assert not errors, f"{command}: {list(errors[0].absolute_path)}: {errors[0].message[:300]}"
    return docs


def keys(doc) -> set:
    out: set = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(k)
            out |= keys(v)
    elif isinstance(doc, list):
        for v in doc:
            out |= keys(v)
    return out


@pytest.mark.parametrize("command", commands())
def test_schema_prints_a_valid_draft_2020_12_schema(command):
    r = cli("schema", command)
    assert r.code == 0
    doc = json.loads(r.out)
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema" and doc == schema(command)
    lines = cli("schema", command, "--jsonl")
    if command in ("pack", "repair", "clean"):
        assert lines.code == 2 and "writes -o json only" in lines.err
    else:
        Draft202012Validator.check_schema(json.loads(lines.out))


def test_schema_of_a_command_without_json_is_a_usage_error():
    r = cli("schema", "serve")
    assert r.code == 2 and r.err.startswith("wqtool: schema: expected one of verify, dump, replay")


# ---------------------------------------------------------------- the golden outputs
SNAPSHOTS = {"dump_json.json": ("dump", False), "k_replay_open.json": ("replay", False),
             "replay_json.json": ("replay", False), "replay_jsonl.jsonl": ("replay", True),
             "verify_json.json": ("verify", False), "verify_torn.jsonl": ("verify", True)}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_every_json_snapshot_validates(name):
    text = open(os.path.join(ROOT, "tests", "commands", "snapshots", name), encoding="utf-8").read()
    stdout = text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
    check(*SNAPSHOTS[name][:1], stdout, SNAPSHOTS[name][1])


def _expected_files():
    return sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*", "expected-verify.json"))
                  + glob.glob(os.path.join(ROOT, "fixtures", "workq", "*", "expected.jsonl")))


@pytest.mark.parametrize("path", _expected_files(), ids=lambda p: os.path.relpath(p, os.path.join(ROOT, "fixtures")))
def test_every_fixture_expected_output_validates(path):
    text = open(path, encoding="utf-8").read()
    if path.endswith(".jsonl"):      # `wqtool dump -o jsonl` (scripts/make_fixtures.py)
        check("dump", text, True)
    else:                            # `wqtool verify -o json`, or a format's script's document of the same shape
        doc = json.loads(text)
        if "exit_code" in doc and "verdict" in doc:
            check("verify", text, False)
        assert not keys(doc) & set(RETIRED), path


def _scenarios() -> list[str]:
    out = []
    for scenario in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*", ""))):
        inner = [d for d in glob.glob(os.path.join(scenario, "*", ""))]
        out.append(os.path.relpath(inner[0] if len(inner) == 1 else scenario, ROOT))
    return out


@pytest.mark.sweep
@pytest.mark.parametrize("path", _scenarios())
def test_every_json_output_over_the_corpus_validates(in_root, path):
    """verify, dump, replay and stats in -o json and -o jsonl, repair / clean / pack -o json: each validates."""
    for command, lines in (("verify", False), ("verify", True), ("dump", False), ("dump", True), ("replay", False),
                           ("replay", True), ("stats", False), ("stats", True), ("repair", False), ("clean", False),
                           ("pack", False)):
        r = cli(command, "-o", "jsonl" if lines else "json", "--as-of", AS_OF, path)
        if r.out.strip():
            check(command, r.out, lines)
        elif command not in ("replay", "pack"):       # replay and pack of a PATH that is no log: stderr only
            raise AssertionError(f"{command} wrote no JSON for {path}: {r.err}")


# ---------------------------------------------------------------- the vocabulary (done-when of the JSON change)
def test_one_vocabulary_on_the_crc_fixture(in_root):
    """verify, replay, stats, dump and repair of the crc-mismatch fixture: job_id and record_index only, findings
    always a list (with counts beside it), every document an object with exit_code and verdict."""
    docs = {}
    for argv in (["verify"], ["replay"], ["stats"], ["dump"], ["repair", "--salvage"]):
        r = cli(argv[0], "-o", "json", *argv[1:], "--as-of", AS_OF, CRC)
        docs[argv[0]] = doc = json.loads(r.out)
        assert isinstance(doc, dict) and doc["exit_code"] == r.code == 3 and doc["verdict"] == "CORRUPT", argv
        assert not keys(doc) & {"id", "index", "job", "exit_class", "record"}, argv
    assert "job_id" in keys(docs["replay"]) and "record_index" in keys(docs["dump"])
    assert isinstance(docs["replay"]["findings"], list) and docs["replay"]["counts"]["WQ-CRC"] == 1
    assert isinstance(docs["dump"]["findings"], list) and docs["dump"]["counts"] == {"WQ-CRC": 1}
    [crc] = [f for f in docs["verify"]["logs"][0]["findings"] if f["code"] == "WQ-CRC"]
    assert (crc["severity"], crc["offset"], crc["at"], crc["record_index"]) == \
        ("error", 0x11c, "000000001.log@0x11c", None)        # an unreadable range has no record number
    row = docs["dump"]["records"][3]
    assert (row["offset"], row["at"], row["record_index"]) == (0x194, "000000001.log@0x194", 3)
    lost = docs["repair"]["logs"][0]["jobs_lost"]
    assert lost == [{"job_id": "ae97ba94-d0ed-482f-8f6d-05584ef8aa38", "cmd": "add", "at": "000000001.log@0x11c",
                     "later_records": 3, "id_unverified": True}]


@pytest.mark.parametrize("command", ["verify", "dump", "replay", "stats"])
def test_every_jsonl_stream_ends_with_one_summary_line(in_root, command):
    r = cli(command, "-o", "jsonl", "--as-of", AS_OF, CRC, "/nonexistent")
    lines = [json.loads(x) for x in r.out.splitlines()]
    assert [set(x) == {"summary"} for x in lines].count(True) == 1 and set(lines[-1]) == {"summary"} or \
        command == "replay"
    if command != "replay":          # replay takes one log: the unreadable PATH is its error
        assert lines[-1]["summary"]["exit_code"] == r.code == 3
