"""The Kestrel fast path (kestrel/fastreplay.py) is the reference path (JournalReader + KestrelReplay), exactly.

Random operation streams — every opcode, legacy ones included, xids that collide, removes on an empty queue,
split over rotated files, sometimes damaged (cut, flipped, junk appended) — go through both, under every
--kestrel-version and with and without --keep-open: findings, counts, verdict, sizes, the state (items with their
data, xids, positions) and its digest must be identical, whether the fast path took the set or handed it back.
The fast path (its loop in C, kestrel/_kernel.c) reads through damage itself: only legacy opcodes, a reused open
xid and libkestrel files go back to the reference.
"""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.kestrel import fastreplay
from wqtool.engine.kestrel.model import Record
from wqtool.engine.kestrel.verify import NO_CHECKSUM, KestrelRun
from wqtool.formats.kestrel import OPS_WRITTEN_BY_2X, Opcode

from .conftest import AS_OF_NS, T, one_set, write_journal, write_ops
from wqtool.engine.findings import Verdict

XIDS = st.integers(-2, 5)
DATA = st.binary(max_size=40)
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), DATA, st.sampled_from([0, T - 1, T + 10**9])),
    st.tuples(st.just("add"), DATA, st.sampled_from([0, T - 1, T + 10**9])),
    st.tuples(st.just("remove")),
    st.tuples(st.just("rt"), XIDS),
    st.tuples(st.just("unremove"), XIDS),
    st.tuples(st.just("confirm"), XIDS),
    st.tuples(st.just("continue"), XIDS, DATA),
    st.tuples(st.just("add_xid"), XIDS, DATA),
    st.tuples(st.just("save"), XIDS),
    st.tuples(st.just("legacy_add"), DATA, st.sampled_from([0, 5, 2**31 - 1])),
    st.tuples(st.just("legacy_rt")),
), max_size=50)


def build(d: str, ops, cuts, damage) -> None:
    bounds = sorted({min(c, len(ops)) for c in cuts})
    pieces, prev = [], 0
    for b in bounds:
        pieces.append(ops[prev:b])
        prev = b
    pieces.append(ops[prev:])
    names = []
    for i, piece in enumerate(pieces):
        name = "q" if i == len(pieces) - 1 else f"q.{1000 + i * 7}"
        write_journal(os.path.join(d, name), lambda w, p=piece: write_ops(w, p))
        names.append(name)
    if damage is not None:
        p = os.path.join(d, names[damage[0] % len(names)])
        data = bytearray(open(p, "rb").read())
        how, n = damage[1], damage[2]
        if how == "flip" and data:
            data[n % len(data)] ^= 1 << (n % 8)
        elif how == "cut":
            data = data[:n % (len(data) + 1)]
        elif how == "junk":
            data += bytes([0x0a, n % 256, 0xff])
        open(p, "wb").write(bytes(data))


@pytest.fixture(autouse=True)
def kernel(monkeypatch):
    """The C loop (kestrel/_kernel.c); where it is not built the reference path is the only one."""
    if fastreplay._kernel is None:
        pytest.skip("the Kestrel C kernel is not built")
    monkeypatch.setattr(fastreplay, "KERNEL", "c")
    return "c"


def key(r):
    st_ = r.state
    items = [(s, x, it.add_time, it.expiry, it.data, it.xid, it.path, it.offset, it.legacy)
             for s, x, it in st_.sorted_items()]
    return ([(f.severity, f.code, f.path, f.offset, f.record_index, f.message, f.upstream, f.verdict,
              f.resumes_at) for f in r.findings], dict(r.counts), dict(r.severities), r.verdict, r.records,
            r.bytes, r.segments, r.root, items, st_.xid_counter, st_.applied, st_.records, st_.version_guess,
            st_.backed_out, st_.digest())


_LEGACY_OPS = set(Opcode) - OPS_WRITTEN_BY_2X     # what the C loop hands to the reference


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS, st.lists(st.integers(0, 50), max_size=3), st.sampled_from(["auto", "1", "2"]), st.booleans(),
       st.sampled_from([None, 0, 3]),
       st.one_of(st.none(), st.tuples(st.integers(0, 3), st.sampled_from(["flip", "cut", "junk"]),
                                      st.integers(0, 10**6))))
def test_fast_path_equals_the_reference(ops, cuts, version, keep_open, limit, damage):
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, damage)
        fs = one_set(d, kestrel_version=version)
        run = KestrelRun(fs, AS_OF_NS, limit=limit, keep_open=keep_open)
        read_ops = {ev.op for ev in run.events() if isinstance(ev, Record)}
        got = run_log(fs, AS_OF_NS, limit=limit, keep_open=keep_open)
        assert key(got) == key(run.report)
        if damage is not None:      # without resync (Kestrel's own reading: the file stops at the damage)
            stop = KestrelRun(fs, AS_OF_NS, limit=limit, keep_open=keep_open, resync=False)
            for _ in stop.events():
                pass
            assert key(run_log(fs, AS_OF_NS, limit=limit, keep_open=keep_open, resync=False)) == key(stop.report)
        # no legacy opcode read (a flip can make one: 02 -> 03): only a reused open xid goes to the reference
        if not read_ops & _LEGACY_OPS:
            try:
                fast = fastreplay.fast_run(fs, AS_OF_NS, limit=limit, keep_open=keep_open,
                                           no_checksum=NO_CHECKSUM)
            except fastreplay.Bail:
                assert run.report.counts.get("KQ-XID-REUSED")
            else:
                assert key(fast) == key(run.report)


