"""Every registered format as two Spark data sources (the Python Data Source API of Spark 4), following Spark's
conventions for file sources:

    spark.read.format(name).load(path)              # the records: count() is the number of records
    spark.read.format(name + "-findings").load(path)  # what `wqtool verify` reports, one row per finding

(``name``: a registered format, ``workq``, ``kestrel``, ...; ``path``: a directory, a file or a glob). One input
partition per file of each log (a workq segment, a Kestrel journal file), in the order the engine reads them. The
engine is imported inside ``read()``: it runs on the executors. ``wqtool.spark.register(spark)`` registers them
and first checks that Spark's Python workers can import wqtool (``check_workers``).

``format(name)``: the records, with the fields of ``wqtool dump -o jsonl`` for that format (its ``RecordView``),
typed.
  payload   false (default: no payload column) | true or base64 (as ``dump -o jsonl``) | hex | text | binary
            (BinaryType) — every ``bytes`` column (workq: payload and result) follows it.
  mode      permissive (default): like Spark's own readers with ``_corrupt_record``, bytes no record covers (a
            damaged stretch up to where records resume, a torn tail) are one row each, with the record columns
            null but ``file`` and ``offset`` and the finding in the ``_corrupt`` struct (the fields of
            ``verify -o jsonl``); record rows have ``_corrupt`` null; warnings, notes and history findings are
            never rows here (see ``<name>-findings``). failfast: the first error the reader meets fails the read
            (no ``_corrupt`` column).
  index     log (default): ``index`` is the record's index in its log, as dump prints it; planning reads the
            framing of every file but the last of each log once to number them. file (or segment): per file,
            no planning pass.
  paths     a JSON list of paths, for several at once (``load()`` takes one). A path is a local path, a glob
            or a URI: ``file:``, and any fsspec filesystem (``s3://``, ``s3a://`` with s3fs), whose files are
            staged locally (``engine.uris.resolve``) and named by the URI in rows; ``fs.*`` options are that
            filesystem's (``fs.endpoint_url``, ``fs.key``, ...; the session's ``spark.hadoop.fs.s3a.*`` settings
            are their defaults: ``s3a_settings``). A partitioned folder (``host=a/...``) adds its partition
            columns (strings, last) to the records, ``-findings`` and ``-state`` rows.
  and the format's own (``Spark.options``): Kestrel ``queue`` (one queue of each directory),
  ``kestrel_version``, ``keep_open``.

``format(name + "-findings")``: one row per finding ``wqtool verify`` reports (warnings and notes included),
with the fields of ``verify -o jsonl``'s finding lines plus ``log`` (the log it belongs to): discovery's, then
each file's reader and payload findings in file order, then (option ``history``, default true) the replay's —
duplicates, unknown jobs, expiries at ``as_of``, the closing notes — from a replay of the whole log in its last
file's partition (``Passes.replay_findings``: workq's hot kernel). Options: ``history``, ``as_of`` (as
``--as-of``: RFC 3339, epoch seconds, @<n>ns, now (default), last / first: each log's own newest / first record
time), ``index``, ``paths`` and the format's own.

``format(name + "-state")`` (formats with ``Spark.state_types``): the replayed state, one row per job / item with
the fields of ``replay -o jsonl``'s rows and ``log``; one partition per log (``StateSource``). Options: ``as_of``,
``paths`` and the format's own. On the records source ``as_of`` is honoured where discovery takes the clock
(the logs it gives carry ``as_of_ns``: Snap! list journals, EVTJ) and refused elsewhere (``_as_of``).

Filter pushdown: ``PushdownRecordSourceReader`` takes ``=``, ``IN`` and null tests on plain columns; ``register``
offers it only where the session sets ``spark.sql.python.filterPushdown.enabled`` and its Spark plans a pushed
read per scan (``pushdown_safe``): Spark 4.1 to 4.3.0 share it between the scans of one DataFrame (a DataFrame queried
again after a filtered query kept the pushed filter: a wrong count), so on PySpark 4.3 it is off. Column
pruning: Spark 4.3's Python Data Source API has none (``reader(schema)`` is given the full schema, its
``PythonScanBuilder`` has no ``SupportsPushDownRequiredColumns``), so every column is produced — by the format's
own reader where it has one (``Spark.file_batches``: workq's C kernel writes a segment's rows as Arrow columns,
the reference reader taking over at the first record it refuses), else a dict per record (``file_events``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import ClassVar

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..engine.fileio import pinned
from ..errors import SparkError
from pyspark.sql.types import (BinaryType, BooleanType, DecimalType, IntegerType, LongType, StringType, StructField,
                               StructType)

#: The ``_corrupt`` struct: ``finding_to_jsonable``'s fields.
_FINDING_TYPES = {
    "severity": "string", "code": "string", "file": "string", "offset": "long", "record_index": "long",
    "last_good_offset": "long", "message": "string", "upstream": "string", "verdict": "string",
    "job_id": "string", "resumes_at": "long",
}
_SPARK = {"string": StringType(), "long": LongType(), "int": IntegerType(), "u64": DecimalType(20, 0),
          "bool": BooleanType(), "binary": BinaryType()}
PAYLOAD_OPTIONS = ("false", "true", "base64", "hex", "text", "binary")
INDEX_OPTIONS = ("log", "file", "segment")
BATCH_ROWS = 4096
#: a file is read by several tasks (byte-range shares) only where each share would hold at least this much, and
#: by at most MAX_SHARES (each share runs the fast reader from the file's start: share k of n decodes k/n of the
#: file before its own range)
SHARE_BYTES = 8 << 20
MAX_SHARES = 4
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: The JVM class whose ``setReadInfo`` is Spark's pushdown bug (``pushdown_safe``).
_PY_DSV2 = "org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2"


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
    extra: dict = field(default_factory=dict)   # the format's own options (the engine's Options.settings)
    as_of_word: str | None = None   # "last" / "first": each log's own newest / first record time (as the CLI)
    as_of_given: bool = False       # the caller set as_of (the records source honours it or refuses it)
    storage: tuple = ()             # fsspec options of remote URIs (the fs.* options, prefix dropped)

    @classmethod
    def parse(cls, fmt, options, cwd: str | None = None, *, findings: bool = False,
              state: bool = False, defaults: tuple = ()) -> "Options":
        """The source's options; ``defaults``: fsspec options the ``fs.*`` options override (``register``: the
        session's ``spark.hadoop.fs.s3a.*`` settings, ``engine.uris.s3a_storage``)."""
        o = {k.lower(): v for k, v in dict(options).items()}
        name = fmt.name + ("-findings" if findings else "-state" if state else "")
        if not findings and "history" in o:
            raise ValueError(f"{name}: option history belongs to spark.read.format('{fmt.name}-findings'): the "
                             f"records source yields records (and, permissive, unreadable byte ranges) only")
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
        raw = str(o.get("as_of", "now")).strip()
        word = raw.lower() if raw.lower() in ("last", "first") else None
        try:
            as_of_ns = parse_instant("now" if word else raw)
        except ValueError as exc:
            raise ValueError(f"{name}: option as_of: {exc} (or last / first: each log's newest / first record "
                             f"time)") from None
        return cls(fmt.name, payload, mode == "permissive", index == "log", tuple(paths), cwd, history, as_of_ns,
                   fmt.spark.options(o), word, "as_of" in o,
                   tuple(sorted({**dict(defaults), **{k[3:]: v for k, v in o.items() if k.startswith("fs.")}}
                                .items())))

    def engine_options(self, log=None):
        """The engine's Options; with ``log``, ``as_of`` last / first settled to that log's own time."""
        from ..engine.format import Options as EngineOptions, get
        as_of = self.as_of_ns
        if self.as_of_word and log is not None:
            first, last = get(self.fmt_name).passes.time_span(log)
            t = last if self.as_of_word == "last" else first
            as_of = as_of if t is None else t
        return EngineOptions(as_of, settings={k: v for k, v in self.extra.items() if v is not None})

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


