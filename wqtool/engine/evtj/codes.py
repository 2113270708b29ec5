"""Stable finding codes of prinbee's event journal (``EVTJ-``): code -> (severity, meaning).

The loader (``journal::load_event_locations``) stops reading a file at the first event it refuses; wqtool reports
exactly those stop conditions. Framing damage is a torn tail when no valid event follows it in the file (exit 1),
else corrupt (exit 3: the loader never sees the events after it, and appends over them); an event upstream itself
may write but its loader refuses (no inline data, a time in the future) is invalid history (exit 4).
"""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, Codes

EVTJ_CODES: Codes = {
    # the loader's stop conditions
    "EVTJ-HEADER": (ERROR, "file header not 'EVTJ' version 1.0 (or shorter than 8 bytes): the loader skips the "
                           "whole file"),
    "EVTJ-EVENT-MAGIC": (ERROR, "an event that does not start with 'ev' (nor the '00 00' end marker): the loader "
                                "stops"),
    "EVTJ-TRUNCATED": (ERROR, "fewer than 32 bytes left for an event header: the loader's read fails and it stops"),
    "EVTJ-UNKNOWN-STATUS": (ERROR, "an event status other than 1, 2, 3, 4, 100: the loader stops"),
    "EVTJ-EMPTY-ID": (ERROR, "request_id_size 0: the loader stops"),
    "EVTJ-SIZE-BEYOND-FILE": (ERROR, "offset + size beyond the end of the file: the loader stops"),
    "EVTJ-NO-INLINE-DATA": (ERROR, "no inline data bytes (size - 32 - 4 x attachments - id size <= 0), e.g. only "
                                   "external attachments: the loader stops"),
    "EVTJ-FUTURE-TIME": (ERROR, "an event time more than 5 s after --as-of: the loader stops"),
    # history
    "EVTJ-STATUS-BACKWARDS": (ERROR, "a request id whose later event has an earlier status: the loader indexes the "
                                     "later one, so the status moves backwards (statuses only move forward)"),
    "EVTJ-DUPLICATE-ID": (WARNING, "a request id in more than one event: the loader keeps the last live one"),
    "EVTJ-DUPLICATE-TIME": (WARNING, "two live events with the same time: the time-ordered replay keeps only the "
                                     "later"),
    # attachments
    "EVTJ-BAD-ATTACHMENT-OFFSET": (ERROR, "an inline attachment offset outside the event's data or out of order"),
    "EVTJ-MISSING-ATTACHMENT": (ERROR, "an external attachment {id}.bin of a live event is missing"),
    # the directory
    "EVTJ-BAD-CONF": (WARNING, "a journal.conf line with an unknown name or a value outside upstream's range"),
    "EVTJ-FILE-BEYOND-MAX": (WARNING, "journal-N.events with N >= maximum_number_of_files: the loader never reads "
                                      "it"),
    "EVTJ-FOREIGN-FILE": (WARNING, "a file that is no part of an event journal directory"),
    # notes
    "EVTJ-END-MARKER": (NOTE, "the '00 00' end marker of a compressed file: the bytes after it are not events"),
    "EVTJ-COMPRESSIBLE": (NOTE, "completed and failed events, skipped by the loader (the file can be compressed)"),
    "EVTJ-NO-CHECKSUM": (NOTE, "EVTJ carries no checksum: flipped bits inside ids, times or data go unnoticed"),
}

EVTJ_REPLAY_CODES: frozenset[str] = frozenset({"EVTJ-STATUS-BACKWARDS", "EVTJ-DUPLICATE-ID", "EVTJ-DUPLICATE-TIME",
                                               "EVTJ-COMPRESSIBLE", "EVTJ-NO-CHECKSUM"})

# --explain: per code (what prinbee's loader does, whether data is at risk, which wqtool command fixes it); "what
# happened" is the code's meaning above. tests/engine/test_explain.py: every code of every format has all four.
_STOPS = ("the loader stops reading the file there", "yes: the events after it in that file are not loaded",
          "none in wqtool (EVTJ has pack only, which refuses damage): cut the file at the last good offset "
          "(verify's valid-up-to) by hand, after a copy")
EVTJ_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "EVTJ-HEADER": ("the loader skips the whole file", "yes: every event of the file", _STOPS[2]),
    "EVTJ-EVENT-MAGIC": _STOPS, "EVTJ-TRUNCATED": _STOPS, "EVTJ-UNKNOWN-STATUS": _STOPS, "EVTJ-EMPTY-ID": _STOPS,
    "EVTJ-SIZE-BEYOND-FILE": _STOPS, "EVTJ-NO-INLINE-DATA": _STOPS,
    "EVTJ-FUTURE-TIME": ("the loader stops at an event more than 5 s in its future", "the events after it (until "
                         "the clock passes it)", "none: check the writer's clock; --as-of shows when it loads"),
    "EVTJ-STATUS-BACKWARDS": ("the loader indexes the later event: the status moves backwards",
                              "the request may be processed again", "none in wqtool: fix by hand, after a copy"),
    "EVTJ-DUPLICATE-ID": ("the loader keeps the last live event", "no", "nothing to fix"),
    "EVTJ-DUPLICATE-TIME": ("the time-ordered replay keeps only the later event", "yes: the earlier one",
                            "none: the writer must give distinct times"),
    "EVTJ-BAD-ATTACHMENT-OFFSET": ("the attachment is read from a wrong place", "the attachment's data",
                                   "none in wqtool: fix by hand, after a copy"),
    "EVTJ-MISSING-ATTACHMENT": ("the event's attachment cannot be loaded", "yes: the attachment",
                                "none: restore {id}.bin from a backup"),
    "EVTJ-BAD-CONF": ("the journal ignores the line or uses its default", "no", "none: correct journal.conf"),
    "EVTJ-FILE-BEYOND-MAX": ("the loader never reads the file", "its events", "none: raise "
                             "maximum_number_of_files in journal.conf, or merge by hand"),
    "EVTJ-FOREIGN-FILE": ("the journal ignores the file", "no", "none: move it out"),
    "EVTJ-END-MARKER": ("the loader stops at the marker (the file was compressed)", "no", "nothing to fix"),
    "EVTJ-COMPRESSIBLE": ("the loader skips finished events", "no",
                          "wqtool pack --apply (prinbee's own compression, offline: leaves them out)"),
    "EVTJ-NO-CHECKSUM": ("the loader reads what parses", "undetectable corruption inside events is possible",
                         "nothing to fix"),
}
