"""wqtool diff's engine on workq logs, against the reference: for random histories H and H + E (E sometimes
damaged), the jobs diff names are exactly those whose replayed rows differ (the reference replays both logs and
compares replay's rows), each with the last record of E that names it; the kernel's merge and walk equal their
pure-Python twins; the log before and after ``repair --apply`` differs in exactly the plan's lost jobs."""
from __future__ import annotations

import os
import shutil

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import cli, examples
from wqtool.engine import diff as engine_diff
from wqtool.engine.format import Options, resolve_each
from wqtool.engine.workq import diff as workq_diff, writer
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.model import Record
from wqtool.engine.workq.reader import discover, segment_events
from wqtool.formats._common import GoTime
from wqtool.formats.workq import HEADER_BYTES, CmdType

T0 = 1_795_000_000_000_000_000
AS_OF = T0 + 3_600_000_000_000
IDS = [bytes([0x10 + i] * 6) + b"\x40\x00\x80" + bytes([i] * 7) for i in range(6)]
QUEUES = ["q1", "q2"]


@st.composite
def command(draw):
    jid = draw(st.sampled_from(IDS))
    c = draw(st.sampled_from([1, 1, 2, 3, 4, 5, 6, 7, 7, 8]))
    created = GoTime.from_unix_ns(T0 + draw(st.sampled_from([0, 1000, -86400 * 10**9 * 40])))
    if c == 1:
        return writer.add(jid, draw(st.sampled_from(QUEUES)), ttr=draw(st.sampled_from([1000, 5000])),
                          ttl=3_600_000 * 24, created=created, max_attempts=draw(st.sampled_from([0, 2])),
                          payload=draw(st.sampled_from([b"", b"p", b"xy"])))
    if c == 2:
        return writer.schedule(jid, draw(st.sampled_from(QUEUES)), ttr=1000, ttl=3_600_000 * 24,
                               time=GoTime.from_unix_ns(T0 + 600 * 10**9), created=created)
    if c in (3, 4):
        return writer.result(CmdType(c), jid, draw(st.sampled_from([b"", b"ok", b"no"])))
    return writer.simple(CmdType(c), jid)


def _write(directory: str, segments: list[list[bytes]]) -> None:
    os.makedirs(directory)
    for i, recs in enumerate(segments):
        with open(os.path.join(directory, f"{i + 1:09d}.log"), "wb") as f:
            f.write(HEADER_BYTES + b"".join(recs))


def _records(cmds) -> list[bytes]:
    return [encode_record(GoTime.from_unix_ns(T0 + k), encode_payload(c)) for k, c in enumerate(cmds)]


def _diff(a: str, b: str, as_of: int = AS_OF, limit=None):
    opts = Options(as_of)
    entries = [e for p in (a, b) for e in resolve_each([p], "workq", opts)]
    return engine_diff.diff(entries, opts, limit=limit)


def _reference_rows(path: str, as_of: int) -> dict:
    log = discover([path])[0]
    from wqtool.engine.workq.format import FORMAT
    rp = FORMAT.run(log, Options(as_of))
    for _ in rp.events():
        pass
    return {k: j.canonical() for k, j in rp.report.state.jobs.items()}


def _last_naming(path: str, ids: set) -> dict:
    """{id: offset of the last readable record naming it} over the whole log (reference reader)."""
    log = discover([path])[0]
    last = {}
    for seg in log.segments:
        for ev in segment_events(seg, 0, seg is log.newest):
            if isinstance(ev, Record) and ev.command is not None and ev.command.job_id in ids:
                last[ev.command.job_id] = (ev.path, ev.offset)
    return last


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(h=st.lists(command(), max_size=30), e=st.lists(command(), min_size=0, max_size=8),
       split=st.integers(0, 30), damage=st.sampled_from([None] * 6 + ["flip", "cut"]), pos=st.integers(0, 10**6),
       pure=st.booleans())
