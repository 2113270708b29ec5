"""The workq fleet: verify, replay and stats over many workq logs, split by job — the workq format's
``spark_fleet`` (``WorkqFleet``), with the same results as the local engine. It runs on a ``cluster`` that
``wqtool.spark.cluster`` supplies (Spark: tasks, a shuffle, a collect); nothing here imports Spark.

Two paths, both engine code run in Spark tasks, merged on the driver into ``engine.run.LogReport``s:

  fast       (``run_fleet``) logs, intact or damaged, through the engine's hot kernel (``FastReplay``, through
             damage as ``run_log`` locally): one task per log, or a big log split by job over the executor slots
             (every share frames every record, CRC-checks, resynchronises on the same damage and replays the
             jobs whose id's last byte is its own) — a job's state depends only on its own records in log order.
             A log the kernel bails on (a time beyond int64 ns, an attempt count beyond uint32, no C kernel on
             the executor) goes to the reference path.
  reference  (``run_reference``: a log the kernel bails on; ``fast=False``) any log:
             A  one task per segment (``spark.range`` with one row per partition → ``mapInArrow``): the engine's
                reader frames and CRC-checks the segment (payloads not decoded); reader findings, counts and sizes
                go to the driver; records go on packed in chunks per job part (first byte of the job id).
             B  shuffled by part, chunks sorted by (log, segment, chunk): each task holds all records of its jobs
                in log order, decodes them with the engine's codec and applies them to ``WorkqReplay`` — so the
                state, the findings (unknown job, duplicates, skip-if-expired at --as-of, ...) and their order
                within a job are the local engine's. Canonical job lines (the digest's input) go to the driver
                per part; parts are ranges of job ids, so the driver hashes them in order.

The driver puts findings back into file order (the first --max-findings kept, all counted), computes the verdict,
counts, log-wide record indexes (per-segment counts give each segment's base) and the closing notes exactly as
``WorkqReplay.finish()`` does.
"""
from __future__ import annotations

import contextlib
import heapq
import os
import pickle
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ...formats.workq import CmdType
from ..findings import Finding, Fold, per_quota, quota, worst
from ..fleet import TaskFindings, check_count, lost
from ..run import LogReport
from ..stats import RecordStats
from .fastreplay import new_table
from .format import FORMAT
from .reader import LogSet, Segment
from .replay import (CompactJobs, JobState, ReplayState, WorkqReplay, closing_notes, digest_line, digest_start,
                     lease_expires_at)
from .verify import log_size

# stage outputs: kind of row
_REC, _SEG, _LOG, _LINE, _JOB, _IDS = 0, 1, 2, 3, 4, 5
_INF = float("inf")


# ---------------------------------------------------------------- results
@dataclass(slots=True)
class FleetReplayState(ReplayState):
    """A ReplayState computed on Spark: the digest, counts per state and per queue come from the executors;
    ``jobs`` holds the jobs only when they were asked for (replay), else it is empty and ``job_count`` says."""

    fleet_digest: str = ""
    total_jobs: int = 0
    by_state: dict = field(default_factory=dict)
    by_queue: dict = field(default_factory=dict)

    def job_count(self) -> int:
        return self.total_jobs

    def digest(self) -> str:
        return self.fleet_digest

    def counts_by_state(self) -> dict[str, int]:
        return dict(self.by_state)

    def queues(self) -> dict[str, dict[str, int]]:
        return dict(self.by_queue)


@dataclass(slots=True)
class FleetLog:
    report: LogReport            # as engine.verify.run_log returns it; .state is a FleetReplayState
    stats: RecordStats           # .jobs is empty: the distinct job count is in ``jobs``
    jobs: int = 0
    tasks: set = field(default_factory=set)   # the job partitions' task tokens that hold this log's jobs


# ---------------------------------------------------------------- stage A: one task per segment
# Rows between the stages are few and large: a chunk of packed records per (segment, job part), so the JVM
# moves megabytes, not millions of rows. A job's part is the first byte of its id: parts are ranges of ids, so
# the digest's job-id order is the part order, then the order inside a part.
_A_FIELDS = (("part", "int32"), ("log", "int32"), ("seg", "int32"), ("chunk", "int32"), ("kind", "int8"),
             ("blob", "binary"))
_B_FIELDS = (("log", "int32"), ("kind", "int8"), ("part", "int32"), ("blob", "binary"))
_HDR = struct.Struct(">QQIII")          # offset, index in segment, payload size, crc, len(body)
_CHUNK = 8 << 20                        # bytes of packed records per row
_PARTS = 256


def _arrow_schema(fields):
    import pyarrow as pa
    t = {"int8": pa.int8(), "int32": pa.int32(), "int64": pa.int64(), "binary": pa.binary()}
    return pa.schema([pa.field(n, t[k]) for n, k in fields])


def _batch(schema, cols):
    import pyarrow as pa
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)


@dataclass
class _SegTask:
    log: int
    seg: int
    segment: Segment
    is_newest: bool


class _StageA:
    """Frame and CRC-check one segment with the engine's reader; route each record to its job's part."""

    def __init__(self, tasks: list[_SegTask], limit: int | None):
        self.tasks, self.limit = tasks, limit

    def __call__(self, batches):
        schema = _arrow_schema(_A_FIELDS)
        for batch in batches:
            for tid in batch.column(0).to_pylist():
                yield from self._scan(self.tasks[tid], schema)

    def _scan(self, t: _SegTask, schema):
        from .model import Record
        from .segments import segment_scan
        pack = _HDR.pack
        parts: dict[int, list] = {}
        sizes: dict[int, int] = {}
        chunks: dict[int, int] = {}
        out = ([], [], [], [], [], [])
        size_bytes, events = segment_scan(t.segment, 0, t.is_newest, decode=False)
        acc = _FindingAcc(self.limit)
        n = seq = 0

        def emit(p: int) -> None:
            c = chunks.get(p, 0)
            chunks[p] = c + 1
            for col, v in zip(out, (p, t.log, t.seg, c, _REC, b"".join(parts.pop(p)))):
                col.append(v)
            sizes[p] = 0

        for ev in events:
            if ev.__class__ is Record:
                b = ev.raw_payload
                k = len(b) - ev.size + 1
                p = b[k] if k < len(b) else 0
                buf = parts.get(p)
                if buf is None:
                    buf = parts[p] = []
                buf.append(pack(ev.offset, ev.index, ev.size, ev.crc, len(b)))
                buf.append(b)
                n += 1
                sz = sizes.get(p, 0) + len(b) + 28
                sizes[p] = sz
                if sz >= _CHUNK:
                    emit(p)
                    yield _batch(schema, out)
                    for col in out:
                        col.clear()
            else:
                seq += 1
                acc.add((t.seg, ev.offset or 0, 0, seq), ev)
        for p in sorted(parts):
            emit(p)
        summary = {"seg": t.seg, "records": n, "bytes": size_bytes, "findings": acc}
        for col, v in zip(out, (-1, t.log, t.seg, 0, _SEG, pickle.dumps(summary, protocol=5))):
            col.append(v)
        yield _batch(schema, out)


