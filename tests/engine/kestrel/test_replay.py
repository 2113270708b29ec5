"""Replay: random operation streams (split over rotated files) against a plain reference queue model, plus the
version-dependent opcodes (3, legacy ADD), expiry reporting and the digest."""
from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings, strategies as st

from tests.conftest import examples

from wqtool.engine.kestrel.reader import discover
from wqtool.engine.kestrel.replay import first_difference
from wqtool.engine.kestrel.verify import run_log
from wqtool.engine.findings import Verdict

from .conftest import AS_OF_NS, T, one_set, write_journal, write_ops

XIDS = st.integers(-3, 6)
DATA = st.binary(max_size=6)
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), DATA, st.sampled_from([0, T - 1, T + 10**9])),
    st.tuples(st.just("remove")),
    st.tuples(st.just("rt"), XIDS),
    st.tuples(st.just("unremove"), XIDS),
    st.tuples(st.just("confirm"), XIDS),
    st.tuples(st.just("continue"), XIDS, DATA),
    st.tuples(st.just("save"), XIDS),
), max_size=40)


class Model:
    """Kestrel 2.x replay, written as plainly as possible."""

    def __init__(self):
        self.queue: list[tuple[bytes, int]] = []
        self.open: dict[int, tuple[bytes, int]] = {}
        self.counter = 0
        self.reused = 0

    def apply(self, o):
        kind = o[0]
        if kind == "add":
            self.queue.append((o[1], o[2]))
        elif kind == "remove":
            if self.queue:
                self.queue.pop(0)
        elif kind == "rt":
            if self.queue:
                if o[1] in self.open:
                    self.reused += 1
                self.open[o[1]] = self.queue.pop(0)
            self.counter = o[1]
        elif kind == "unremove":
            if o[1] in self.open:
                self.queue.insert(0, self.open.pop(o[1]))
        elif kind == "confirm":
            self.open.pop(o[1], None)
        elif kind == "continue":
            self.open.pop(o[1], None)
            self.queue.append((o[2], 0))
        elif kind == "save":
            self.counter = o[1]

    def startup(self) -> list[tuple[bytes, int]]:
        q = list(self.queue)
        for x in sorted(self.open, reverse=True):
            q.insert(0, self.open[x])
        return q


def build_set(d: str, ops, cuts) -> None:
    """Split ``ops`` at ``cuts`` into q.<ms> files (ascending) and the live q."""
    bounds = sorted({min(c, len(ops)) for c in cuts})
    pieces, prev = [], 0
    for b in bounds:
        pieces.append(ops[prev:b])
        prev = b
    pieces.append(ops[prev:])
    for i, piece in enumerate(pieces):
        name = "q" if i == len(pieces) - 1 else f"q.{1000 + i * 7}"
        write_journal(os.path.join(d, name), lambda w, p=piece: write_ops(w, p))


@settings(max_examples=examples(150), deadline=None)
@given(OPS, st.lists(st.integers(0, 40), max_size=3))
def test_replay_equals_reference_model(ops, cuts):
    m = Model()
    for o in ops:
        m.apply(o)
    with tempfile.TemporaryDirectory() as d:
        build_set(d, ops, cuts)
        fs = one_set(d)
        r_open = run_log(fs, AS_OF_NS, keep_open=True)
        r = run_log(fs, AS_OF_NS)
    assert [(i.data, i.expiry) for i in r_open.state.queue] == m.queue
    assert {x: (i.data, i.expiry) for x, i in r_open.state.open.items()} == m.open
    assert r_open.state.xid_counter == m.counter
    assert [(i.data, i.expiry) for i in r.state.queue] == m.startup()
    assert r.state.open == {}
    expected_exit = Verdict.INVALID_HISTORY if m.reused else Verdict.CLEAN
    assert r.verdict == expected_exit
    assert r.counts.get("KQ-XID-REUSED", 0) == m.reused
    assert r.records == len(ops)
    # the digest is a function of the state: the same journal replays to the same digest
    assert r.state.digest() == r.state.digest() and len(r.state.digest()) == 64


def test_empty_queue_removes_are_noted_noops(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.remove(), w.remove_tentative(5), w.add(b"a", T),
                                                       w.unremove(9), w.confirm_remove(9)))
    r = run_log(one_set(qdir), AS_OF_NS, keep_open=True)
    assert r.verdict == Verdict.CLEAN
    assert r.counts["KQ-REMOVE-EMPTY"] == 2 and r.counts["KQ-UNKNOWN-XID"] == 2
    assert r.state.xid_counter == 5 and [i.data for i in r.state.queue] == [b"a"]
    assert all(f.severity == "warning" for f in r.findings if f.code in ("KQ-REMOVE-EMPTY", "KQ-UNKNOWN-XID"))


def test_xid_reused_is_invalid_history(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.add(b"b", T), w.remove_tentative(3),
                                                       w.remove_tentative(3)))
    r = run_log(one_set(qdir), AS_OF_NS, keep_open=True)
    assert r.verdict == Verdict.INVALID_HISTORY
    f = [f for f in r.findings if f.code == "KQ-XID-REUSED"][0]
    assert f.offset == 2 * 22 + 5 and f.verdict == Verdict.INVALID_HISTORY
    assert {x: i.data for x, i in r.state.open.items()} == {3: b"b"}


