"""Real segments written by workq-server 0.2.0: parse, verify clean, re-encode byte-identical."""
from __future__ import annotations

import json
import os

import pytest

from tests.conftest import UPSTREAM, WORKQ_FIXTURES, fixture_log
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.verify import run_log
from wqtool.engine.findings import Verdict
from wqtool.formats.workq import HEADER_BYTES

AS_OF_NS = 1795303800 * 10**9  # 2026-11-21T23:30:00Z


def records(path):
    return [e for e in RecordReader(discover([path])[0]).events() if e.__class__ is Record]


@pytest.mark.parametrize("name", UPSTREAM)
def test_upstream_fixture_verifies_clean(name):
    rep = run_log(discover([fixture_log(name)])[0], AS_OF_NS)
    assert rep.verdict == Verdict.CLEAN
    assert not [f for f in rep.findings if f.severity == "error"]
    assert rep.records > 0


@pytest.mark.parametrize("name", UPSTREAM)
def test_upstream_fixture_reencodes_byte_identical(name):
    d = fixture_log(name)
    by_file: dict[str, list[bytes]] = {}
    for r in records(d):
        assert r.command is not None
        by_file.setdefault(r.path, []).append(encode_record(r.time, encode_payload(r.command)))
    for path, recs in by_file.items():
        assert HEADER_BYTES + b"".join(recs) == open(path, "rb").read()


def test_a_run1_decodes_to_exactly_the_recorded_commands():
    expected = json.load(open(os.path.join(WORKQ_FIXTURES, "upstream-a-run1", "records.json")))
    got = records(fixture_log("upstream-a-run1"))
    assert len(got) == len(expected) == 28
    for r, e in zip(got, expected):
        c = r.command
        assert (r.index, r.offset, r.length, c.cmd.label, c.job_uuid, f"{r.crc:08x}") == \
            (e["index"], e["offset"], e["length"], e["record"], e["id"], e["crc"])
        if "name" in e:
            assert (c.name.decode(), c.ttr, c.ttl, c.priority, c.max_attempts, c.max_fails, len(c.payload)) == \
                (e["name"], e["ttr_ms"], e["ttl_ms"], e["priority"], e["max_attempts"], e["max_fails"],
                 e["payload_len"])
        if "result" in e:
            assert c.result.decode() == e["result"]
    # J3's payload is bytes 00..ff
    assert got[2].command.payload == bytes(range(256))


def test_a_run1_replay_states():
    """What the notes of records.json say happened, as replayed shortly after the run."""
    st = run_log(discover([fixture_log("upstream-a-run1")])[0], 1795302920 * 10**9).state  # 23:15:20Z
    by = {j.uuid[-2:]: j for j in st.jobs.values()}
    assert by["01"].state.label == "completed" and by["01"].result == b"done"
    assert by["02"].state.label == "failed" and by["02"].result == b"oops"
    assert by["03"].state.label == "new" and by["03"].priority == -3
    assert "04" not in by and "06" not in by          # deleted, expired
    assert by["05"].state.label == "new" and by["05"].scheduled_ns is not None
    assert by["07"].state.label == "pending" and by["07"].attempts == 1
    assert by["12"].state.label == "failed" and by["12"].result == b""   # max-attempts reached
    assert by["10"].state.label == "pending"          # its lease timed out (last record)
    assert by["11"].state.label == "completed"
    assert "13" not in by                             # TTL 5 s: already expired at as-of, skipped


def test_expected_files_are_not_stale():
    """scripts/make_fixtures.py --check: the synthetic scenarios and all expected files match the code."""
    import subprocess
    import sys
    from tests.conftest import ROOT
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_fixtures.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