def _discover_leaf(fmt, path: str, eo) -> list:
    """The logs of one partition folder: the folder itself when it is a log (``host=a`` holding segments), else
    the entries in it (``host=a/cmdlog``: Spark's layout keeps the data below the last key=value folder)."""
    from ..errors import WqError
    try:
        return fmt.discover([path], eo)
    except WqError:
        kids = sorted(os.path.join(path, n) for n in os.listdir(path) if not n.startswith((".", "_")))
        if not kids:
            raise
        return fmt.discover(kids, eo)


def _with_keys(st: StructType, opts: "Options") -> StructType:
    """``st`` and the partition columns of the paths (``host=a/...`` folders), strings, last, as Spark's file
    sources add them (with partitionColumnTypeInference off: the folder's text)."""
    from ..engine.uris import partition_keys
    from ._paths import working_dir
    with working_dir(opts.cwd):
        keys = partition_keys(opts.paths, dict(opts.storage))
    for k in keys:
        if k in st.fieldNames():
            raise ValueError(f"{opts.fmt_name}: the partition folder key {k!r} is also a column of the rows")
        st = st.add(StructField(k, StringType(), True))
    return st


def _add_keys(schema, keys):
    import pyarrow as pa
    for k in keys:
        schema = schema.append(pa.field(k, pa.string()))
    return schema


def finding_struct() -> StructType:
    return _struct(_FINDING_TYPES.items())


def record_schema(opts: Options, view) -> StructType:
    st = _struct(opts.columns(view))
    if opts.permissive:
        st = st.add(StructField("_corrupt", finding_struct(), True))
    return st


#: ``<name>-findings`` rows: the log, then ``finding_to_jsonable``'s fields.
FINDING_COLUMNS = [("log", "string"), *_FINDING_TYPES.items()]


def findings_schema() -> StructType:
    return _struct(FINDING_COLUMNS)


def _arrow_types():
    import pyarrow as pa
    return {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "u64": pa.decimal128(20, 0),
            "bool": pa.bool_(), "binary": pa.binary()}


def _arrow_schema(opts: Options, view):
    """The Arrow schema of ``record_schema(opts)`` (what ``read()`` yields)."""
    import pyarrow as pa
    arrow_types = _arrow_types()
    fields = [pa.field(n, arrow_types[t]) for n, t in opts.columns(view)]
    if opts.permissive:
        fields.append(pa.field("_corrupt", pa.struct([pa.field(n, arrow_types[t])
                                                      for n, t in _FINDING_TYPES.items()])))
    return pa.schema(fields)


def _arrow_findings_schema():
    import pyarrow as pa
    arrow_types = _arrow_types()
    return pa.schema([pa.field(n, arrow_types[t]) for n, t in FINDING_COLUMNS])


