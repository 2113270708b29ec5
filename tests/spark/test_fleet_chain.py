"""A single log's ``replay --summary`` chained over the slots (``engine/workq/fleet.py``: ``chain_plan``): share k
replays the jobs whose id's first two bytes are in its range (``FastReplay(id_range=...)``), then hashes its digest
lines after share k - 1's, from the running sha256 state that share handed on through the driver's relay
(``spark.cluster.Relay``, ``_sha.Sha256``). The report — findings in file order, counts, exit code and the digest,
byte for byte — is the local engine's, on intact, damaged and truncated logs, at any cut of the id space; a share
the kernel bails on sends the log to the reference pipeline. Each share CRC-checks only the records in its part of
the log's bytes (``crc_share``); a share that meets a crc mismatch makes the log read whole."""
from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.spark.conftest import as_of_ns, random_log
from tests.spark.test_fleet_split import REFUSED, SPLIT, _assert_same, _far_future_log, _local, _log

pytest.importorskip("wqtool.engine.workq._sha", reason="wqtool.engine.workq._sha is not built (libcrypto headers)")

DAMAGED = ["flip-mid-segment", "flip-first-record", "truncated-newest", "truncated-mid-only-segment",
           "bad-magic-first", "junk-tail", "size-overflow"]


class _Box:
    """The relay's part in one process: shares run one after another, so share k's state is there for k + 1."""

    def __init__(self):
        self.values: dict[str, str] = {}

    def send(self, key: str, value: str) -> None:
        self.values.setdefault(key, value)

    def receive(self, key: str, timeout: float) -> str | None:
        return self.values.get(key)


def _chained(log, as_of: int, n: int, first: float, limit=None, crcs=None):
    """The chained shares of ``log`` run in this process (share k CRC-checks the k-th of n parts of the log's
    bytes, ``crc_share``, or ``crcs``), then merged as the driver merges them: the FleetLog, or None when a share
    bailed; a share that met a crc mismatch (``_chained.damaged``: the shares' results) makes the log read whole
    in one pass, as ``run_fleet`` does."""
    from wqtool.engine.workq.fleet import _assemble_fast, _FastTask, chain_ranges, crc_share
    from wqtool.engine.workq.verify import log_size
    ranges = chain_ranges(n, first)
    n = len(ranges)
    crcs = crcs or [crc_share(log_size(log), k, n) for k in range(n)]
    task = _FastTask([(0, log, k, n) for k in range(n)], [[k] for k in range(n)],
                     [as_of], True, False, limit, ranges=ranges, relay=_Box(), crcs=crcs)
    parts = [task._run(log, k, n, as_of) for k in range(n)]
    _chained.damaged = [p is not None and "damaged" in p for p in parts]
    if any(_chained.damaged):       # the driver reads the log whole: one task, every CRC checked
        whole = _FastTask([(0, log, 0, 1)], [[0]], [as_of], True, False, limit)
        return _assemble_fast(log, as_of, limit, [whole._run(log, 0, 1, as_of)], True)
    if any(p is None for p in parts):
        return None
    _chained.jobs = [p["jobs"] for p in parts]     # each share's jobs (the premise: shares hold jobs of their own)
    assert all("chain" in p for p in parts)
    return _assemble_fast(log, as_of, limit, parts, True)


def test_chain_ranges_cover_the_id_space():
    from wqtool.engine.workq.fleet import chain_ranges
    for n in (1, 2, 3, 5):
        for first in (0.0, 0.01, 0.38, 0.5, 0.99, 1.0):
            rs = chain_ranges(n, first)
            assert rs[0][0] == 0 and rs[-1][1] == 0x10000, (n, first, rs)
            assert all(a < b == c for (a, b), (c, _) in zip(rs, rs[1:] + [(rs[-1][1], 0)])), (n, first, rs)