def test_negative_xids_are_legal(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"a", T), w.remove_tentative(-2**31),
                                                       w.unremove(-2**31)))
    r = run_log(one_set(qdir), AS_OF_NS)
    assert r.verdict == Verdict.CLEAN and [i.data for i in r.state.queue] == [b"a"]


def _legacy_1x(w):
    """A 1.x rewrite: ADD_XID(x) + REMOVE_TENTATIVE per open item, SAVE_XID(counter), ADDX per queued item,
    then 1.x traffic: confirm of the open item, a second RT and its unremove."""
    w.add_xid(7, b"open-a", T)
    w.legacy_remove_tentative()
    w.add_xid(8, b"open-b", T)
    w.legacy_remove_tentative()
    w.save_xid(20)
    w.add(b"queued", T)
    w.legacy_remove_tentative()      # 1.x: xid 21
    w.confirm_remove(21)


def test_opcode3_the_1x_way_by_default(qdir):
    write_journal(os.path.join(qdir, "q"), _legacy_1x)
    r = run_log(one_set(qdir), AS_OF_NS, keep_open=True)
    assert {x: i.data for x, i in r.state.open.items()} == {1: b"open-a", 2: b"open-b"}
    assert r.state.queue == [] and r.counts["KQ-LEGACY-RT"] == 3
    v = [f for f in r.findings if f.code == "KQ-VERSION"][0]
    assert "Kestrel 1.x" in v.message and "auto" in v.message
    assert "Kestrel 1.x" in r.state.version_guess


def test_opcode3_as_2x_does(qdir):
    """--kestrel-version 2: xid 0 for every op 3: open-b overwrites open-a (lost), confirm(21) never matches."""
    write_journal(os.path.join(qdir, "q"), _legacy_1x)
    r = run_log(one_set(qdir, kestrel_version="2"), AS_OF_NS, keep_open=True)
    assert {x: i.data for x, i in r.state.open.items()} == {0: b"queued"}
    assert r.counts["KQ-XID0-COLLISION"] == 2 and r.counts["KQ-UNKNOWN-XID"] == 1
    assert r.verdict == Verdict.CLEAN


def test_legacy_add_expiry_versions(qdir):
    secs = 1_300_000_060
    write_journal(os.path.join(qdir, "q"), lambda w: (w.legacy_add(b"hi", secs), w.legacy_add(b"no", 0)))
    for v, exp in (("auto", secs * 1000), ("2", secs * 1000), ("1", ((secs * 1000 + 2**31) % 2**32) - 2**31)):
        r = run_log(one_set(qdir, kestrel_version=v), AS_OF_NS)
        assert [(i.data, i.expiry, i.add_time) for i in r.state.queue] == [
            (b"hi", exp, AS_OF_NS // 10**6), (b"no", 0, AS_OF_NS // 10**6)]
        assert r.counts["KQ-LEGACY-ADD"] == 1


def test_expiry_is_reported_never_applied(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"old", T, T + 1000), w.add(b"never", T, 0),
                                                       w.add(b"later", T, T + 10**10), w.add(b"neg", T, -5)))
    r = run_log(one_set(qdir), AS_OF_NS)
    assert [i.data for i in r.state.queue] == [b"old", b"never", b"later", b"neg"]
    assert [(s, p, i.data) for s, p, i in r.state.expired()] == [("queued", 0, b"old"), ("queued", 3, b"neg")]
    assert r.counts["KQ-EXPIRED"] == 1
    assert [i.data for i in r.state.without_expired().queue] == [b"never", b"later"]


def test_unsupported_version_is_a_usage_error(qdir):
    import pytest
    from wqtool.errors import UsageError
    write_journal(os.path.join(qdir, "q"), lambda w: None)
    with pytest.raises(UsageError):
        discover([qdir], kestrel_version="3")


def test_digest_depends_on_content_and_order(qdir):
    a = os.path.join(qdir, "a")
    b = os.path.join(qdir, "b")
    write_journal(os.path.join(a, "q"), lambda w: (w.add(b"x", T), w.add(b"y", T)))
    write_journal(os.path.join(b, "q"), lambda w: (w.add(b"y", T), w.add(b"x", T)))
    da = run_log(one_set(a), AS_OF_NS).state.digest()
    db = run_log(one_set(b), AS_OF_NS).state.digest()
    assert da != db
    assert first_difference(run_log(one_set(a), AS_OF_NS).state, run_log(one_set(b), AS_OF_NS).state)


@settings(max_examples=examples(50), deadline=None)
@given(OPS)
def test_fast_digest_equals_its_json_definition(ops):
    from wqtool.engine.kestrel.replay import state_digest_reference
    with tempfile.TemporaryDirectory() as d:
        build_set(d, ops, [])
        for keep in (False, True):
            st_ = run_log(one_set(d), AS_OF_NS, keep_open=keep).state
            assert st_.digest() == state_digest_reference(st_)