@dataclass
class FilePartition(InputPartition):
    """One file of one log. ``log_findings`` (discovery's) ride with the log's first partition; ``replay``: the
    log's last partition, which adds the replay's findings (option history)."""

    log: object                         # the format's log object (its files are read one per partition)
    name: str                           # Passes.log_name(log): a log-wide finding's row names it
    file: int | None                    # index in the log's files; None: a log without files
    path: str
    start_index: int
    log_findings: list = field(default_factory=list)
    replay: bool = False
    values: tuple = ()                  # the log's partition values ((key, value), ...): host=a/... folders
    display: tuple = ((), ())           # ((local prefix, URI), ...), fs options: a staged remote log
    snap: object = None                 # engine.fileio.Snapshot of the log's files, taken when the driver planned
    share: int = 0                      # a big file read by several tasks: this one's share of it ...
    cuts: tuple = ()                    # ... the byte offsets where the next shares begin (``shared``)

    def named(self, path):
        """A local path as the caller named it (a staged file: its URI)."""
        if path:
            for local, uri in self.display[0]:
                if path == local or path.startswith(local + "/"):
                    return uri + path[len(local):]
        return path

    def localize(self) -> "FilePartition":
        """The partition as this machine reads it: on an executor that lacks the driver's staged copy of a
        remote log (a cluster), the URI staged in this machine's own cache (under its TMPDIR, never at the
        driver's path) and the partition moved there — its log, path, snapshot pins and the prefixes that name
        it by its URI (``spark.cluster._relocated``); else the partition itself."""
        if self.file is None or not self.display[0] or os.path.exists(self.path):
            return self
        from ..engine.uris import stage
        moved = {}
        for local, uri in self.display[0]:
            if self.path.startswith(local + "/") or self.path == local:
                got = stage(uri, dict(self.display[1]))
                if got != local:
                    moved[local] = got
        if not moved:
            return self
        from .cluster import _relocated
        return _relocated(self, moved)

    def __post_init__(self):
        super().__init__(self.path)


def log_snapshot(fmt, log, display):
    """One log's files pinned as the driver plans its partitions (``engine.fileio.Snapshot``): every partition of
    the log reads those bytes, and a file replaced or shrunk since is an error naming it; the staged copies of a
    remote log (``display``'s local prefixes) by size only."""
    from ..engine.fileio import Snapshot
    return Snapshot.take(fmt.files(log), unstamped=[local for local, _ in display[0]])


def _pinned_size(p: FilePartition) -> int:
    """The bytes of ``p``'s file the job reads (its pinned size; 0 where it cannot be told: not split)."""
    pin = p.snap.pins.get(os.path.abspath(p.path)) if p.snap is not None else None
    if pin is not None:
        return pin.size
    try:
        return os.path.getsize(p.path)
    except OSError:
        return 0


def shared(events, share: int, cuts: tuple, offset_col: int):
    """The events of a file (``Spark.file_batches``: Arrow batches, then the reference reader's records and
    findings where the fast reader stopped) that belong to ``share``: those that start in
    ``[cuts[share - 1], cuts[share])`` — a batch's rows by their offsets (a batch across a cut is sliced there),
    a record or finding by its offset (one without: with the event before it). The events come in file order,
    so a share stops reading at the first row past its range; a share whose reader started at its range
    (``file_batches_at``) gets the same rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    lo = cuts[share - 1] if share else -1
    hi = cuts[share] if share < len(cuts) else None
    at = -1
    for ev in events:
        if ev.__class__ is pa.RecordBatch:
            if ev.num_rows == 0:
                continue
            offs = ev.column(offset_col)
            first, at = offs[0].as_py(), offs[-1].as_py()
            if hi is not None and first >= hi:
                return              # (the generator's close ends the reader: its file is closed)
            if first < lo or (hi is not None and at >= hi):     # across a cut: the rows in the range
                keep = pc.greater_equal(offs, lo)
                if hi is not None:
                    keep = pc.and_(keep, pc.less(offs, hi))
                ev = ev.filter(keep)
                if ev.num_rows:
                    yield ev
                if hi is not None and at >= hi:
                    return
                continue
        else:
            off = getattr(ev, "offset", None)
            if off is not None:
                at = off
        if at >= lo and (hi is None or at < hi):
            yield ev


class RecordSource(DataSource):
    """``spark.read.format(<format>)``: the format's records, one partition per file. ``register`` makes a
    subclass per format (``fmt_name``) that also remembers the caller's working directory."""

    fmt_name: ClassVar[str] = ""
    cwd: ClassVar[str | None] = None
    conf_storage: ClassVar[tuple] = ()   # register(): fsspec options from the session's spark.hadoop.fs.s3a.*

    @classmethod
    def name(cls) -> str:
        return cls.fmt_name

    def _fmt(self):
        from ..engine.format import get
        return get(self.fmt_name)

    def schema(self) -> StructType:
        fmt = self._fmt()
        opts = Options.parse(fmt, self.options, self.cwd, defaults=self.conf_storage)
        return _with_keys(record_schema(opts, fmt.record_view), opts)

    pushdown: ClassVar[bool] = False    # register(): the session allows pushFilters
    slots: ClassVar[int] = 1            # register(): the session's executor slots (big files split over them)
    share_bytes: ClassVar[int] = SHARE_BYTES

    def reader(self, schema: StructType) -> "RecordSourceReader":
        cls = PushdownRecordSourceReader if self.pushdown else RecordSourceReader
        r = cls(Options.parse(self._fmt(), self.options, self.cwd, defaults=self.conf_storage))
        r.slots, r.share_bytes = self.slots, self.share_bytes
        return r


class FindingSource(RecordSource):
    """``spark.read.format(<format>-findings)``: what verify reports, one row per finding."""

    @classmethod
    def name(cls) -> str:
        return cls.fmt_name + "-findings"

    def schema(self) -> StructType:
        opts = Options.parse(self._fmt(), self.options, self.cwd, findings=True, defaults=self.conf_storage)
        return _with_keys(findings_schema(), opts)

    def reader(self, schema: StructType) -> "FindingSourceReader":
        return FindingSourceReader(Options.parse(self._fmt(), self.options, self.cwd, findings=True,
                                                 defaults=self.conf_storage))


