"""One segment's record rows as Arrow batches from the C kernel (``Spark.file_batches``: the Spark records
source's fast read), instead of a Python dict per record.

``_kernel.record_columns`` frames, checks and decodes the records as ``encode_records`` (``dump -o jsonl``'s
encoder) does and writes ``record_to_jsonable``'s fields as Arrow buffers (kernel/columns.c). A segment whose
header the reader reports on (``reader.header_finding``) is left to the reference reader whole (None); from the
first record the kernel refuses (damage, a torn tail, an undecodable payload) the reference reader reads the
rest of the segment at that offset (``RecordReader.segment_events(start=...)``, as the hot kernel hands damage to
it), and its events follow the batches. tests/spark/test_workq_source.py holds the rows equal to the reference
reader's on random segments of hostile records with damage, bit flips and truncations.
"""
from __future__ import annotations

import os
from typing import Iterator

#: the payload renderings the kernel writes (``verify._PAYLOAD_MODES``; "false": no payload column, a null
#: result); "binary" (the bytes) is the reference path's
_MODES = {"false": 0, "none": 0, "hex": 1, "base64": 2, "text": 3}
#: rows per kernel call (one Arrow batch): large batches keep a consumer's per-batch cost small
CHUNK_ROWS = 65536
CHUNK_BYTES = 32 << 20

#: the record columns ``_kernel.record_columns`` gives, by name: (its column number, kind)
_KERNEL_COLUMNS = {
    "offset": (0, "long"), "length": (1, "long"), "record_index": (2, "long"), "priority": (3, "long"),
    "payload_len": (4, "long"), "result_len": (5, "long"), "ttr_ms": (6, "u64"), "ttl_ms": (7, "u64"),
    "max_attempts": (8, "u64"), "max_fails": (9, "u64"), "at": (10, "string"), "time": (11, "string"),
    "job_id": (12, "string"), "name": (13, "string"), "scheduled": (14, "string"), "created": (15, "string"),
    "payload": (16, "string"), "result": (17, "string"), "crc": (18, "string"), "cmd": (19, "cmd"),
}


def file_batches(log, i: int, start_index: int, *, payload: str, schema, file_name: str,
                 values: dict) -> Iterator | None:
    """The rows of the log's ``i``-th segment as ``pyarrow.RecordBatch``es of ``schema`` (the record fields it
    names, ``file`` as ``file_name``, the names in ``values`` as those constants, any other column null), then,
    from the first record the kernel refuses, the reference reader's events (records and findings, as
    ``Passes.file_events`` yields them) of the rest of the segment; None: the reference path reads the segment
    (no C kernel, a payload rendering the kernel has not, a header the reader reports on)."""
    return file_batches_at(log, i, start_index, 0, payload=payload, schema=schema, file_name=file_name,
                           values=values)


def file_batches_at(log, i: int, start_index: int, at: int, *, payload: str, schema, file_name: str,
                    values: dict) -> Iterator | None:
    """``file_batches`` from the first record at or after byte ``at`` on (a byte-range share of a file: the Spark
    records source's share k >= 1), with the record numbers the whole read gives: the records before ``at`` are
    only framed and CRC-checked (``_kernel.walk``: its framing is the reader's), not decoded into columns. None:
    the walk met a record it does not take whole before ``at`` (damage: where the reference reader resumes is
    its to say) or ``file_batches`` would be None — the caller then reads from the start and keeps the rows from
    ``at`` on."""
    from . import fastreplay
    if fastreplay.KERNEL != "c" or payload not in _MODES:
        return None
    from ...formats.workq import HEADER_SIZE
    from ..fileio import FileView
    from . import _kernel
    from .reader import header_finding
    seg = log.segments[i]
    sd = FileView(seg)
    try:
        f, scan = header_finding(sd, start_index, seg is log.newest)
        pos, index = HEADER_SIZE, start_index
        if f is None and scan and at > pos:
            index, pos, _, _, _ = _kernel.walk(sd.data, pos, sd.size, start_index, at, 0, None, None, None, False,
                                               -1)
    except BaseException:
        sd.close()
        raise
    if f is not None or not scan or pos < min(at, sd.size):
        sd.close()
        return None
    return _batches(log, seg, sd, index, _MODES[payload], schema, file_name, values, pos)


