"""workq 0.2.0 command log ("cmdlog") — spec: docs/formats/workq-cmdlog.md (mirror of the upstream reference).

One segment = ``segment_header`` then records back to back; the engine owns the loop over a file.
Each schema here describes one header, one record or one payload.
"""
from __future__ import annotations

import _struct as struct        # (struct's C module: serve imports this before its first reply)

from ._common import crc32c, declared_on_first_use

# ---------------------------------------------------------------- segment files
MAGIC = 0x77717771  # b"wqwq"
VERSION = 1
HEADER_SIZE = 8
HEADER_BYTES = b"wqwq\x00\x00\x00\x01"
SEGMENT_SEQ_MAX = 0xFFFFFFFF


def segment_seq(name: str) -> int | None:
    """Upstream parseSequence: exactly 9 digits that fit a uint32, then '.log' — ``SEGMENT_NAME``'s match, without
    importing ``re`` (serve's first reply lists its directory through this): ``\\d`` is a Unicode decimal digit
    (``str.isdecimal``) and ``$`` also matches before one final newline (tests/formats/test_workq_codes.py checks
    it against the pattern)."""
    if name[-1:] == "\n":
        name = name[:-1]
    if len(name) != 13 or name[9:] != ".log" or not name[:9].isdecimal():
        return None
    seq = int(name[:9])
    return seq if seq <= SEGMENT_SEQ_MAX else None


def segment_name(seq: int) -> str:
    """A segment's file name: ``%09d.log`` (upstream's segment naming; ``segment_seq`` reads it back)."""
    return f"{seq:09d}.log"


LOCK_FILES = ("append.lock", "read.lock")
DEFAULT_SEGMENT_SIZE = 67_108_864  # -cmdlog-seg-size


# ---------------------------------------------------------------- commands
#: the command opcodes (a record's CMD byte): the one list ``CmdType`` is made from; plain ints for the paths that
#: import no ``enum`` (serve's first replies)
CMD_CODES = {"ADD": 1, "SCHEDULE": 2, "COMPLETE": 3, "FAIL": 4, "DELETE": 5, "EXPIRE": 6, "START_ATTEMPT": 7,
             "TIMEOUT_ATTEMPT": 8}


class _Labelled:
    """``CmdType``'s own member property."""

    __slots__ = ()

    @property
    def label(self) -> str:
        """The name used in output and on the command line: add, start-attempt, ..."""
        return _CMD_LABELS[self]


def _declare_plain() -> dict:
    """The names built on first use without construct (``PLAIN``): ``CmdType`` (enum) and the patterns (re), which
    serve's first replies do without."""
    import re
    from enum import IntEnum, unique

    CmdType = unique(IntEnum("CmdType", CMD_CODES, module=__name__, qualname="CmdType", type=_Labelled))
    return {
        "CmdType": CmdType,
        "_CMD_LABELS": {c: c.name.lower().replace("_", "-") for c in CmdType},
        #: `%09d.log`: exactly 9 digits parsing as a uint32, then ".log" (upstream scanSegments / parseSequence).
        "SEGMENT_NAME": re.compile(r"^(\d{9})\.log$"),
        #: a queue name; use .match; \Z, not $: Go's $ is the end of text only
        "NAME_RE": re.compile(rb"[A-Za-z0-9_.\-]{1,255}\Z"),
    }


PLAIN = ("CmdType", "_CMD_LABELS", "SEGMENT_NAME", "NAME_RE")


JOB_ID_SIZE = 16

#: The header for the hand-written paths: magic, version (u32 BE each).
HEADER_STRUCT = struct.Struct(">II")
#: The CRC field for the hand-written hot paths: u32 big-endian, after TIME ‖ SIZE ‖ PAYLOAD.
RECORD_CRC_STRUCT = struct.Struct(">I")

