"""pack for workq command logs: a reviewable plan, a verified new log, an atomic swap.

``pack_plan`` replays the log and describes the packed one; the plan template (``engine/plan.py``) does the rest:
the refusal, the proof, and ``write`` / ``apply`` through ``swap.SwapPlan`` (the directory swap it shares with
repair; the old log is kept as ``<dir>.pre-pack-<stamp>``).

The packed log. For each live job, in log order of its add/schedule record: that record copied byte for byte
(same TIME, same CRC), then what its state needs, each synthesized record with TIME = as-of (so packing a
packed log at the same as-of is byte-identical): PENDING = ``attempts`` x (start-attempt, timeout-attempt)
(one lone timeout-attempt when it never ran); LEASED = (attempts-1) pairs + start-attempt; COMPLETED /
FAILED = (attempts-1) pairs + start-attempt (none when it never ran) + complete / fail with the stored result,
except a FAILED job with an empty result at max-attempts, written as ``attempts`` pairs (upstream's timeout
failure). Deleted, expired and finished-and-gone jobs leave no record at all, so nothing can resurrect them
(upstream's cleaner bug, spec 7.5). Records of jobs that are not live, already-expired adds and refused
records are dropped. A job's ``attempts`` in the output is exactly the number of its applied start-attempts,
so ``records_dropped_by_kind`` can only go negative for timeout-attempt (by the number of jobs failed with an
empty result at their last attempt, which the input expressed with a ``fail`` record).

"""
from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import uuid
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from google_crc32c import value as _crc

from ...errors import InputError, PackMismatch, PackRefused, UsageError
from ...formats._common import GO_TIME_SIZE, GoTime, encode_uvarint, format_unix_ns
from ...formats.workq import DEFAULT_SEGMENT_SIZE, HEADER_BYTES, HEADER_SIZE, RECORD_CRC_STRUCT, CmdType
from .fastpath import encode_record
from .. import progress
from ..progress import advance
from ..findings import ERROR, Finding, Verdict
from ..fsops import FileSig, LogBusy
from ..plan import (ApplyResult, InjectedCrash, StepRunner, input_exit_code, pack_doc, pack_refusal, prove,
                    timed, write_step)
from .swap import SwapPlan, finish_interrupted
from .model import Record
from .reader import LogSet, discover, record_length
from .replay import CompactJobs, Job, JobState, ReplayState
from ..run import LogReport
from .fastreplay import Bail, fast_run
from .verify import LogRun, fast_report, run_log
from .writer import segment_name

__all__ = ["WorkqPackPlan", "ApplyResult", "Dropped", "PackRefused", "PackMismatch", "LogBusy", "InjectedCrash",
           "pack_plan", "finish_interrupted"]

_U32 = RECORD_CRC_STRUCT
_ID_RECORD = 15 + 1 + 17 + 4      # every ID-only record is 37 bytes
_KIND = {int(c): c.label for c in CmdType}


# ---------------------------------------------------------------- plan
@dataclass(slots=True)
class Dropped:
    """One thing of the input the packed log leaves behind (besides records of gone jobs)."""

    what: str               # torn-tail | unreadable | refused-record | ignored-file
    code: str               # the finding code (WQ-TRUNCATED, WQ-CRC, WQ-DUPLICATE-JOB, WQ-IGNORED-FILE, ...)
    path: str | None
    offset: int | None
    length: int | None      # bytes (None: unknown / a whole file)
    message: str

    def to_jsonable(self) -> dict:
        return {"what": self.what, "code": self.code, "file": self.path, "offset": self.offset,
                "length": self.length, "message": self.message}


