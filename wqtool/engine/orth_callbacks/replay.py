"""The retry files' replay (``orth-callbacks``): each log id's callback state — its result, the files holding it
and what Orth does with them (delivered, blocked by a poison file, stuck, stranded, refused)."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from ...formats._common import format_unix_ns
from ...formats.orth import RELEASE_TITLE, log_status
from ..findings import NOTE, Finding
from .model import Callback
from .reader import CallbackSet


@dataclass(slots=True)
class CallbackItem:
    log_id: int
    log_date_tim: int
    handle_code: int
    handle_msg: str | None
    files: list[str]
    delivery: str               # pending | blocked | stuck | stranded | refused | null


DELIVERY_STATES = ("pending", "blocked", "stuck", "stranded", "refused", "null")


class CallbackReplay:
    def __init__(self):
        self.items: dict[int, CallbackItem] = {}
        self.findings: list[Finding] = []
        self.records = 0
        self.releases: set[str] = set()

    def apply(self, rec: Callback) -> None:
        self.records += 1
        self.releases.add(rec.release)
        it = self.items.get(rec.log_id)
        if it is None:
            self.items[rec.log_id] = CallbackItem(rec.log_id, rec.log_date_tim, rec.handle_code, rec.handle_msg,
                                                  [rec.path], rec.file_state)
            return
        if rec.path not in it.files:
            it.files.append(rec.path)
            self.findings.append(Finding(NOTE, "OC-DUPLICATE", f"log id {rec.log_id} is also in "
                                         f"{', '.join(os.path.basename(f) for f in it.files[:-1])} (the admin keeps "
                                         "the first result it receives; later ones are ignored as duplicates)",
                                         path=rec.path, offset=rec.offset, record_index=rec.index))
        it.handle_code, it.handle_msg, it.log_date_tim = rec.handle_code, rec.handle_msg, rec.log_date_tim
        if it.delivery == "pending":
            it.delivery = rec.file_state

    def finish(self, cs: CallbackSet, poison: set[str]) -> "CallbackState":
        blocked_by: dict[str, str] = {}
        for d, names in cs.listing.items():
            hit = None
            for n in names:
                p = os.path.join(d, n)
                if hit is not None:
                    blocked_by[p] = hit
                if p in poison and hit is None:
                    hit = n
        for it in self.items.values():
            if it.delivery == "pending" and any(f in blocked_by for f in it.files):
                it.delivery = "blocked"
        return CallbackState(self.items, self.records, blocked_by, self.releases)


@dataclass
class CallbackState:
    items: dict[int, CallbackItem]
    records: int
    blocked_by: dict[str, str]
    releases: set[str] = field(default_factory=set)

    def written_by(self) -> list[str]:
        """The release lines that wrote the files read (``formats.orth.CALLBACK_RELEASES`` order)."""
        return [title for rid, title in RELEASE_TITLE.items() if rid in self.releases]

    def rows(self) -> list[dict]:
        out = []
        for lid in sorted(self.items):
            it = self.items[lid]
            out.append({"log_id": lid, "log_date": _iso_ms(it.log_date_tim), "handle_code": it.handle_code,
                        "status": log_status(200, it.handle_code), "admin_status": "Pending",
                        "delivery": it.delivery, "handle_msg": _text(it.handle_msg),
                        "files": [os.path.basename(f) for f in it.files]})
        return out

    def counts_by_state(self) -> dict[str, int]:
        c = {s: 0 for s in DELIVERY_STATES}
        for it in self.items.values():
            c[it.delivery] += 1
        return c

    def digest(self) -> str:
        import json
        h = hashlib.sha256()
        for r in self.rows():
            h.update(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8",
                                                                                                     "surrogatepass"))
            h.update(b"\n")
        return h.hexdigest()


def _text(s: str | None) -> str | None:
    return None if s is None else s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _iso_ms(ms: int) -> str | None:
    try:
        return format_unix_ns(ms * 1_000_000)
    except (OverflowError, ValueError, OSError):
        return None
