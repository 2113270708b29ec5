"""Every registered format as a Spark data source (the Python Data Source API of Spark 4).

    spark.read.format(name).load(path)          # name: a registered format; path: a directory, a file or a glob
    spark.read.format(name).option("payload", "true").option("mode", "failfast").load(path)

One source per format (``register`` makes them from the format registry), one input partition per file of each
log (a workq segment, a Kestrel journal file), in the order the engine reads them; the rows have the fields of
``wqtool dump -o jsonl`` for that format (its ``RecordView``), typed. The engine is imported inside ``read()``: it
runs on the executors.

Options (every format)
  payload   false (default: no payload column) | true or base64 (as ``dump -o jsonl``) | hex | text | binary
            (BinaryType) — every ``bytes`` column (workq: payload and result) follows it.
  mode      permissive (default): every finding verify reports becomes one row whose ``_corrupt`` struct holds
            it (the fields of ``verify -o jsonl``: code, offset, last good offset, ...), and reading goes on
            where the engine resyncs. failfast: the first error finding fails the read.
  history   true (default): the replay's findings too (the format's ``replay_codes``: duplicates, unknown jobs,
            expiries at ``as_of``, removes on an empty queue, the closing notes, ...) — the partition of each
            log's last file replays the whole log with the engine (``Format.replay_findings``: workq's hot
            kernel, ~200 MB/s here) and adds them after its records; with the row-level findings (discovery,
            framing, CRC, payloads) in file order before them, they are exactly verify's findings.
            false: row-level findings only, no replay pass.
  as_of     the clock of those checks, as ``--as-of``: RFC 3339, epoch seconds, @<n>ns (exact) or now (default).
  index     log (default): ``index`` is the record's index in its log, as dump prints it; planning reads the
            framing of every file but the last of each log once to number them. file (or segment): per file,
            no planning pass (row-level ``_corrupt.record_index`` too; the replay's findings keep the log's).
  paths     a JSON list of paths, for several at once (``load()`` takes one).
  and the format's own (``Format.source_options``): Kestrel ``queue`` (one queue of each directory),
  ``kestrel_version``, ``keep_open``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (BinaryType, BooleanType, DecimalType, IntegerType, LongType, StringType, StructField,
                               StructType)

#: The ``_corrupt`` struct: ``finding_to_jsonable``'s fields.
_FINDING_TYPES = {
    "severity": "string", "code": "string", "file": "string", "offset": "long", "record_index": "long",
    "last_good_offset": "long", "message": "string", "upstream": "string", "exit_class": "int",
    "job_id": "string", "resumes_at": "long",
}
_SPARK = {"string": StringType(), "long": LongType(), "int": IntegerType(), "u64": DecimalType(20, 0),
          "bool": BooleanType(), "binary": BinaryType()}
PAYLOAD_OPTIONS = ("false", "true", "base64", "hex", "text", "binary")
INDEX_OPTIONS = ("log", "file", "segment")
BATCH_ROWS = 4096


@dataclass(frozen=True)
class Options:
    fmt_name: str
    payload: str = "false"     # false | base64 | hex | text | binary
    permissive: bool = True
    log_index: bool = True
    paths: tuple[str, ...] = ()
    cwd: str | None = None     # the driver's working directory at register(): relative paths mean what they said
    history: bool = True       # add the replay's findings (a replay pass per log)
    as_of_ns: int = 0          # the replay's clock ("now" is read once, when the options are parsed)
    extra: dict = field(default_factory=dict)   # the format's own options (Options.extra of the engine)

    @classmethod
    def parse(cls, fmt, options, cwd: str | None = None) -> "Options":
        o = {k.lower(): v for k, v in dict(options).items()}
        name = fmt.name
        payload = str(o.get("payload", "false")).lower()
        if payload not in PAYLOAD_OPTIONS:
            raise ValueError(f"{name}: option payload must be one of {', '.join(PAYLOAD_OPTIONS)}, got {payload!r}")
        payload = "base64" if payload == "true" else payload
        mode = str(o.get("mode", "permissive")).lower()
        if mode not in ("permissive", "failfast"):
            raise ValueError(f"{name}: option mode must be permissive or failfast, got {mode!r}")
        index = str(o.get("index", "log")).lower()
        if index not in INDEX_OPTIONS:
            raise ValueError(f"{name}: option index must be {' or '.join(INDEX_OPTIONS)}, got {index!r}")
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
        return cls(name, payload, mode == "permissive", index == "log", tuple(paths), cwd, history, as_of_ns,
                   fmt.source_options(o))

    def engine_options(self):
        from ..engine.format import Options as EngineOptions
        return EngineOptions(self.as_of_ns, False, {k: v for k, v in self.extra.items() if v is not None})

    def columns(self, view) -> list[tuple[str, str]]:
        assert set(view.fields) == set(view.types), f"{self.fmt_name}: RecordView.types must type every field"
        cols = []
        for name in view.fields:
            t = view.types[name]
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


def record_schema(opts: Options, view) -> StructType:
    st = _struct(opts.columns(view))
    if opts.permissive:
        st = st.add(StructField("_corrupt", finding_struct(), True))
    return st


def _arrow_schema(opts: Options, view):
    """The Arrow schema of ``record_schema(opts)`` (what ``read()`` yields)."""
    import pyarrow as pa
    arrow_types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "u64": pa.decimal128(20, 0),
                   "bool": pa.bool_(), "binary": pa.binary()}
    fields = [pa.field(n, arrow_types[t]) for n, t in opts.columns(view)]
    if opts.permissive:
        fields.append(pa.field("_corrupt", pa.struct([pa.field(n, arrow_types[t])
                                                      for n, t in _FINDING_TYPES.items()])))
    return pa.schema(fields)


@dataclass
class FilePartition(InputPartition):
    """One file of one log. ``log_findings`` (discovery's) ride with the log's first partition; ``replay``: the
    log's last partition, which adds the replay's findings (option history)."""

    log: object                         # the format's log object (its files are read one per partition)
    name: str                           # Format.log_name(log): a log-wide finding's row names it
    file: int | None                    # index in the log's files; None: a log without files
    path: str
    start_index: int
    log_findings: list = field(default_factory=list)
    replay: bool = False

    def __post_init__(self):
        super().__init__(self.path)


class RecordSource(DataSource):
    """``spark.read.format(<format>)``: the format's records, one partition per file. ``register`` makes a
    subclass per format (``fmt_name``) that also remembers the caller's working directory."""

    fmt_name: ClassVar[str] = ""
    cwd: ClassVar[str | None] = None

    @classmethod
    def name(cls) -> str:
        return cls.fmt_name

    def _fmt(self):
        from ..engine.format import get
        return get(self.fmt_name)

    def schema(self) -> StructType:
        fmt = self._fmt()
        return record_schema(Options.parse(fmt, self.options, self.cwd), fmt.record_view)

    def reader(self, schema: StructType) -> "RecordSourceReader":
        return RecordSourceReader(Options.parse(self._fmt(), self.options, self.cwd))


class RecordSourceReader(DataSourceReader):
    def __init__(self, opts: Options):
        self.opts = opts

    def _fmt(self):
        from ..engine.format import get
        return get(self.opts.fmt_name)

    def partitions(self) -> list[FilePartition]:
        from ._paths import expand_paths, working_dir
        opts, fmt = self.opts, self._fmt()
        parts: list[FilePartition] = []
        with working_dir(opts.cwd):
            for log in fmt.discover(expand_paths(opts.paths), opts.engine_options()):
                findings = list(log.findings)
                name = fmt.log_name(log)
                files = fmt.files(log)
                if not files:
                    parts.append(FilePartition(log, name, None, name, 0, findings, opts.history))
                    continue
                index, last = 0, len(files) - 1
                for i, path in enumerate(files):
                    parts.append(FilePartition(log, name, i, path, index if opts.log_index else 0,
                                               findings if i == 0 else [], opts.history and i == last))
                    if opts.log_index and i < last:
                        index += fmt.file_records(log, i)
        return parts

    def read(self, partition: FilePartition):
        import pyarrow as pa

        from ..engine.findings import ERROR
        from ..engine.serialize import finding_to_jsonable
        from ._paths import working_dir

        opts, fmt = self.opts, self._fmt()
        view = fmt.record_view
        schema = _arrow_schema(opts, view)
        names = schema.names
        render = "none" if opts.payload in ("false", "binary") else opts.payload
        binary = opts.payload == "binary"
        rec_cls = fmt.record_cls
        rows: list[dict] = []

        def flush():
            batch = pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names}, schema=schema)
            rows.clear()
            return batch

        def finding(f):
            if not opts.permissive:
                if f.severity == ERROR:
                    raise ValueError(f"{opts.fmt_name} (mode failfast): {f.location()}: {f.code}: {f.message}")
                return
            row = view.damage_row(f)
            if row.get("file") is None:     # a log-wide finding: the row names the log
                row["file"] = partition.name
            row["_corrupt"] = finding_to_jsonable(f)
            rows.append(row)

        for f in partition.log_findings:
            finding(f)
        with working_dir(opts.cwd):
            if partition.file is not None:
                for ev in fmt.file_events(partition.log, partition.file, partition.start_index):
                    if ev.__class__ is rec_cls:
                        row = view.row(ev, render)
                        if binary:
                            row.update(view.binary(ev))
                        rows.append(row)
                    else:
                        finding(ev)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
            if partition.replay:
                for f in fmt.replay_findings(partition.log, opts.engine_options()):
                    finding(f)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
        if rows:
            yield flush()


def register(spark) -> None:
    """Register a data source per format (idempotent): the format's ``spark_source`` class, else a
    ``RecordSource``, subclassed here to remember the format and the caller's working directory (cloudpickle
    ships it by value), so ``load("cmdlog")`` reads ./cmdlog and the ``file`` column says ``cmdlog/...``."""
    import os

    from ..engine.format import formats, load_object
    for fmt in formats():
        base = load_object(fmt.spark_source) if fmt.spark_source else RecordSource
        spark.dataSource.register(type(f"{type(fmt).__name__}Source", (base,),
                                       {"fmt_name": fmt.name, "cwd": os.getcwd(),
                                        "__module__": __name__ + "._registered"}))
