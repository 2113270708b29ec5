"""Fleet jobs on Spark: verify, replay and stats over many workq logs, the same results as the local engine.

One Spark job, three stages, for any number of log directories:

  A  one task per segment (``spark.range`` with one row per partition → ``mapInArrow``): the engine's reader
     frames and CRC-checks the segment (payloads not decoded); reader findings, counts and sizes go to the
     driver; every record goes on as (job id, log, segment, offset, index in segment, bytes).
  B  shuffled by job id and sorted by (job id, log, segment, offset): each task holds all records of its jobs
     in log order, decodes them with the engine's codec and applies them to ``WorkqReplay`` one job at a time —
     a job's state depends only on its own records, so the state, the findings (unknown job, duplicates,
     skip-if-expired at --as-of, ...) and their order within the job are the local engine's. A finished job's
     canonical line (the digest's input) goes on; memory stays one job plus counters.
  C  one task, lines sorted by job id per log: the sha256 digest, exactly as ``state_digest`` makes it.

The driver merges the small results: findings sorted back into file order (the first --max-findings kept, all
counted), exit code, counts, record indexes made log-wide (per-segment counts give each segment's base), the
notes ``WorkqReplay.finish()`` adds. Everything the tasks run is engine code (``_segments``); only this module
and ``datasources`` import pyspark.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import os
import pickle
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..engine.findings import Finding
from ..engine.reader import LogSet, Segment
from ..engine.replay import JobState, ReplayState, WorkqReplay
from ..engine.stats import RecordStats
from ..engine.verify import LogReport, VerifyReport, worst_exit
from ..exitcodes import ExitCode
from ..formats.workq import CmdType

# stage outputs: kind of row
_REC, _SEG, _LOG, _LINE, _JOB, _DIGEST = 0, 1, 2, 3, 4, 5
_BATCH = 8192
_NS_PER_MS = 1_000_000
_INF = float("inf")


# ---------------------------------------------------------------- results
@dataclass(slots=True)
class FleetReplayState(ReplayState):
    """A ReplayState computed on Spark: the digest, counts per state and per queue come from the executors;
    ``jobs`` holds the jobs only when they were asked for (replay), else it is empty and ``job_count`` says."""

    fleet_digest: str = ""
    job_count: int = 0
    by_state: dict = field(default_factory=dict)
    by_queue: dict = field(default_factory=dict)

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


# ---------------------------------------------------------------- stage A: one task per segment
_A_FIELDS = (("kind", "int8"), ("key", "binary"), ("log", "int32"), ("seg", "int32"), ("off", "int64"),
             ("idx", "int64"), ("size", "int64"), ("crc", "int64"), ("body", "binary"))
_B_FIELDS = (("log", "int32"), ("kind", "int8"), ("key", "binary"), ("blob", "binary"))


def _ddl(fields) -> str:
    t = {"int8": "tinyint", "int32": "int", "int64": "bigint", "binary": "binary"}
    return ", ".join(f"{n} {t[k]}" for n, k in fields)


def _arrow_schema(fields):
    import pyarrow as pa
    t = {"int8": pa.int8(), "int32": pa.int32(), "int64": pa.int64(), "binary": pa.binary()}
    return pa.schema([pa.field(n, t[k]) for n, k in fields])


@dataclass
class _SegTask:
    log: int
    seg: int
    segment: Segment
    is_newest: bool


class _StageA:
    def __init__(self, tasks: list[_SegTask], limit: int | None, cwd: str):
        self.tasks, self.limit, self.cwd = tasks, limit, cwd

    def __call__(self, batches):
        from ._segments import working_dir
        schema = _arrow_schema(_A_FIELDS)
        with working_dir(self.cwd):
            for batch in batches:
                for tid in batch.column(0).to_pylist():
                    yield from self._scan(self.tasks[tid], schema)

    def _scan(self, t: _SegTask, schema):
        import pyarrow as pa

        from ..engine.model import Record
        from ._segments import segment_scan
        key, off, idx, size, crc, body = [], [], [], [], [], []
        size_bytes, events = segment_scan(t.segment, 0, t.is_newest, decode=False)
        acc = _FindingAcc(self.limit)
        n = 0
        seq = 0
        for ev in events:
            if ev.__class__ is Record:
                b = ev.raw_payload
                p = len(b) - ev.size
                key.append(b[p + 1:p + 17])
                off.append(ev.offset)
                idx.append(ev.index)
                size.append(ev.size)
                crc.append(ev.crc)
                body.append(b)
                n += 1
                if n % _BATCH == 0:
                    yield _a_batch(pa, schema, t, key, off, idx, size, crc, body)
                    key, off, idx, size, crc, body = [], [], [], [], [], []
            else:
                seq += 1
                acc.add((t.seg, ev.offset or 0, 0, seq), ev)
        if key:
            yield _a_batch(pa, schema, t, key, off, idx, size, crc, body)
        summary = {"seg": t.seg, "records": n, "bytes": size_bytes, "findings": acc}
        yield pa.RecordBatch.from_pydict(
            {"kind": [_SEG], "key": [b""], "log": [t.log], "seg": [t.seg], "off": [-1], "idx": [0], "size": [0],
             "crc": [0], "body": [pickle.dumps(summary, protocol=5)]}, schema=schema)


def _a_batch(pa, schema, t, key, off, idx, size, crc, body):
    n = len(key)
    return pa.RecordBatch.from_arrays([
        pa.array([_REC] * n, pa.int8()), pa.array(key, pa.binary()), pa.array([t.log] * n, pa.int32()),
        pa.array([t.seg] * n, pa.int32()), pa.array(off, pa.int64()), pa.array(idx, pa.int64()),
        pa.array(size, pa.int64()), pa.array(crc, pa.int64()), pa.array(body, pa.binary())], schema=schema)


class _FindingAcc:
    """Counts every finding; keeps the ``limit`` first in file order (sort key given by the caller)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.kept: list = []           # heap of (negated key, n, finding) when limited, else (key, n, finding)
        self.counts: Counter = Counter()
        self.severities: Counter = Counter()
        self.exits: set[int] = set()
        self.torn: tuple | None = None  # (key, path, last_good_offset) of the last torn-tail finding
        self._n = 0

    def add(self, key: tuple, f: Finding) -> None:
        self.counts[f.code] += 1
        self.severities[f.severity] += 1
        if f.exit_class:
            self.exits.add(int(f.exit_class))
            if f.exit_class == ExitCode.TORN_TAIL and (self.torn is None or key > self.torn[0]):
                self.torn = (key, f.path, f.last_good_offset)
        self._n += 1
        if self.limit is None:
            self.kept.append((key, self._n, f))
        elif self.limit > 0:
            item = (tuple(-k for k in key), -self._n, f)
            if len(self.kept) < self.limit:
                heapq.heappush(self.kept, item)
            elif item > self.kept[0]:
                heapq.heapreplace(self.kept, item)

    def items(self) -> list[tuple[tuple, Finding]]:
        if self.limit is None:
            return [(k, f) for k, _, f in self.kept]
        return [(tuple(-k for k in nk), f) for nk, _, f in self.kept]


