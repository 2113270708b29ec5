"""How workq records and replayed states look: the stable JSON rows (dump -o jsonl, golden fixtures, Spark rows),
the table cells of dump and the job rows, summary and text of replay (``RecordView`` / ``StateView``)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from ...offsets import at
from ...formats._common import format_unix_ns, format_uuid
from ..format import Column, RecordView, StateView
from ..serialize import render_bytes
from .model import Record

if TYPE_CHECKING:       # dump's rows never load the replay (start-up); the state's view imports it
    from .replay import Job, ReplayState

#: The fields of a workq record row, in output order (Spark's schema uses the same list).
RECORD_FIELDS = ("file", "offset", "at", "length", "record_index", "time", "cmd", "job_id", "name", "priority", "ttr_ms",
                 "ttl_ms", "max_attempts", "max_fails", "scheduled", "created", "payload_len", "payload",
                 "result_len", "result", "crc", "crc_ok", "error")

def record_to_jsonable(rec: Record, *, payload: str = "base64") -> dict:
    c = rec.command
    row = dict.fromkeys(RECORD_FIELDS)
    row.update(file=rec.path, offset=rec.offset, at=at(rec.path, rec.offset), length=rec.length, record_index=rec.index, time=rec.time.isoformat(),
               crc=f"{rec.crc:08x}", crc_ok=True)
    if c is None:
        row["error"] = str(getattr(rec.payload_error, "message", rec.payload_error))
        row["payload_len"] = len(rec.raw_payload)
        row["payload"] = render_bytes(rec.raw_payload, payload)
        return row
    row["cmd"] = c.cmd.label
    row["job_id"] = format_uuid(c.job_id)
    if c.name is not None:
        row.update(name=c.name.decode("latin-1"), priority=c.priority, ttr_ms=c.ttr, ttl_ms=c.ttl,
                   max_attempts=c.max_attempts, max_fails=c.max_fails,
                   scheduled=None if c.time.is_zero else format_unix_ns(c.time.unix_ns),
                   created=format_unix_ns(c.created.unix_ns), payload_len=len(c.payload),
                   payload=render_bytes(c.payload, payload))
    if c.result is not None:
        row.update(result_len=len(c.result), result=render_bytes(c.result, payload))
    return row


# ---------------------------------------------------------------- dump: records as a table
def _quote(b: bytes, mode: str, limit: int = 64) -> str:
    s = render_bytes(b[:limit], mode)
    s = json.dumps(s, ensure_ascii=False) if mode == "text" else s
    return s + ("…" if len(b) > limit else "")


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


class WorkqRecordView(RecordView):
    fields = RECORD_FIELDS
    #: uvarint fields are u64: a hostile log may hold any uint64
    types = {"file": "string", "offset": "long", "at": "string", "length": "long", "record_index": "long", "time": "string",
             "cmd": "string", "job_id": "string", "name": "string", "priority": "long", "ttr_ms": "u64",
             "ttl_ms": "u64", "max_attempts": "u64", "max_fails": "u64", "scheduled": "string", "created": "string",
             "payload_len": "long", "payload": "bytes", "result_len": "long", "result": "bytes", "crc": "string",
             "crc_ok": "bool", "error": "string"}
    columns = (Column("at", 25), Column("len", 6, ">"), Column("#", 7, ">"),
               Column("time", 30, gap=2), Column("cmd", 15), Column("job", 36), Column("details", None, gap=2))

    def row(self, rec: Record, payload: str) -> dict:
        return record_to_jsonable(rec, payload=payload)

    def damage_row(self, f) -> dict:
        row = dict.fromkeys(self.fields)
        row.update(file=f.path, offset=f.offset, at=at(f.path, f.offset) if f.path else None)
        return row

    def binary(self, rec: Record) -> dict:
        c = rec.command
        if c is None:
            return {"payload": rec.raw_payload}
        return {"payload": c.payload, "result": c.result}

    def cells(self, rec: Record, payload: str) -> tuple:
        c = rec.command
        return (at(rec.path, rec.offset), rec.length, rec.index, rec.time.isoformat(),
                c.cmd.label if c else "?", format_uuid(c.job_id) if c else "-", _details(rec, payload))

    def hex_title(self, rec: Record) -> str:
        c = rec.command
        return (f"{at(rec.path, rec.offset)} #{rec.index} {c.cmd.label if c else '?'} "
                f"len={rec.length} size={rec.size} crc={rec.crc:08x}")


# ---------------------------------------------------------------- replay: the jobs
def _t(ns: int | None) -> str | None:
    return None if ns is None else format_unix_ns(ns)


def job_to_jsonable(j: Job) -> dict:
    """replay's JSON row: the canonical form (the digest's, which keeps the result in hex and names the job
    ``id``) with the job's id as ``job_id`` and the result in base64, as every JSON output gives bytes, and an RFC 3339 time beside each nanosecond integer."""
    c = j.canonical()
    d = {"job_id": c.pop("id"), **c}           # the digest's form keeps "id"; every JSON output says job_id
    d.update(result=render_bytes(j.result, "base64"),created=_t(j.created_ns), scheduled=_t(j.scheduled_ns), expires=_t(j.expires_ns),
             log_expires=_t(j.log_expires_ns), lease_expires=_t(j.lease_expires_ns))
    return d