@dataclass(slots=True)
class WorkqPackPlan(SwapPlan):
    """What pack would write. Nothing in here has been written yet."""

    kind = "pack"
    changed_why = "the log changed since the plan was made (segments added, grown or rewritten)"

    log: LogSet
    as_of_ns: int
    segment_size: int
    salvage: bool
    input_verdict: Verdict
    sigs: dict[str, FileSig]               # the segments as read
    segments_before: int
    bytes_before: int
    records_before: int
    by_kind_before: dict[str, int]
    segments_after: int
    bytes_after: int
    records_after: int
    by_kind_after: dict[str, int]
    jobs_kept: int
    jobs_by_state: dict[str, int]
    digest_before: str                     # replay digest of the input at as_of; the output must match it
    state: ReplayState                     # the live state the output encodes
    order: list[bytes] | bytes             # live job ids, in log order of their add/schedule record (the C
    src_lengths: array                     # packer's: 16 bytes each, one bytes); those records' lengths
    report: LogReport
    dropped: list[Dropped] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    table: object | None = None            # the kernel's C job table: it writes the records (kernel/pack.c)

    @property
    def records_dropped(self) -> int:
        return self.records_before - self.records_after

    @property
    def records_dropped_by_kind(self) -> dict[str, int]:
        kinds = sorted(set(self.by_kind_before) | set(self.by_kind_after))
        return {k: self.by_kind_before.get(k, 0) - self.by_kind_after.get(k, 0) for k in kinds}

    def to_jsonable(self) -> dict:
        return {
            "root": self.log.root, "as_of": format_unix_ns(self.as_of_ns), "as_of_ns": self.as_of_ns,
            "segment_size": self.segment_size, "salvage": self.salvage,
            "input_exit_code": input_exit_code(self),
            "before": {"segments": self.segments_before, "bytes": self.bytes_before, "records": self.records_before,
                       "by_kind": dict(sorted(self.by_kind_before.items()))},
            "after": {"segments": self.segments_after, "bytes": self.bytes_after, "records": self.records_after,
                      "by_kind": dict(sorted(self.by_kind_after.items()))},
            "records_dropped": self.records_dropped, "records_dropped_by_kind": self.records_dropped_by_kind,
            "jobs_kept": self.jobs_kept, "jobs_by_state": self.jobs_by_state,
            "digest_before": self.digest_before, "dropped": [d.to_jsonable() for d in self.dropped],
            "recovered": self.recovered, "elapsed_s": round(self.elapsed_s, 6),
        }

    def report_doc(self) -> dict:
        """pack's report (the same shape for every format): sizes before/after, what is dropped, the digest."""
        d = self.to_jsonable()
        return pack_doc(self, {"format": "workq", "root": d["root"]}, d["before"], d["after"],
                        [f"{x['file'] or '-'}@0x{x['offset'] or 0:x}: {x['what']} ({x['code']}"
                         + (f", {x['length']} bytes" if x["length"] is not None else "") + f"): {x['message']}"
                         for x in d["dropped"]] + d["recovered"], d["digest_before"], d)

    @property
    def write_total(self) -> int:
        return self.bytes_after

    def fill(self, d: str, step: StepRunner, fsync: bool = True) -> tuple[list[str], int]:
        if step.dry:                # the labels only
            for seq in range(1, self.segments_after + 1):
                step(f"write:{segment_name(seq)}", None)
            return [], 0
        return _write_segments(self, d, step, fsync)

    def verify_copy(self, d: str) -> tuple[int, str]:
        """Replay the written log at the plan's as-of: (records, digest), or PackMismatch."""
        rep = run_log(discover([d])[0], self.as_of_ns, state=True)
        got = rep.state.digest()
        jid, diff = first_difference(self.state, rep.state) if got != self.digest_before else (None, "")
        return rep.records, prove("packed log does not replay to the input's state at as-of", self.digest_before, got,
                                  path=d, verdict=rep.verdict, detail=lambda: f"first difference: {diff}", job_id=jid)


# ---------------------------------------------------------------- synthesized history
def _tail(job: Job) -> list[tuple[CmdType, bytes | None]]:
    """The commands after a live job's add/schedule that rebuild its state (see the module docstring)."""
    st, a = job.state, job.attempts
    S, T = (CmdType.START_ATTEMPT, None), (CmdType.TIMEOUT_ATTEMPT, None)
    if st is JobState.NEW:
        return []
    if st is JobState.PENDING:
        return [S, T] * a if a else [T]
    lead = [S, T] * (a - 1) + [S] if a else []
    if st is JobState.LEASED:
        return lead
    if st is JobState.COMPLETED:
        return lead + [(CmdType.COMPLETE, job.result or b"")]
    # FAILED
    if job.result == b"" and a and job.max_attempts and a >= job.max_attempts:
        return [S, T] * a
    return lead + [(CmdType.FAIL, job.result or b"")]


def _synth_length(cmd: CmdType, result: bytes | None) -> int:
    if result is None:
        return _ID_RECORD
    n = 17 + len(encode_uvarint(len(result))) + len(result)
    return 15 + len(encode_uvarint(n)) + n + 4


def _synth_record(t: GoTime, jid: bytes, cmd: CmdType, result: bytes | None) -> bytes:
    if result is None:
        return encode_record(t, bytes((int(cmd),)) + jid)
    return encode_record(t, bytes((int(cmd),)) + jid + encode_uvarint(len(result)) + result)


