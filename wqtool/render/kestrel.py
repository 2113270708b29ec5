"""Kestrel output: records (table / hex) and the replayed queue."""
from __future__ import annotations

import json
import os
from typing import TextIO

from ..engine.kestrel import KestrelState, record_to_jsonable
from ..engine.kestrel.serialize import ms_to_iso
from ..engine.serialize import render_bytes
from .records import RecordJsonArray, RecordJsonl, hexdump

_HEAD = f"{'file':<16} {'offset':>10} {'len':>7} {'#':>7}  {'op':<21} {'xid':>10}  details"


def _preview(data: bytes | None, mode: str, limit: int = 48) -> str:
    if data is None or mode == "none":
        return ""
    s = render_bytes(data[:limit], mode)
    return "=" + (json.dumps(s, ensure_ascii=False) if mode == "text" else s) + ("…" if len(data) > limit else "")


class KestrelRecordTable:
    def __init__(self, out: TextIO, payload: str):
        self.out, self.payload, self.started = out, payload, False

    def write(self, rec) -> None:
        if not self.started:
            self.out.write(_HEAD + "\n")
            self.started = True
        row = record_to_jsonable(rec, payload="none")
        details = ""
        if rec.data is not None:
            details = (f"add={row['add_time'] or '-'} exp={row['expiry'] or 'never'} "
                       f"data[{len(rec.data)}]{_preview(rec.data, self.payload)}")
        xid = "" if rec.xid is None else str(rec.xid)
        self.out.write(f"{os.path.basename(rec.path):<16} {rec.offset:>10} {rec.length:>7} {rec.index:>7}  "
                       f"{row['op']:<21} {xid:>10}  {details}\n")

    def close(self) -> None:
        if not self.started:
            self.out.write(_HEAD + "\n")


class KestrelJsonl(RecordJsonl):
    def write(self, rec) -> None:
        self.out.write(json.dumps(record_to_jsonable(rec, payload=self.payload), ensure_ascii=False) + "\n")


class KestrelJsonArray(RecordJsonArray):
    def write(self, rec) -> None:
        self.out.write(("[\n  " if self.n == 0 else ",\n  ")
                       + json.dumps(record_to_jsonable(rec, payload=self.payload), ensure_ascii=False))
        self.n += 1


class KestrelHex:
    def __init__(self, out: TextIO, payload: str):
        self.out = out

    def write(self, rec) -> None:
        with open(rec.path, "rb") as f:
            f.seek(rec.offset)
            raw = f.read(min(rec.length, 1 << 20))
        self.out.write(f"{os.path.basename(rec.path)}@0x{rec.offset:x} #{rec.index} {rec.op.name} len={rec.length}\n")
        self.out.write("\n".join(hexdump(raw, rec.offset)) + "\n")

    def close(self) -> None:
        pass


KESTREL_WRITERS = {"table": KestrelRecordTable, "jsonl": KestrelJsonl, "json": KestrelJsonArray, "hex": KestrelHex}


def item_rows(state: KestrelState, payload: str = "base64") -> list[dict]:
    out = []
    for pos, (st, xid, it) in enumerate(state.sorted_items()):
        out.append({"pos": pos, "state": st, "xid": xid, "add_time": ms_to_iso(it.add_time),
                    "expiry": ms_to_iso(it.expiry), "expired_at_as_of": it.expired_at(state.as_of_ms),
                    "len": len(it.data), "data": render_bytes(it.data, payload), "file": it.path,
                    "offset": it.offset})
    return out


def summary(state: KestrelState) -> dict:
    return {"items": state.items, "bytes": state.data_bytes, "counts": state.counts_by_state(),
            "expired_at_as_of": len(state.expired()), "xid_counter": state.xid_counter,
            "records": state.records, "applied": state.applied, "version_guess": state.version_guess,
            "digest": state.digest()}


def write_items_table(out: TextIO, state: KestrelState) -> None:
    out.write(f"{'pos':>6} {'state':<7} {'xid':>10}  {'add_time':<26} {'expiry':<26} {'len':>8}  data\n")
    for row, (_, _, it) in zip(item_rows(state, "none"), state.sorted_items()):
        exp = (row["expiry"] or "never") + (" (expired)" if row["expired_at_as_of"] else "")
        out.write(f"{row['pos']:>6} {row['state']:<7} {'' if row['xid'] is None else row['xid']:>10}  "
                  f"{row['add_time'] or '-':<26} {exp:<26} {row['len']:>8}  {_preview(it.data, 'text')}\n")