class RecordSourceReader(DataSourceReader):
    findings = False
    fast = True     # records as the format's own Arrow batches where it has them (Spark.file_batches)
    slots = 1       # the session's executor slots (RecordSource.reader): fewer files than slots split big ones
    share_bytes = SHARE_BYTES   # ... into shares of at least this many bytes

    def __init__(self, opts: Options):
        self.opts = opts

    def _fmt(self):
        from ..engine.format import get
        return get(self.opts.fmt_name)

    def partitions(self) -> list[FilePartition]:
        from ._paths import working_dir
        opts, fmt = self.opts, self._fmt()
        parts: list[FilePartition] = []
        history = opts.history and self.findings
        with working_dir(opts.cwd):
            for log, values, display in self._logs():
                findings = list(log.findings)
                name = FilePartition(log, "", None, "", 0, display=display).named(fmt.passes.log_name(log))
                files = fmt.files(log)
                snap = log_snapshot(fmt, log, display)
                if not files:
                    parts.append(FilePartition(log, name, None, name, 0, findings, history, values, display, snap))
                    continue
                index, last = 0, len(files) - 1
                with pinned(snap):
                    for i, path in enumerate(files):
                        parts.append(FilePartition(log, name, i, path, index if opts.log_index else 0,
                                                   findings if i == 0 else [], history and i == last, values,
                                                   display, snap))
                        if opts.log_index and i < last:
                            index += fmt.spark.file_records(log, i)
        return self._shared(parts)

    def _shared(self, parts: list[FilePartition]) -> list[FilePartition]:
        """Fewer files than executor slots: each big file read by several tasks, one byte-range share each, so
        the slots share the JVM's work of taking in the rows (a count() of one 40 MB segment was one task).
        Only records read by the format's own fast reader (``Spark.file_batches``) whose rows carry their
        ``offset``: a later share starts its reader at its range where the format can (workq's
        ``Spark.file_batches_at``: the records before it framed and CRC-checked, not decoded, so the record numbers are
        the whole read's), else it runs the reader from the file's start; each keeps the rows and events that
        start in its range (``shared``), so each row is read once, in file order over the shares. Permissive reads only: failfast fails on the first error the reader
        meets, which one task reading the file whole tells."""
        from ..engine.caps import Spark
        fmt = self._fmt()
        files = [p for p in parts if p.file is not None]
        if self.findings or not self.fast or not self.opts.permissive or not files or len(parts) >= self.slots or \
                type(fmt.spark).file_batches is Spark.file_batches or self.opts.payload == "binary" or \
                "offset" not in dict(self.opts.columns(fmt.record_view)):
            return parts
        per = self.slots // len(files)
        out: list[FilePartition] = []
        for p in parts:
            n = min(per, MAX_SHARES, _pinned_size(p) // max(1, self.share_bytes)) if p.file is not None else 1
            if n < 2:
                out.append(p)
                continue
            size = _pinned_size(p)
            cuts = tuple(size * k // n for k in range(1, n))
            for k in range(n):
                out.append(FilePartition(p.log, p.name, p.file, p.path, p.start_index,
                                         p.log_findings if k == 0 else [], p.replay and k == n - 1, p.values,
                                         p.display, p.snap, k, cuts))
        return out

    def _logs(self) -> list:
        """(log, partition values, display) for every log behind the paths (``engine.uris.resolve``: URIs staged,
        partitioned folders split); one discovery over all paths, or one per partition folder."""
        from ..engine.uris import resolve
        opts, fmt = self.opts, self._fmt()
        res = resolve(opts.paths, dict(opts.storage))
        eo = opts.engine_options()
        if not res.keys:
            groups = [((), fmt.discover([p for p, _ in res.leaves], eo))]
        else:
            groups = [(values, _discover_leaf(fmt, p, eo)) for p, values in res.leaves]
        out = []
        for values, logs in groups:
            if not self.findings:
                logs = self._as_of(logs)
            out += [(lg, values, (res.display, opts.storage)) for lg in logs]
        return out

    def _as_of(self, logs: list) -> list:
        """The records source and ``as_of``: honoured where discovery takes the clock (a log it discovered
        records it as ``as_of_ns``: Snap! list journals, EVTJ — which files are current, the reading order), as
        ``dump --as-of`` does, ``last`` / ``first`` each log rediscovered at its own time; refused elsewhere (a
        workq, Kestrel, Orth record's row is the same at every clock: an option that changes nothing is an
        error, never silently ignored)."""
        opts, fmt = self.opts, self._fmt()
        if not opts.as_of_given:
            return logs
        blind = [fmt.passes.log_name(lg) for lg in logs if not hasattr(lg, "as_of_ns")]
        if blind:
            raise ValueError(f"{fmt.name}: option as_of: the records of {blind[0]} are the same at every clock "
                             f"({fmt.name}'s discovery takes none), so as_of would change nothing here; it sets "
                             f"the clock of spark.read.format('{fmt.name}-findings') (expiries) and the -state "
                             f"source; for records by time, filter on their time column")
        if opts.as_of_word is None:
            return logs
        return [lg2 for lg in logs for lg2 in fmt.discover([lg.root], opts.engine_options(lg))]

    def read(self, partition: FilePartition):
        """The records of one file; permissive: a row per unreadable byte range (an error finding of the
        reader with no record at its bytes: damage up to where records resume, a torn tail)."""
        import pyarrow as pa

        from ..engine.findings import ERROR, Verdict
        from ..engine.serialize import finding_to_jsonable
        from ._paths import working_dir

        opts, fmt = self.opts, self._fmt()
        view = fmt.record_view
        schema = _arrow_schema(opts, view)
        names = schema.names
        render = "none" if opts.payload in ("false", "binary") else opts.payload
        binary = opts.payload == "binary"
        rec_cls = fmt.record_cls
        unreadable = (Verdict.TORN_TAIL, Verdict.CORRUPT)
        rows: list[dict] = []
        keep = self.keep if getattr(self, "pushed", None) else None
        values = dict(partition.values)
        if values:
            schema = _add_keys(schema, values)
            names = schema.names
        partition = partition.localize()
        named = partition.named if partition.display[0] else None

        def flush():
            if named or values:
                for r in rows:
                    if named:
                        r["file"] = named(r.get("file"))
                        if r.get("_corrupt"):
                            r["_corrupt"]["file"] = named(r["_corrupt"].get("file"))
                    r.update(values)
            batch = pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names}, schema=schema)
            rows.clear()
            return batch

        def finding(f):
            if f.severity != ERROR:
                return
            if not opts.permissive:
                raise ValueError(f"{opts.fmt_name} (mode failfast): {f.location()}: {f.code}: {f.message}")
            if f.verdict not in unreadable:
                return          # a record that decodes badly, a history upstream refuses: <name>-findings
            row = view.damage_row(f)
            if row.get("file") is None:     # a log-wide finding: the row names the log
                row["file"] = partition.name
            row["_corrupt"] = finding_to_jsonable(f)
            if keep is None or keep(row):
                rows.append(row)

        for f in partition.log_findings:
            finding(f)
        with working_dir(opts.cwd), pinned(partition.snap):
            if partition.file is not None:
                events = None
                if self.fast and keep is None and not binary:  # (a pushed filter tests each row: the reference)
                    kw = {"payload": render, "schema": schema, "file_name": partition.named(partition.path),
                          "values": values}
                    # a later share starts at its range, where the format's reader can (the records before it
                    # framed, not decoded: workq's ``file_batches_at``); else it reads from the file's start
                    if partition.cuts and partition.share:
                        events = fmt.spark.file_batches_at(partition.log, partition.file, partition.start_index,
                                                           partition.cuts[partition.share - 1], **kw)
                    if events is None:
                        events = fmt.spark.file_batches(partition.log, partition.file, partition.start_index, **kw)
                if partition.cuts:      # one share of a file several tasks read
                    if events is None:  # the reference reader: the whole file in the first share
                        events = iter(()) if partition.share else \
                            fmt.passes.file_events(partition.log, partition.file, partition.start_index)
                    else:
                        events = shared(events, partition.share, partition.cuts, names.index("offset"))
                if events is None:
                    events = fmt.passes.file_events(partition.log, partition.file, partition.start_index)
                for ev in events:
                    if ev.__class__ is pa.RecordBatch:     # the format's own batch of records
                        if rows:
                            yield flush()
                        yield ev
                        continue
                    if ev.__class__ is rec_cls:
                        row = view.row(ev, render)
                        if keep is not None and not keep(row):
                            continue
                        if binary:
                            row.update(view.binary(ev))
                        rows.append(row)
                    else:
                        finding(ev)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
        if rows:
            yield flush()