# ---------------------------------------------------------------- stage B: by job
class _StageB:
    def __init__(self, paths: dict, as_of_ns: int, limit: int | None, want_jobs: bool, cwd: str):
        self.paths, self.as_of_ns, self.limit, self.want_jobs, self.cwd = paths, as_of_ns, limit, want_jobs, cwd

    def __call__(self, batches):
        import pyarrow as pa

        from ._segments import rebuild_record
        schema = _arrow_schema(_B_FIELDS)
        paths = self.paths
        accs: dict[int, _LogAcc] = {}
        out_log, out_kind, out_key, out_blob = [], [], [], []

        def flush_job(k: bytes) -> None:
            for acc in accs.values():
                job = acc.replay.jobs.pop(k, None)
                if acc.seen == k:
                    acc.distinct += 1
                    acc.seen = None
                if job is None:
                    continue
                if job.state is JobState.LEASED:  # what WorkqReplay.finish() does to a leased job
                    job.lease_expires_ns = self.as_of_ns + job.ttr * _NS_PER_MS
                acc.count_job(job)
                out_log.append(acc.log)
                out_kind.append(_LINE)
                out_key.append(k)
                out_blob.append(json.dumps(job.canonical(), sort_keys=True, separators=(",", ":")).encode())
                if self.want_jobs:
                    out_log.append(acc.log)
                    out_kind.append(_JOB)
                    out_key.append(k)
                    out_blob.append(pickle.dumps(job, protocol=5))

        def batch():
            b = pa.RecordBatch.from_arrays([pa.array(out_log, pa.int32()), pa.array(out_kind, pa.int8()),
                                            pa.array(out_key, pa.binary()), pa.array(out_blob, pa.binary())],
                                           schema=schema)
            out_log.clear(), out_kind.clear(), out_key.clear(), out_blob.clear()
            return b

        cur = None
        for rb in batches:
            kind = rb.column(0).to_pylist()
            key = rb.column(1).to_pylist()
            logs = rb.column(2).to_pylist()
            segs = rb.column(3).to_pylist()
            offs = rb.column(4).to_pylist()
            idxs = rb.column(5).to_pylist()
            sizes = rb.column(6).to_pylist()
            crcs = rb.column(7).to_pylist()
            bodies = rb.column(8).to_pylist()
            for i in range(len(kind)):
                log = logs[i]
                if kind[i] != _REC:  # stage A's per-segment summaries go straight on to the driver
                    out_log.append(log), out_kind.append(_SEG), out_key.append(b""), out_blob.append(bodies[i])
                    continue
                k = key[i]
                if k != cur:
                    if cur is not None:
                        flush_job(cur)
                    cur = k
                acc = accs.get(log)
                if acc is None:
                    acc = accs[log] = _LogAcc(log, self.as_of_ns, self.limit)
                seg = segs[i]
                rec = rebuild_record(paths[log, seg], offs[i], idxs[i], sizes[i], crcs[i], bodies[i])
                acc.apply(rec, seg, k)
            if len(out_log) >= _BATCH:
                yield batch()
        if cur is not None:
            flush_job(cur)
        for acc in accs.values():
            out_log.append(acc.log), out_kind.append(_LOG), out_key.append(b"")
            out_blob.append(pickle.dumps(acc.summary(), protocol=5))
        if out_log:
            yield batch()


