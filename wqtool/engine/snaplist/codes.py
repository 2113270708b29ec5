"""Stable finding codes of the snapwebsites list client journal (``SL-``): code -> (severity, meaning).

Verdicts: a final line without ``\\n`` is a torn tail (exit 1); a line the reader skips or a value snaplistd
cannot store is invalid history (exit 4: intact bytes, refused upstream); the rest are warnings and notes that say
what upstream does with what it finds.
"""
from __future__ import annotations

from ..findings import ERROR, NOTE, WARNING, Codes

SNAPLIST_CODES: Codes = {
    "SL-TORN-LINE": (ERROR, "a final line without '\\n' (a torn write): upstream discards it when it unlinks the "
                            "file"),
    "SL-MISSING-FIELD": (ERROR, "a line without a non-empty uri, priority or key_start_date: upstream skips it "
                                "('required message parameter is missing') and loses it with the file"),
    "SL-BAD-VALUE": (ERROR, "priority not an integer 0-255, or key_start_date not an integer >= 0 (µs): "
                            "forwarded as text, never written by the list plugin"),
    "SL-URI-SEMICOLON": (WARNING, "a raw ';' in the uri (the writer replaces it with %3A): upstream's tokenizer "
                                  "cuts the uri there"),
    "SL-NON-ASCII": (WARNING, "bytes outside printable ASCII in a line (the writer's lines are ASCII; a UTF-8 "
                              "page key is passed through)"),
    "SL-NONCANONICAL": (NOTE, "a line not in the list plugin's own form (field order, spaces, unknown or repeated "
                              "names); how upstream's tokenizer reads it is shown"),
    "SL-WRONG-HOUR": (WARNING, "lines whose key_start_date puts their start date in another hour than the file's "
                               "(-O start_date_offset_us=, default 10 s; +1 h at priority 180)"),
    "SL-STALE-FILE": (WARNING, "an hour file other than the current and previous hour at --as-of: upstream's reader "
                               "unlinks it once read (pending lines are overdue; an exhausted one is left over)"),
    "SL-ACK-OUT-OF-ORDER": (WARNING, "a blank run after a pending line: acknowledged out of order (upstream logs "
                                     "'required message parameter is missing' once per blank byte)"),
    "SL-FOREIGN-FILE": (WARNING, "a file in the journal directory that is not <0-23>.msg (upstream never reads it)"),
    "SL-TEMP-FILE": (WARNING, "a leftover temp file of an interrupted wqtool pack (clean removes it)"),
    "SL-EMPTY": (NOTE, "no hour file (nothing pending)"),
    "SL-SUPERSEDED": (NOTE, "pending lines for a uri that a later line (larger key_start_date) replaces: one entry "
                            "per uri"),
}

#: Codes only the replay of the whole journal raises (lines of every hour file, in reading order).
SNAPLIST_REPLAY_CODES: frozenset[str] = frozenset({"SL-SUPERSEDED"})

# --explain: per code (what Snap!'s list reader does, whether data is at risk, which wqtool command fixes it);
# "what happened" is the code's meaning above. tests/engine/test_explain.py: every code has all four.
SNAPLIST_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "SL-TORN-LINE": ("the reader discards the line when it unlinks the file", "yes: that request",
                     "none in wqtool: the page is listed again at its next change"),
    "SL-MISSING-FIELD": ("the reader skips the line and loses it with the file", "yes: that request",
                         "none: re-list the page"),
    "SL-BAD-VALUE": ("the reader forwards the value as text", "the request may be scheduled wrongly",
                     "none in wqtool (pack drops acknowledged blank runs only; pending lines stay byte for byte)"),
    "SL-URI-SEMICOLON": ("the tokenizer cuts the uri at the ';'", "yes: the request goes to a wrong uri",
                         "none: the writer must escape it (%3A)"),
    "SL-NON-ASCII": ("the reader passes the bytes through", "no", "nothing to fix"),
    "SL-NONCANONICAL": ("the tokenizer reads it as shown", "no", "nothing to fix"),
    "SL-WRONG-HOUR": ("the reader takes the line from the file it is in", "no: it is only sent earlier or later",
                      "nothing to fix"),
    "SL-STALE-FILE": ("the reader sends its pending lines and unlinks it", "no: pending lines are late, not lost",
                      "wqtool clean --apply removes an exhausted one"),
    "SL-ACK-OUT-OF-ORDER": ("the reader logs one error per blank byte", "no",
                            "wqtool pack --apply (drops the blank runs)"),
    "SL-FOREIGN-FILE": ("the reader never reads it", "no", "none: move it out"),
    "SL-TEMP-FILE": ("the reader ignores it", "no", "wqtool clean --apply removes it"),
    "SL-EMPTY": ("nothing to send", "no", "nothing to fix"),
    "SL-SUPERSEDED": ("the reader sends one entry per uri (the later line)", "no",
                      "nothing to fix"),
}