#: the column types a pushed filter may test (a row's value is then a plain str / int / bool)
_PUSHABLE = ("string", "long", "int", "bool")


class PushdownRecordSourceReader(RecordSourceReader):
    """``RecordSourceReader`` with filter pushdown (Spark's ``pushFilters``, 4.1+, when the session sets
    ``spark.sql.python.filterPushdown.enabled``; ``build_session`` does): ``=``, ``IN``, ``IS NULL`` and ``IS NOT
    NULL`` on a plain column (string, integer, boolean) are applied in the task, before a row is built for Spark
    (``where(cmd = 'add')``: the other records never reach Arrow); on ``file`` they also skip whole files. The Python
    Data Source API has no column pruning (4.3): every column of the schema is produced."""

    def __init__(self, opts: Options):
        super().__init__(opts)
        self.pushed: list[tuple[str, str, tuple]] = []     # (column, "in" | "null" | "notnull", values)

    def pushFilters(self, filters):
        from pyspark.sql.datasource import EqualTo, In, IsNotNull, IsNull
        types = dict(self.opts.columns(self._fmt().record_view))
        for f in filters:
            col = f.attribute[0] if len(f.attribute) == 1 else None
            if col is None or types.get(col) not in _PUSHABLE:
                yield f
            elif isinstance(f, EqualTo) and f.value is not None:
                self.pushed.append((col, "in", (f.value,)))
            elif isinstance(f, In) and all(v is not None for v in f.value):
                self.pushed.append((col, "in", tuple(f.value)))
            elif isinstance(f, IsNull):
                self.pushed.append((col, "null", ()))
            elif isinstance(f, IsNotNull):
                self.pushed.append((col, "notnull", ()))
            else:
                yield f

    def keep(self, row: dict) -> bool:
        for col, op, values in self.pushed:
            v = row.get(col)
            if op == "in":
                if v is None or v not in values:
                    return False
            elif (v is None) != (op == "null"):
                return False
        return True

    def partitions(self) -> list[FilePartition]:
        parts = super().partitions()
        files = [set(values) for col, op, values in self.pushed if col == "file" and op == "in"]
        if not files:
            return parts
        # a partition whose file is not asked for yields no row (a log-wide damage row names the log: kept)
        return [p for p in parts if p.log_findings or all(p.path in vs for vs in files)] or parts[:1]


