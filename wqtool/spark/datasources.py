"""wqtool's formats as Spark data sources (the Python Data Source API of Spark 4).

    spark.read.format("workq").load("/var/lib/workq/cmdlog")                 # a directory, a file or a glob
    spark.read.format("workq").option("payload", "true").option("mode", "failfast").load(path)

One input partition per segment file, in the order the engine reads them; the rows have the fields of
``wqtool dump -o jsonl`` (``wqtool.engine.serialize.RECORD_FIELDS``), typed. The engine is imported inside
``read()``: it runs on the executors.

Options
  payload   false (default: no payload column) | true or base64 (as ``dump -o jsonl``) | hex | text | binary
            (BinaryType; also the result column). ``result`` follows the same rendering.
  mode      permissive (default): every finding verify reports becomes one row whose ``_corrupt`` struct holds
            it (the fields of ``verify -o jsonl``: code, offset, last good offset, ...), and reading goes on
            where the engine resyncs. failfast: the first error finding fails the read.
  history   true (default): the replay's findings too (``engine.findings.REPLAY_CODES``: duplicates, unknown
            jobs, impossible leases, expiries at ``as_of``, the closing notes) — the partition of each log's
            newest segment replays the whole log with the engine (``engine.verify.replay_findings``: the hot
            kernel, ~200 MB/s here) and adds them after its records; with the row-level findings (discovery,
            framing, CRC, payloads) in file order before them, they are exactly verify's findings.
            false: row-level findings only, no replay pass.
  as_of     the clock of those checks, as ``--as-of``: RFC 3339, epoch seconds, @<n>ns (exact) or now (default).
  index     log (default): ``index`` is the record's index in its log, as dump prints it; planning reads the
            framing of every segment but the newest of each log once to number them. segment: per segment,
            no planning pass (row-level ``_corrupt.record_index`` too; the replay's findings keep the log's).
  paths     a JSON list of paths, for several at once (``load()`` takes one).

``spark.read.format("kestrel").load("/var/spool/kestrel")`` reads Kestrel queue journals the same way: one
partition per journal file, files in the engine's replay order (a directory is one file set per queue; the
``.pack`` and temp rules applied virtually), rows with ``KESTREL_RECORD_FIELDS`` as ``dump -o jsonl --format
kestrel`` prints them. Same payload / mode / paths options; ``index`` log (default: across the queue's files,
planning reads every file but the live one) | file; ``queue`` one queue of each directory; ``kestrel_version``;
``keep_open`` (as ``--keep-open``). Permissive ``_corrupt`` rows carry the reader's findings (framing damage,
discovery's file-set warnings) with the record columns of ``damage_to_jsonable``; each file is read by the
engine's reader on its own, told whether it is the live file (damage at the end of the live file is a torn tail,
elsewhere corruption). With ``history`` (default) the queue's last file's partition replays the queue
(``engine.kestrel.replay_findings``) and adds the replay's findings (removes on an empty queue, xid reuse, the
closing notes): together, verify's findings.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (BinaryType, BooleanType, DecimalType, IntegerType, LongType, StringType, StructField,
                               StructType)

#: Spark type of each RECORD_FIELDS column. uvarint fields are DECIMAL(20,0): a hostile log may hold any uint64.
_TYPES = {
    "file": "string", "offset": "long", "length": "long", "index": "long", "time": "string", "cmd": "string",
    "job_id": "string", "name": "string", "priority": "long", "ttr_ms": "u64", "ttl_ms": "u64",
    "max_attempts": "u64", "max_fails": "u64", "scheduled": "string", "created": "string", "payload_len": "long",
    "payload": "bytes", "result_len": "long", "result": "bytes", "crc": "string", "crc_ok": "bool",
    "error": "string",
}
#: The ``_corrupt`` struct: ``finding_to_jsonable``'s fields.
_FINDING_TYPES = {
    "severity": "string", "code": "string", "file": "string", "offset": "long", "record_index": "long",
    "last_good_offset": "long", "message": "string", "upstream": "string", "exit_class": "int",
    "job_id": "string", "resumes_at": "long",
}
_SPARK = {"string": StringType(), "long": LongType(), "int": IntegerType(), "u64": DecimalType(20, 0),
          "bool": BooleanType(), "binary": BinaryType()}
PAYLOAD_OPTIONS = ("false", "true", "base64", "hex", "text", "binary")
BATCH_ROWS = 4096


@dataclass(frozen=True)
class Options:
    payload: str = "false"     # false | base64 | hex | text | binary
    permissive: bool = True
    log_index: bool = True
    paths: tuple[str, ...] = ()
    cwd: str | None = None     # the driver's working directory at register(): relative paths mean what they said
    history: bool = True       # add the replay's findings (a replay pass per log)
    as_of_ns: int = 0          # the replay's clock ("now" is read once, when the options are parsed)

    NAME: ClassVar[str] = "workq"
    INDEX: ClassVar[tuple[str, ...]] = ("log", "segment")

    @classmethod
    def parse(cls, options, cwd: str | None = None) -> "Options":
        o = {k.lower(): v for k, v in dict(options).items()}
        name = cls.NAME
        payload = str(o.get("payload", "false")).lower()
        if payload not in PAYLOAD_OPTIONS:
            raise ValueError(f"{name}: option payload must be one of {', '.join(PAYLOAD_OPTIONS)}, got {payload!r}")
        payload = "base64" if payload == "true" else payload
        mode = str(o.get("mode", "permissive")).lower()
        if mode not in ("permissive", "failfast"):
            raise ValueError(f"{name}: option mode must be permissive or failfast, got {mode!r}")
        index = str(o.get("index", "log")).lower()
        if index not in cls.INDEX:
            raise ValueError(f"{name}: option index must be {' or '.join(cls.INDEX)}, got {index!r}")
        if "paths" in o:
            paths = json.loads(o["paths"])
            paths = [paths] if isinstance(paths, str) else list(paths)
        elif "path" in o:
            paths = [o["path"]]
        else:
            raise ValueError(f"{name}: no path given: load(path) or option('paths', json.dumps([...]))")
        history = _bool(o, name, "history", True)
        from ..engine.instant import parse_instant
        try:
            as_of_ns = parse_instant(str(o.get("as_of", "now")))
        except ValueError as exc:
            raise ValueError(f"{name}: option as_of: {exc}") from None
        return cls(payload, mode == "permissive", index == "log", tuple(paths), cwd, history, as_of_ns)

    def columns(self) -> list[tuple[str, str]]:
        from ..engine.workq.serialize import RECORD_FIELDS
        assert set(RECORD_FIELDS) == set(_TYPES), "RECORD_FIELDS changed: update wqtool.spark.datasources._TYPES"
        cols = []
        for name in RECORD_FIELDS:
            t = _TYPES[name]
            if name == "payload" and self.payload == "false":
                continue
            if t == "bytes":
                t = "binary" if self.payload == "binary" else "string"
            cols.append((name, t))
        return cols


def _bool(o: dict, name: str, key: str, default: bool) -> bool:
    v = str(o.get(key, default)).lower()
    if v not in ("true", "false"):
        raise ValueError(f"{name}: option {key} must be true or false, got {o.get(key)!r}")
    return v == "true"


def _struct(cols) -> StructType:
    return StructType([StructField(n, _SPARK[t], True) for n, t in cols])


def finding_struct() -> StructType:
    return _struct(_FINDING_TYPES.items())


def record_schema(opts: Options) -> StructType:
    st = _struct(opts.columns())
    if opts.permissive:
        st = st.add(StructField("_corrupt", finding_struct(), True))
    return st


@dataclass
class SegmentPartition(InputPartition):
    """One segment of one log; ``log_findings`` (discovery's) ride with the log's first partition, the whole
    ``log`` (for the replay's findings, option history) with its last."""

    root: str
    segment: object | None              # engine.reader.Segment; None: a log without segments
    is_newest: bool
    start_index: int
    log_findings: list = field(default_factory=list)
    log: object | None = None           # engine.reader.LogSet: replay it after this segment's rows

    def __post_init__(self):
        super().__init__(self.segment.path if self.segment is not None else self.root)


class WorkqDataSource(DataSource):
    """``spark.read.format("workq")``: workq 0.2.0 command-log records, one partition per segment."""

    cwd: str | None = None     # set on the subclass register() makes

    @classmethod
    def name(cls) -> str:
        return "workq"

    def schema(self) -> StructType:
        return record_schema(Options.parse(self.options, self.cwd))

    def reader(self, schema: StructType) -> "WorkqReader":
        return WorkqReader(Options.parse(self.options, self.cwd))


class WorkqReader(DataSourceReader):
    def __init__(self, opts: Options):
        self.opts = opts

    def partitions(self) -> list[SegmentPartition]:
        from ._segments import count_records, plan_logs, working_dir
        with working_dir(self.opts.cwd):
            return self._partitions(plan_logs(self.opts.paths), count_records)

    def _partitions(self, logs, count_records) -> list[SegmentPartition]:
        parts: list[SegmentPartition] = []
        for log in logs:
            index = 0
            newest = log.newest
            replay = log if self.opts.history else None
            if not log.segments:
                parts.append(SegmentPartition(log.root, None, False, 0, list(log.findings), replay))
                continue
            last = len(log.segments) - 1
            for i, seg in enumerate(log.segments):
                parts.append(SegmentPartition(log.root, seg, seg is newest, index if self.opts.log_index else 0,
                                              list(log.findings) if i == 0 else [], replay if i == last else None))
                if self.opts.log_index and seg is not newest:
                    index += count_records(seg, False)
        return parts

    def read(self, partition: SegmentPartition):
        import pyarrow as pa

        from ..engine.findings import ERROR
        from ..engine.serialize import finding_to_jsonable
        from ._segments import working_dir

        opts = self.opts
        cols = opts.columns()
        [n for n, _ in cols]
        arrow_types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "u64": pa.decimal128(20, 0),
                       "bool": pa.bool_(), "binary": pa.binary()}
        fields = [pa.field(n, arrow_types[t]) for n, t in cols]
        ftype = pa.struct([pa.field(n, arrow_types[t]) for n, t in _FINDING_TYPES.items()])
        if opts.permissive:
            fields.append(pa.field("_corrupt", ftype))
        schema = pa.schema(fields)
        render = "none" if opts.payload in ("false", "binary") else opts.payload
        binary = opts.payload == "binary"
        rows: list[dict] = []

        def flush():
            data = {n: [r.get(n) for r in rows] for n in schema.names}
            batch = pa.RecordBatch.from_pydict(data, schema=schema)
            rows.clear()
            return batch

        def finding(f):
            if not opts.permissive:
                if f.severity == ERROR:
                    raise ValueError(f"workq (mode failfast): {f.location()}: {f.code}: {f.message}")
                return
            d = finding_to_jsonable(f)   # a log-wide note has no file: the row names the log
            rows.append({"file": d["file"] or partition.root, "offset": d["offset"], "_corrupt": d})

        for f in partition.log_findings:
            finding(f)
        seg = partition.segment
        with working_dir(opts.cwd):
            yield from self._batches(seg, partition, rows, flush, finding, render, binary)
            if partition.log is not None:
                from ..engine.workq.verify import replay_findings
                for f in replay_findings(partition.log, opts.as_of_ns):
                    finding(f)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
                if rows:
                    yield flush()

    def _batches(self, seg, partition, rows, flush, finding, render, binary):
        from ..engine.workq.model import Record
        from ..engine.workq.replay import WorkqReplay
        from ..engine.workq.serialize import record_to_jsonable
        from ._segments import segment_events
        events = () if seg is None else segment_events(seg, partition.start_index, partition.is_newest)
        for ev in events:
            if ev.__class__ is Record:
                row = record_to_jsonable(ev, payload=render)
                c = ev.command
                if binary:
                    if c is None:
                        row["payload"] = ev.raw_payload
                    else:
                        row["payload"], row["result"] = c.payload, c.result
                rows.append(row)
                if c is None:  # the payload findings verify reports for this record (its replay adds nothing else)
                    r = WorkqReplay(0)
                    r.apply(ev)
                    for f in r.findings:
                        finding(f)
            else:
                finding(ev)
            if len(rows) >= BATCH_ROWS:
                yield flush()
        if rows:
            yield flush()


# ---------------------------------------------------------------- kestrel
#: Spark type of each KESTREL_RECORD_FIELDS column.
_KESTREL_TYPES = {
    "file": "string", "offset": "long", "length": "long", "index": "long", "op": "string", "xid": "long",
    "add_time": "string", "expiry": "string", "payload_len": "long", "payload": "bytes", "error": "string",
}


@dataclass(frozen=True)
class KestrelOptions(Options):
    """The workq options (payload, mode, index = log | file, paths), plus ``queue`` (one queue of each
    directory) and ``kestrel_version`` (passed to discovery; it only matters for replay)."""

    queue: str | None = None
    kestrel_version: str = "auto"
    keep_open: bool = False

    NAME: ClassVar[str] = "kestrel"
    INDEX: ClassVar[tuple[str, ...]] = ("log", "file", "segment")

    @classmethod
    def parse(cls, options, cwd: str | None = None) -> "KestrelOptions":
        base = super().parse(options, cwd)
        o = {k.lower(): v for k, v in dict(options).items()}
        version = str(o.get("kestrel_version", "auto"))
        from ..engine.kestrel import KESTREL_VERSIONS
        if version not in KESTREL_VERSIONS:
            raise ValueError(f"kestrel: option kestrel_version must be one of {', '.join(KESTREL_VERSIONS)}, "
                             f"got {version!r}")
        return replace(base, queue=o.get("queue") or None, kestrel_version=version,
                       keep_open=_bool(o, "kestrel", "keep_open", False))

    def columns(self) -> list[tuple[str, str]]:
        from ..engine.kestrel import KESTREL_RECORD_FIELDS
        assert set(KESTREL_RECORD_FIELDS) == set(_KESTREL_TYPES), \
            "KESTREL_RECORD_FIELDS changed: update wqtool.spark.datasources._KESTREL_TYPES"
        cols = []
        for name in KESTREL_RECORD_FIELDS:
            t = _KESTREL_TYPES[name]
            if name == "payload" and self.payload == "false":
                continue
            if t == "bytes":
                t = "binary" if self.payload == "binary" else "string"
            cols.append((name, t))
        return cols


@dataclass
class JournalPartition(InputPartition):
    """One journal file of one queue. ``live``: the queue's live file (damage at its end is a torn tail);
    ``set_findings`` (discovery's: temps, stray names, half-finished packs) ride with the queue's first file."""

    fileset: object                     # engine.kestrel.FileSet (its files and findings are not read here)
    file: object | None                 # engine.kestrel.JournalFile; None: a queue without journal files
    live: bool
    start_index: int
    set_findings: list = field(default_factory=list)
    replay: bool = False                # the queue's last partition: add the replay's findings (option history)

    def __post_init__(self):
        super().__init__(self.file.path if self.file is not None else self.fileset.live_path)


class KestrelDataSource(DataSource):
    """``spark.read.format("kestrel")``: Kestrel queue journal records, one partition per journal file, in the
    engine's replay order (``.pack`` and temp rules applied virtually, as ``wqtool dump`` does)."""

    cwd: str | None = None     # set on the subclass register() makes

    @classmethod
    def name(cls) -> str:
        return "kestrel"

    def schema(self) -> StructType:
        return record_schema(KestrelOptions.parse(self.options, self.cwd))

    def reader(self, schema: StructType) -> "KestrelReader":
        return KestrelReader(KestrelOptions.parse(self.options, self.cwd))


class KestrelReader(DataSourceReader):
    def __init__(self, opts: KestrelOptions):
        self.opts = opts

    def partitions(self) -> list[JournalPartition]:
        from ._journals import count_records, is_live, plan_queues
        from ._segments import working_dir
        opts = self.opts
        parts: list[JournalPartition] = []
        with working_dir(opts.cwd):
            for fs in plan_queues(opts.paths, opts.kestrel_version, opts.queue):
                findings, fs.findings = list(fs.findings), []   # shipped once, with the first partition
                if not fs.files:
                    parts.append(JournalPartition(fs, None, False, 0, findings, opts.history))
                    continue
                index = 0
                last = len(fs.files) - 1
                for i, jf in enumerate(fs.files):
                    live = is_live(fs, jf)
                    parts.append(JournalPartition(fs, jf, live, index if opts.log_index else 0,
                                                  findings if i == 0 else [], opts.history and i == last))
                    if opts.log_index and i < len(fs.files) - 1:
                        index += count_records(fs, jf, live)
        return parts

    def read(self, partition: JournalPartition):
        import pyarrow as pa

        from ..engine import kestrel
        from ..engine.findings import ERROR
        from ..engine.serialize import finding_to_jsonable
        from ._journals import file_events
        from ._segments import working_dir

        opts = self.opts
        schema = _arrow_schema(opts)
        render = "none" if opts.payload in ("false", "binary") else opts.payload
        binary = opts.payload == "binary"
        Record, to_row, damage_row = kestrel.Record, kestrel.record_to_jsonable, kestrel.damage_to_jsonable
        names = schema.names
        rows: list[dict] = []

        def flush():
            batch = pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names}, schema=schema)
            rows.clear()
            return batch

        def finding(f):
            if not opts.permissive:
                if f.severity == ERROR:
                    raise ValueError(f"kestrel (mode failfast): {f.location()}: {f.code}: {f.message}")
                return
            row = damage_row(f)
            if row["file"] is None:    # a queue-wide note: the row names the queue's live file
                fs = partition.fileset
                row["file"] = fs.live_path if fs.is_dir else fs.root
            row["_corrupt"] = finding_to_jsonable(f)
            rows.append(row)

        for f in partition.set_findings:
            finding(f)
        if partition.file is not None:
            with working_dir(opts.cwd):
                for ev in file_events(partition.fileset, partition.file, partition.live, partition.start_index):
                    if ev.__class__ is Record:
                        row = to_row(ev, payload=render)
                        if binary:
                            row["payload"] = ev.data
                        rows.append(row)
                    else:
                        finding(ev)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
        if partition.replay:
            with working_dir(opts.cwd):
                for f in kestrel.replay_findings(partition.fileset, opts.as_of_ns, keep_open=opts.keep_open):
                    finding(f)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
        if rows:
            yield flush()


def _arrow_schema(opts: Options):
    """The Arrow schema of ``record_schema(opts)`` (what ``read()`` yields)."""
    import pyarrow as pa
    arrow_types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "u64": pa.decimal128(20, 0),
                   "bool": pa.bool_(), "binary": pa.binary()}
    fields = [pa.field(n, arrow_types[t]) for n, t in opts.columns()]
    if opts.permissive:
        fields.append(pa.field("_corrupt", pa.struct([pa.field(n, arrow_types[t])
                                                      for n, t in _FINDING_TYPES.items()])))
    return pa.schema(fields)


def register(spark) -> None:
    """Register the wqtool data sources on ``spark`` (idempotent).

    The registered class is a subclass made here that remembers the caller's working directory (cloudpickle
    ships it by value), so ``load("cmdlog")`` reads ./cmdlog and the ``file`` column says ``cmdlog/...``.
    """
    import os
    for base in (WorkqDataSource, KestrelDataSource):
        spark.dataSource.register(type(base.__name__, (base,), {"cwd": os.getcwd(),
                                                               "__module__": __name__ + "._registered"}))