class _FindingAcc(TaskFindings):
    """Counts every finding; keeps the ``limit`` first in file order (sort key given by the caller) of each quota
    (``findings.quota``: errors, warnings, notes, as-of findings), as the local ``FindingSink`` does; sums up every
    as-of finding (``folds``), kept or not."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.kept: dict[str, list] = {}   # quota -> heap of (negated key, n, finding) when limited, else (key, n, f)
        self.folds: dict[str, Fold] = {}
        self._n = 0
        super().__init__()

    def add(self, key: tuple, f: Finding) -> None:
        self.count(key, f)
        self._n += 1
        q = quota(f)
        if q == "as-of":      # findings arrive in job order here: each one merged by position
            one = Fold(f.code)
            one.take(f.path, f.offset, f.when, f.severity)
            self.folds.setdefault(f.code, Fold(f.code, f.severity)).merge(one)
        kept = self.kept.setdefault(q, [])
        if self.limit is None:
            kept.append((key, self._n, f))
        elif self.limit > 0:
            item = (tuple(-k for k in key), -self._n, f)
            if len(kept) < self.limit:
                heapq.heappush(kept, item)
            elif item > kept[0]:
                heapq.heapreplace(kept, item)

    def items(self) -> list[tuple[tuple, Finding]]:
        if self.limit is None:
            return [(k, f) for kept in self.kept.values() for k, _, f in kept]
        return [(tuple(-k for k in nk), f) for kept in self.kept.values() for nk, _, f in kept]


# ---------------------------------------------------------------- stage B: by job
class _StageB:
    """All records of a set of jobs, in log order (chunks sorted by log, segment, chunk): the engine's codec and
    ``WorkqReplay`` — a job's state depends only on its own records, so each job ends as in the local run."""

    def __init__(self, paths: dict, as_of_ns: list[int], limit: int | None, *, digest: bool, jobs: bool,
                 stats: bool):
        self.paths, self.as_of_ns, self.limit = paths, as_of_ns, limit
        self.want_digest, self.want_jobs, self.want_stats = digest, jobs, stats

    def __call__(self, batches):
        from .segments import rebuild_record
        token = os.urandom(8).hex()   # names this task's rows: the driver checks each task's rows all arrived
        schema = _arrow_schema(_B_FIELDS)
        paths = self.paths
        unpack = _HDR.unpack_from
        hsize = _HDR.size
        accs: dict[int, _LogAcc] = {}
        out = ([], [], [], [])
        for rb in batches:
            logs = rb.column(1).to_pylist()
            segs = rb.column(2).to_pylist()
            kinds = rb.column(4).to_pylist()
            blobs = rb.column(5).to_pylist()
            for log, seg, kind, blob in zip(logs, segs, kinds, blobs):
                if kind == _SEG:  # stage A's per-segment summaries go straight on to the driver
                    for col, v in zip(out, (log, _SEG, -1, blob)):
                        col.append(v)
                    continue
                acc = accs.get(log)
                if acc is None:
                    acc = accs[log] = _LogAcc(log, self.as_of_ns[log], self.limit, self.want_stats)
                path = paths[log, seg]
                pos, end = 0, len(blob)
                while pos < end:
                    off, idx, size, crc, blen = unpack(blob, pos)
                    pos += hsize
                    acc.apply(rebuild_record(path, off, idx, size, crc, blob[pos:pos + blen]), seg)
                    pos += blen
            if len(out[0]) >= 64:
                yield _batch(schema, out)
                for col in out:
                    col.clear()
        for acc in accs.values():
            for row in acc.finish(self.want_digest, self.want_jobs, token):
                for col, v in zip(out, row):
                    col.append(v)
        if self.want_stats and accs:  # jobs seen in any log: a job's records are all in this task
            union = set().union(*(acc.stats.jobs for acc in accs.values()))
            for col, v in zip(out, (-1, _LOG, -1, pickle.dumps((token, len(union))))):
                col.append(v)
        if out[0]:
            yield _batch(schema, out)


class _LogAcc:
    """Stage B's state for one log inside one task: the replay, stats and findings."""

    def __init__(self, log: int, as_of_ns: int, limit: int | None, stats: bool):
        self.log = log
        self.replay = WorkqReplay(as_of_ns)
        self.stats = RecordStats() if stats else None
        self.findings = _FindingAcc(limit)

    def apply(self, rec, seg: int) -> None:
        r = self.replay
        r.apply(rec)
        if self.stats is not None:
            self.stats.add(_facts(rec))
        if r.findings:
            for n, f in enumerate(r.findings):
                self.findings.add((seg, rec.offset, 1, n), f)
            r.findings.clear()

    def finish(self, digest: bool, want_jobs: bool, token: str = ""):
        """Rows for the driver: the summary, the canonical lines per part (zlib), the jobs (pickled)."""
        r = self.replay
        by_state: Counter = Counter()
        by_queue: Counter = Counter()
        add_jobs = leased = 0
        lines: dict[int, list] = {}
        for k in sorted(r.jobs):
            job = r.jobs[k]
            if job.state is JobState.LEASED:  # what WorkqReplay.finish() does to a leased job
                job.lease_expires_ns = lease_expires_at(r.as_of_ns, job.ttr)
                leased += 1
            label = job.state.label
            by_state[label] += 1
            by_queue[job.name, label] += 1
            add_jobs += job.kind is CmdType.ADD
            if digest:
                lines.setdefault(k[0], []).append(
                    digest_line(job)[:-1])
        stats = None
        if self.stats is not None:  # the job ids stay here (for the union); their count goes on
            stats = RecordStats(self.stats.records, self.stats.bytes, self.stats.by_type, self.stats.bytes_by_type,
                                self.stats.first_ns, self.stats.last_ns, set())
        yield self.log, _LOG, -1, pickle.dumps({
            "records": r.records, "applied": r.applied, "stats": stats,
            "distinct": 0 if stats is None else len(self.stats.jobs),
            "by_state": by_state, "by_queue": by_queue, "add_jobs": add_jobs, "leased": leased,
            "findings": self.findings, "task": token, "line_rows": len(lines),
            "job_rows": int(bool(want_jobs and r.jobs))}, protocol=5)
        for p, ls in lines.items():
            ls.append(b"")
            yield self.log, _LINE, p, zlib.compress(b"\n".join(ls), 1)
        if want_jobs and r.jobs:
            yield self.log, _JOB, -1, pickle.dumps(list(r.jobs.values()), protocol=5)


def _digest_start(as_of_ns: int):
    return digest_start(as_of_ns)


# ---------------------------------------------------------------- the driver
def as_of_each(as_of_ns: int | Sequence[int], n: int) -> list[int]:
    """Each of ``n`` logs' --as-of time: one for all, or one each (``--as-of last``: each log's own)."""
    out = [as_of_ns] * n if isinstance(as_of_ns, int) else list(as_of_ns)
    if len(out) != n:
        raise ValueError(f"{len(out)} --as-of times for {n} logs")
    return out


