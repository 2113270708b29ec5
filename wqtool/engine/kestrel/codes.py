"""Stable finding codes for Kestrel journals .

Same shape as ``CODES``: code -> (severity, meaning). Framing codes are errors whose exit class depends on where
they are (1 at the end of the live file with nothing valid after, else 3); KQ-SIZE-NEGATIVE and KQ-SIZE-ABSURD
are always 3 (Kestrel cannot start); KQ-XID-REUSED is 4.
"""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, Codes

KESTREL_CODES: Codes = {
    # framing (exit 1 when at the end of the live file with nothing valid after it, else 3)
    "KQ-TRUNCATED": (ERROR, "record cut short by the end of the file (Kestrel: 'Unexpected EOF', truncates)"),
    "KQ-BAD-OPCODE": (ERROR, "invalid opcode (not 0..9) where a record should start"),
    "KQ-SHORT-BLOCK": (ERROR, "item block shorter than 16 bytes (legacy ADD: 4), e.g. NUL padding"),
    "KQ-SIZE-NEGATIVE": (ERROR, "negative block size (Kestrel: NegativeArraySizeException, exits at startup)"),
    "KQ-SIZE-ABSURD": (ERROR, "block size past the end of the file and beyond the sanity cap (Kestrel: OOM)"),
    # history that Kestrel cannot represent (exit 4)
    "KQ-XID-REUSED": (ERROR, "remove-tentative with an xid that is already open: the earlier item is lost"),
    # file set (warnings: they say what Kestrel would do)
    "KQ-STRAY-FILE": (WARNING, "a name Kestrel 2.x cannot parse as part of the queue: startup fails"),
    "KQ-ODD-NAME": (WARNING, "a name Kestrel 2.x replays as a rotated journal although it looks like something else"),
    "KQ-TEMP-FILE": (WARNING, "a leftover <q>~~<ms> rewrite temp file (Kestrel deletes it at startup)"),
    "KQ-HALF-PACK": (WARNING, "a finished .pack next to the files it supersedes (Kestrel deletes them, renames it)"),
    "KQ-PACK-PENDING": (NOTE, "a .pack file superseding nothing (Kestrel renames it into place)"),
    "KQ-FOREIGN-FILE": (WARNING, "a libkestrel (3.0) file where a 2.x journal is expected"),
    "KQ-NOT-JOURNAL": (WARNING, "files in a queue directory that are not journals (auto-detection reads only files "
                                "where records parse) or not regular files; they are not read"),
    "KQ-PARTIAL-SET": (WARNING, "files named explicitly, but the queue has other journal files"),
    "KQ-NO-LIVE": (NOTE, "no live journal file <q> (Kestrel starts a new one)"),
    # history oddities Kestrel tolerates (warnings)
    "KQ-REMOVE-EMPTY": (WARNING, "remove / remove-tentative on an empty queue (no-op; legitimate in 1.x journals)"),
    "KQ-UNKNOWN-XID": (WARNING, "unremove / confirm-remove / continue of an xid that is not open (no-op)"),
    "KQ-LEGACY-RT": (WARNING, "legacy REMOVE_TENTATIVE (3): its xid is implicit; how it was replayed"),
    "KQ-XID0-COLLISION": (WARNING, "2.x replay of opcode 3 (xid 0) overwrote another open transaction"),
    "KQ-CONTINUE-XID0": (WARNING, "CONTINUE with xid 0 (2.x never writes it)"),
    # notes
    "KQ-LEGACY-ADD": (NOTE, "legacy ADD (0): no add time (now at replay); expiry in seconds"),
    "KQ-VERSION": (NOTE, "which Kestrel version's meaning was used for opcode 3 and legacy ADD expiry"),
    "KQ-OPEN-BACKED-OUT": (NOTE, "open transactions returned to the head at startup (ascending xid)"),
    "KQ-EXPIRED": (NOTE, "items already expired at --as-of (replay never expires; Kestrel drops them on read)"),
    "KQ-IN-FLIGHT": (NOTE, "a partial last record while the queue is being written (a process holds the live "
                           "journal open, the live file changed during the read, or --live): in flight, not damage"),
    "KQ-RESYNC": (NOTE, "records resume after damage (Kestrel stops reading the file at the damage)"),
    "KQ-NO-CHECKSUM": (NOTE, "Kestrel journals carry no checksum: only framing damage is detectable"),
}

#: Codes only the queue's replay raises (its records in order across the file set, the closing notes, and
#: run_log's KQ-NO-CHECKSUM); the others come from discovery and the reader of one journal file.
KESTREL_REPLAY_CODES: frozenset[str] = frozenset({
    "KQ-XID-REUSED", "KQ-REMOVE-EMPTY", "KQ-UNKNOWN-XID", "KQ-LEGACY-RT", "KQ-XID0-COLLISION", "KQ-CONTINUE-XID0",
    "KQ-LEGACY-ADD", "KQ-VERSION", "KQ-OPEN-BACKED-OUT", "KQ-EXPIRED", "KQ-NO-CHECKSUM",
})