def _read_varint_len(head: bytes, at: int) -> tuple[int, int]:
    size = shift = 0
    for i in range(10):
        c = head[at + i]
        size |= (c & 0x7F) << shift
        if c < 0x80:
            return size, at + i + 1
        shift += 7
    raise ValueError("varint too long")


def _length(buf, path: str, offset: int) -> int:
    """The length of the record framed at ``offset`` of the mapped segment ``buf`` (``_sources``)."""
    try:
        size, q = _read_varint_len(buf, offset + 15)
    except (IndexError, ValueError):
        raise InputError("the log changed since it was read: no record here any more", path=path,
                         offset=offset) from None
    return q - offset + size + 4


def _add_record(buf, path: str, offset: int, length: int, jid: bytes) -> bytes:
    """Job ``jid``'s add/schedule record at ``offset`` of the mapped segment ``buf``, whole, its CRC holding."""
    rec = bytes(buf[offset:offset + length])
    if len(rec) != length or _crc(rec[:-4]) != _U32.unpack_from(rec, length - 4)[0]:
        raise InputError("the log changed since the plan: the record there no longer holds its CRC",
                         path=path, offset=offset)
    _, q = _read_varint_len(rec, 15)
    if rec[q] not in (CmdType.ADD, CmdType.SCHEDULE) or rec[q + 1:q + 17] != jid:
        raise InputError("the log changed since the plan: the record there is not the job's add/schedule",
                         path=path, offset=offset)
    return rec


def _iter_records(plan: WorkqPackPlan) -> Iterator[bytes]:
    """The packed log's records, in order (streamed: one job at a time)."""
    t = GoTime.from_unix_ns(plan.as_of_ns)
    jobs = plan.state.jobs
    order = plan.order
    if isinstance(order, bytes):      # the C packer's order (16 bytes an id)
        order = [order[i:i + 16] for i in range(0, len(order), 16)]
    with _sources(plan.log) as bufs:
        seg = dict(zip((s.path for s in plan.log.segments), bufs))
        for jid, ln in zip(order, plan.src_lengths):
            job = jobs[jid]
            yield _add_record(seg[job.src_path], job.src_path, job.src_offset, ln, jid)
            for cmd, result in _tail(job):
                yield _synth_record(t, jid, cmd, result)


# ---------------------------------------------------------------- counting the input
def _reference_pass(log: LogSet, as_of_ns: int) -> tuple[LogReport, Counter]:
    """The reference read and replay (the kernel could not take the log), counting the input's records by kind as
    they go by, as the kernel's statistics do in its pass: one read. A record whose payload did not decode is
    counted by its command byte, "(undecodable)" when that is no command."""
    run = LogRun(log, as_of_ns)
    kinds: Counter = Counter()
    for ev in run.events():
        if ev.__class__ is Record:
            c = ev.command
            kinds[_KIND[c.cmd] if c is not None else
                  _KIND.get(ev.raw_payload[0] if ev.raw_payload else 0, "(undecodable)")] += 1
    return run.report, kinds


def _dropped_from(report: LogReport) -> list[Dropped]:
    sizes = {}
    out: list[Dropped] = []
    for f in report.findings:
        if f.code == "WQ-IGNORED-FILE":
            out.append(Dropped("ignored-file", f.code, f.path, None, None, f.message + "; not carried over "
                               "(it stays in the backup)"))
            continue
        if f.severity != ERROR or not f.verdict:
            continue
        if f.verdict == Verdict.INVALID_HISTORY:
            try:
                ln = record_length(f.path, f.offset)
            except (InputError, OSError):
                ln = None
            out.append(Dropped("refused-record", f.code, f.path, f.offset, ln, f.message))
            continue
        if f.path not in sizes:
            try:
                sizes[f.path] = os.path.getsize(f.path)
            except OSError:
                sizes[f.path] = None
        end = f.resumes_at if f.resumes_at is not None else sizes[f.path]
        ln = None if end is None or f.offset is None else end - f.offset
        what = "torn-tail" if f.verdict == Verdict.TORN_TAIL else "unreadable"
        out.append(Dropped(what, f.code, f.path, f.offset, ln, f.message))
    return out