@pytest.mark.parametrize("limit", [None, 2])
@pytest.mark.parametrize("name", SPLIT + REFUSED + DAMAGED + ["sample-clean"])
def test_chained_shares_in_process_equal_local(corpus, name, limit):
    """Every fixture and damaged copy, cut at three places of the id space: the local report and digest."""
    for n, first in ((2, 0.38), (2, 0.5), (3, 0.2), (2, 0.00003)):    # 0.00003: ids from 0x0002 on in share 1
        fl = _chained(_log(corpus, name), as_of_ns(), n, first, limit)
        assert fl is not None, name
        _assert_same(fl, _local(corpus, name, limit), f"{name} {n} {first}")
        if (n, first) == (2, 0.00003) and name in SPLIT + REFUSED:   # these fixtures' ids all start 0x0000
            assert _chained.jobs[0] > 0 and _chained.jobs[1] == 0, (name, _chained.jobs)
        if (n, first) == (2, 0.5) and name == "sample-clean":            # random ids: in both shares
            assert min(_chained.jobs) > 0, _chained.jobs


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.integers(2, 3), st.floats(0.0, 1.0), st.sampled_from(["intact", "flips",
                                                                                        "truncated"]))
def test_chained_shares_equal_local_on_random_logs(tmp_path_factory, seed, n, first, damage):
    """Random logs (random v4 ids over the whole id space, ids reused), intact, with bit flips or truncated at a
    random offset: the chained shares' report and digest are the local engine's."""
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    d = str(tmp_path_factory.mktemp("chain"))
    random_log(d, seed, damage)
    [log] = discover([d])
    local = run_log(log, as_of_ns())
    fl = _chained(log, as_of_ns(), n, first)
    assert fl is not None
    _assert_same(fl, local, f"{seed} {damage}")
    if 0.2 < first < 0.8 and damage == "intact":        # random v4 ids: every share holds some
        assert min(_chained.jobs) > 0, _chained.jobs


def test_a_share_that_bails_breaks_the_chain(tmp_path):
    """A time beyond the kernel table's int64 ns in the first share's range: that share bails and tells the next
    one, which returns nothing either (the driver then runs the log through the reference pipeline)."""
    from wqtool.engine.workq.reader import discover
    [log] = discover([_far_future_log(tmp_path / "far")])      # its ids start 0x0123: the first range
    assert _chained(log, as_of_ns(), 2, 0.38) is None


def test_spark_chains_one_log_with_the_local_answer(spark, corpus):
    """Through Spark (two tasks on local[2], the states through the driver's relay): the local report."""
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.spark.cluster import Cluster
    for name in ("sample-clean", "upstream-a-run1", "flip-mid-segment", "truncated-mid-only-segment",
                 "double-lease-and-result"):
        said: list[str] = []
        [fl] = run_fleet(Cluster(spark), [_log(corpus, name)], as_of_ns(), progress=said.append, chain=True)
        assert "2 share(s) in 2 task(s) on 2 slot(s), by job-id range, hashed in turn" in said[0], said
        assert not any("reference path" in m for m in said), said
        # a crc mismatch (flip-mid-segment) found by a share: the log read whole, in one task; else chained only
        assert (len(said) == 3 and said[1].startswith(f"spark: log {_log(corpus, name).root}: a crc mismatch at ")
                and said[2].endswith("1 share(s) in 1 task(s) on 2 slot(s)")) if name == "flip-mid-segment" \
            else len(said) == 1, said
        _assert_same(fl, _local(corpus, name), name)
        assert fl.report.state.jobs == {}


def test_spark_chain_whose_share_bails_goes_to_the_reference_path(spark, tmp_path):
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    from wqtool.spark.cluster import Cluster
    [log] = discover([_far_future_log(tmp_path / "far")])
    said: list[str] = []
    [fl] = run_fleet(Cluster(spark), [log], as_of_ns(), progress=said.append, chain=True)
    assert "by job-id range, hashed in turn" in said[0], said
    assert "spark: 1 log(s) need the reference path (fields beyond the kernel's table)" in said, said
    _assert_same(fl, run_log(log, as_of_ns()), "far")


