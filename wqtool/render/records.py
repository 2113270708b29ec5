"""Record output for dump: a streaming text table, JSON Lines, a JSON array, and hex."""
from __future__ import annotations

import json
import os
import uuid
from typing import TextIO

from ..engine.workq.model import Record
from ..engine.workq.serialize import record_to_jsonable
from ..engine.serialize import render_bytes

_HEAD = f"{'segment':<14} {'offset':>10} {'len':>6} {'#':>7}  {'time':<30} {'cmd':<15} {'job':<36}  details"


def _details(rec: Record, payload: str) -> str:
    c = rec.command
    if c is None:
        return f"UNDECODABLE: {getattr(rec.payload_error, 'message', rec.payload_error)}"
    parts = []
    if c.name is not None:
        parts.append(f"q={c.name.decode('latin-1')} prio={c.priority} ttr={c.ttr}ms ttl={c.ttl}ms "
                     f"max-att={c.max_attempts} max-fails={c.max_fails}")
        if not c.time.is_zero:
            parts.append(f"at={c.time.isoformat()}")
        parts.append(f"created={c.created.isoformat()}")
        parts.append(f"payload[{len(c.payload)}]" + ("" if payload == "none" else "=" + _quote(c.payload, payload)))
    if c.result is not None:
        parts.append(f"result[{len(c.result)}]" + ("" if payload == "none" else "=" + _quote(c.result, payload)))
    return " ".join(parts)


def _quote(b: bytes, mode: str, limit: int = 64) -> str:
    s = render_bytes(b[:limit], mode)
    s = json.dumps(s, ensure_ascii=False) if mode == "text" else s
    return s + ("…" if len(b) > limit else "")


class RecordTable:
    """A streaming fixed-width table: one line per record, header once (works for millions of rows)."""

    def __init__(self, out: TextIO, payload: str):
        self.out = out
        self.payload = payload
        self.started = False

    def write(self, rec: Record) -> None:
        if not self.started:
            self.out.write(_HEAD + "\n")
            self.started = True
        c = rec.command
        self.out.write(f"{os.path.basename(rec.path):<14} {rec.offset:>10} {rec.length:>6} {rec.index:>7}  "
                       f"{rec.time.isoformat():<30} {(c.cmd.label if c else '?'):<15} "
                       f"{(str(uuid.UUID(bytes=c.job_id)) if c else '-'):<36}  {_details(rec, self.payload)}\n")

    def close(self) -> None:
        if not self.started:
            self.out.write(_HEAD + "\n")


class RecordJsonl:
    def __init__(self, out: TextIO, payload: str):
        self.out = out
        self.payload = payload

    def write(self, rec: Record) -> None:
        self.out.write(json.dumps(record_to_jsonable(rec, payload=self.payload), ensure_ascii=False) + "\n")

    def close(self) -> None:
        pass


class RecordJsonArray(RecordJsonl):
    """A JSON array streamed element by element (memory stays flat)."""

    def __init__(self, out: TextIO, payload: str):
        super().__init__(out, payload)
        self.n = 0

    def write(self, rec: Record) -> None:
        self.out.write(("[\n  " if self.n == 0 else ",\n  ")
                       + json.dumps(record_to_jsonable(rec, payload=self.payload), ensure_ascii=False))
        self.n += 1

    def close(self) -> None:
        self.out.write("[]\n" if self.n == 0 else "\n]\n")


def hexdump(data: bytes, base: int) -> list[str]:
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        hx = " ".join(f"{b:02x}" for b in chunk)
        asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"  {base + i:08x}  {hx:<47}  |{asc}|")
    return lines


class RecordHex:
    """Each record as a header line and a canonical hex dump of its bytes (offsets are file offsets)."""

    def __init__(self, out: TextIO, payload: str):
        self.out = out

    def write(self, rec: Record) -> None:
        c = rec.command
        self.out.write(f"{os.path.basename(rec.path)}@0x{rec.offset:x} #{rec.index} "
                       f"{c.cmd.label if c else '?'} len={rec.length} size={rec.size} crc={rec.crc:08x}\n")
        self.out.write("\n".join(hexdump(rec.raw or b"", rec.offset)) + "\n")

    def close(self) -> None:
        pass


RECORD_WRITERS = {"table": RecordTable, "jsonl": RecordJsonl, "json": RecordJsonArray, "hex": RecordHex}