def test_named_jobs_are_exactly_those_whose_rows_differ(tmp_path_factory, monkeypatch, h, e, split, damage, pos,
                                                        pure):
    monkeypatch.setattr(workq_diff, "_C", workq_diff._C and not pure)
    monkeypatch.setattr(workq_diff, "_WINDOW", 100)        # the walk's windows end inside records
    monkeypatch.setattr(engine_diff, "CHUNK", 64)          # and the comparison's chunks
    root = tmp_path_factory.mktemp("d")
    hr, er = _records(h), _records(h + e)[len(h):]
    split = min(split, len(hr))
    a, b = str(root / "a"), str(root / "b")
    _write(a, [hr[:split], hr[split:]])
    tail = b"".join(er)
    if damage and tail:
        i = pos % len(tail)
        tail = tail[:i] + bytes([tail[i] ^ 0x20]) + tail[i + 1:] if damage == "flip" else tail[:i]
    _write(b, [hr[:split], hr[split:] + [tail]])
    d = _diff(a, b)
    ra, rb = _reference_rows(a, AS_OF), _reference_rows(b, AS_OF)
    want = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
    assert [j.key for j in d.jobs] == want and d.total == len(want)
    if not tail:
        assert d.relation.kind == "same"
    elif not damage:
        assert (d.relation.kind, d.relation.records) == ("a+", len(e))
    last = _last_naming(b, set(want))
    for j in d.jobs:
        assert j.a_change is None                    # nothing of A follows the divergence
        assert j.b_change is not None and (j.b_change.path, j.b_change.offset) == last[j.key]
        assert (j.a is None) == (j.key not in ra) and (j.b is None) == (j.key not in rb)
        if j.b is not None:
            assert (j.b.state, j.b.attempts) == (rb[j.key]["state"], rb[j.key]["attempts"])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(h=st.lists(command(), max_size=25))
def test_a_log_against_itself_and_its_copy(tmp_path_factory, h):
    root = tmp_path_factory.mktemp("s")
    a, b = str(root / "a"), str(root / "b")
    _write(a, [_records(h)])
    shutil.copytree(a, b)
    for x, y in ((a, a), (a, b)):
        d = _diff(x, y)
        assert d.equal and d.jobs == [] and d.relation.kind == "same"


def test_the_kernel_merge_equals_python_on_two_different_logs(tmp_path):
    from wqtool.engine.workq.sample import SampleSpec, generate
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    generate(a, SampleSpec(records=3000, seed=3, segment_size=20_000))
    generate(b, SampleSpec(records=3000, seed=4, segment_size=20_000))
    fast = _diff(a, b, as_of=T0)
    windows = workq_diff._WINDOW
    try:
        workq_diff._WINDOW = 4096                           # windows in mmapped segments: pages dropped after each
        assert [(j.key, j.b_change) for j in _diff(a, b, as_of=T0).jobs] == [(j.key, j.b_change) for j in fast.jobs]
    finally:
        workq_diff._WINDOW = windows
    old = workq_diff._C
    try:
        workq_diff._C = False
        slow = _diff(a, b, as_of=T0)
    finally:
        workq_diff._C = old
    assert fast.total == slow.total > 0
    assert [(j.key, j.a_change, j.b_change) for j in fast.jobs] == [(j.key, j.a_change, j.b_change) for j in slow.jobs]
    assert fast.relation == slow.relation
    assert fast.relation.kind == "none"


def test_before_and_after_repair_names_exactly_the_jobs_lost(tmp_path):
    """The add of a live job damaged (its id still readable): ``repair --salvage --apply`` cuts it. The pristine
    log against the repaired one names exactly the plan's jobs_lost (with the add that made it on side A); the
    damaged log against the repaired one names none (the repair keeps every readable record's effect)."""
    import json
    cmds = [writer.add(IDS[0], "q1", ttr=1000, ttl=3_600_000 * 24, created=GoTime.from_unix_ns(T0)),
            writer.add(IDS[1], "q1", ttr=1000, ttl=3_600_000 * 24, created=GoTime.from_unix_ns(T0), payload=b"lost"),
            writer.add(IDS[2], "q2", ttr=1000, ttl=3_600_000 * 24, created=GoTime.from_unix_ns(T0)),
            writer.simple(CmdType.START_ATTEMPT, IDS[0]), writer.result(CmdType.COMPLETE, IDS[2], b"ok")]
    recs = _records(cmds)
    pristine, damaged = str(tmp_path / "pristine"), str(tmp_path / "damaged")
    _write(pristine, [recs])
    bad = bytearray(recs[1])
    bad[-6] ^= 0x01                              # in its created time: the id stays readable, the CRC fails
    _write(damaged, [[recs[0], bytes(bad), *recs[2:]]])
    repaired = str(tmp_path / "repaired")
    shutil.copytree(damaged, repaired)
    plan = json.loads(cli("repair", "--salvage", "-o", "json", "--as-of", "last", repaired).out)
    lost = {j["job_id"] for lg in plan["logs"] for j in lg["jobs_lost"]}
    assert cli("repair", "--salvage", "--apply", "-q", "--as-of", "last", repaired).code == 3
    d = json.loads(cli("diff", "-o", "json", "--as-of", "last", pristine, repaired).out)
    assert lost and {j["job_id"] for j in d["jobs"]} == lost
    [j] = d["jobs"]
    assert (j["a"]["state"], j["b"], j["a_change"]["cmd"], j["a_change"]["offset"]) == ("new", None, "add",
                                                                                       8 + len(recs[0]))
    assert cli("diff", "--as-of", "last", damaged, repaired).code == 3     # the damaged side's CORRUPT
    assert json.loads(cli("diff", "-o", "json", "--as-of", "last", damaged, repaired).out)["total"] == 0


