"""wqtool's formats as Spark data sources (the Python Data Source API of Spark 4).

    spark.read.format("workq").load("/var/lib/workq/cmdlog")                 # a directory, a file or a glob
    spark.read.format("workq").option("payload", "true").option("mode", "failfast").load(path)

One input partition per segment file, in the order the engine reads them; the rows have the fields of
``wqtool dump -o jsonl`` (``wqtool.engine.serialize.RECORD_FIELDS``), typed. The engine is imported inside
``read()``: it runs on the executors.

Options
  payload   false (default: no payload column) | true or base64 (as ``dump -o jsonl``) | hex | text | binary
            (BinaryType; also the result column). ``result`` follows the same rendering.
  mode      permissive (default): every finding of the reader and the payload decoder becomes one row whose
            ``_corrupt`` struct holds it (the fields of ``verify -o jsonl``: code, offset, last good offset,
            ...), and reading goes on where the engine resyncs. failfast: the first error finding fails the
            read. Findings that need the whole log replayed (history: unknown jobs, duplicates, ...) are not
            row-level; ``wqtool verify --engine spark`` reports them.
  index     log (default): ``index`` is the record's index in its log, as dump prints it; planning reads the
            framing of every segment but the newest of each log once to number them. segment: per segment,
            no planning pass.
  paths     a JSON list of paths, for several at once (``load()`` takes one).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

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

    @classmethod
    def parse(cls, options, cwd: str | None = None) -> "Options":
        o = {k.lower(): v for k, v in dict(options).items()}
        payload = str(o.get("payload", "false")).lower()
        if payload not in PAYLOAD_OPTIONS:
            raise ValueError(f"workq: option payload must be one of {', '.join(PAYLOAD_OPTIONS)}, got {payload!r}")
        payload = "base64" if payload == "true" else payload
        mode = str(o.get("mode", "permissive")).lower()
        if mode not in ("permissive", "failfast"):
            raise ValueError(f"workq: option mode must be permissive or failfast, got {mode!r}")
        index = str(o.get("index", "log")).lower()
        if index not in ("log", "segment"):
            raise ValueError(f"workq: option index must be log or segment, got {index!r}")
        if "paths" in o:
            paths = json.loads(o["paths"])
            paths = [paths] if isinstance(paths, str) else list(paths)
        elif "path" in o:
            paths = [o["path"]]
        else:
            raise ValueError("workq: no path given: load(path) or option('paths', json.dumps([...]))")
        return cls(payload, mode == "permissive", index == "log", tuple(paths), cwd)

    def columns(self) -> list[tuple[str, str]]:
        from ..engine.serialize import RECORD_FIELDS
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
    """One segment of one log; ``log_findings`` (discovery's) ride with the log's first partition."""

    root: str
    segment: object | None              # engine.reader.Segment; None: a log without segments
    is_newest: bool
    start_index: int
    log_findings: list = field(default_factory=list)

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
            if not log.segments:
                parts.append(SegmentPartition(log.root, None, False, 0, list(log.findings)))
                continue
            for i, seg in enumerate(log.segments):
                parts.append(SegmentPartition(log.root, seg, seg is newest, index if self.opts.log_index else 0,
                                              list(log.findings) if i == 0 else []))
                if self.opts.log_index and seg is not newest:
                    index += count_records(seg, False)
        return parts

    def read(self, partition: SegmentPartition):
        import pyarrow as pa

        from ..engine.findings import ERROR
        from ..engine.model import Record
        from ..engine.replay import WorkqReplay
        from ..engine.serialize import finding_to_jsonable, record_to_jsonable
        from ._segments import segment_events, working_dir

        opts = self.opts
        cols = opts.columns()
        names = [n for n, _ in cols]
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
            d = finding_to_jsonable(f)
            rows.append({"file": d["file"], "offset": d["offset"], "_corrupt": d})

        for f in partition.log_findings:
            finding(f)
        seg = partition.segment
        with working_dir(opts.cwd):
            yield from self._batches(seg, partition, rows, flush, finding, render, binary)

    def _batches(self, seg, partition, rows, flush, finding, render, binary):
        from ..engine.model import Record
        from ..engine.replay import WorkqReplay
        from ..engine.serialize import record_to_jsonable
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


def register(spark) -> None:
    """Register the wqtool data sources on ``spark`` (idempotent).

    The registered class is a subclass made here that remembers the caller's working directory (cloudpickle
    ships it by value), so ``load("cmdlog")`` reads ./cmdlog and the ``file`` column says ``cmdlog/...``.
    """
    import os
    spark.dataSource.register(type("WorkqDataSource", (WorkqDataSource,), {"cwd": os.getcwd(),
                                                                         "__module__": __name__ + "._registered"}))