def run_reference(cluster, logs: Sequence[LogSet], as_of_ns: int | Sequence[int], *, limit: int | None = None,
                  digest: bool = True, want_jobs: bool = False, stats: bool = False, partitions: int | None = None,
                  progress: Callable[[str], None] | None = None, stats_total: list | None = None) -> list[FleetLog]:
    """The reference pipeline (stages A and B): any log, damaged or not; one FleetLog per log, in order.
    ``as_of_ns``: one time for all the logs or one each."""
    say = progress or (lambda _m: None)
    as_of = as_of_each(as_of_ns, len(logs))
    tasks: list[_SegTask] = []
    paths: dict[tuple[int, int], str] = {}
    total = 0
    for li, log in enumerate(logs):
        newest = log.newest
        for si, seg in enumerate(log.segments):
            tasks.append(_SegTask(li, si, seg, seg is newest))
            paths[li, si] = seg.path
            try:
                total += os.path.getsize(seg.path)
            except OSError:
                pass
    if partitions is None:
        partitions = max(cluster.partitions(8), total // (256 << 20) + 1)
    rows: list = []
    if tasks:
        say(f"spark: {len(logs)} log(s), {len(tasks)} segment(s), {total} bytes, {partitions} job partition(s)")
        a = cluster.tasks(len(tasks), _StageA(tasks, limit), _A_FIELDS,
                          what=lambda k: f"segment {tasks[k].segment.path} of log {logs[tasks[k].log].root}")
        b = cluster.regroup(a, partitions, "part", ("log", "seg", "chunk"),
                            _StageB(paths, as_of, limit, digest=digest, jobs=want_jobs, stats=stats), _B_FIELDS)
        rows = cluster.collect(b, keep_partitions=True)   # the job partitions are the parallelism
    by_log: dict[int, list] = {}
    for r in rows:
        by_log.setdefault(r["log"], []).append(r)
    fleet = [_assemble(li, log, as_of[li], limit, by_log.get(li, []), digest) for li, log in enumerate(logs)]
    if stats_total is not None:
        union = dict(pickle.loads(r["blob"]) for r in by_log.get(-1, ()))
        tasks_seen = {t for fl in fleet for t in fl.tasks}
        check_count("the job partitions' distinct-job counts", len(tasks_seen & union.keys()), len(tasks_seen))
        stats_total.extend(union.values())
    return fleet


def _assemble(li: int, log: LogSet, as_of_ns: int, limit: int | None, rows, want_digest: bool) -> FleetLog:
    segs: dict[int, dict] = {}
    parts: list[dict] = []
    n_job_rows = 0
    jobs: dict = {}
    lines: list[tuple[int, bytes]] = []
    for r in rows:
        kind = r["kind"]
        if kind == _SEG:
            d = pickle.loads(r["blob"])
            segs[d["seg"]] = d
        elif kind == _LOG:
            parts.append(pickle.loads(r["blob"]))
        elif kind == _JOB:
            n_job_rows += 1
            for job in pickle.loads(r["blob"]):
                jobs[job.id] = job
        elif kind == _LINE:
            lines.append((r["part"], r["blob"]))
    digest = ""
    if want_digest:  # parts are ranges of job ids: in part order, the lines are in job-id order
        h = _digest_start(as_of_ns)
        for _, blob in sorted(lines, key=lambda pb: pb[0]):
            h.update(zlib.decompress(blob))
        digest = h.hexdigest()
        if jobs:
            jobs = dict(sorted(jobs.items()))
    what = f"log {log.root}"
    check_count(f"{what}: the segments' scans", len(segs), len(log.segments))
    check_count(f"{what}: the records replayed by job", sum(p["records"] for p in parts),
                sum(d["records"] for d in segs.values()), "records, not results")
    check_count(f"{what}: the digest's parts", len(lines), sum(p["line_rows"] for p in parts) if want_digest else 0)
    check_count(f"{what}: the job rows", n_job_rows, sum(p["job_rows"] for p in parts))
    base, n = {}, 0
    for si in range(len(log.segments)):
        base[si] = n
        n += segs[si]["records"]
    report = LogReport(root=log.root, segments=len(log.segments), records=n,
                       bytes=sum(d["bytes"] for d in segs.values()))
    # findings back in file order: discovery's, then per segment by offset (reader before replay), then notes
    merged: list[tuple[tuple, Finding]] = []
    counts, sev, exits, torn = Counter(), Counter(), set(), None
    for i, f in enumerate(log.findings):
        merged.append(((-1, i, 0, 0), f))
        counts[f.code] += 1
        sev[f.severity] += 1
        if f.verdict:
            exits.add(f.verdict)
    accs = [d["findings"] for d in segs.values()] + [p["findings"] for p in parts]
    for acc in accs:
        counts.update(acc.counts)
        sev.update(acc.severities)
        exits |= acc.exits
        if acc.torn is not None and (torn is None or acc.torn[0] > torn[0]):
            torn = acc.torn
        for key, f in acc.items():
            if key[0] >= 0:
                if f.record_index is not None:
                    f.record_index += base[key[0]]
                if f.next_index is not None:
                    f.next_index += base[key[0]]
            merged.append((key, f))
    merged.sort(key=lambda kf: kf[0])
    stats = RecordStats()
    by_state: Counter = Counter({s.label: 0 for s in JobState})
    by_queue: Counter = Counter()
    add_jobs = leased = records = applied = distinct = 0
    for p in parts:
        if p["stats"] is not None:
            stats.merge(p["stats"])
        by_state.update(p["by_state"])
        by_queue.update(p["by_queue"])
        add_jobs += p["add_jobs"]
        leased += p["leased"]
        records += p["records"]
        applied += p["applied"]
        distinct += p["distinct"]
    notes = closing_notes(add_jobs, leased)
    for f in notes:
        merged.append(((_INF,), f))
        counts[f.code] += 1
        sev[f.severity] += 1
    report.findings = per_quota([f for _, f in merged], limit)    # in file order, as FindingSink keeps them
    report.limit = limit
    for acc in accs:
        for code, fold in acc.folds.items():
            report.folds.setdefault(code, Fold(code, fold.severity)).merge(fold)
    report.counts = counts
    report.severities = sev
    report.verdict = worst(exits)
    if torn is not None:
        report.last_good = (torn[1], torn[2])
    queues: dict[str, dict[str, int]] = {}
    for (name, label), v in sorted(by_queue.items()):
        queues.setdefault(name, {s.label: 0 for s in JobState})[label] = v
    n_jobs = sum(by_state.values())
    report.state = FleetReplayState(as_of_ns, jobs, records, applied, [f for f in notes],
                                    fleet_digest=digest, total_jobs=n_jobs,
                                    by_state=dict(by_state), by_queue=queues)
    return FleetLog(report, stats, distinct, {p["task"] for p in parts})


# ---------------------------------------------------------------- the fast path: the engine's kernel
class _FastTask:
    """One share of one log through the engine's hot kernel (``FastReplay``): every record is framed, the jobs
    whose id's last byte is ``part`` mod ``nparts`` are CRC-checked and replayed. Returns None when the kernel
    bails (``fastreplay.Bail``: what its table cannot hold; damage it reads through, as ``run_log`` does): that
    log then goes through the reference pipeline. A chained share (``ranges``) replays an id range and CRC-checks
    only the records in its bytes (``crcs``); when it meets a crc mismatch it returns ``{"damaged": where}`` and
    the driver reads the log whole."""

    def __init__(self, units: list[tuple[int, LogSet, int, int]], bins: list[list[int]], as_of_ns: list[int],
                 digest: bool, want_jobs: bool, limit: int | None = None, stats: bool = False, ids: bool = False,
                 shuffle: bool = False, ranges: list[tuple[int, int]] | None = None, relay=None,
                 crcs: list[tuple[int, int]] | None = None):
        self.units, self.bins = units, bins     # a Spark task runs the units of its bin, one after another
        # a chained log (``chain_plan``): share k replays the jobs of id range ranges[k] and hashes its digest lines
        # after share k - 1's, from its running state (passed through ``relay``: the cluster's ``Relay``); it
        # CRC-checks the records starting in the bytes crcs[k] (``crc_share``, by the driver's pinned size; None:
        # every record)
        self.ranges, self.relay, self.crcs = ranges, relay, crcs
        self.as_of_ns, self.digest, self.want_jobs, self.limit = as_of_ns, digest, want_jobs, limit
        self.stats, self.ids = stats, ids       # stats of whole logs; ``ids``: ship the job ids (a union over logs)
        self.shuffle = shuffle                  # the ids as rows by first byte (distributed_union), not in the blob

    def __call__(self, batches):
        import pyarrow as pa
        schema = _arrow_schema(_B_FIELDS)
        for batch in batches:
            for tid in batch.column(0).to_pylist():
                for u in self.bins[tid]:     # each unit's result goes as soon as it is made
                    li = self.units[u][0]
                    res = self._run(*self.units[u][1:], self.as_of_ns[li])
                    by_prefix = []
                    if res is not None and self.shuffle:     # a big fleet: the ids to the union's shuffle
                        by_prefix = _by_prefix(res.pop("ids"))
                        res["prefixes"] = [p for p, _ in by_prefix]
                    blob = pickle.dumps(res, protocol=5)
                    yield pa.RecordBatch.from_arrays([pa.array([li], pa.int32()), pa.array([_LOG], pa.int8()),
                                                      pa.array([u], pa.int32()), pa.array([blob], pa.binary())],
                                                     schema=schema)
                    if by_prefix:     # the ids go to the union's shuffle by their first byte, never the driver
                        n = len(by_prefix)
                        yield pa.RecordBatch.from_arrays([pa.array([li] * n, pa.int32()),
                                                          pa.array([_IDS] * n, pa.int8()),
                                                          pa.array([p for p, _ in by_prefix], pa.int32()),
                                                          pa.array([b for _, b in by_prefix], pa.binary())],
                                                         schema=schema)

    def _run(self, log: LogSet, part: int, nparts: int, as_of_ns: int):
        """Counts, per-queue counts and the digest (or, for a share of a split log, its digest lines) from the
        kernel's compact job table: no ``Job`` object is built. With ``want_jobs`` the table's rows follow as
        Arrow IPC batches (``_rows_ipc``), never pickled Jobs."""
        from .fastreplay import Bail, Damaged, FastReplay, gc_paused, note_counts
        chained = self.ranges is not None
        fr = FastReplay(log, as_of_ns, part=part, nparts=nparts, keep=self.digest or self.want_jobs,
                        limit=self.limit, through=True, stats=self.stats,       # through damage, as run_log locally
                        id_range=self.ranges[part] if chained else None,
                        crc_range=self.crcs[part] if chained and self.crcs else None)
        try:
            with gc_paused():   # as fast_run does locally: millions of new dict entries, no cycles
                fr.run()
        except (Bail, Damaged) as e:
            if chained:         # the next share waits for this one's state: it is told the chain broke
                self._hash_in_turn(None, part, nparts, as_of_ns)
            # damage a share met: the driver reads the log whole (the shares trusted each other's CRC ranges)
            return {"damaged": str(e)} if isinstance(e, Damaged) else None
        capped = fr.findings
        out = {"findings": list(capped), "overflow": capped.overflow, "verdicts": capped.verdicts,
               "last_good": capped.last_good, "folds": capped.folds, "records": fr.records, "applied": fr.applied,
               "bytes": fr.bytes, "segments": fr.segments, "notes": note_counts(fr.jobs), "keys": b"",
               "lines": b"", "rows": [], "jobs": len(fr.jobs)}
        if self.stats:          # as fast_stats makes them locally; the ids packed, for the driver's union
            from .verify import scan_stats
            out["stats"] = scan_stats(fr.records, fr.stats, ids=False)
            if self.ids:        # sorted and unique already in the kernel's table: no Python object per id
                out["ids"] = fr.stats.packed_ids()
        if fr.keep:     # CompactJobs over the kernel's table (finish_state's, without its second note_counts)
            jobs = CompactJobs(fr.jobs, [s.path for s in log.segments], as_of_ns)
            out["by_state"], out["by_queue"] = jobs.counts()
            if self.digest and chained:         # its lines hashed in turn: only 112 bytes of state leave
                link = self._hash_in_turn(jobs, part, nparts, as_of_ns)
                if link is None:                # a share before it bailed: the log goes to the reference path
                    return None
                out["chain"], out["digest"] = link
            elif self.digest and nparts == 1:
                out["digest"] = jobs.digest()   # the whole log is here: no lines to ship to the driver
            elif self.digest:                   # a share: its lines in id order, merged by id on the driver
                out["keys"] = b"".join(jobs.sorted_ids())
                sink = _Lines()
                try:
                    jobs.table.digest(sink, as_of_ns)           # the C table writes them; PyJobTable too
                except OverflowError:                           # an as-of beyond 128 bits: the Python lines
                    sink.chunks = [digest_line(j) for j in jobs.iter_sorted()]
                text = b"".join(sink.chunks)
                check_count(f"log {log.root}: the digest lines of share {part}", text.count(b"\n"), len(jobs))
                out["lines"] = zlib.compress(text[:-1], 1)
            if self.want_jobs:
                out["rows"] = _rows_ipc(jobs.table)
        return out

    def _hash_in_turn(self, jobs, k: int, n: int, as_of_ns: int):
        """Share ``k`` of ``n`` of a chained log: the digest's sha256 goes from share to share in id order —
        share 0 starts it (``chain_start``) and hashes its jobs' lines, each next share takes the running state
        over (``_sha.Sha256``: 112 bytes through the relay) and hashes its own, so the last one holds the log's
        digest, byte for byte the local one, and no line leaves a task. A share that bailed (``jobs`` None), or
        whose predecessor did, sends "!" on. Returns (k, the state taken over or None, the state handed on), the
        digest (the last share; else "") — or None when the chain broke."""
        from . import _sha
        h = taken = None
        if jobs is not None and k == 0:
            h = chain_start(as_of_ns)
            _hash_lines(jobs, h, as_of_ns)
        elif jobs is not None:
            taken = self.relay.receive(str(k - 1), CHAIN_WAIT_S)
            if taken is not None and taken != "!":
                h = _sha.Sha256(bytes.fromhex(taken))
                _hash_lines(jobs, h, as_of_ns)
        if k < n - 1:
            self.relay.send(str(k), "!" if h is None else h.state().hex())
        if h is None:
            return None
        return (k, taken, h.state().hex()), (h.hexdigest() if k == n - 1 else "")


def chain_start(as_of_ns: int):
    """``replay.digest_start`` in a ``_sha.Sha256``: the same header bytes, then its running state can move."""
    from . import _sha
    h = _sha.Sha256()
    ref = digest_start(as_of_ns)            # the header is replay's: checked by hashing it both ways
    h.update(b"wqtool-workq-state-v1\n")
    h.update(f"as_of_ns={as_of_ns}\n".encode())
    if h.hexdigest() != ref.hexdigest():
        raise AssertionError("chain_start: replay.digest_start's header changed; update it here")
    return h


def _hash_lines(jobs, h, as_of_ns: int) -> None:
    """The digest lines of ``jobs`` (a CompactJobs) into ``h``, in id order, as ``CompactJobs.digest`` writes them."""
    try:
        jobs.table.digest(h, as_of_ns)          # the C table writes them (no update before its as-of check)
    except OverflowError:                       # an as-of beyond 128 bits: the Python lines
        for j in jobs.iter_sorted():
            h.update(digest_line(j))


#: a single log at least this big is chained over the slots for ``replay --summary`` (below it, one task: the
#: relay of the state and a second pass over the records cost more than they save)
CHAIN_MIN_BYTES = 32 << 20
#: how long a chained share waits for the state of the share before it (then the log goes to the reference path)
CHAIN_WAIT_S = 600.0
#: at most this many shares in a chain (each frames every record; the hashing is one after another)
CHAIN_MAX_SHARES = 2
#: the first share's part of the id space: it hashes before the next one can start hashing (see chain_plan);
#: the shares' CPU in one process (a 220 MiB log, load 5.5) puts the critical path max(scan 0 + hash 0, scan 1)
#: + hash 1 at 0.765 / 0.716 / 0.733 / 0.759 s for 0.30 / 0.34 / 0.38 / 0.42: within 2 % from 0.34 to 0.38
CHAIN_FIRST = 0.38


def crc_share(size: int, k: int, n: int) -> tuple[int, int]:
    """The bytes of a log of ``size`` bytes whose records share ``k`` of a chain of ``n`` CRC-checks: the k-th of
    ``n`` equal parts (the last one open-ended). The others it trusts; a share that meets a crc mismatch
    (``fastreplay.Damaged``) makes the driver read the log whole. Each record is checked by one share, so the
    chain's CRC work is one pass's; the first damage in file order is framed alike by every share (the records
    before it are intact) and is checked by the share whose range holds it: no damage goes unseen."""
    return (size * k // n, (1 << 62) if k == n - 1 else size * (k + 1) // n)


def chain_ranges(n: int, first: float = CHAIN_FIRST) -> list[tuple[int, int]]:
    """``n`` consecutive ranges of the ids' first two bytes covering [0, 65536): the first ``first`` of it, the
    rest in equal parts."""
    if n == 1:
        return [(0, 0x10000)]
    cut = [0, max(1, min(0xFFFF, round(0x10000 * first)))]
    rest = 0x10000 - cut[1]
    cut += [cut[1] + round(rest * i / (n - 1)) for i in range(1, n)]
    return [(a, b) for a, b in zip(cut, cut[1:]) if b > a]


def chain_plan(cluster, logs: Sequence[LogSet], sizes: list[int], *, digest: bool, want_jobs: bool, stats: bool,
               chain: bool | None, why: list[str] | None = None) -> int:
    """How many shares a chained replay of ``logs`` takes (0: none). Chained: ``replay --summary`` of one log
    (its digest and counts, no jobs, no stats) of at least ``CHAIN_MIN_BYTES`` while the machine is not busy
    (``chain_pays``; ``chain=True``: any size, any load),
    where ``_sha`` is built, on a ``local`` master with a slot per share (the states pass through the driver's
    relay on loopback; a share waits for the one before it, so all must run at once). The log's jobs are split
    by id range: share k replays its range, then hashes its lines after share k - 1 (the digest is one sha256 in
    id order) — so the time is about the framing of every record (each share does it), the first share's
    replay and the whole hashing: with the first share's range smaller (``CHAIN_FIRST``) the next one's replay
    ends as the first one's hashing does. No share's lines leave its task (the modulo split shipped them to
    the driver and cost more than it saved).

    ``why``: where no chain is planned for one such log, why (a phrase appended: ``in_driver`` names it)."""
    said = why.append if why is not None else (lambda _w: None)
    if chain is False or not digest or want_jobs or stats:
        return 0
    live = [i for i, log in enumerate(logs) if log.segments]
    if len(live) != 1:
        return 0
    if chain is None and sizes[live[0]] < CHAIN_MIN_BYTES:
        said(f"too small to chain (under {CHAIN_MIN_BYTES >> 20} MiB)")
        return 0
    try:
        from . import _sha  # noqa: F401
    except ImportError:     # not built (no libcrypto headers): the log whole, in one task
        said("no _sha to chain the digest")
        return 0
    slots = cluster.slots(default=0)
    n = min(CHAIN_MAX_SHARES, slots)
    if n < 2:
        said(f"{slots} slot(s), no chain")
        return 0
    if not cluster.local():
        said("no chain off a local master")
        return 0
    if chain is None and not chain_pays():
        said(busy_words())
        return 0
    return n


def in_driver(cluster, logs: Sequence[LogSet], sizes: list[int], why: list[str], *, digest: bool,
              want_jobs: bool, stats: bool, chain: bool | None, split: bool | None) -> str:
    """Why ``replay --summary`` of ``logs`` is read in the driver (the local engine's pass, no Spark job), or ""
    for a job. In the driver: one log's digest and counts (no jobs, no stats) for which ``chain_plan`` planned no
    chain, deciding itself (``chain`` None; ``why``: its reason), of at most ``cluster.in_driver_bytes()``
    (``spark.wqtool.inDriver.threshold``; 0: never) and every file readable in this process (a local path, or
    the copy of a remote one staged when it was resolved). A job of one task is that same pass plus Spark's
    fixed part (its scheduling, the result's way back, the JVM's CPU: docs/spark.md), so it cannot be faster —
    as Hive's fetch-task conversion (``hive.fetch.task.conversion.threshold``) skips a job for a small query."""
    if chain is not None or split or not digest or want_jobs or stats or len(logs) != 1 or not logs[0].segments \
            or not why:
        return ""
    limit = cluster.in_driver_bytes()
    if limit <= 0 or sizes[0] > limit or not cluster.reads_here([s.path for s in logs[0].segments]):
        return ""
    return f"a job would not pay: {why[0]}"


def busy_words() -> str:
    """How busy the machine is, as ``chain_pays`` reads it: the CPU pressure, else the load average."""
    p = cpu_pressure()
    if p is not None:
        return f"CPU pressure {p:.0f} %"
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count() or 1} CPU(s)"
    except OSError:
        return "no CPU to spare"


#: chained only while the 1-minute load average leaves this many CPUs spare (bench_fleet --one-log-summary on 2
#: CPUs, interleaved rounds: at load 2.6-3.0 once chained x1.14 local and one task x0.92, once chained x0.62
#: and one task x0.81; at load 5.5-7.6 chained x0.80, one task x0.88-0.96; with each share CRC-checking only its
#: bytes, 9 rounds each: at load 7.0-4.9 chained x0.99 local (pairs' median), one task x0.99; at load 4.2-4.4
#: chained x0.79, one task x0.95; at load 4.7-4.0 beside a spinning process chained x0.92, one task x0.97)
CHAIN_SPARE_CPUS = 1.0


#: chained only while runnable tasks waited for a CPU less than this share (%) of the last ~10 s
#: (``cpu_pressure``; see chain_pays). bench_fleet --one-log-summary, 20 rounds at pressure 88-100 % (other
#: sessions' work; 8 burners in sessions of their own): the chain lost 17 of them, 0.81x and 0.85x the local pass
#: by the pairs' medians; at 3-32 % (11 rounds, load 9.5 -> 4.6: the load average said busy) it won 9 (the first
#: round, at 30 %, lost: x0.62; the second, at 32 %, even), 1.27x (1.29x as chain_pays chose; one task 0.96x).
#: Between 32 and 88 % no round came then. Since (23 rounds at 3-67 %, each round's pressure at its start, 220 MiB,
#: 2 CPUs shared with other work): at 3-18 % the chain won 7 of 7 (x1.29-1.34); at 21-45 % it lost 6 of 10
#: (x0.74-0.98; won x1.21-1.36); at 50-67 % it won 3 of 6. Under 20 % it chains; above, one log's summary is read
#: in the driver (``in_driver``: the engine's own pass, x0.97-1.03 of it by the pairs' medians) — a chain forgone
#: where it might have won, for a pass even with the engine's
CHAIN_MAX_PRESSURE = 20.0

#: the kernel's CPU pressure (PSI): ``some avg10`` is the share of the last ~10 s in which at least one runnable
#: task waited for a CPU
PRESSURE_FILE = "/proc/pressure/cpu"


def cpu_pressure(path: str | None = None) -> float | None:
    """``some avg10`` of the kernel's CPU pressure (percent), or None where it cannot be read (no PSI)."""
    try:
        with open(path or PRESSURE_FILE, encoding="ascii") as f:
            for line in f:
                w = line.split()
                if w and w[0] == "some":
                    return float(dict(x.split("=", 1) for x in w[1:])["avg10"])
    except (OSError, ValueError, KeyError):
        return None
    return None


def chain_pays() -> bool:
    """Whether a chain should pay on this machine now: a core is free — the kernel's CPU pressure over the last
    ~10 s (``cpu_pressure``) below ``CHAIN_MAX_PRESSURE``; where that cannot be read, the 1-minute load average
    leaves ``CHAIN_SPARE_CPUS`` CPUs spare. A chain's shares frame every record each (~0.05 s of CPU a share for
    a 220 MiB log; each record's CRC is checked by one share only, ``crc_share``), run at once, and gain only
    where a core is free. While other sessions keep the cores busy the session's two shares get no more CPU than
    one task (Linux's autogroups; measured with burners each in a session of its own: docs/spark.md), and the
    chain loses by its extra CPU. The load average lags by a minute or more; the pressure follows within
    seconds."""
    p = cpu_pressure()
    if p is not None:
        return p < CHAIN_MAX_PRESSURE
    try:
        return os.getloadavg()[0] + CHAIN_SPARE_CPUS <= (os.cpu_count() or 1)
    except OSError:
        return False


def _keys(kb: bytes):
    """The 16-byte job ids packed in ``kb``, one at a time."""
    for i in range(0, len(kb), 16):
        yield kb[i:i + 16]


def _lines(blob: bytes, chunk: int = 1 << 20):
    """The lines of a zlib stream, decompressed a chunk at a time."""
    d = zlib.decompressobj()
    rest = b""
    for i in range(0, len(blob), chunk):
        data = rest + d.decompress(blob[i:i + chunk])
        *whole, rest = data.split(b"\n")
        yield from whole
    rest += d.flush()
    *whole, rest = rest.split(b"\n")
    yield from whole
    yield rest


class _Lines:
    """What ``JobTable.digest`` writes (its ``h.update`` calls), kept."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def update(self, b) -> None:
        self.chunks.append(bytes(b))


#: the job table's row as Arrow columns (jobtable.ROW, after the 16-byte id); ints wide enough for every field
_ROW_BATCH = 65536


def _row_schema():
    import pyarrow as pa
    from .jobtable import ROW
    types = {"name": pa.string(), "result": pa.binary(), "scheduled_ns": pa.int64()}
    return pa.schema([pa.field("id", pa.binary(16))] + [pa.field(n, types.get(n, pa.int64())) for n in ROW])


def _rows_ipc(table) -> list[bytes]:
    """The table's rows as Arrow IPC streams of at most ``_ROW_BATCH`` rows (the driver puts them into a table of
    its own: ``_put_rows``)."""
    import pyarrow as pa
    schema = _row_schema()
    rows = table.rows()
    out = []
    for i in range(0, len(rows), _ROW_BATCH):
        cols = list(zip(*rows[i:i + _ROW_BATCH]))
        batch = pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as w:
            w.write_batch(batch)
        out.append(sink.getvalue().to_pybytes())
    return out


def _put_rows(table, blobs: list[bytes]) -> int:
    """Put the rows of ``blobs`` (every share of one log) into ``table`` in job-id order, as the local state
    lists them; returns how many."""
    import pyarrow as pa
    batches = [b for blob in blobs for b in pa.ipc.open_stream(blob)]
    if not batches:
        return 0
    rows = pa.Table.from_batches(batches).sort_by("id")
    put = table.put
    n = 0
    for batch in rows.to_batches(_ROW_BATCH):
        cols = [c.to_pylist() for c in batch.columns]
        for r in zip(*cols):
            put(r[0], r[1:])
            n += 1
    return n


def run_fleet(cluster, logs: Sequence[LogSet], as_of_ns: int | Sequence[int], *, limit: int | None = None,
              digest: bool = True, want_jobs: bool = False, stats: bool = False,
              progress: Callable[[str], None] | None = None, stats_total: list | None = None, fast: bool = True,
              split: bool | None = None, chain: bool | None = None) -> list[FleetLog]:
    """Verify and replay ``logs`` on ``cluster``; one FleetLog per log, in order. ``as_of_ns``: one time for all
    the logs, or one each (``--as-of last``: each log's own newest record time) — one job either way.

    ``split``: whether a log may be split by job over the slots when the fleet has fewer logs than twice the
    slots; None: only without ``digest`` and ``want_jobs`` (verify). A split log's state is merged on the driver
    (its digest lines by job id, its job rows), which costs more than the split saves: replay + digest of one
    220 MiB log took 4.91 s split in two against 0.94 s whole (and 0.94 s locally; bench_fleet's dataset).
    ``chain``: a single log's digest and counts (``replay --summary``) chained over the slots by job-id range
    (``chain_plan``: None decides by size and spare CPU; True forces it where it can run, False never). Where
    ``chain`` None planned no chain for such a log, it is read in the driver, no Spark job (``in_driver``: at most
    ``spark.wqtool.inDriver.threshold`` bytes, its files readable here).

    Logs go through the engine's kernel, damaged ones too, one task per share of a log's jobs (a big log is split
    by job over the executor slots; a fleet of many logs runs a log per task); a log the kernel bails on goes
    through the reference pipeline (``run_reference``) — with ``stats``, the whole fleet does (the distinct jobs
    over all logs are counted in one place). Either way the results are the local engine's. Without ``digest``
    and ``want_jobs`` (verify) the kernel keeps no job state, so the reports' state counts are empty there, as
    local verify keeps no state at all. ``stats`` runs each log whole (``fast_stats``' pass); over several logs
    each task sends its log's job ids (16 bytes a job) on: a fleet that may hold more than ``DRIVER_UNION_IDS``
    sends them to a shuffle by their first byte, where each partition counts its share of the union in the
    kernel's ``ScanStats`` (``distributed_union``): only counts reach the driver, whose memory stays flat however
    many jobs the fleet holds; a smaller one counts them on the driver (``_driver_union``).
    """
    say = progress or (lambda _m: None)
    as_of = as_of_each(as_of_ns, len(logs))      # one time each (--as-of last: each log's own), one job for all
    if not fast or not logs:
        return run_reference(cluster, logs, as_of_ns, limit=limit, digest=digest, want_jobs=want_jobs, stats=stats,
                             progress=progress, stats_total=stats_total)
    slots = cluster.slots(default=cluster.partitions(2))
    sizes = [log_size(log) for log in logs]
    total = sum(sizes) or 1
    units: list[tuple[int, LogSet, int, int]] = []     # (log, log set, share, shares)
    cost: list[float] = []
    why: list[str] = []
    chained = 0 if split else chain_plan(cluster, logs, sizes, digest=digest, want_jobs=want_jobs, stats=stats,
                                         chain=chain, why=why)
    here = "" if chained else in_driver(cluster, logs, sizes, why, digest=digest, want_jobs=want_jobs,
                                        stats=stats, chain=chain, split=split)
    for li, log in sorted(enumerate(logs), key=lambda il: -sizes[il[0]]):  # biggest first: better packing
        if not log.segments:
            continue
        if chained:
            units.extend((li, log, k, chained) for k in range(chained))
            continue
        whole = stats or len(logs) >= 2 * slots or not (split if split is not None else not (digest or want_jobs))
        nparts = 1 if whole else max(1, min(slots, round(sizes[li] * slots / total)))
        units.extend((li, log, k, nparts) for k in range(nparts))
        cost.extend([sizes[li] / nparts] * nparts)
    results: dict[int, list] = {}
    if units:
        bins = [[k] for k in range(chained)] if chained else pack(cost, slots)    # chained: share k is task k
        if here:
            say(f"spark: {len(logs)} log(s), {total} bytes, in the driver ({here})")
        else:
            say(f"spark: {len(logs)} log(s), {total} bytes, {len(units)} share(s) in {len(bins)} task(s) on "
                f"{slots} slot(s)" + (", by job-id range, hashed in turn" if chained else ""))
        ids = stats and stats_total is not None and sum(bool(lg.segments) for lg in logs) > 1
        shuffle = ids and total // _LEAST_JOB_BYTES > DRIVER_UNION_IDS     # more ids than the driver should hold
        with contextlib.ExitStack() as relay:      # (a chain's relay stops with the job, or if it cannot start)
            task = _FastTask(units, bins, as_of, digest, want_jobs, limit, stats, ids, shuffle,
                             chain_ranges(chained) if chained else None,
                             relay.enter_context(cluster.relay()) if chained else None,
                             [crc_share(sum(sizes), k, chained) for k in range(chained)] or None)
            if shuffle:  # read once: the reports come to the driver, the ids go on to the union's shuffle
                df = cluster.persist(cluster.tasks(len(bins), task, _B_FIELDS, what=_bin_words(units, bins)))
                rows = cluster.collect(cluster.where(df, f"kind != {_IDS}"))
            elif here:   # no job can pay: the same task function, in this process (``in_driver``)
                rows = cluster.run_here(len(bins), task, _B_FIELDS)
            else:        # the results only: one stage, straight back (``Cluster.run``)
                rows = cluster.run(len(bins), task, _B_FIELDS, what=_bin_words(units, bins))
        seen: set[int] = set()
        for r in rows:
            seen.add(r["part"])
            results.setdefault(r["log"], []).append(pickle.loads(r["blob"]))
        check_count("the kernel's shares", len(seen), len(units))
        damaged = [li for li, parts in results.items() if any(p is not None and "damaged" in p for p in parts)]
        if damaged:     # a chained share met a crc mismatch: the log whole, in one task (every CRC checked)
            where = next(p["damaged"] for p in results[damaged[0]] if p is not None and "damaged" in p)
            say(f"spark: log {logs[damaged[0]].root}: a crc mismatch at {where}: read whole, in one task")
            return run_fleet(cluster, logs, as_of_ns, limit=limit, digest=digest, want_jobs=want_jobs, stats=stats,
                             progress=progress, stats_total=stats_total, fast=fast, split=split, chain=False)
        for li, parts in results.items():
            done = {(p["records"], p["bytes"]) for p in parts if p is not None}
            if len(done) > 1:   # every share frames every record of its log: they must agree
                raise lost(f"log {logs[li].root}", len(parts), len(parts),
                           f"its shares read different record/byte counts: {sorted(done)}")
    bailed = [li for li, parts in results.items() if any(p is None for p in parts)]
    if stats and bailed:
        if units and shuffle:
            cluster.unpersist(df)
        say(f"spark: {len(bailed)} log(s) need the reference path (fields beyond the kernel's table): all "
            f"{len(logs)} log(s) go there, for one count of distinct jobs")
        return run_reference(cluster, logs, as_of_ns, limit=limit, digest=digest, want_jobs=want_jobs, stats=stats,
                             progress=progress, stats_total=stats_total)
    if stats and stats_total is not None:
        if units and shuffle:
            try:
                prefixes = {x for parts in results.values() for p in parts for x in p["prefixes"]}
                stats_total.append(distributed_union(cluster, df, prefixes))
            finally:
                cluster.unpersist(df)
        elif units and ids:
            stats_total.append(_driver_union([p["ids"] for parts in results.values() for p in parts]))
        else:
            stats_total.append(sum(p["stats"].distinct for parts in results.values() for p in parts))
    out: dict[int, FleetLog] = {}
    for li, log in enumerate(logs):
        if li not in bailed:
            out[li] = _assemble_fast(log, as_of[li], limit, results.get(li, []), digest)
    if bailed:
        say(f"spark: {len(bailed)} log(s) need the reference path (fields beyond the kernel's table)")
        ref = run_reference(cluster, [logs[li] for li in bailed], [as_of[li] for li in bailed], limit=limit,
                            digest=digest,
                            want_jobs=want_jobs, progress=progress)
        out.update(zip(bailed, ref))
    return [out[li] for li in range(len(logs))]


def _bin_words(units: list, bins: list[list[int]]):
    """What task ``k`` of the kernel's fleet reads, in words: its logs and shares (a dead worker's error names
    them)."""
    def what(k: int) -> str:
        out = []
        for u in bins[k]:
            _, log, share, n = units[u]
            out.append(f"log {log.root}" + (f" (share {share + 1} of {n})" if n > 1 else ""))
        return "; ".join(out)
    return what


def pack(cost: Sequence[float], slots: int) -> list[list[int]]:
    """The units of work (their indexes, by ``cost``) in at most ``slots`` bins of about equal cost, the biggest
    first, each into the bin with the least so far (LPT): a Spark task per bin, so every slot runs one task — a
    second wave of tasks costs each slot ~0.1 s of scheduling (measured on local[2]); the logs' sizes are known,
    so the balance is planned rather than left to the scheduler."""
    bins: list[list[int]] = [[] for _ in range(max(1, min(slots, len(cost))))]
    heap = [(0.0, b) for b in range(len(bins))]
    for u in sorted(range(len(cost)), key=lambda u: -cost[u]):
        load, b = heapq.heappop(heap)
        bins[b].append(u)
        heapq.heappush(heap, (load + cost[u], b))
    return [b for b in bins if b]


def _assemble_fast(log: LogSet, as_of_ns: int, limit: int | None, parts: list[dict], want_digest: bool) -> FleetLog:
    """Merge the kernel's shares of one log, as ``fast_run`` merges its processes' (and ``run_log`` its sink)."""
    from .fastreplay import FastResult, merge_shares
    from .verify import fast_report
    spill = merge_shares([(p["findings"], p["overflow"], p["verdicts"], p["last_good"], p["folds"])
                          for p in parts], limit)
    findings = list(log.findings) + [f for _, f in spill]
    notes = closing_notes(sum(p["notes"][0] for p in parts), sum(p["notes"][1] for p in parts))
    findings.extend(notes)
    first = parts[0] if parts else {"records": 0, "bytes": 0, "segments": 0}
    report = fast_report(log, FastResult(findings, first["records"], sum(p["applied"] for p in parts),
                                         first["bytes"], first["segments"], None, spill.overflow,
                                         verdicts=spill.verdicts, last_good=spill.last_good, folds=spill.folds),
                         limit)     # as run_log makes it of the same pass locally
    digest = ""
    jobs: dict = {}
    if want_digest and any("chain" in p for p in parts):
        digest = _chain_digest(log, parts)
    elif want_digest and len(parts) == 1 and parts[0].get("digest"):
        digest = parts[0]["digest"]
    elif want_digest:
        h = _digest_start(as_of_ns)
        streams = []
        for p in parts:
            kb = p["keys"]
            if kb:   # streamed: the driver holds the compressed lines, never a log's lines at once
                streams.append(zip(_keys(kb), _lines(p["lines"])))
        n = 0
        for _, line in heapq.merge(*streams, key=lambda kl: kl[0]):
            h.update(line)
            h.update(b"\n")
            n += 1
        check_count(f"log {log.root}: the digest lines", n, sum(len(p["keys"]) // 16 for p in parts))
        digest = h.hexdigest()
    by_state = {s.label: 0 for s in JobState}
    by_queue: dict[str, dict[str, int]] = {}
    want_rows = any(p["rows"] for p in parts)
    table = new_table() if want_rows else None
    if table is not None:   # the shares hold disjoint jobs: each row arrives once
        check_count(f"log {log.root}: the job rows", _put_rows(table, [b for p in parts for b in p["rows"]]),
                    sum(p["jobs"] for p in parts))
    for p in parts:
        for label, v in p.get("by_state", {}).items():
            by_state[label] += v
        for name, c in p.get("by_queue", {}).items():
            q = by_queue.setdefault(name, {s.label: 0 for s in JobState})
            for label, v in c.items():
                q[label] += v
    if table is not None:
        jobs = CompactJobs(table, [s.path for s in log.segments], as_of_ns)
    report.state = FleetReplayState(as_of_ns, jobs, report.records, sum(p["applied"] for p in parts), notes,
                                    fleet_digest=digest, total_jobs=sum(by_state.values()), by_state=by_state,
                                    by_queue=dict(sorted(by_queue.items())))
    st = parts[0].get("stats") if len(parts) == 1 else None
    return FleetLog(report, st or RecordStats(), st.distinct if st else 0)


def _chain_digest(log: LogSet, parts: list[dict]) -> str:
    """A chained log's digest: the last share's, once every share's link is there and each took over the state
    the share before it handed on (else a result was lost or mixed up: exit 5)."""
    links = sorted(p["chain"] for p in parts if "chain" in p)
    what = f"log {log.root}: the digest's chain of shares"
    check_count(what, len(links), len(parts))
    if [k for k, _, _ in links] != list(range(len(parts))) or \
            any(links[k][1] != links[k - 1][2] for k in range(1, len(links))) or links[0][1] is not None:
        raise lost(what, len(parts), len(parts), "a share did not take over the state the one before it gave")
    digest = next(p["digest"] for p in parts if p["chain"][0] == len(parts) - 1)
    check_count(what + " (the last share's digest)", int(bool(digest)), 1)
    return digest


def _by_prefix(packed: bytes) -> list[tuple[int, bytes]]:
    """Sorted packed ids (16 bytes each) cut by their first byte: [(byte, the ids that start with it)]."""
    from bisect import bisect_left
    firsts = packed[::16]
    out = []
    lo = 0
    while lo < len(firsts):
        p = firsts[lo]
        hi = bisect_left(firsts, p + 1, lo)
        out.append((p, packed[lo * 16:hi * 16]))
        lo = hi
    return out


class _UnionTask:
    """One partition of the distinct-id union: the ids of every log whose first bytes hash here (each byte's ids
    all in one partition), counted as one log's stats count them; one row: the prefixes seen and the count."""

    def __call__(self, batches):
        import pyarrow as pa
        from .fastreplay import new_stats
        u = new_stats()
        seen: set[int] = set()
        for b in batches:
            for p, blob in zip(b.column(2).to_pylist(), b.column(3).to_pylist()):
                seen.add(p)
                u.add_ids(blob)
        blob = pickle.dumps((sorted(seen), u.distinct()), protocol=5)
        yield _batch(_arrow_schema(_B_FIELDS), ([-1], [_IDS], [-1], [blob]))


#: A fleet that may hold more job ids than this (its bytes / _LEAST_JOB_BYTES, the least a job's add record takes)
#: counts them in the distributed union, which keeps the driver's memory flat however many jobs the fleet holds;
#: a smaller one on the driver (16 bytes an id, 64 MiB at most), as its shuffle and second pass cost seconds of
#: fixed time (a 55 MiB fleet of 144 k jobs: 6.2 s against 1.1 s locally, load 11).
DRIVER_UNION_IDS = 4_000_000
_LEAST_JOB_BYTES = 32


def _driver_union(blobs: list[bytes]) -> int:
    """The distinct job ids over the logs' packed ids, counted on the driver as one log's stats count them
    (``ScanStats.add_ids``): 4.6 M ids took 1.2–1.4 s in a Python set, a pyarrow group-by or numpy's unique."""
    from .fastreplay import new_stats
    u = new_stats()
    for b in blobs:
        u.add_ids(b)
    return u.distinct()


def distributed_union(cluster, df, prefixes: set[int]) -> int:
    """The distinct job ids over the logs, counted where they are: ``df``'s ``_IDS`` rows shuffled by their first
    byte, each partition's union counted there; only the counts reach the driver (flat memory however many ids).
    Every prefix the tasks sent must be counted (else the results were lost: exit 5)."""
    ids = cluster.where(df, f"kind = {_IDS}")
    parts = min(256, cluster.slots(default=cluster.partitions(2)))     # a wave of tasks, not 200 tiny ones
    rows = cluster.collect(cluster.regroup(ids, parts, "part", ("part",), _UnionTask(), _B_FIELDS),
                           keep_partitions=True)
    counted: set[int] = set()
    total = 0
    for r in rows:
        seen, n = pickle.loads(r["blob"])
        counted.update(seen)
        total += n
    check_count("the distinct-id union's prefixes", len(counted & prefixes), len(prefixes))
    return total


_facts = FORMAT.facts


class WorkqFleet:
    """The workq format's fleet strategy (``wqtool.spark.fleet`` calls it for the workq logs of a command, with a
    ``wqtool.spark.cluster.Cluster``)."""

    #: its jobs take each log's own --as-of time (``clocks=``): one job for a fleet read at --as-of last
    clocks = True

    def verify(self, cluster, logs: Sequence[LogSet], opts, *, max_findings: int | None = None,
               progress=None, clocks: Sequence[int] | None = None) -> list[LogReport]:
        return [fl.report for fl in run_fleet(cluster, logs, clocks or opts.as_of_ns, limit=max_findings,
                                              digest=False, progress=progress)]

    def replay(self, cluster, log: LogSet, opts, *, limit: int | None = None, progress=None,
               want_jobs: bool = True) -> LogReport:
        """``want_jobs=False`` (``replay --summary``): the digest and counts, no job object leaves a task."""
        return run_fleet(cluster, [log], opts.as_of_ns, limit=limit, want_jobs=want_jobs,
                         progress=progress)[0].report

    def replay_summaries(self, cluster, logs: Sequence[LogSet], opts, *, limit: int | None = None,
                         progress=None, clocks: Sequence[int] | None = None) -> list[LogReport]:
        """``replay --summary`` of several logs: their digests and counts from one fleet job."""
        return [fl.report for fl in run_fleet(cluster, logs, clocks or opts.as_of_ns, limit=limit, want_jobs=False,
                                              progress=progress)]

    def stats(self, cluster, logs: Sequence[LogSet], opts, *, progress=None, clocks: Sequence[int] | None = None):
        """[(LogReport, RecordStats, distinct jobs)] per log, and the distinct jobs of all of them."""
        union: list[int] = []
        fleet = run_fleet(cluster, logs, clocks or opts.as_of_ns, limit=0, stats=True, progress=progress,
                          stats_total=union)
        return [(fl.report, fl.stats, fl.jobs) for fl in fleet], sum(union)