class _LogAcc:
    """Stage B's state for one log inside one task: the replay (one job at a time), stats and findings."""

    def __init__(self, log: int, as_of_ns: int, limit: int | None):
        self.log = log
        self.replay = WorkqReplay(as_of_ns)
        self.stats = RecordStats()
        self.findings = _FindingAcc(limit)
        self.distinct = 0
        self.seen = None
        self.by_state: Counter = Counter()
        self.by_queue: Counter = Counter()
        self.add_jobs = 0
        self.leased = 0

    def apply(self, rec, seg: int, k: bytes) -> None:
        r = self.replay
        r.apply(rec)
        self.stats.add(rec)
        if rec.command is not None:
            self.seen = k
            self.stats.jobs.clear()
        if r.findings:
            for n, f in enumerate(r.findings):
                self.findings.add((seg, rec.offset, 1, n), f)
            r.findings.clear()

    def count_job(self, job) -> None:
        label = job.state.label
        self.by_state[label] += 1
        self.by_queue[job.name, label] += 1
        self.add_jobs += job.kind is CmdType.ADD
        self.leased += job.state is JobState.LEASED

    def summary(self) -> dict:
        return {"records": self.replay.records, "applied": self.replay.applied, "stats": self.stats,
                "distinct": self.distinct, "by_state": self.by_state, "by_queue": self.by_queue,
                "add_jobs": self.add_jobs, "leased": self.leased, "findings": self.findings}


# ---------------------------------------------------------------- stage C: the digests
class _StageC:
    def __init__(self, as_of_ns: int):
        self.as_of_ns = as_of_ns

    def __call__(self, batches):
        import pyarrow as pa
        schema = _arrow_schema(_B_FIELDS)
        hashes: dict[int, object] = {}
        for rb in batches:
            kind = rb.column(1).to_pylist()
            if _LINE not in kind:
                yield rb
                continue
            logs = rb.column(0).to_pylist()
            blobs = rb.column(3).to_pylist()
            keep = []
            for i, kd in enumerate(kind):
                if kd == _LINE:
                    h = hashes.get(logs[i])
                    if h is None:
                        h = hashes[logs[i]] = _digest_start(self.as_of_ns)
                    h.update(blobs[i])
                    h.update(b"\n")
                else:
                    keep.append(i)
            if keep:
                yield rb.take(pa.array(keep, pa.int32()))
        if hashes:
            logs = sorted(hashes)
            yield pa.RecordBatch.from_pydict({"log": logs, "kind": [_DIGEST] * len(logs), "key": [b""] * len(logs),
                                              "blob": [hashes[g].hexdigest().encode() for g in logs]},
                                             schema=schema)