def test_chain_only_for_one_big_log_summary(spark, corpus, monkeypatch):
    """Chained only for a digest without the jobs or stats, of one log of at least CHAIN_MIN_BYTES (these
    fixtures are smaller: one task) on a machine not busy, or with ``chain=True``; never with ``chain=False``."""
    from wqtool.engine.workq import fleet
    from wqtool.spark.cluster import Cluster
    c = Cluster(spark)
    monkeypatch.setattr(fleet, "PRESSURE_FILE", "/nonexistent/pressure/cpu")     # no PSI: the load average
    monkeypatch.setattr(fleet.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(fleet.os, "getloadavg", lambda: (1.1, 9.0, 9.0))     # no CPU spare: one task
    logs = [_log(corpus, "upstream-a-run1")]
    assert fleet.chain_plan(c, logs, [fleet.CHAIN_MIN_BYTES], digest=True, want_jobs=False, stats=False,
                            chain=None) == 0
    assert fleet.chain_plan(c, logs, [0], digest=True, want_jobs=False, stats=False, chain=True) == 2
    monkeypatch.setattr(fleet.os, "getloadavg", lambda: (1.0, 9.0, 9.0))     # a CPU spare
    logs = [_log(corpus, "upstream-a-run1")]
    sizes = [fleet.log_size(logs[0])]
    plan = fleet.chain_plan
    assert plan(c, logs, sizes, digest=True, want_jobs=False, stats=False, chain=None) == 0
    assert plan(c, logs, [fleet.CHAIN_MIN_BYTES], digest=True, want_jobs=False, stats=False, chain=None) == 2
    assert plan(c, logs, sizes, digest=True, want_jobs=False, stats=False, chain=True) == 2
    assert plan(c, logs, sizes, digest=True, want_jobs=False, stats=False, chain=False) == 0
    assert plan(c, logs, sizes, digest=True, want_jobs=True, stats=False, chain=True) == 0
    assert plan(c, logs, sizes, digest=False, want_jobs=False, stats=False, chain=True) == 0
    assert plan(c, logs, sizes, digest=True, want_jobs=False, stats=True, chain=True) == 0
    two = logs + [_log(corpus, "sample-clean")]
    assert plan(c, two, sizes * 2, digest=True, want_jobs=False, stats=False, chain=True) == 0


PSI = "some avg10={} avg60=67.70 avg300=69.79 total=32594632266\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


@pytest.mark.parametrize("some, load, chained", [
    (0.0, 7.5, True),           # a core free these last seconds, though the 1-minute load says busy
    (19.9, 1.0, True),
    (20.0, 0.2, False),         # runnable tasks waited for a CPU a fifth of the time: no core free enough
    (81.07, 0.0, False),
])
def test_chain_pays_while_the_cpu_pressure_says_a_core_is_free(tmp_path, monkeypatch, some, load, chained):
    """``chain_pays`` reads the kernel's CPU pressure (``some avg10``: the share of the last ~10 s in which a
    runnable task waited for a CPU), not the 1-minute load average, which lags (bench_fleet --one-log-summary:
    the chain won by its pairs' median while the load average still said busy, docs/spark.md)."""
    from wqtool.engine.workq import fleet
    f = tmp_path / "cpu"
    f.write_text(PSI.format(some))
    monkeypatch.setattr(fleet, "PRESSURE_FILE", str(f))
    monkeypatch.setattr(fleet.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(fleet.os, "getloadavg", lambda: (load, load, load))
    assert fleet.cpu_pressure() == some
    assert fleet.chain_pays() is chained


@pytest.mark.parametrize("text", [None, "", "full avg10=0.00\n", "some avg60=1.00\n", "some avg10=x\n"])
def test_chain_pays_without_a_cpu_pressure_reads_the_load_average(tmp_path, monkeypatch, text):
    """No PSI (an old kernel, a file missing or unreadable as expected): the 1-minute load average decides, as
    before (a CPU spare: chained)."""
    from wqtool.engine.workq import fleet
    f = tmp_path / "cpu"
    if text is not None:
        f.write_text(text)
    monkeypatch.setattr(fleet, "PRESSURE_FILE", str(f))
    monkeypatch.setattr(fleet.os, "cpu_count", lambda: 2)
    assert fleet.cpu_pressure() is None
    monkeypatch.setattr(fleet.os, "getloadavg", lambda: (1.0, 9.0, 9.0))
    assert fleet.chain_pays() is True
    monkeypatch.setattr(fleet.os, "getloadavg", lambda: (1.1, 0.0, 0.0))
    assert fleet.chain_pays() is False


def test_relay_passes_values_to_its_secret_only():
    from wqtool.spark.cluster import Relay, _RelayServer
    server = _RelayServer()
    try:
        box = server.client()
        assert box.host == "127.0.0.1"
        box.send("0", "abc")
        box.send("0", "other")                      # a retried task: the first value stays
        assert box.receive("0", 5.0) == "abc"
        assert box.receive("1", 0.05) is None       # nothing came: None after the timeout
        stranger = Relay(box.host, box.port, "0" * 32)
        with pytest.raises(ConnectionError):
            stranger.send("1", "forged")
        assert stranger.receive("0", 0.05) in ("", None)   # no answer to a wrong secret
        assert box.receive("1", 0.05) is None
    finally:
        server.close()


@pytest.mark.parametrize("victim", [0, 1])
def test_a_killed_share_is_retried_and_the_chain_gives_the_local_answer(spark, corpus, victim):
    """A chained share's Python worker killed on its first attempt: Spark runs that share again (the other one
    waits for its state, or finds the state it needs still kept by the relay) — the local report and digest."""
    from tests.spark.test_worker_death import _killing_cluster
    from wqtool.engine.workq.fleet import run_fleet
    said: list[str] = []
    for name in ("sample-clean", "flip-mid-segment"):
        [fl] = run_fleet(_killing_cluster(spark, victim, always=False), [_log(corpus, name)], as_of_ns(),
                         progress=said.append, chain=True)
        assert "hashed in turn" in said[-1 if name == "sample-clean" else -3], said
        if name == "flip-mid-segment":       # a crc mismatch: read whole after the chain
            assert ": read whole, in one task" in said[-2] and "1 share(s) in 1 task(s)" in said[-1], said
        _assert_same(fl, _local(corpus, name), name)


def test_a_chained_share_that_dies_every_time_is_named(spark, corpus):
    """The first share's worker killed on every attempt: exit 5 naming the share (the second one, waiting for
    its state, is cancelled with the job — no hang)."""
    from tests.spark.test_worker_death import _killing_cluster
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.errors import SparkError
    from wqtool.exitcodes import exit_code_for
    log = _log(corpus, "sample-clean")
    with pytest.raises(SparkError) as e:
        run_fleet(_killing_cluster(spark, 0, always=True), [log], as_of_ns(), chain=True)
    msg = str(e.value)
    assert msg.startswith("--engine spark: a Spark worker died: task 0 while reading log "), msg
    assert f"log {log.root} (share 1 of 2)" in msg, msg
    assert int(exit_code_for(e.value)) == 5


def _records(log):
    """(offset in the log's bytes, segment path, offset in the segment, length, id prefix) of every record."""
    from wqtool.engine.workq.model import Record
    from wqtool.engine.workq.reader import RecordReader
    base, seen, out = 0, None, []
    sizes = {s.path: os.path.getsize(s.path) for s in log.segments}
    bases, b = {}, 0
    for s in log.segments:
        bases[s.path], b = b, b + sizes[s.path]
    for ev in RecordReader(log).events():
        if isinstance(ev, Record) and ev.command is not None:
            jid = ev.command.job_id
            out.append((bases[ev.path] + ev.offset, ev.path, ev.offset, ev.length, jid[0] << 8 | jid[1]))
    return out, b


def _flip_crc(path: str, offset: int, length: int) -> None:
    """One bit of the record's stored CRC-32C flipped: its framing and fields intact, only the CRC tells."""
    with open(path, "r+b") as f:
        f.seek(offset + length - 1)
        b = f.read(1)
        f.seek(offset + length - 1)
        f.write(bytes([b[0] ^ 0x10]))


@pytest.mark.parametrize("segment_size", [12_000, 1 << 30], ids=["segments", "one segment"])
@pytest.mark.parametrize("which", ["share 0's bytes", "share 1's bytes", "both"])
def test_a_crc_flip_only_the_trusting_share_would_miss_is_found(tmp_path, segment_size, which):
    """Each share CRC-checks only its half of the log's bytes (``crc_share``) and trusts the rest. A record in
    one share's half, of a job in the OTHER share's id range, with one bit of its stored CRC flipped (fields
    intact: the share that replays it, trusting it, would apply it): the share whose bytes hold it meets the
    mismatch (``damaged``), the other does not, and the log read whole gives the local report — the WQ-CRC
    finding at that record's offset, the record not applied. With no share checking those bytes (a broken
    split) the chain's answer is not the local one."""
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.sample import SampleSpec, generate
    from wqtool.engine.workq.verify import run_log
    d = tmp_path / "log"
    generate(str(d), SampleSpec(records=600, segment_size=segment_size, seed=7))
    [log] = discover([str(d)])
    recs, size = _records(log)
    ranges = __import__("wqtool.engine.workq.fleet", fromlist=["chain_ranges"]).chain_ranges(2, 0.5)
    cut_id, half = ranges[0][1], size // 2
    in0 = next(r for r in recs if r[0] < half and r[4] >= cut_id)       # share 0's bytes, share 1's job
    in1 = next(r for r in recs if r[0] >= half and r[4] < cut_id)       # share 1's bytes, share 0's job
    flips = {"share 0's bytes": [in0], "share 1's bytes": [in1], "both": [in0, in1]}[which]
    for _, path, off, length, _ in flips:
        _flip_crc(path, off, length)
    [log] = discover([str(d)])
    local = run_log(log, as_of_ns())
    crcs = [(f.path, f.offset) for f in local.findings if f.code == "WQ-CRC"]
    assert crcs == [(p, o) for _, p, o, _, _ in flips]               # the premise: local finds exactly these
    fl = _chained(log, as_of_ns(), 2, 0.5)
    assert _chained.damaged == {"share 0's bytes": [True, False], "share 1's bytes": [False, True],
                                "both": [True, True]}[which]
    _assert_same(fl, local, which)
    # a broken split: the flipped record's bytes checked by no share -> the chain alone misses it
    nobody = [(0, 0), (size, 1 << 62)] if flips[0] is in0 else [(0, half), (size, 1 << 62)]
    if which != "both":
        broken = _chained(log, as_of_ns(), 2, 0.5, crcs=nobody)
        assert _chained.damaged == [False, False]
        assert not any(f.code == "WQ-CRC" for f in broken.report.findings)     # the record taken as valid
        assert broken.report.records == local.records + 1


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from(["intact", "flips", "truncated"]), st.booleans())
def test_the_chain_reads_whole_exactly_when_local_finds_a_crc_mismatch(tmp_path_factory, seed, damage, one_seg):
    """Random logs (several segments or one), intact, with bit flips or truncated: the chain's shares meet a crc
    mismatch exactly when the local pass reports one (then the log is read whole), and the answer is the local
    one either way — a torn tail or damage to a record's framing is met alike by every share (no second pass)."""
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.sample import SampleSpec, generate
    from wqtool.engine.workq.verify import run_log
    d = str(tmp_path_factory.mktemp("chain"))
    if one_seg:
        generate(d, SampleSpec(records=600, segment_size=1 << 30, seed=seed, reuse_ids=0.5))
        rnd = random.Random(seed)
        [seg] = [os.path.join(d, p) for p in os.listdir(d) if p.endswith(".log")]
        size = os.path.getsize(seg)
        with open(seg, "r+b") as f:
            if damage == "flips":
                for _ in range(3):
                    at = rnd.randrange(8, size)
                    f.seek(at)
                    b = f.read(1)
                    f.seek(at)
                    f.write(bytes([b[0] ^ (1 << rnd.randrange(8))]))
            elif damage == "truncated":
                f.truncate(rnd.randrange(8, size))
    else:
        random_log(d, seed, damage)
    [log] = discover([d])
    local = run_log(log, as_of_ns())
    fl = _chained(log, as_of_ns(), 2, 0.5)
    assert any(_chained.damaged) == any(f.code == "WQ-CRC" for f in local.findings), _chained.damaged
    _assert_same(fl, local, f"{seed} {damage} {one_seg}")