class FindingSourceReader(RecordSourceReader):
    findings = True

    def read(self, partition: FilePartition):
        """The findings of one file as verify reports them: discovery's (the log's first partition), the
        reader's and payload decoder's in file order, then (the log's last partition, option history) the
        replay's."""
        import pyarrow as pa

        from ..engine.serialize import finding_to_jsonable
        from ._paths import working_dir

        opts, fmt = self.opts, self._fmt()
        schema = _add_keys(_arrow_findings_schema(), dict(partition.values))
        names = schema.names
        rec_cls = fmt.record_cls
        rows: list[dict] = []
        values = dict(partition.values)
        partition = partition.localize()

        def flush():
            batch = pa.RecordBatch.from_pydict({n: [r.get(n) for r in rows] for n in names}, schema=schema)
            rows.clear()
            return batch

        def add(f):
            row = {"log": partition.name, **finding_to_jsonable(f), **values}
            row["file"] = partition.named(row.get("file"))
            rows.append(row)

        for f in partition.log_findings:
            add(f)
        with working_dir(opts.cwd), pinned(partition.snap):
            if partition.file is not None:
                for ev in fmt.passes.file_events(partition.log, partition.file, partition.start_index):
                    if ev.__class__ is not rec_cls:
                        add(ev)
                        if len(rows) >= BATCH_ROWS:
                            yield flush()
            if partition.replay:
                for f in fmt.passes.replay_findings(partition.log, opts.engine_options(partition.log)):
                    add(f)
                    if len(rows) >= BATCH_ROWS:
                        yield flush()
        if rows:
            yield flush()


# ---------------------------------------------------------------- <format>-state: replay's rows
def state_columns(fmt) -> list[tuple[str, str]]:
    """``<name>-state``'s columns: ``log`` (``Passes.log_name``), then replay's row fields (``Spark.state_types``)."""
    return [("log", "string"), *((n, "string" if t == "bytes" else t) for n, t in fmt.spark.state_types.items())]


def _arrow_state_schema(fmt):
    import pyarrow as pa
    types = _arrow_types()
    return pa.schema([pa.field(n, types[t]) for n, t in state_columns(fmt)])


class StateSource(RecordSource):
    """``spark.read.format(<format>-state)``: the replayed state, one row per job / item with the fields of
    ``replay -o jsonl``'s rows and ``log``; one partition per log (a log's state needs all its records in order).
    Options: ``paths`` / ``load(path)``, ``as_of`` (as ``--as-of``, also last / first: each log's own newest /
    first record time) and the format's own."""

    @classmethod
    def name(cls) -> str:
        return cls.fmt_name + "-state"

    def schema(self) -> StructType:
        opts = Options.parse(self._fmt(), self.options, self.cwd, state=True, defaults=self.conf_storage)
        return _with_keys(_struct(state_columns(self._fmt())), opts)

    def reader(self, schema: StructType) -> "StateSourceReader":
        return StateSourceReader(Options.parse(self._fmt(), self.options, self.cwd, state=True,
                                               defaults=self.conf_storage))


class StateSourceReader(RecordSourceReader):
    def partitions(self) -> list[FilePartition]:
        from ..engine.uris import resolve
        from ._paths import working_dir
        opts, fmt = self.opts, self._fmt()
        with working_dir(opts.cwd):
            res = resolve(opts.paths, dict(opts.storage))
            eo = opts.engine_options()
            if not res.keys:     # one discovery over every path (the files of one folder named one by one: a log)
                groups = [((), fmt.discover([p for p, _ in res.leaves], eo))]
            else:                # partitioned folders: each leaf's logs, with its values (as the records source)
                groups = [(values, _discover_leaf(fmt, p, eo)) for p, values in res.leaves]
            parts = []
            for values, logs in groups:
                for log in logs:
                    name = FilePartition(log, "", None, "", 0, display=(res.display, ())).named(fmt.passes.log_name(log))
                    parts.append(FilePartition(log, name, None, name, 0, values=values,
                                               snap=log_snapshot(fmt, log, (res.display, ()))))
            return parts

    def read(self, partition: FilePartition):
        """The log replayed by the engine (``run_log``: workq's hot kernel), its rows as ``replay -o jsonl``
        encodes them, parsed by Arrow's JSON reader against the declared schema; then the log's partition values
        (``host=a/...`` folders), strings, last."""
        with pinned(partition.snap):
            batches = state_batches(self._fmt(), partition.log, partition.name,
                                    self.opts.engine_options(partition.log), self.opts.cwd)
            if not partition.values:
                yield from batches
                return
            import pyarrow as pa
            keys, vals = zip(*partition.values)
            for b in batches:
                yield pa.RecordBatch.from_arrays([*b.columns, *(pa.array([v] * b.num_rows, pa.string())
                                                                for v in vals)], schema=_add_keys(b.schema, keys))


def state_batches(fmt, log, name: str, engine_opts, cwd: str | None = None, *, report=None):
    """Arrow batches of one log's replayed state (``<name>-state``'s rows); runs where the data is. ``report``:
    the log's ``run_log`` report already made (the export's one pass), else the log is replayed here."""
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    from ._paths import working_dir
    schema = _arrow_state_schema(fmt)
    fields = pa.schema(list(schema)[1:])
    parse = pj.ParseOptions(explicit_schema=fields, unexpected_field_behavior="error")
    if report is None:
        with working_dir(cwd):
            report = fmt.passes.run_log(log, engine_opts, limit=0)
    view = fmt.state_view(report.state, log)
    buf: list[str] = []
    size = 0

    def flush():
        data = "".join(buf).encode()
        buf.clear()
        try:
            table = pj.read_json(io.BytesIO(data), parse_options=parse).select(fields.names)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(f"{fmt.name}-state: {name}: a replayed row does not fit the table's columns "
                             f"({exc})") from None
        for b in table.to_batches(BATCH_ROWS * 4):
            yield pa.RecordBatch.from_arrays([pa.array([name] * b.num_rows, pa.string()), *b.columns],
                                             schema=schema)

    for chunk in view.encoded_rows("jsonl"):
        buf.append(chunk)
        size += len(chunk)
        if size >= 8 << 20:
            size = 0
            yield from flush()
    if buf:
        yield from flush()


