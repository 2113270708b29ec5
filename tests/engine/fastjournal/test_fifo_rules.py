"""The priority FIFO's rules (per the unimplemented libfastjournal design) against a plain reference model:
no duplicates (one entry per uri, the newest timestamp wins), not-before times, the worked-on timeout, deletes and
tombstones, the order (domain, priority, time), "next job at T"."""
from __future__ import annotations

from tests.conftest import examples
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from wqtool.engine.fastjournal.fifo import Fifo, Outcome
from wqtool.formats.fastjournal import domain_of

URIS = [b"http://a.com/1", b"http://a.com/2", b"http://a.com/3", b"http://b.com/1", b"http://b.com/2",
        b"http://c.org/x", b"d.net/y"]
DOMAINS = sorted({domain_of(u) for u in URIS})


class Model:
    """The rules, written as plainly as possible (lists and min(), no index)."""

    def __init__(self):
        self.entries: dict[bytes, dict] = {}
        self.tomb: dict[bytes, int] = {}

    def set(self, uri, prio, ksd, ts, overwrite):
        e = self.entries.get(uri)
        if e is None:
            if uri in self.tomb and ts <= self.tomb[uri]:
                return Outcome.STALE
            self.tomb.pop(uri, None)
            self.entries[uri] = dict(p=prio, k=ksd, ts=ts, w=0)
            return Outcome.ADDED
        if not overwrite:
            return Outcome.EXISTS
        if ts < e["ts"]:
            return Outcome.STALE
        if (ts, prio, ksd) == (e["ts"], e["p"], e["k"]):
            return Outcome.UNCHANGED
        self.entries[uri] = dict(p=prio, k=ksd, ts=ts, w=0)
        return Outcome.UPDATED

    def delete(self, uri, ts, complete):
        e = self.entries.get(uri)
        if e is not None:
            if e["ts"] > ts:
                return Outcome.STALE
            del self.entries[uri]
            if not complete:
                self.tomb[uri] = ts
            return Outcome.DELETED
        if complete:
            return Outcome.DELETED if self.tomb.pop(uri, None) is not None else Outcome.NOT_FOUND
        if uri in self.tomb and self.tomb[uri] >= ts:
            return Outcome.UNCHANGED
        self.tomb[uri] = ts
        return Outcome.TOMBSTONED

    def due(self, now, domain):
        return [u for u, e in self.entries.items() if (domain is None or domain_of(u) == domain)
                and e["k"] <= now and e["w"] <= now]

    def next(self, now, domain):
        c = self.due(now, domain)
        if not c:
            return None
        return min(c, key=lambda u: (domain_of(u), self.entries[u]["p"], self.entries[u]["k"], u))

    def next_due(self, now, domain):
        c = [max(e["k"], e["w"]) for u, e in self.entries.items() if domain is None or domain_of(u) == domain]
        return min(c) if c else None


