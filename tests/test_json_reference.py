"""One JSON convention: docs/json-output.md is what the schemas say (scripts/gen_json_reference.py regenerates it
from wqtool/render/schema.py; this fails when they disagree), and the conventions it states hold in every output
(tests/test_json_schema.py validates every output against the schemas)."""
from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil

from tests.conftest import AS_OF, ROOT, cli, fixture_log


def _gen():
    spec = importlib.util.spec_from_file_location("gen_json_reference",
                                                  os.path.join(ROOT, "scripts", "gen_json_reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_json_reference_is_what_the_schemas_say():
    gen = _gen()
    assert open(gen.DOC, encoding="utf-8").read() == gen.render(), \
        "docs/json-output.md is stale: run `make docs` (scripts/gen_json_reference.py)"


def test_result_bytes_are_base64_in_dump_and_replay(in_root):
    """The same result bytes, one encoding: base64 in dump's rows and replay's jobs (replay gave hex)."""
    log = "fixtures/workq/upstream-a-run1/log"
    rows = [json.loads(x) for x in cli("dump", "-o", "jsonl", log).out.splitlines()[:-1]]
    dumped = {r["job_id"]: r["result"] for r in rows if r["cmd"] in ("complete", "fail") and r["result"]}
    for out in ("json", "jsonl"):
        text = cli("replay", "-o", out, "--as-of", "2026-11-21T23:15:00Z", log).out
        jobs = json.loads(text)["jobs"] if out == "json" else [json.loads(x) for x in text.splitlines()
                                                                  if '"job_id"' in x]
        replayed = {j["job_id"]: j["result"] for j in jobs if j.get("result")}
        assert replayed and all(dumped[k] == v for k, v in replayed.items()), (out, replayed, dumped)
        assert base64.b64decode(replayed["00000000-0000-4000-8000-000000000001"]) == b"done"


def test_stats_counts_the_bytes_verify_counts(in_root):
    """71,865 bytes in both (the segment header's 8 bytes were missing from stats); what the records take
    beside it."""
    log = "fixtures/workq/upstream-a-run1/log"
    v = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, log).out)["logs"][0]
    s = json.loads(cli("stats", "-o", "json", "--as-of", AS_OF, log).out)["logs"][0]
    assert v["bytes"] == s["bytes"] == os.path.getsize(os.path.join(log, "000000001.log")) == 71865
    assert s["record_bytes"] == sum(t["bytes"] for t in s["by_type"].values()) == 71857
    assert "71865 bytes (71857 in records)" in cli("stats", "--as-of", AS_OF, log).out


def test_stats_exit_code_in_one_place(in_root):
    doc = json.loads(cli("stats", "-o", "json", "--as-of", AS_OF, "fixtures/workq/upstream-a-run1/log",
                         "/nonexistent").out)
    ok, bad = doc["logs"]
    assert (ok["exit_code"], bad["exit_code"], doc["total"]["exit_code"]) == (0, 5, 5)
    assert "exit_code" not in ok["damage"] and "exit_code" not in doc["total"]["damage"]


def test_plan_reports_give_rfc3339_beside_nanoseconds(in_root):
    doc = json.loads(cli("clean", "-o", "json", "--as-of", "last", fixture_log("upstream-b-before-clean")).out)
    lg = doc["logs"][0]
    assert lg["as_of_ns"] == 1795302969232489020 and lg["as_of"] == "2026-11-21T23:16:09.23248902Z"


def test_workq_and_kestrel_backups_are_stamped_alike(tmp_path):
    """Both keep the old log as <dir>.pre-repair-...-<--as-of in RFC 3339 basic form>: the --as-of time, not the
    wall clock, so that the same command names the same backup (crash recovery matches it)."""
    w = tmp_path / "wlog"
    shutil.copytree(fixture_log("torn-tail-mid-record"), w)
    k = tmp_path / "k"
    shutil.copytree(os.path.join(ROOT, "fixtures", "kestrel", "torn-tail", "queue"), k)
    for p in (w, k):
        for n in os.listdir(p):
            os.chmod(os.path.join(p, n), 0o644)
        assert cli("repair", "--apply", "-q", "--as-of", AS_OF, str(p)).code in (0, 1)
    stamps = sorted(re.sub(r"^.*-(\d{8}T\d{6}Z)$", r"\1", n) for n in os.listdir(tmp_path) if ".pre-repair-" in n)
    assert stamps == ["20261121T233000Z"] * 2, os.listdir(tmp_path)