_sources: set[int] = set()      # sessions (by id) the data sources are registered on


def ensure_sources(spark) -> None:
    """The data sources registered on ``spark`` unless they are already (a CLI session registers them only for
    a command that reads through them: ``build_session(sources=False)``)."""
    if id(spark) not in _sources:
        register(spark, check=False)


def register(spark, *, check: bool = True, conf: dict[str, str] | None = None) -> None:
    """Register two data sources per format (idempotent): ``<format>`` (the format's ``spark_source`` class, else
    a ``RecordSource``) and ``<format>-findings``, each subclassed here to remember the format and the caller's
    working directory (cloudpickle ships it by value), so ``load("cmdlog")`` reads ./cmdlog and the ``file``
    column says ``cmdlog/...``. ``check``: first make sure Spark's Python workers can import wqtool
    (``check_workers``), so a worker without it is one clear error here, not a ModuleNotFoundError per task.
    ``conf``: settings over the session's (``s3a_settings``)."""
    import os

    from ..engine.format import formats, load_object
    if check:
        check_workers(spark)
    # Filter pushdown only where the session enables it (a reader with pushFilters fails every read of a session
    # without spark.sql.python.filterPushdown.enabled) and the JVM has not Spark's read-info leak (pushdown_safe):
    # on Spark 4.3.0 a DataFrame read again after a filtered query on it kept the pushed filter (count() of
    # 300,000 records gave 97,548 after a where(cmd = 'add')): a wrong answer.
    pushdown = str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() == "true" and pushdown_safe(spark)[0]
    storage = tuple(sorted(s3a_settings(spark, conf).items()))   # one S3 setting for Spark's S3A and fsspec
    from .session import slot_count
    slots = slot_count(spark, default=int(spark.conf.get("spark.default.parallelism", "1") or 1))
    for fmt in formats():
        base = load_object(fmt.spark.source) if fmt.spark.source else RecordSource
        attrs = {"fmt_name": fmt.name, "cwd": os.getcwd(), "__module__": __name__ + "._registered",
                 "pushdown": pushdown, "conf_storage": storage, "slots": slots}
        spark.dataSource.register(type(f"{type(fmt).__name__}Source", (base,), attrs))
        spark.dataSource.register(type(f"{type(fmt).__name__}FindingSource", (FindingSource,), attrs))
        if fmt.spark.state_types:
            spark.dataSource.register(type(f"{type(fmt).__name__}StateSource", (StateSource,), attrs))
    _sources.add(id(spark))


#: Hadoop's S3A settings ``engine.uris.s3a_storage`` maps to fsspec (s3fs) options
S3A_KEYS = tuple("spark.hadoop.fs.s3a." + k for k in ("endpoint", "connection.ssl.enabled", "access.key",
                                                      "secret.key", "session.token", "path.style.access",
                                                      "endpoint.region"))


def s3a_settings(spark, over: dict[str, str] | None = None) -> dict:
    """The session's ``spark.hadoop.fs.s3a.*`` settings (endpoint, keys, path-style access, region) as fsspec
    options (``engine.uris.s3a_storage``), so an ``s3a://`` / ``s3://`` path is read with the endpoint and keys
    Spark's own S3A connector gets; also made this process's defaults (``engine.uris.use_spark_conf``).
    ``over``: settings that win over the session's (a command's ``--spark-conf`` on a session already running,
    which can no longer take them)."""
    from ..engine.uris import s3a_storage, use_spark_conf
    try:
        every = spark.conf.getAll      # one call (one RPC on Spark Connect), not one per key
    except Exception:  # noqa: BLE001 — a server that refuses to tell: no setting
        every = {}
    conf = {k: v for k, v in {**every, **(over or {})}.items() if k in S3A_KEYS and v is not None}
    use_spark_conf(conf)
    return s3a_storage(conf)


def pushdown_safe(spark) -> tuple[bool, str]:
    """Whether this session's Spark plans a pushed-down Python data source read per scan, and why not.

    Spark's ``PythonScanBuilder.pushFilters`` (4.1 on, SPARK-51575; still so in 4.3.0) stores the read it planned with the pushed filters (the
    partitions and the pickled ``read``) on the provider-scoped ``PythonDataSourceV2`` (``setReadInfo``), and
    ``PythonScan`` takes it from there (``getOrCreateReadInfo``); every scan of the same relation shares that
    object, and a scan with no filter to push never replans, so ``df.count()`` after ``df.where(...).count()``
    reads with the earlier scan's filters (a wrong count, exit 0). Found in the spark-sql 4.3.0 jar PySpark ships
    (``javap``: ``PythonScanBuilder.pushFilters`` calls ``PythonDataSourceV2.setReadInfo``); upstream moved the
    read info into the scan builder (apache/spark PythonScanBuilder.scala: "It must NOT be stored on the
    provider-scoped PythonDataSourceV2", with SPARK-58551's limit pushdown). Detected here by that method: a JVM
    whose ``PythonDataSourceV2`` has ``setReadInfo`` is unsafe; Spark Connect (no JVM to ask) is taken as unsafe."""
    try:
        jvm = spark._jvm
        methods = {m.getName() for m in jvm.java.lang.Class.forName(_PY_DSV2).getMethods()}
    except Exception as exc:  # noqa: BLE001 — Spark Connect, another layout: not offered
        return False, f"cannot inspect the session's JVM ({type(exc).__name__}): pushdown not offered"
    if "setReadInfo" in methods:
        return False, (f"Spark {spark.version}: PythonDataSourceV2.setReadInfo shares a pushed-down read between "
                       "scans of one DataFrame (a later unfiltered count keeps the filter)")
    return True, ""