@timed
def pack_plan(log: LogSet, as_of_ns: int, *, segment_size: int = DEFAULT_SEGMENT_SIZE,
              salvage: bool = False) -> WorkqPackPlan:
    """Replay ``log`` at ``as_of_ns`` and describe the packed log (see the module docstring); nothing is written
    (what a crashed earlier install left is finished by ``pack --apply`` itself, before it plans)."""
    if segment_size < 1:
        raise UsageError(f"segment size must be positive, not {segment_size}")
    sigs = {s.path: FileSig.of(s.path) for s in log.segments}
    try:                    # one pass: the replay, and the records by kind (the kernel's statistics)
        res = fast_run(log, as_of_ns, keep=True, stats=True, through=True)
    except Bail as exc:
        if exc.handed_back:
            progress.begin(progress.REFERENCE_PASS)
        report, by_kind_before = _reference_pass(log, as_of_ns)
    else:
        report = fast_report(log, res, None)
        by_kind_before = Counter({_KIND[c]: n for c, n in enumerate(res.stats.records()) if n and c in _KIND})
    code = report.verdict
    pack_refusal(report, salvage, ("a corrupt log", "a history workq-server refuses"),
                 "--salvage packs what is readable and lists what is dropped", where=True)
    state = report.state
    table = _c_table(state)
    progress.begin("plan the packed log", len(state.jobs), "jobs")
    if table is not None:       # the kernel's job table lays the packed log out itself (kernel/pack.c)
        with _sources(log) as bufs:
            try:
                order, lens, segs_after, bytes_after, records_after, counts = table.pack_plan(bufs, segment_size)
            except ValueError as exc:
                raise _changed(log, exc) from None
        lengths = array("I")
        lengths.frombytes(lens)
        by_kind_after = {CmdType(c).label: n for c, n in enumerate(counts) if c and n}
        progress.at(len(lengths))
    else:
        order, lengths, segs_after, bytes_after, records_after, by_kind_after = _layout(log, state, segment_size)
    plan = WorkqPackPlan(
        log=log, as_of_ns=as_of_ns, segment_size=segment_size, salvage=salvage, input_verdict=code,
        sigs=sigs, segments_before=report.segments, bytes_before=report.bytes, records_before=report.records,
        by_kind_before=dict(by_kind_before), segments_after=segs_after, bytes_after=bytes_after,
        records_after=records_after, by_kind_after=by_kind_after, jobs_kept=len(lengths),
        jobs_by_state=state.counts_by_state(), digest_before=state.digest(), state=state, order=order,
        src_lengths=lengths, report=report, dropped=_dropped_from(report), table=table)
    return plan


def _c_table(state: ReplayState):
    """The kernel's C job table behind a replayed state, if it is one (it packs in C), else None."""
    jobs = state.jobs
    table = jobs.table if isinstance(jobs, CompactJobs) and jobs.as_of_ns == state.as_of_ns else None
    return table if hasattr(table, "pack_segment") else None


@contextlib.contextmanager
def _sources(log: LogSet) -> Iterator[list]:
    """The input segments' bytes, mapped read-only (index = a row's segment number), for the packers."""
    with contextlib.ExitStack() as stack:
        out: list = []
        for s in log.segments:
            try:
                f = stack.enter_context(open(s.path, "rb"))
                size = os.fstat(f.fileno()).st_size
                out.append(stack.enter_context(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)) if size else b"")
            except OSError as exc:
                raise InputError(exc.strerror or str(exc), path=s.path) from None
        yield out


def _changed(log: LogSet, exc: ValueError) -> InputError:
    """The C packer's ValueError("<segment number> <offset>: what") as the InputError the Python path raises."""
    seg, _, rest = str(exc).partition(" ")
    off, _, what = rest.partition(": ")
    try:
        path, offset = log.segments[int(seg)].path, int(off)
    except (ValueError, IndexError):
        return InputError(f"the log changed since it was read: {exc}", path=log.root)
    return InputError(f"the log changed since it was read: {what}", path=path, offset=offset)