def _digest_start(as_of_ns: int):
    """``engine.replay.state_digest`` up to the first job line (its header); tests prove the digests equal."""
    h = hashlib.sha256()
    h.update(b"wqtool-workq-state-v1\n")
    h.update(f"as_of_ns={as_of_ns}\n".encode())
    return h


# ---------------------------------------------------------------- the driver
def run_fleet(spark, logs: Sequence[LogSet], as_of_ns: int, *, limit: int | None = None, want_jobs: bool = False,
              partitions: int | None = None, progress: Callable[[str], None] | None = None) -> list[FleetLog]:
    """Verify, replay and count ``logs`` on ``spark``; one FleetLog per log, in order."""
    say = progress or (lambda _m: None)
    cwd = os.getcwd()
    tasks: list[_SegTask] = []
    paths: dict[tuple[int, int], str] = {}
    for li, log in enumerate(logs):
        newest = log.newest
        for si, seg in enumerate(log.segments):
            tasks.append(_SegTask(li, si, seg, seg is newest))
            paths[li, si] = seg.path
    if partitions is None:
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions", "8"))
    rows: list = []
    if tasks:
        say(f"spark: {len(logs)} log(s), {len(tasks)} segment(s), {partitions} job partition(s)")
        a = spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(_StageA(tasks, limit, cwd), _ddl(_A_FIELDS))
        b = (a.repartition(partitions, "key").sortWithinPartitions("key", "log", "seg", "off")
             .mapInArrow(_StageB(paths, as_of_ns, limit, want_jobs, cwd), _ddl(_B_FIELDS)))
        c = b.repartition(1).sortWithinPartitions("log", "kind", "key").mapInArrow(_StageC(as_of_ns), _ddl(_B_FIELDS))
        rows = c.collect()
    return [_assemble(li, log, as_of_ns, limit, [r for r in rows if r["log"] == li]) for li, log in enumerate(logs)]


def _assemble(li: int, log: LogSet, as_of_ns: int, limit: int | None, rows) -> FleetLog:
    segs: dict[int, dict] = {}
    parts: list[dict] = []
    jobs: dict = {}
    digest = None
    for r in rows:
        kind = r["kind"]
        if kind == _SEG:
            d = pickle.loads(r["blob"])
            segs[d["seg"]] = d
        elif kind == _LOG:
            parts.append(pickle.loads(r["blob"]))
        elif kind == _JOB:
            job = pickle.loads(r["blob"])
            jobs[job.id] = job
        elif kind == _DIGEST:
            digest = r["blob"].decode()
    base, n = {}, 0
    for si in range(len(log.segments)):
        base[si] = n
        n += segs[si]["records"] if si in segs else 0
    report = LogReport(root=log.root, segments=len(log.segments), records=n,
                       bytes=sum(d["bytes"] for d in segs.values()))
    # findings back in file order: discovery's, then per segment by offset (reader before replay), then notes
    merged: list[tuple[tuple, Finding]] = []
    counts, sev, exits, torn = Counter(), Counter(), set(), None
    for i, f in enumerate(log.findings):
        merged.append(((-1, i, 0, 0), f))
        counts[f.code] += 1
        sev[f.severity] += 1
        if f.exit_class:
            exits.add(int(f.exit_class))
    accs = [d["findings"] for d in segs.values()] + [p["findings"] for p in parts]
    for acc in accs:
        counts.update(acc.counts)
        sev.update(acc.severities)
        exits |= acc.exits
        if acc.torn is not None and (torn is None or acc.torn[0] > torn[0]):
            torn = acc.torn
        for key, f in acc.items():
            if f.record_index is not None and key[0] >= 0:
                f.record_index += base[key[0]]
            merged.append((key, f))
    merged.sort(key=lambda kf: kf[0])
    stats = RecordStats()
    by_state: Counter = Counter({s.label: 0 for s in JobState})
    by_queue: Counter = Counter()
    add_jobs = leased = records = applied = distinct = 0
    for p in parts:
        stats.merge(p["stats"])
        by_state.update(p["by_state"])
        by_queue.update(p["by_queue"])
        add_jobs += p["add_jobs"]
        leased += p["leased"]
        records += p["records"]
        applied += p["applied"]
        distinct += p["distinct"]
    notes = _finish_notes(as_of_ns, add_jobs, leased)
    for f in notes:
        merged.append(((_INF,), f))
        counts[f.code] += 1
        sev[f.severity] += 1
    kept = [f for _, f in merged]
    report.findings = kept if limit is None else kept[:limit]
    report.counts = counts
    report.severities = sev
    report.exit_code = worst_exit(exits)
    if torn is not None:
        report.last_good = (torn[1], torn[2])
    queues: dict[str, dict[str, int]] = {}
    for (name, label), v in sorted(by_queue.items()):
        queues.setdefault(name, {s.label: 0 for s in JobState})[label] = v
    n_jobs = sum(by_state.values())
    report.state = FleetReplayState(as_of_ns, jobs, records, applied, [f for f in notes],
                                    fleet_digest=digest or _digest_start(as_of_ns).hexdigest(), job_count=n_jobs,
                                    by_state=dict(by_state), by_queue=queues)
    return FleetLog(report, stats, distinct)


