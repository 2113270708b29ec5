"""Snap! list journal (the snapwebsites list plugin's hourly client journal) — spec:
docs/formats/snap-journals.md Part B.

Implemented upstream (``list.cpp``): text files ``0.msg`` … ``23.msg``, one ASCII line
``priority=…;key_start_date=…;uri=…\\n`` per request; acknowledged lines are overwritten with ``\\n`` bytes in
place. The schema describes one line; the engine (``wqtool.engine.snaplist``) owns every loop over a file.
"""
from __future__ import annotations

import re


from ._common import declared_on_first_use, domain_of  # noqa: F401 — domain_of: a request's domain

#: Default journal directory (``snapserver.conf`` list_data_path + ``journal``).
LIST_JOURNAL_DIR = "/var/lib/snapwebsites/list/journal"
HOURS = 24
US_PER_HOUR = 3_600_000_000
#: ``<hour>.msg``: the UTC hour of the request's start date (``std::to_string(hour)``: no leading zero).
HOUR_FILE = re.compile(r"^(0|[1-9]|1[0-9]|2[0-3])\.msg$")
#: ``LIST_PROCESSING_LATENCY``: the default and minimum start-date offset (10 s); the offset is clamped to 24 h.
LIST_PROCESSING_LATENCY_US = 10_000_000
MAX_START_DATE_OFFSET_US = 24 * US_PER_HOUR
#: While the site is being updated (``content::is_updating()``) the writer adds 1 h and uses priority 180.
UPDATING_DELAY_US = US_PER_HOUR
LIST_PRIORITY_UPDATES = 180
PRIORITY_MAX = 255
#: The three fields the reader requires (any order, ``;``-separated, spaces trimmed, unknown names ignored).
LIST_FIELDS = (b"priority", b"key_start_date", b"uri")
FIELD_SEPARATOR = b";"
#: The writer replaces every ``;`` of the URI with this text (sic: ``%3A`` is really the encoding of ``:``).
SEMICOLON_REPLACEMENT = b"%3A"
LINE_END = b"\n"
#: The journal's files are created mode 0600 (``S_IRUSR | S_IWUSR``), owned by snapwebsites:snapwebsites.
HOUR_FILE_MODE = 0o600


def hour_file(hour: int) -> str:
    return f"{hour}.msg"


def _c_div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def start_hour(start_date_us: int) -> int:
    """The hour file of a request: ``start_date / (60 * 60 * 1000000) % 24`` with C++ int64 semantics."""
    q = _c_div(start_date_us, US_PER_HOUR)
    return q - 24 * _c_div(q, 24)


def reading_order(current_hour: int) -> list[int]:
    """The reader's hours: ``(end_hour + 1) % 24`` … 23, 0 … ``end_hour`` — one day ending with the current
    hour."""
    return [(current_hour + 1 + i) % HOURS for i in range(HOURS)]


def kept_hours(current_hour: int) -> tuple[int, int]:
    """``keep_hour1`` (the previous hour) and ``keep_hour2`` (the current one): never unlinked, a writer may
    still append to them."""
    return ((current_hour + 23) % HOURS, current_hour)


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): one journal line."""
    from construct import Adapter, Const, GreedyBytes, NullTerminated, Struct, Terminated, ValidationError

    class _Decimal(Adapter):
        """``std::to_string`` of an integer: ASCII digits with an optional ``-``; building writes the shortest form."""

        def _decode(self, obj, context, path):
            if not re.fullmatch(rb"-?[0-9]+", obj):
                raise ValidationError(f"not a decimal integer: {obj!r}", path=path)
            return int(obj)

        def _encode(self, obj, context, path):
            return str(int(obj)).encode("ascii")

    class _Uri(Adapter):
        """The URI as the writer leaves it: non-empty, no ``;`` (replaced by ``%3A``), no newline."""

        def _decode(self, obj, context, path):
            if not obj or b";" in obj or b"\n" in obj:
                raise ValidationError(f"not a journal uri: {obj!r}", path=path)
            return obj

        def _encode(self, obj, context, path):
            return self._decode(obj, context, path)

    #: One journal line exactly as ``list::on_modified_content`` writes it (the canonical form). The reader is more
    #: lenient (any order, spaces, unknown names: ``wqtool.engine.snaplist.fastpath.tokenize``).
    list_line = Struct(
        Const(b"priority="),
        "priority" / _Decimal(NullTerminated(GreedyBytes, term=b";")),     # std::to_string(int(priority))
        Const(b"key_start_date="),
        "key_start_date" / _Decimal(NullTerminated(GreedyBytes, term=b";")),  # int64 µs since the epoch
        Const(b"uri="),
        "uri" / _Uri(NullTerminated(GreedyBytes, term=b"\n")),
        Terminated,
    )

    return locals()


DECLARED = ("_Decimal", "_Uri", "list_line")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
