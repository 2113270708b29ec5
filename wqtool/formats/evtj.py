"""prinbee's event journal EVTJ — spec: docs/formats/snap-journals.md Part C.

Implemented upstream (``journal.cpp``): raw structs in the writer's native byte order, no checksum. Byte order is
in the field types: ``schemas(byteorder)`` builds them for a given order. Each schema describes one header or one
event; the engine (``wqtool.engine.evtj``) owns every loop over a file.
"""
from __future__ import annotations

import re
import sys
from enum import IntEnum, unique

from ._common import declared_on_first_use

EVTJ_MAGIC = b"EVTJ"
EVTJ_MAJOR_VERSION = 1
EVTJ_MINOR_VERSION = 0
EVENT_MAGIC = b"ev"
#: Where a compressed file ends: two zero bytes instead of ``ev``.
END_MARKER = b"\x00\x00"
FILE_HEADER_SIZE = 8
EVENT_HEADER_SIZE = 32
ATTACHMENT_OFFSET_SIZE = 4
#: Bit 31 of an attachment offset: the attachment is external, the low 31 bits are its id (``{id}.bin``).
EXTERNAL_ATTACHMENT = 0x8000_0000
ATTACHMENT_ID_MASK = 0x7FFF_FFFF
MAX_REQUEST_ID_SIZE = 255
MAX_ATTACHMENTS = 255
#: ``g_time_epsilon``: the loader refuses events more than 5 s in the future.
TIME_EPSILON_NS = 5_000_000_000
#: ``journal-{N}.events`` (``journal::get_filename``), ``{id}.bin`` attachments, the settings and counter files.
EVENTS_FILE = re.compile(r"^journal-(0|[1-9][0-9]*)\.events$")
ATTACHMENT_FILE = re.compile(r"^(0|[1-9][0-9]*)\.bin$")
JOURNAL_CONF = "journal.conf"
COUNTERS_FILE = "counters.seq"
#: The platforms prinbee is built for (amd64, arm64) are little-endian: the order of the spec's examples.
NATIVE_BYTE_ORDER = sys.byteorder


@unique
class Status(IntEnum):
    """``status_t``, spelled as upstream (``STATUS_READY`` …)."""

    UNKNOWN = 0           # never valid in a file
    READY = 1
    FORWARDED = 2
    ACKNOWLEDGED = 3
    COMPLETED = 4
    FAILED = 100

    @property
    def label(self) -> str:
        return self.name.lower()


#: Statuses the loader indexes (the others are skipped and make the file compressible).
LIVE_STATUSES = frozenset({Status.READY, Status.FORWARDED, Status.ACKNOWLEDGED})
#: ``update_event_status``'s allowed moves: only forward.
STATUS_MOVES = frozenset({
    (Status.READY, Status.FORWARDED), (Status.READY, Status.ACKNOWLEDGED), (Status.READY, Status.COMPLETED),
    (Status.READY, Status.FAILED), (Status.FORWARDED, Status.ACKNOWLEDGED), (Status.FORWARDED, Status.COMPLETED),
    (Status.FORWARDED, Status.FAILED), (Status.ACKNOWLEDGED, Status.COMPLETED), (Status.ACKNOWLEDGED, Status.FAILED),
})
#: How far along a status is (COMPLETED and FAILED are both final).
STATUS_RANK = {Status.READY: 1, Status.FORWARDED: 2, Status.ACKNOWLEDGED: 3, Status.COMPLETED: 4, Status.FAILED: 4}

