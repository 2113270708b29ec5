"""REPLAY_CODES (and Kestrel's) split verify's findings by where they arise: the replay state machine on decoded
records and at its end, versus discovery, the reader and the payload decoder. ``replay_findings`` streams the
first kind — what the Spark data sources add to their row-level findings so that, together, they are verify's.
Proven here against where each finding really comes from, on every fixture and on damage made in code."""
from __future__ import annotations

import glob
import os
import shutil
from collections import Counter

import pytest

from tests.conftest import ALL_WORKQ, ROOT, fixture_log
from wqtool.engine.kestrel import codes as kcodes, model as kmodel, reader as kreader, verify as kverify
from wqtool.engine.workq.fastpath import encode_record
from wqtool.engine.workq.codes import CODES, REPLAY_CODES
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import RecordReader, discover
from wqtool.engine.workq.replay import WorkqReplay
from wqtool.engine.serialize import finding_json
from wqtool.engine.workq.verify import replay_findings, run_log
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

AS_OF_NS = 1795303800 * 10**9
KESTREL_AS_OF_NS = 1_300_003_600_000 * 1_000_000
KESTREL = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(ROOT, "fixtures", "kestrel",
                                                                                    "*", "queue")))


def _payload_damage(tmp_path) -> str:
    """sample-clean plus, mid-log, records whose CRC holds but whose payload does not decode (empty, unknown
    command, cut short, trailing bytes), one with a zone offset, and a re-add of a live job (a duplicate)."""
    d = tmp_path / "payloads"
    shutil.copytree(fixture_log("sample-clean"), d)
    seg = sorted(d.iterdir())[1]
    for p in d.iterdir():
        p.chmod(0o644)
    data = seg.read_bytes()
    first = next(e for e in RecordReader(discover([str(d)])[0]).events()
                 if e.__class__ is Record and e.path.endswith(seg.name) and e.command.cmd is CmdType.ADD)
    end = first.offset + first.length - 4
    add = data[end - first.size:end]
    t = GoTime(63930899691, 0, -1)
    bad = [b"", bytes([0x7F]) + add[1:], add[:-3], add + b"\0"]
    extra = b"".join(encode_record(t, p) for p in bad) + encode_record(GoTime(63930899691, 0, 0), add)
    seg.write_bytes(data + extra)
    return str(d)


@pytest.fixture(scope="module")
def workq_logs(tmp_path_factory):
    out = {n: fixture_log(n) for n in ALL_WORKQ}
    out["payload-damage"] = _payload_damage(tmp_path_factory.mktemp("rf"))
    return out


def _j(findings):
    return [finding_json(f) for f in findings]


def test_replay_codes_are_known_codes():
    assert REPLAY_CODES <= set(CODES)
    assert kcodes.KESTREL_REPLAY_CODES <= set(kcodes.KESTREL_CODES)


@pytest.mark.parametrize("name", [*ALL_WORKQ, "payload-damage"])
def test_workq_replay_codes_are_exactly_where_the_replay_raises(name, workq_logs):
    log = discover([workq_logs[name]])[0]
    replay = WorkqReplay(AS_OF_NS)
    seen = Counter()
    for ev in RecordReader(log).events():
        if ev.__class__ is Record:
            replay.apply(ev)
            for f in replay.findings:
                # a record that does not decode: the payload decoder's finding, row-level
                assert (f.code in REPLAY_CODES) is (ev.command is not None), (f.code, ev.offset)
                seen[f.code in REPLAY_CODES] += 1
            replay.findings.clear()
        else:
            assert ev.code not in REPLAY_CODES, ev.code
            seen["reader"] += 1
    replay.finish()
    assert replay.findings and all(f.code in REPLAY_CODES for f in replay.findings)
    if name == "payload-damage":
        assert seen[False] == 4 and seen[True] >= 1 and seen["reader"] >= 1


@pytest.mark.parametrize("keep_max", [100_000, 0])
@pytest.mark.parametrize("name", [*ALL_WORKQ, "payload-damage"])
def test_replay_findings_are_run_logs_replay_findings_in_order(name, keep_max, workq_logs):
    """keep_max 0: the kernel's first finding overflows it, so the streamed reference pass answers."""
    log = discover([workq_logs[name]])[0]
    expected = [f for f in run_log(log, AS_OF_NS, engine="reference").findings if f.code in REPLAY_CODES]
    assert expected
    assert _j(replay_findings(log, AS_OF_NS, keep_max=keep_max)) == _j(expected)


def test_payload_damage_log_has_every_kind(workq_logs):
    rep = run_log(discover([workq_logs["payload-damage"]])[0], AS_OF_NS)
    for code in ("WQ-PAYLOAD-EMPTY", "WQ-UNKNOWN-CMD", "WQ-PAYLOAD-SHORT", "WQ-PAYLOAD-TRAILING", "WQ-ZONE",
                 "WQ-DUPLICATE-JOB"):
        assert rep.counts[code] == 1, (code, rep.counts)


@pytest.mark.parametrize("name", KESTREL)
def test_kestrel_replay_codes_split_run_log_from_the_reader(name):
    path = os.path.join(ROOT, "fixtures", "kestrel", name, "queue")
    for fs in kreader.discover([path]):
        reader = [ev for ev in kreader.JournalReader(fs).events() if ev.__class__ is not kmodel.Record]
        assert not [f.code for f in reader if f.code in kcodes.KESTREL_REPLAY_CODES]
        full = run_log_k = kverify.run_log(fs, KESTREL_AS_OF_NS).findings
        rest = [f for f in full if f.code in kcodes.KESTREL_REPLAY_CODES]
        # verify's findings = the reader's (in order) + the replay's (in order), interleaved
        assert [f for f in run_log_k if f.code not in kcodes.KESTREL_REPLAY_CODES] == reader
        assert len(full) == len(reader) + len(rest)
        assert _j(kverify.replay_findings(fs, KESTREL_AS_OF_NS)) == _j(rest)