class FifoVersusModel(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.fifo = Fifo()
        self.model = Model()
        self.now = 1000

    @rule(dt=st.integers(-3, 40))
    def tick(self, dt):
        self.now = max(0, self.now + dt)

    @rule(uri=st.sampled_from(URIS), prio=st.integers(0, 3), dk=st.integers(-30, 60), ts=st.integers(0, 12),
          overwrite=st.booleans())
    def set(self, uri, prio, dk, ts, overwrite):
        k = self.now + dk
        assert self.fifo.set(uri, prio, k, ts, overwrite=overwrite) == self.model.set(uri, prio, k, ts, overwrite)

    @rule(uri=st.sampled_from(URIS), ts=st.integers(0, 12), complete=st.booleans())
    def delete(self, uri, ts, complete):
        assert self.fifo.delete(uri, ts, complete=complete) == self.model.delete(uri, ts, complete)

    @rule(domain=st.one_of(st.none(), st.sampled_from(DOMAINS)), timeout=st.one_of(st.none(), st.integers(1, 50)))
    def next(self, domain, timeout):
        got = self.fifo.next(self.now, domain)
        want = self.model.next(self.now, domain)
        assert (got.uri if got else None) == want
        if got is None:
            assert self.fifo.next_due(self.now, domain) == self.model.next_due(self.now, domain)
        elif timeout is not None:                     # handed out and worked on until now + timeout
            assert self.fifo.mark(got.uri, self.now + timeout) in (Outcome.MARKED, Outcome.UNCHANGED)
            self.model.entries[got.uri]["w"] = self.now + timeout

    @precondition(lambda self: self.fifo.entries)
    @rule(data=st.data())
    def replay_rebuild(self, data):
        """The replay path: the same entries indexed from scratch answer the same."""
        if data.draw(st.booleans()):
            self.fifo.bulk()
        self.fifo.rebuild()

    @invariant()
    def same_entries(self):
        m = self.model
        assert {u: (e.priority, e.key_start_date, e.timestamp, e.worked_until) for u, e in self.fifo.entries.items()} \
            == {u: (e["p"], e["k"], e["ts"], e["w"]) for u, e in m.entries.items()}
        assert self.fifo.tombstones == m.tomb
        assert len(set(self.fifo.entries)) == len(self.fifo.entries)      # no duplicates, by construction


FifoVersusModel.TestCase.settings = settings(max_examples=examples(200), stateful_step_count=60, deadline=None)
TestFifoRules = FifoVersusModel.TestCase


def test_worked_on_entry_comes_back_after_its_timeout_unless_deleted():
    f = Fifo()
    f.set(b"http://a/1", 1, 10, timestamp=5)
    e = f.next(20)
    f.mark(e.uri, 20 + 30)
    assert f.next(49) is None and f.next_due(49) == 50
    assert f.next(50).uri == b"http://a/1"
    f.mark(e.uri, 100)
    assert f.delete(b"http://a/1", 5) is Outcome.DELETED and f.next(200) is None and f.next_due(200) is None


def test_a_newer_set_during_work_survives_the_workers_delete():
    f = Fifo()
    f.set(b"http://a/1", 1, 10, timestamp=5)
    e = f.next(20)
    f.mark(e.uri, 1000)
    assert f.set(b"http://a/1", 1, 30, timestamp=7) is Outcome.UPDATED      # clears the mark: the new request is due
    assert f.next(40).uri == b"http://a/1"
    assert f.delete(b"http://a/1", 5) is Outcome.STALE               # the worker's delete of the old version
    assert f.get(b"http://a/1").timestamp == 7


def test_tombstone_refuses_a_late_older_set_and_complete_delete_forgets():
    f = Fifo()
    assert f.delete(b"u", 10) is Outcome.TOMBSTONED
    assert f.set(b"u", 1, 1, 9) is Outcome.STALE and f.set(b"u", 1, 1, 10) is Outcome.STALE
    assert f.set(b"u", 1, 1, 11) is Outcome.ADDED
    assert f.delete(b"u", 12, complete=True) is Outcome.DELETED and f.tombstones == {}
    assert f.set(b"u", 1, 1, 1) is Outcome.ADDED


def test_heaps_stay_bounded_by_the_distinct_resources():
    f = Fifo()
    for i in range(20000):
        f.set(b"http://a/%d" % (i % 100), i % 7, i, timestamp=i)
    assert len(f.entries) == 100 and len(f._waiting) <= 2 * 100 + 1024 + 1


def test_a_re_added_uri_is_not_mistaken_for_its_deleted_self():
    """Found by the model: heap items of a deleted entry must not match a new entry for the same uri."""
    f = Fifo()
    f.set(b"http://c.org/x", 0, 1000, timestamp=0, overwrite=False)
    f.delete(b"http://c.org/x", 0, complete=True)
    f.set(b"http://c.org/x", 0, 1001, timestamp=0, overwrite=False)
    assert f.next(1000, b"c.org") is None and f.next_due(1000, b"c.org") == 1001