#: ``journal.conf`` (advgetopt ``key=value``): allowed values or (min, max), and upstream's defaults where the spec
#: gives them.
CONF_CHOICES = {
    "sync": ("none", "flush", "full"),
    "compress_when_full": ("true", "false"),
    "file_management": ("keep", "truncate", "delete"),
    "attachment_copy_handling": ("softlink", "hardlink", "reflink", "full"),
}
CONF_RANGES = {
    "maximum_number_of_files": (2, 255),
    "maximum_file_size": (64 * 1024, 128 * 1024 * 1024),
    "maximum_events": (100, 100_000),
    "inline_attachment_size_threshold": (256, 16 * 1024),
}
CONF_DEFAULTS = {"maximum_number_of_files": 2, "maximum_file_size": 1024 * 1024, "maximum_events": 4096,
                 "inline_attachment_size_threshold": 4 * 1024, "attachment_copy_handling": "softlink"}


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): ``schemas(byteorder)``, and the header, event header and
    event in this machine's byte order."""
    from types import SimpleNamespace

    from construct import (Array, Bytes, Const, Default, Int8ul, Int16ub, Int16ul, Int32ub, Int32ul, Int64ub, Int64ul,
                           Rebuild, Struct, len_, this)
    from ._common import StrictEnum

    def schemas(byteorder: str = NATIVE_BYTE_ORDER) -> SimpleNamespace:
        """The EVTJ schemas for one byte order ("little", "big"; default: this machine's, as upstream reads)."""
        if byteorder not in ("little", "big"):
            raise ValueError(f"byte order must be little or big, got {byteorder!r}")
        le = byteorder == "little"
        u16, u32, u64 = (Int16ul, Int32ul, Int64ul) if le else (Int16ub, Int32ub, Int64ub)
        journal_header = Struct(                 # event_journal_header_t, 8 bytes
            "magic" / Const(EVTJ_MAGIC),
            "major_version" / Default(Int8ul, EVTJ_MAJOR_VERSION),
            "minor_version" / Default(Int8ul, EVTJ_MINOR_VERSION),
            "pad" / Default(u16, 0),
        )
        event_header = Struct(                   # event_journal_event_t, 32 bytes, fields as stored
            "magic" / Bytes(2),                  # "ev"; "\0\0" ends a compressed file; the loader stops on others
            "status" / Int8ul,                   # raw: an unknown status stops the loader (the engine says so)
            "request_id_size" / Int8ul,
            "size" / u32,                        # the whole event, this header included
            "tv_sec" / u64,
            "tv_nsec" / u64,
            "attachment_count" / Int8ul,
            "pad" / Default(Bytes(7), bytes(7)),
        )
        event = Struct(                          # one whole event as add_event writes it
            "magic" / Const(EVENT_MAGIC),
            "status" / StrictEnum(Int8ul, Status),
            "request_id_size" / Rebuild(Int8ul, len_(this.request_id)),
            "size" / Rebuild(u32, EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * len_(this.offsets)
                             + len_(this.request_id) + len_(this.data)),
            "tv_sec" / u64,
            "tv_nsec" / u64,
            "attachment_count" / Rebuild(Int8ul, len_(this.offsets)),
            "pad" / Default(Bytes(7), bytes(7)),
            "offsets" / Array(this.attachment_count, u32),   # from the event's start; bit 31: external {id}.bin
            "request_id" / Bytes(this.request_id_size),
            "data" / Bytes(this.size - EVENT_HEADER_SIZE - ATTACHMENT_OFFSET_SIZE * this.attachment_count
                           - this.request_id_size),            # the inline attachments, back to back
        )
        #: snapdev ``unique_number``: an unsigned __int128 counter at ``index * 16`` (the journal uses index 0).
        counter = Struct("low" / u64, "high" / u64) if le else Struct("high" / u64, "low" / u64)
        return SimpleNamespace(byteorder=byteorder, journal_header=journal_header, event_header=event_header,
                               event=event, counter=counter, struct_prefix="<" if le else ">")

    _NATIVE = schemas()

    journal_header = _NATIVE.journal_header

    event_header = _NATIVE.event_header

    event = _NATIVE.event

    return locals()


DECLARED = ("schemas", "_NATIVE", "journal_header", "event_header", "event")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
