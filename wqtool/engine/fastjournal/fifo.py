"""The priority FIFO of the libfastjournal design — per the unimplemented design (its README, A.1-A.2); the rules
it leaves open are decided here and documented in the README section "fastjournal (per the unimplemented
libfastjournal design)".

* **No duplicates**: one entry per resource (the uri); ``set`` adds or updates it. The newer timestamp wins: a set
  whose timestamp is older than the entry's (or than a delete's tombstone) changes nothing; an equal one updates
  (a resend of the same request changes nothing at all). Updating an entry clears its worked-on mark: the new
  request becomes due at its own time while the old one may still be worked on (the design's "two entries can
  briefly coexist").
* **Order**: due entries by domain, then priority (smaller is more urgent), then ``key_start_date``, then the uri.
* **Not before**: an entry is due once its ``key_start_date`` has passed; **worked on**: ``next(..., mark=T)`` hides
  the entry until ``now + T``; after that it is due again unless deleted.
* **Delete** with a timestamp removes the entry if its timestamp is not newer; a plain delete leaves a tombstone
  (the timestamp, so a late older set cannot bring the entry back); ``complete`` (the overwrite flag) removes
  everything at once.

Index: a dict by uri, plus lazy heaps (each change bumps the entry's generation; heap items of an older
generation are skipped): one heap of entries not yet due by due time, and per domain a heap of due entries by
(priority, key_start_date, uri) with a heap of domains holding due entries. ``bulk()`` turns the heaps off while a
journal is replayed (memory follows the distinct resources, not the records) and ``rebuild()`` makes them once.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import Enum

from ...formats.fastjournal import domain_of


class Outcome(str, Enum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"       # the same request again
    STALE = "stale"               # an older timestamp than the entry's or the tombstone's
    EXISTS = "exists"             # set without overwrite on an existing entry
    DELETED = "deleted"
    TOMBSTONED = "tombstoned"     # nothing to delete: the tombstone is recorded
    NOT_FOUND = "not found"
    MARKED = "marked"

    @property
    def changes(self) -> bool:
        return self in (Outcome.ADDED, Outcome.UPDATED, Outcome.DELETED, Outcome.TOMBSTONED, Outcome.MARKED)


@dataclass(slots=True)
class Entry:
    uri: bytes
    domain: bytes
    priority: int
    key_start_date: int
    timestamp: int
    worked_until: int = 0
    gen: int = 0

    def due_at(self) -> int:
        return self.key_start_date if self.key_start_date >= self.worked_until else self.worked_until

    def worked_on(self, now: int) -> bool:
        return self.worked_until > now


class Fifo:
    def __init__(self, *, indexed: bool = True):
        self.entries: dict[bytes, Entry] = {}
        self.tombstones: dict[bytes, int] = {}
        self._indexed = indexed
        self._waiting: list = []                       # (due_at, gen, uri)
        self._dwaiting: dict[bytes, list] = {}         # domain -> [(due_at, gen, uri)]
        self._ready: dict[bytes, list] = {}            # domain -> [(priority, ksd, uri, gen)]
        self._domains: list = []                       # domains that may have ready entries
        self._in_domains: set = set()
        self._pushed = 0
        self._gen = 0          # generations are unique across entries: a re-added uri never matches old items

    # ---------------------------------------------------------------- index
    def bulk(self) -> None:
        self._indexed = False
        self._waiting, self._dwaiting, self._ready, self._domains, self._in_domains = [], {}, {}, [], set()

    def rebuild(self) -> None:
        self._indexed = True
        self._waiting, self._dwaiting, self._ready, self._domains, self._in_domains = [], {}, {}, [], set()
        self._pushed = 0
        for e in self.entries.values():
            self._index(e)

    def _index(self, e: Entry) -> None:
        item = (e.due_at(), e.gen, e.uri)
        heapq.heappush(self._waiting, item)
        heapq.heappush(self._dwaiting.setdefault(e.domain, []), item)
        self._pushed += 1
        if self._pushed > 2 * len(self.entries) + 1024:
            self.rebuild()

    def _touch(self, e: Entry) -> None:
        self._gen += 1
        e.gen = self._gen
        if self._indexed:
            self._index(e)

    def _valid(self, uri: bytes, gen: int) -> Entry | None:
        e = self.entries.get(uri)
        return e if e is not None and e.gen == gen else None

    def _promote(self, now: int) -> None:
        """Move the entries due at ``now`` from the waiting heap to their domain's ready heap."""
        w = self._waiting
        while w and w[0][0] <= now:
            _due, gen, uri = heapq.heappop(w)
            e = self._valid(uri, gen)
            if e is None:
                continue
            heapq.heappush(self._ready.setdefault(e.domain, []), (e.priority, e.key_start_date, uri, gen))
            if e.domain not in self._in_domains:
                self._in_domains.add(e.domain)
                heapq.heappush(self._domains, e.domain)

    def _top(self, domain: bytes, now: int) -> Entry | None:
        h = self._ready.get(domain)
        while h:
            _p, _k, uri, gen = h[0]
            e = self._valid(uri, gen)
            if e is None:
                heapq.heappop(h)
                continue
            if e.due_at() > now:              # the clock went back: wait again
                heapq.heappop(h)
                self._index(e)
                continue
            return e
        return None

    # ---------------------------------------------------------------- changes
    def set(self, uri: bytes, priority: int, key_start_date: int, timestamp: int, *,
            overwrite: bool = True) -> Outcome:
        e = self.entries.get(uri)
        if e is None:
            t = self.tombstones.get(uri)
            if t is not None:
                if timestamp <= t:
                    return Outcome.STALE
                del self.tombstones[uri]
            self._gen += 1
            e = self.entries[uri] = Entry(uri, domain_of(uri), priority, key_start_date, timestamp, 0, self._gen)
            if self._indexed:
                self._index(e)
            return Outcome.ADDED
        if not overwrite:
            return Outcome.EXISTS
        if timestamp < e.timestamp:
            return Outcome.STALE
        if (timestamp, priority, key_start_date) == (e.timestamp, e.priority, e.key_start_date):
            return Outcome.UNCHANGED
        e.priority, e.key_start_date, e.timestamp, e.worked_until = priority, key_start_date, timestamp, 0
        self._touch(e)
        return Outcome.UPDATED

    def delete(self, uri: bytes, timestamp: int, *, complete: bool = False) -> Outcome:
        e = self.entries.get(uri)
        if e is not None:
            if e.timestamp > timestamp:
                return Outcome.STALE
            del self.entries[uri]
            if not complete:
                self.tombstones[uri] = timestamp
            return Outcome.DELETED
        if complete:
            if self.tombstones.pop(uri, None) is not None:
                return Outcome.DELETED
            return Outcome.NOT_FOUND
        t = self.tombstones.get(uri)
        if t is not None and t >= timestamp:
            return Outcome.UNCHANGED
        self.tombstones[uri] = timestamp
        return Outcome.TOMBSTONED

    def mark(self, uri: bytes, until: int) -> Outcome:
        e = self.entries.get(uri)
        if e is None:
            return Outcome.NOT_FOUND
        if e.worked_until == until:
            return Outcome.UNCHANGED
        e.worked_until = until
        self._touch(e)
        return Outcome.MARKED

    # ---------------------------------------------------------------- queries
    def get(self, uri: bytes) -> Entry | None:
        return self.entries.get(uri)

    def next(self, now: int, domain: bytes | None = None) -> Entry | None:
        """The next due entry (of ``domain``, or of any domain by the domain order), not worked on at ``now``."""
        if not self._indexed:
            self.rebuild()
        self._promote(now)
        if domain is not None:
            return self._top(domain, now)
        ds = self._domains
        while ds:
            d = ds[0]
            e = self._top(d, now)
            if e is not None:
                return e
            heapq.heappop(ds)
            self._in_domains.discard(d)
        return None

    def next_due(self, now: int, domain: bytes | None = None) -> int | None:
        """When the next entry (of ``domain``) becomes due, if none is due at ``now``; None: nothing at all."""
        if not self._indexed:
            self.rebuild()
        h = self._waiting if domain is None else self._dwaiting.get(domain, [])
        while h:
            due, gen, uri = h[0]
            e = self._valid(uri, gen)
            if e is None or (domain is not None and e.domain != domain):
                heapq.heappop(h)
                continue
            return due
        return None

    def __len__(self) -> int:
        return len(self.entries)