def _finish_notes(as_of_ns: int, add_jobs: int, leased: int) -> list[Finding]:
    """The notes ``WorkqReplay.finish()`` adds for a state with ``add_jobs`` add-jobs and ``leased`` leased jobs
    (run on stand-ins, so the text is the engine's own)."""
    from types import SimpleNamespace
    r = WorkqReplay(as_of_ns)
    n = max(add_jobs, leased)
    r.jobs = {i: SimpleNamespace(kind=CmdType.ADD if i < add_jobs else CmdType.SCHEDULE, ttr=0,
                                 state=JobState.LEASED if i < leased else JobState.NEW, lease_expires_ns=None)
              for i in range(n)}
    return r.finish().findings


# ---------------------------------------------------------------- commands' entry points
def fleet_verify(spark, logs: Sequence[LogSet], as_of_ns: int, *, max_findings: int | None = None,
                 progress=None) -> VerifyReport:
    """``engine.verify.verify`` on Spark: the same reports (findings, counts, exit codes, digests)."""
    return VerifyReport([fl.report for fl in run_fleet(spark, logs, as_of_ns, limit=max_findings,
                                                       progress=progress)])


def fleet_replay(spark, log: LogSet, as_of_ns: int, *, progress=None) -> LogReport:
    """``engine.verify.run_log`` on Spark, with the replayed jobs collected (for replay's output)."""
    return run_fleet(spark, [log], as_of_ns, want_jobs=True, progress=progress)[0].report


def fleet_stats(spark, logs: Sequence[LogSet], as_of_ns: int, *, progress=None) -> list[FleetLog]:
    return run_fleet(spark, logs, as_of_ns, limit=0, progress=progress)


def export_records(spark, paths: Sequence[str], out: str, *, fmt: str = "parquet", payload: str = "base64",
                   progress=None):
    """Write the records of PATHs (the ``workq`` data source's rows, permissive) to ``out`` as Parquet or JSON
    Lines files; returns the findings met on the way (the ``_corrupt`` rows), in order."""
    say = progress or (lambda _m: None)
    df = (spark.read.format("workq").option("payload", payload).option("mode", "permissive")
          .option("paths", json.dumps(list(paths))).load())
    say(f"spark: writing {fmt} to {out}")
    writer = df.write.mode("errorifexists")
    writer.parquet(out) if fmt == "parquet" else writer.json(out)
    back = spark.read.parquet(out) if fmt == "parquet" else spark.read.schema(df.schema).json(out)
    corrupt = back.where("_corrupt is not null").select("_corrupt").collect()
    return [Finding(**_finding_kwargs(r["_corrupt"].asDict())) for r in corrupt]


def _finding_kwargs(d: dict) -> dict:
    return {"severity": d["severity"], "code": d["code"], "message": d["message"], "path": d["file"],
            "offset": d["offset"], "record_index": d["record_index"], "last_good_offset": d["last_good_offset"],
            "upstream": d["upstream"], "exit_class": ExitCode(d["exit_class"] or 0), "job_id": d["job_id"],
            "resumes_at": d["resumes_at"]}