_JOBS_HEAD = (f"{'job':<36}  {'queue':<12} {'state':<9} {'prio':>6} {'att':>4} {'ttr_ms':>9} {'ttl_ms':>11}  "
              f"{'expires (upstream)':<30} {'scheduled':<24} {'payload':>8}  result")


class WorkqStateView(StateView):
    """A ``ReplayState`` (or the Spark fleet's ``FleetReplayState``) as replay and stats show it."""

    rows_key = "jobs"

    def __init__(self, state: ReplayState):
        self.state = state
        self._digest: str | None = None      # a view renders a finished state: its digest is hashed once

    def summary(self) -> dict:
        st = self.state
        return {"as_of": format_unix_ns(st.as_of_ns), "job_count": st.job_count(), "counts": st.counts_by_state(),
                "queues": st.queues(), "records": st.records, "applied": st.applied, "digest": self.digest()}

    def rows(self, payload: str = "base64") -> Iterator[dict]:
        for j in self.state.iter_sorted_jobs():
            yield job_to_jsonable(j)

    def encoded_rows(self, style: str, payload: str = "base64") -> Iterator[str]:
        jobs = self.state.jobs
        from .replay import CompactJobs
        if isinstance(jobs, CompactJobs) and jobs.as_of_ns == self.state.as_of_ns:
            return jobs.encoded_rows(style, job_to_jsonable)   # the C table encodes them itself
        return super().encoded_rows(style, payload)

    def table_header(self) -> str:
        return _JOBS_HEAD

    def table_lines(self) -> Iterator[str]:
        for j in self.state.iter_sorted_jobs():
            att = f"{j.attempts}/{j.max_attempts}" if j.max_attempts else str(j.attempts)
            res = "" if j.result is None else json.dumps(j.result[:40].decode("utf-8", "backslashreplace"))
            yield (f"{j.uuid:<36}  {j.name:<12} {j.state.label:<9} {j.priority:>6} {att:>4} {j.ttr:>9} {j.ttl:>11}  "
                   f"{format_unix_ns(j.expires_ns):<30} {(_t(j.scheduled_ns) or '-'):<24} {j.payload_len:>8}  {res}")

    def counts_matrix(self):
        return "jobs per queue and state", list(self.state.counts_by_state()), list(self.state.queues().items())

    def summary_lines(self) -> list[str]:
        s = self.state
        return [f"as of {format_unix_ns(s.as_of_ns)}: {s.job_count()} jobs from {s.records} records "
                f"({s.applied} applied)"]

    def counts_by_state(self) -> dict[str, int]:
        return self.state.counts_by_state()

    def queues(self) -> dict[str, dict[str, int]]:
        return self.state.queues()

    def digest(self) -> str:
        """The state's digest (``stats --chart`` shows it twice: in the table and on the page; hashed once)."""
        if self._digest is None:
            self._digest = self.state.digest()
        return self._digest
