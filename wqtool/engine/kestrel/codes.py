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
    "KQ-INTERRUPTED-APPLY": (WARNING, "an interrupted wqtool repair, pack or clean --apply (the live file rotated, "
                                      "its rewrite not yet published): rerun the same command to finish"),
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

# --explain: per code (what Kestrel 2.x does with it, whether data is at risk, which wqtool command fixes it); "what
# happened" is the code's meaning above. tests/engine/test_explain.py: every code of every format has all four.
_FRAMING = ("Kestrel logs the BrokenItemException, truncates the live file there ('DATA MAY HAVE BEEN LOST!') "
            "or skips the rest of a rotated file",
            "at the live file's end: at most the item being written; elsewhere every record after the damage in "
            "that file", "wqtool repair --apply (cuts a torn tail, kept in the quarantine); damage with valid records "
            "after it: wqtool repair --salvage --apply")
_FATAL = ("Kestrel cannot start (exception at startup)",
          "the file's records after it are unreachable to Kestrel", "wqtool repair --salvage --apply")
_NOOP = ("Kestrel replays it as a no-op", "no", "none needed (wqtool pack --apply writes a journal without it)")
KESTREL_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "KQ-TRUNCATED": _FRAMING, "KQ-BAD-OPCODE": _FRAMING, "KQ-SHORT-BLOCK": _FRAMING,
    "KQ-SIZE-NEGATIVE": _FATAL, "KQ-SIZE-ABSURD": ("Kestrel runs out of memory allocating the block at startup",
                                                   _FATAL[1], _FATAL[2]),
    "KQ-XID-REUSED": ("Kestrel replaces the open transaction: the earlier item is lost from the queue",
                      "yes: the earlier item", "wqtool repair --drop-invalid --apply (removes the reusing record)"),
    "KQ-STRAY-FILE": ("Kestrel 2.x fails at startup parsing the name", "no (the file is not read)",
                      "wqtool clean --apply leaves it; move the file out of the queue directory by hand"),
    "KQ-ODD-NAME": ("Kestrel 2.x replays the file as a rotated journal", "its content is replayed as journal",
                    "none: rename or move the file if it is not a journal"),
    "KQ-INTERRUPTED-APPLY": ("Kestrel reads the rotated live file as a rotated journal (a torn tail there as "
                             "damage) and deletes the temp", "no, once the command is rerun",
                             "wqtool repair --apply (or the pack or clean --apply that was interrupted: the same "
                             "command rolls the rotation back and finishes)"),
    "KQ-TEMP-FILE": ("Kestrel deletes it at startup", "no: a rewrite in progress that never finished",
                     "wqtool clean --apply (deletes it, as Kestrel would)"),
    "KQ-HALF-PACK": ("Kestrel deletes the files the pack supersedes and renames the pack into place",
                     "no: the pack holds their state", "wqtool clean --apply (finishes the pack, as Kestrel would)"),
    "KQ-PACK-PENDING": ("Kestrel renames the pack into place at startup", "no",
                        "wqtool clean --apply (does the rename)"),
    "KQ-FOREIGN-FILE": ("Kestrel 2.x cannot read a libkestrel (3.0) file", "no (it is another format)",
                        "none: read it with the Kestrel 3 tools, or move it out"),
    "KQ-NOT-JOURNAL": ("Kestrel 2.x would treat every such name as a queue", "no (wqtool does not read them)",
                       "none: move them out, or pass --format kestrel to read them"),
    "KQ-PARTIAL-SET": ("Kestrel replays the whole set", "no: only the report covers part of the queue",
                       "none: name the queue's directory"),
    "KQ-NO-LIVE": ("Kestrel starts a new live journal", "no", "nothing to fix"),
    "KQ-REMOVE-EMPTY": _NOOP, "KQ-UNKNOWN-XID": _NOOP, "KQ-CONTINUE-XID0": _NOOP,
    "KQ-LEGACY-RT": ("Kestrel replays it by its version's rule (1.x: the newest open xid; 2.x: xid 0)",
                     "which item is open depends on the version (--kestrel-version)", "nothing to fix"),
    "KQ-XID0-COLLISION": ("Kestrel 2.x overwrites the open transaction with xid 0", "yes: the earlier open item",
                          "wqtool repair --drop-invalid --apply"),
    "KQ-LEGACY-ADD": ("Kestrel gives the item its add time at replay", "no", "nothing to fix"),
    "KQ-VERSION": ("the running Kestrel's version decides what op 3 and a legacy ADD's expiry mean",
                   "no, if --kestrel-version matches the writer", "nothing to fix (pass --kestrel-version)"),
    "KQ-OPEN-BACKED-OUT": ("Kestrel returns open transactions to the queue head at startup",
                                                "no: the items are delivered again", "nothing to fix"),
    "KQ-EXPIRED": ("Kestrel drops expired items when they are read", "no: they had expired",
                   "wqtool pack --apply leaves them out"),
    "KQ-IN-FLIGHT": ("the writer finishes the record", "no", "nothing to fix (verify again)"),
    "KQ-RESYNC": ("Kestrel stops reading the file at the damage before it", "the records from here on",
                  "wqtool repair --salvage --apply (keeps them)"),
    "KQ-NO-CHECKSUM": ("Kestrel reads whatever frames parse: flipped bits in item data go unnoticed",
                       "undetectable corruption inside items is possible", "nothing to fix"),
}