def _batches(log, seg, sd, index: int, mode: int, schema, file_name: str, values: dict, pos: int):
    import pyarrow as pa

    from ...formats.workq import CmdType
    from ...offsets import printable
    from . import _kernel
    columns = _kernel.record_columns
    # the kernel's command codes -> cmd (CmdType's labels; code 0 is never a record's)
    labels = pa.array(["?"] + [CmdType(c).label for c in range(1, max(CmdType) + 1)], pa.string())
    base = printable(os.path.basename(seg.path)).encode("utf-8", "surrogatepass")
    with sd:
        data, end = sd.data, sd.size
        while pos < end:
            pos2, index2, n, why, cols = columns(data, pos, end, base, index, mode, CHUNK_ROWS, CHUNK_BYTES)
            if n:
                yield pa.RecordBatch.from_arrays([_array(fld, cols, n, labels, file_name, values)
                                                  for fld in schema], schema=schema)
                pos, index = pos2, index2
            if why is not None:     # the record at pos is refused: the reference reader reads on from there
                break
    if pos < end:
        yield from rest_events(log, seg, pos, index)


def _array(fld, cols, n: int, labels, file_name: str, values: dict):
    import pyarrow as pa
    name = fld.name
    got = _KERNEL_COLUMNS.get(name)
    if got is None:
        if name in values:
            return pa.array([values[name]] * n, fld.type)
        if name == "file":
            return pa.array([file_name] * n, pa.string())
        if name == "crc_ok":
            return pa.array([True] * n, pa.bool_())
        return pa.nulls(n, fld.type)          # error (a decoded record has none), a _corrupt struct
    k, kind = got
    valid, vals, offsets = cols[k]
    valid = None if valid is None else pa.py_buffer(valid)
    if kind == "string":
        return pa.Array.from_buffers(pa.string(), n, [valid, pa.py_buffer(offsets), pa.py_buffer(vals)])
    if kind == "long":
        return pa.Array.from_buffers(pa.int64(), n, [valid, pa.py_buffer(vals)])
    if kind == "u64":
        return pa.Array.from_buffers(pa.uint64(), n, [valid, pa.py_buffer(vals)]).cast(fld.type)
    return labels.take(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(vals)]))


def file_records(log, i: int) -> int | None:
    """How many records the reader reads from the log's ``i``-th segment (``Spark.file_records``: a Spark
    records source numbers each segment's records from the count of those before it), counted by the kernel up
    to the first record it refuses and by the reference reader's framing from there; None: the reference path
    counts (no C kernel, a header the reader reports on)."""
    from . import fastreplay
    if fastreplay.KERNEL != "c":
        return None
    from ...formats.workq import HEADER_SIZE
    from ..fileio import FileView
    from . import _kernel
    from .model import Record
    from .reader import LogSet, RecordReader, header_finding
    seg = log.segments[i]
    with FileView(seg) as sd:
        f, scan = header_finding(sd, 0, seg is log.newest)
        if f is not None or not scan:
            return None
        data, end = sd.data, sd.size
        pos, n = HEADER_SIZE, 0
        while pos < end:
            pos, _, k, why, _ = _kernel.record_columns(data, pos, end, b"", 0, 0, CHUNK_ROWS, CHUNK_BYTES)
            n += k
            if why is not None:
                break
        if pos < end:
            reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]), decode=False)
            n += sum(1 for ev in reader.segment_events(sd, 0, seg is log.newest, start=pos) if ev.__class__ is Record)
    return n


def rest_events(log, seg, pos: int, index: int) -> Iterator:
    """The reference events of ``seg`` from ``pos`` on (record index ``index``): what ``Passes.file_events``
    yields for those bytes (an undecodable record's payload findings included)."""
    from ..fileio import FileView
    from .model import Record
    from .reader import LogSet, RecordReader
    from .replay import WorkqReplay
    reader = RecordReader(LogSet(os.path.dirname(seg.path), [seg]))
    with FileView(seg) as sd:
        for ev in reader.segment_events(sd, index, seg is log.newest, start=pos):
            yield ev
            if ev.__class__ is Record and ev.command is None:
                r = WorkqReplay(0)
                r.apply(ev)
                yield from r.findings