# ---------------------------------------------------------------- limits (upstream validation and sanity caps)
MAX_NAME_LEN = 255
MIN_TTR_MS, MAX_TTR_MS = 1, 86_400_000
MIN_TTL_MS, MAX_TTL_MS = 1, 2_592_000_000
MAX_PAYLOAD_BYTES = 1_048_576
MAX_RESULT_BYTES = 1_048_576
MAX_ATTEMPTS_MAX = 255
MAX_FAILS_MAX = 255
#: Largest payload a valid command can have (add with a 255-byte name and a 1 MiB body) — SIZE values above
#: this can only be damage, so the reader refuses them before allocating anything.
MAX_COMMAND_SIZE = 1 + JOB_ID_SIZE + 2 + MAX_NAME_LEN + 5 + 5 + 5 + 2 + 2 + 3 + MAX_PAYLOAD_BYTES + 15 + 15
#: The sane cap the reader applies to SIZE (a little headroom over MAX_COMMAND_SIZE).
SIZE_CAP = 2 * 1024 * 1024


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): the segment header, the payload of each command, the
    record's framing."""
    from construct import (Bytes, Checksum, Const, GreedyBytes, Int8ub, Int32ub, Prefixed, RawCopy, Struct,
                           Switch, Terminated, this)
    from ._common import UVarInt, ZVarInt, StrictEnum, go_time
    CmdType = __getattr__("CmdType")       # (built on first use too: ``PLAIN``)

    segment_header = Struct(
        "magic" / Const(MAGIC, Int32ub),
        "version" / Const(VERSION, Int32ub),
    )

    #: add (1) and schedule (2): one field per spec row, in spec order.
    job_spec = Struct(
        "job_id" / Bytes(JOB_ID_SIZE),          # RFC 4122 byte order; must be a v4 UUID
        "name" / Prefixed(UVarInt, GreedyBytes),  # [A-Za-z0-9_.-]{1,255}
        "ttr" / UVarInt,                        # ms, 1..86_400_000 (decoder truncates to uint32)
        "ttl" / UVarInt,                        # ms, 1..2_592_000_000
        "priority" / ZVarInt,                   # int32, zig-zag
        "max_attempts" / UVarInt,               # 0..255 (decoder truncates to uint8)
        "max_fails" / UVarInt,                  # 0..255, never enforced
        "payload" / Prefixed(UVarInt, GreedyBytes),  # 0..1_048_576 bytes
        "time" / go_time,                       # add: Go zero time; schedule: scheduled UTC time
        "created" / go_time,                    # server clock when the command was parsed
    )

    #: complete (3) and fail (4): the result is undocumented upstream but always present.
    result_spec = Struct(
        "job_id" / Bytes(JOB_ID_SIZE),
        "result" / Prefixed(UVarInt, GreedyBytes),  # 0..1_048_576 bytes
    )

    #: delete (5), expire (6), start-attempt (7), timeout-attempt (8): exactly 17 bytes with CMD_TYPE.
    id_spec = Struct(
        "job_id" / Bytes(JOB_ID_SIZE),
    )

    BODY_BY_CMD = {
        CmdType.ADD: job_spec,
        CmdType.SCHEDULE: job_spec,
        CmdType.COMPLETE: result_spec,
        CmdType.FAIL: result_spec,
        CmdType.DELETE: id_spec,
        CmdType.EXPIRE: id_spec,
        CmdType.START_ATTEMPT: id_spec,
        CmdType.TIMEOUT_ATTEMPT: id_spec,
    }

    #: One record's PAYLOAD: a command. Upstream reads one more byte after the command: trailing bytes are an error.
    payload = Struct(
        "cmd" / StrictEnum(Int8ub, CmdType),
        "body" / Switch(this.cmd, BODY_BY_CMD),
        Terminated,
    )

    #: One record's framing: TIME, SIZE, PAYLOAD, CRC-32C (big-endian) over every byte before the CRC.
    record = Struct(
        "body" / RawCopy(Struct(
            "time" / go_time,       # wall clock when the record was built; informational only
            "size" / UVarInt,       # payload length, unsigned LEB128
            "payload" / Bytes(this.size),
        )),
        "crc" / Checksum(Int32ub, lambda data: crc32c(data), this.body.data),
    )

    del CmdType
    return locals()


DECLARED = ("segment_header", "job_spec", "result_spec", "id_spec", "BODY_BY_CMD", "payload", "record")
_declared, _declared_dir = declared_on_first_use(globals(), _declare, DECLARED)
_plain, _ = declared_on_first_use(globals(), _declare_plain, PLAIN)


def __getattr__(name: str):
    return (_plain if name in PLAIN else _declared)(name)


def __dir__():
    return sorted({*_declared_dir(), *PLAIN})