def test_damage_is_read_through_with_the_reference_finding(qdir):
    """A byte that is no opcode in a rotated file, a torn tail in the live one: the fast path names both where the
    reference does and reads on."""
    write_journal(os.path.join(qdir, "q.1000"), lambda w: (w.add(b"a" * 20, T), w.add(b"b" * 20, T),
                                                           w.add(b"c" * 20, T)))
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"d" * 20, T), w.remove()))
    p = os.path.join(qdir, "q.1000")
    data = bytearray(open(p, "rb").read())
    second = len(data) // 3
    data[second] = 0x0b                                   # the second record's opcode: not an opcode
    open(p, "wb").write(bytes(data))
    with open(os.path.join(qdir, "q"), "ab") as f:
        f.write(b"\x02\x10\x00")                          # a torn ADDX
    fs = one_set(qdir)
    run = KestrelRun(fs, AS_OF_NS)
    for _ in run.events():
        pass
    fast = fastreplay.fast_run(fs, AS_OF_NS, no_checksum=NO_CHECKSUM)
    assert key(fast) == key(run.report)
    errors = [(f.code, f.offset, f.resumes_at) for f in fast.findings if f.severity == "error"]
    assert len(errors) == 2 and errors[0][1] == second and errors[0][2] is not None and errors[1][2] is None
    assert fast.verdict == Verdict.CORRUPT


def test_the_fast_path_takes_intact_2x_journals_and_hands_back_the_rest(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.remove(), w.remove(), w.add(b"b", T),
                                                      w.remove_tentative(1), w.unremove(7)))
    fs = one_set(qdir)
    r = fastreplay.fast_run(fs, AS_OF_NS)
    assert r.counts["KQ-REMOVE-EMPTY"] == 1 and r.counts["KQ-UNKNOWN-XID"] == 1 and r.state.open == {}
    os.remove(os.path.join(qdir, "q"))
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.legacy_remove_tentative()))
    with pytest.raises(fastreplay.Bail):
        fastreplay.fast_run(one_set(qdir), AS_OF_NS)
    os.remove(os.path.join(qdir, "q"))
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.add(b"b", T), w.remove_tentative(1),
                                                      w.remove_tentative(1)))
    with pytest.raises(fastreplay.Bail):               # KQ-XID-REUSED: an error the reference reports
        fastreplay.fast_run(one_set(qdir), AS_OF_NS)


def test_the_c_kernel_is_built_where_it_can_be():
    import shutil
    if not (os.environ.get("CI") or shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the pure-Python loop is expected")
    assert fastreplay._kernel is not None, "wqtool.engine.kestrel._kernel is not built: run `pip install -e .`"


def test_big_queues_and_many_open_transactions(qdir):
    """Past the C ring's and open map's first sizes: thousands of items, hundreds open, removed out of order."""
    import random
    rng = random.Random(5)

    def build(w):
        for i in range(6000):
            w.add(bytes([i % 251]) * rng.randrange(0, 30), T + i, rng.choice([0, T - 1, T + 10**9]))
        xids = list(range(1, 700))
        for x in xids:
            w.remove_tentative(x)
        rng.shuffle(xids)
        for n, x in enumerate(xids[:500]):
            (w.unremove if n % 3 else w.confirm_remove)(x)
        for _ in range(2000):
            w.remove()
        for x in range(2000, 2300):
            w.remove_tentative(x)
            if x % 2:
                w.continue_(x, b"next", T)
    write_journal(os.path.join(qdir, "q"), build)
    fs = one_set(qdir)
    for keep_open in (False, True):
        run = KestrelRun(fs, AS_OF_NS, keep_open=keep_open)
        for _ in run.events():
            pass
        assert key(fastreplay.fast_run(fs, AS_OF_NS, keep_open=keep_open,
                                       no_checksum=run.report.findings[-1])) == key(run.report)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS, st.lists(st.integers(0, 50), max_size=3),
       st.one_of(st.none(), st.tuples(st.integers(0, 3), st.sampled_from(["flip", "cut", "junk"]),
                                      st.integers(0, 10**6))))
def test_the_time_span_equals_the_reference(ops, cuts, damage):
    """--as-of first|last: the C loop's add times (``_kernel.walk``, the reference reader at each spot it stops
    at) equal ``Passes.time_span``'s reference (every record of the first and last timed files, in Python)."""
    from wqtool.engine.caps import Passes
    from wqtool.engine.format import get
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, damage)
        fs = one_set(d)
        fmt = get("kestrel")
        assert fmt.passes.time_span(fs) == Passes.time_span(fmt.passes, fs)
        assert fastreplay.time_span(fs) == Passes.time_span(fmt.passes, fs)