#: Run on a Spark Python worker: can it import wqtool, and which one? Compiled into a module that does not exist
#: anywhere (cloudpickle then ships the function by value: unpickling it needs no wqtool on the worker).
_PROBE = """
def probe(batches):
    import sys
    import pyarrow as pa
    for _ in batches:
        try:
            import wqtool
            from wqtool.engine import format as registry
            registry.formats()
            row = ("ok", wqtool.__version__, sys.executable, "")
        except Exception as exc:  # noqa: BLE001 — told to the driver
            row = ("missing", "", sys.executable, f"{type(exc).__name__}: {exc}")
        yield pa.RecordBatch.from_pydict({k: [v] for k, v in zip(("status", "version", "python", "error"), row)})
"""


def worker_cause(text: str) -> str:
    """The exception a Python worker raised, from the text Spark relays (its first line is only "An exception
    was thrown from the Python worker"): the line that ends the last Python traceback
    (``ModuleNotFoundError: No module named 'pyarrow'``), else the first line; at most 300 characters."""
    lines = text.strip().splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.strip() == "Traceback (most recent call last):"]
    if starts:
        for ln in lines[starts[-1] + 1:]:
            if ln and not ln[0].isspace():
                return ln.strip()[:300]
    return lines[0].strip()[:300] if lines else ""


class WorkersCannotImportWqtool(SparkError):
    """Spark's Python workers cannot import wqtool (or run another version of it): exit 5, one line."""

_checked: set[int] = set()      # sessions already checked (by id): a command on a running session checks once


def check_workers(spark) -> None:
    """One tiny Spark job: a Python worker imports wqtool and says which version and which Python it runs.
    Raises ``WorkersCannotImportWqtool`` with how to fix it (install wqtool there, or point the workers at this
    Python)."""
    import importlib
    import sys

    # the package's version without a static import of wqtool/__init__ (its lazy API reaches exit codes, which
    # the spark layer never imports)
    __version__ = importlib.import_module("wqtool").__version__
    if id(spark) in _checked:
        return
    marker = _probe_marker(__version__) if _is_connect(spark) else None
    if marker is not None and _marked(spark, marker):    # a probe on this server found this version already
        _checked.add(id(spark))
        return
    ns: dict = {"__name__": "wqtool_worker_probe"}
    exec(compile(_PROBE, "<wqtool worker probe>", "exec"), ns)
    fix = (f"install wqtool (pip install 'wqtool[spark]=={__version__}') in the Python the executors run, or "
           f"point them at this one ({sys.executable}): PYSPARK_PYTHON={sys.executable} before the session "
           "starts, or --spark-conf spark.executorEnv.PYSPARK_PYTHON=... / spark.pyspark.python=...")
    try:
        rows = spark.range(1).mapInArrow(ns["probe"], "status string, version string, python string, "
                                                      "error string").collect()
    except Exception as exc:  # noqa: BLE001 — a worker that cannot even run the probe (no pyarrow, no Python)
        from .session import spark_message
        text = str(exc)
        if "Traceback" not in text and ("spark.driver.maxResultSize" in text or "OutOfMemoryError" in text):
            raise SparkError(f"--engine spark: a Spark job failed: {spark_message(exc)}") from None  # the driver's
        raise WorkersCannotImportWqtool(f"Spark's Python workers could not run wqtool's check "
                                        f"({worker_cause(text) or type(exc).__name__}); {fix}") from None
    r = rows[0]
    if r["status"] != "ok":
        raise WorkersCannotImportWqtool(f"Spark's Python workers cannot import wqtool (worker Python "
                                        f"{r['python']}: {r['error']}); {fix}")
    if r["version"] != __version__:
        raise WorkersCannotImportWqtool(f"Spark's Python workers run wqtool {r['version']} ({r['python']}), this "
                                        f"driver {__version__}: rows and findings could differ; {fix}")
    _checked.add(id(spark))
    if marker is not None:
        _mark(spark, marker)


# A Spark Connect server keeps its Python workers between CLI calls (each call is a new client process and a new
# session): once a probe has found this wqtool version on them, a global temporary view names that version, so
# the next call's check is one catalog lookup (~0.05 s) instead of a probe job (~0.25 s; both measured on local[2]
# behind a Connect server). Global temporary views live as long as the server's Spark application, whose workers
# they describe; any session of that server may read them (the view holds no data: an empty frame).
_GLOBAL_TEMP = "global_temp"


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _probe_marker(version: str) -> str:
    import hashlib
    return "wqtool_workers_ok_" + hashlib.sha256(version.encode()).hexdigest()[:16]


def _marked(spark, marker: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(f"{_GLOBAL_TEMP}.{marker}"))
    except Exception:  # noqa: BLE001 — a server without global temporary views (or another database name): probe
        return False


def _mark(spark, marker: str) -> None:
    try:
        spark.range(0).createOrReplaceGlobalTempView(marker)
    except Exception:  # noqa: BLE001 — not remembered: the next call probes again
        pass