def _at_rest(rows: dict) -> dict:
    return {k: {f: v for f, v in r.items() if f not in ("expires_ns", "lease_expires_ns")} for k, r in rows.items()}


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cmds=st.lists(command(), max_size=30), gaps=st.lists(st.integers(0, 3 * 3_600 * 10**9), min_size=30,
                                                            max_size=30),
       t1=st.integers(0, 30), t2=st.integers(0, 30))
def test_two_instants_name_exactly_the_jobs_whose_rows_differ(tmp_path_factory, cmds, gaps, t1, t2):
    """``--from T1 --to T2``: the reference is the log cut at each instant (its records up to it, as a log of its
    own) replayed at that instant; the jobs named are exactly those whose rows (without the clock's fields)
    differ, each with the records in (T1, T2] naming it."""
    root = tmp_path_factory.mktemp("i")
    times, t = [], T0
    for g in gaps[:len(cmds)]:
        t += g
        times.append(t)
    recs = [encode_record(GoTime.from_unix_ns(tt), encode_payload(c)) for tt, c in zip(times, cmds)]
    t1, t2 = sorted((T0 + t1 * 3_600 * 10**9, T0 + t2 * 3_600 * 10**9))
    full, cut1, cut2 = str(root / "full"), str(root / "cut1"), str(root / "cut2")
    _write(full, [recs])
    _write(cut1, [[r for r, tt in zip(recs, times) if tt <= t1]])
    _write(cut2, [[r for r, tt in zip(recs, times) if tt <= t2]])
    [e] = resolve_each([full], "workq", Options(t1))
    d = engine_diff.between(e, Options(t1), Options(t2))
    r1, r2 = _at_rest(_reference_rows(cut1, t1)), _at_rest(_reference_rows(cut2, t2))
    want = sorted(k for k in set(r1) | set(r2) if r1.get(k) != r2.get(k))
    assert [j.key for j in d.jobs] == want and d.total == len(want)
    window = {}
    for c, tt, r in zip(cmds, times, recs):
        if t1 < tt <= t2:
            window.setdefault(c.job_id, []).append(tt)
    assert d.relation.records == sum(len(v) for v in window.values())
    for j in d.jobs:
        assert [GoTime.from_unix_ns(tt).isoformat() for tt in window.get(j.key, [])] == [c.time for c in j.changes]
        assert j.expired == (j.key in r1 and j.key not in r2 and j.key not in window)


def test_a_job_that_only_expired_is_listed_as_such(tmp_path):
    import json
    short = writer.add(IDS[0], "q1", ttr=1000, ttl=60_000, created=GoTime.from_unix_ns(T0))
    keep = writer.add(IDS[1], "q1", ttr=1000, ttl=3_600_000, created=GoTime.from_unix_ns(T0))
    log = str(tmp_path / "log")
    _write(log, [[encode_record(GoTime.from_unix_ns(T0), encode_payload(short)),
                  encode_record(GoTime.from_unix_ns(T0), encode_payload(keep))]])
    f, t = GoTime.from_unix_ns(T0 + 30 * 10**9).isoformat(), GoTime.from_unix_ns(T0 + 600 * 10**9).isoformat()
    r = cli("diff", "-o", "json", "--from", f, "--to", t, log)
    doc = json.loads(r.out)
    assert r.code == 1 and doc["relation"]["kind"] == "instants" and doc["relation"]["records"] == 0
    [j] = doc["jobs"]
    assert (j["job_id"], j["expired"], j["changes"], j["b"]) == (workq_diff.format_uuid(IDS[0]), True, [], None)
    assert "expired by time" in cli("diff", "--from", f, "--to", t, log).out
    assert cli("diff", "--from", t, "--to", t, log).code == 0