def _layout(log: LogSet, state: ReplayState, segment_size: int):
    """The packed log's layout in Python (a state that is not a kernel table's): (order, add-record lengths,
    segments, bytes, records, records by kind) — the reference kernel/pack.c is proven equal to."""
    seg_no = {s.path: i for i, s in enumerate(log.segments)}
    order = [jid for _, _, jid in sorted((seg_no.get(j.src_path, -1), j.src_offset, jid)
                                         for jid, j in state.jobs.items())]
    # one pass over the live jobs: add-record lengths, output kinds, and the writer's roll-over rule (``_rolled``)
    lengths = array("Q")
    kinds: Counter = Counter()
    jobs = state.jobs

    def record_lengths() -> Iterator[int]:
        with _sources(log) as bufs:
            seg = dict(zip((s.path for s in log.segments), bufs))
            for i, jid in enumerate(order):
                if not i & 0xFFF:
                    progress.at(i)
                job = jobs[jid]
                lengths.append(_length(seg[job.src_path], job.src_path, job.src_offset))
                kinds[job.kind] += 1
                yield lengths[-1]
                for cmd, result in _tail(job):
                    kinds[cmd] += 1
                    yield _ID_RECORD if result is None else _synth_length(cmd, result)
    segs_after = bytes_after = records_after = 0
    lens, sizes = itertools.tee(record_lengths())
    for segs_after, n in zip(_rolled(lens, segment_size), sizes):
        bytes_after += n
        records_after += 1
    bytes_after += segs_after * HEADER_SIZE
    return order, lengths, segs_after, bytes_after, records_after, {c.label: n for c, n in sorted(kinds.items())}


# ---------------------------------------------------------------- writing and verifying
def first_difference(expected: ReplayState, actual: ReplayState) -> tuple[str | None, str]:
    """(job uuid, description) of the first job (by id) whose canonical form differs."""
    for jid in sorted(set(expected.jobs) | set(actual.jobs)):
        a, b = expected.jobs.get(jid), actual.jobs.get(jid)
        ca = a.canonical() if a else None
        cb = b.canonical() if b else None
        if ca != cb:
            u = str(uuid.UUID(bytes=jid))
            if ca is None:
                return u, f"job {u} is in the output only"
            if cb is None:
                return u, f"job {u} is missing from the output"
            keys = [k for k in sorted(ca) if ca[k] != cb[k]]
            return u, f"job {u} differs in " + ", ".join(f"{k} ({ca[k]!r} -> {cb[k]!r})" for k in keys)
    return None, "states differ"


def _write_segments(plan: WorkqPackPlan, directory: str, step: StepRunner, fsync: bool) -> tuple[list[str], int]:
    """Write the plan's records as segments into ``directory`` (roll-over as upstream's appender), one ``write:``
    step each (``plan.write_step``: every write checked, fsynced)."""
    def chunks(recs) -> Iterator[bytes]:
        for rec in itertools.chain((HEADER_BYTES,), recs):
            advance(len(rec))
            yield rec
    names: list[str] = []
    total = 0
    for seq, recs in enumerate(_segments_c(plan) if plan.table is not None else _segments(plan), 1):
        names.append(segment_name(seq))
        total += write_step(step, "write:" + names[-1], os.path.join(directory, names[-1]),
                            lambda recs=recs: chunks(recs), fsync=fsync)
    return names, total


def _rolled(lengths: Iterator[int], segment_size: int) -> Iterator[int]:
    """The segment number of each record of ``lengths``, in order: upstream's appender rolls over to a new segment
    once one holds ``segment_size`` bytes or more (its first record whatever its size)."""
    seq = size = 0
    for n in lengths:
        if not seq or size >= segment_size:
            seq, size = seq + 1, HEADER_SIZE
        size += n
        yield seq


def _segments(plan: WorkqPackPlan) -> Iterator[Iterator[bytes]]:
    """The packed log's records, segment by segment (``_rolled``; each consumed before the next starts)."""
    recs, lens = itertools.tee(_iter_records(plan))
    for _, group in itertools.groupby(zip(_rolled(map(len, lens), plan.segment_size), recs), key=lambda p: p[0]):
        yield (rec for _, rec in group)


def _segments_c(plan: WorkqPackPlan) -> Iterator[tuple[bytes, memoryview]]:
    """``_segments`` by the kernel's packer: each segment's records made in C in one piece (the same bytes
    ``_iter_records`` gives, the same roll-over), its first record apart from the rest."""
    time15 = encode_record(GoTime.from_unix_ns(plan.as_of_ns), b"")[:GO_TIME_SIZE]
    lens = plan.src_lengths.tobytes()
    job = rec = 0
    with _sources(plan.log) as bufs:
        while job < len(plan.src_lengths):
            try:
                chunk, first_len, job, rec, _ = plan.table.pack_segment(bufs, plan.order, lens, job, rec,
                                                                         plan.segment_size, time15)
            except ValueError as exc:
                raise _changed(plan.log, exc) from None
            yield chunk[:first_len], memoryview(chunk)[first_len:]
