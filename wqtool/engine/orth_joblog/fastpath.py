"""orth_job_log's columnar fast path: CSV and Parquet sources read as batches of typed columns, the status rules,
checks, report counts, analytics and digest computed column-wise — what ``stats`` and ``verify`` run when
pyarrow and numpy are importable (the ``spark`` extra) and ``WQTOOL_PURE_PYTHON`` is not set.

The reference stays the definition: the reader's ``Converter`` and ``JobLogReplay`` a row at a time. The fast
path takes a batch only when every value in it converts exactly as the reference converts it (anything else —
a value the reference would refuse, a type it reads differently, a CSV block whose quoting pyarrow might read
otherwise — sends that batch or block through the reference reader unchanged), and it runs the reference
``RowChecker`` on every row a vectorised mirror of its conditions marks (``suspects``): so findings, their order
and messages are the reference's by construction; the counts, analytics and digest are computed column-wise and
proven equal by the tests (``tests/engine/orth_joblog/test_fastpath.py``: random tables, every fixture).

Events: the reference reader's (``Row``, ``Finding``) plus ``Batch`` (n valid rows of one source, in order).
Memory: one batch (<= 65,536 Parquet rows, <= 1 MiB of CSV) at a time, plus what the reference keeps (the ids
seen, as ``IdSet`` pages, the tally's counters).
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Iterator

from ...formats._common import long_key
from ...formats.orth_joblog import ALL_LABELS, COLUMN_NAMES, COLUMNS, HANDLE_MSG_MAX_CHARS, LOST_HANDLE_CODE, TABLE
from ..findings import Finding
from ..stats import RecordStats
from .model import Row, day_of
from .reader import (ROW_CAP, Source, TableReader, _csv_records, _read_csv, _read_parquet, count_bytes, csv_header,
                     csv_range)
from .replay import (_ALARM, _HANDLE_CODES, _LOST_MSGS, _MOD, _TRIGGER_CODES, NO_ADDRESS, NO_HANDLER, CheckContext,
                     IdSet, JobLogReplay, RowChecker, Tally, duplicate_finding)
from .rules import REPORT_BUCKETS, bucket_index, status_index

#: A row's status is held as its label's index here (every rule set's labels: ``formats.orth_joblog.ALL_LABELS``).
STATUS_LABELS = ALL_LABELS
PARQUET_BATCH = 65_536
#: CSV block size: at most ROW_CAP, so no record in a block can be one the reference calls too large.
CSV_BLOCK = ROW_CAP
_INT_COLS = tuple(c.name for c in COLUMNS if c.kind == "int")
_STR_COLS = tuple(c.name for c in COLUMNS if c.kind == "str")
_DT_COLS = tuple(c.name for c in COLUMNS if c.kind == "datetime")
#: naive seconds of 0001-01-01 00:00:00 and 9999-12-31 23:59:59 (Python's datetime range)
MIN_S, MAX_S = -62135596800, 253402300799
_INT_TEXT = r"^-?[0-9]+$"
#: model._DT_RE over ASCII digits (RE2: ``$`` is the end of the text, as ``\Z``)
_DT_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.0+)?$"
#: a CSV block split_csv reads as pyarrow does: fields quoted whole ("" inside; anything else, CR and LF too) or
#: unquoted without quotes or CR (pyarrow ends a line at a bare CR, split_csv does not); records end CR? LF
_F = rb'(?:"[^"]*+(?:""[^"]*+)*+"|[^,"\r\n]*+)'
_CSV_BLOCK_RE = re.compile(rb"(?:" + _F + rb"(?:," + _F + rb")*+\r?\n)*+")
#: json.dumps(ensure_ascii=False) escapes (json.encoder.ESCAPE_DCT)
_JSON_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_CTRL = [chr(i) for i in range(0x20) if chr(i) not in _JSON_ESC]


def available() -> bool:
    """Whether the fast path can run: numpy and pyarrow importable, ``WQTOOL_PURE_PYTHON`` unset."""
    if os.environ.get("WQTOOL_PURE_PYTHON", "") not in ("", "0"):
        return False
    try:
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401
        import pyarrow.compute  # noqa: F401
        import pyarrow.csv  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- a batch of valid rows
class Batch:
    """``n`` valid rows of one source, in order, as columns: ``ints`` (numpy int64), ``strs`` (pyarrow string
    arrays, nullable), ``dts`` ((numpy int64 naive seconds, numpy bool valid)), ``dt_text`` (the datetimes'
    ``YYYY-MM-DD HH:MM:SS`` text when the source held it, else None); ``offsets`` and ``lengths`` (numpy int64)
    and ``index0`` (the first row's record index) as the reference's rows have them."""

    __slots__ = ("path", "file", "n", "ints", "strs", "dts", "dt_text", "offsets", "lengths", "index0", "table")

    def __init__(self, path, file, n, ints, strs, dts, dt_text, offsets, lengths, index0):
        self.path, self.file, self.n = path, file, n
        self.ints, self.strs, self.dts, self.dt_text = ints, strs, dts, dt_text
        self.offsets, self.lengths, self.index0 = offsets, lengths, index0
        self.table = TABLE

    def row(self, i: int) -> Row:
        """Row ``i`` as the reference reader yields it."""
        vals = []
        for c in COLUMNS:
            if c.kind == "int":
                vals.append(int(self.ints[c.name][i]))
            elif c.kind == "str":
                vals.append(self.strs[c.name][i].as_py())
            else:
                s, v = self.dts[c.name]
                vals.append(int(s[i]) if v[i] else None)
        return Row(self.path, int(self.offsets[i]), int(self.lengths[i]), self.index0 + i, self.file, *vals,
                   table=self.table)


# ---------------------------------------------------------------- columns: exact conversions or None
def _is_text(t) -> bool:
    import pyarrow as pa
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _all_match(arr, pattern: str) -> bool:
    import pyarrow.compute as pc
    return arr.null_count == len(arr) or bool(pc.all(pc.match_substring_regex(arr, pattern)).as_py())


def int_column(c, arr):
    """An int column as the reference converts it (numpy int64), or None: some value is not one it takes
    as is (NULL, out of range, not an integer, another type)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if arr.null_count:
        return None
    t = arr.type
    if _is_text(t):
        if not _all_match(arr, _INT_TEXT):
            return None
        try:
            arr = pc.cast(arr, pa.int64())
        except (pa.ArrowInvalid, OverflowError):
            return None
    elif not pa.types.is_integer(t):
        return None
    if len(arr):
        mm = pc.min_max(arr)
        lo, hi = c.int_range
        if mm["min"].as_py() < lo or mm["max"].as_py() > hi:
            return None
    return arr.cast(pa.int64()).to_numpy(zero_copy_only=False)


def str_column(c, arr):
    """A varchar / text column as is (pyarrow string array), or None: another type, or a value over the
    column's size (characters of a varchar, UTF-8 bytes of a text)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if not _is_text(arr.type):
        return None
    if c.max_chars is not None and len(arr) > arr.null_count:
        if pc.max(pc.utf8_length(arr)).as_py() > c.max_chars:
            return None
    if c.max_bytes is not None and len(arr) > arr.null_count:
        if pc.max(pc.binary_length(arr)).as_py() > c.max_bytes:
            return None
    return arr if pa.types.is_string(arr.type) else arr.cast(pa.string())


def datetime_column(c, arr):
    """A datetime column as the reference converts it: (seconds, valid, text or None), or None: a value it
    refuses or reads otherwise (fractions, a zone, nanoseconds, an impossible date, text not in MySQL's form)."""
    import numpy as np
    import pyarrow as pa
    valid = _valid(arr)
    t = arr.type
    if pa.types.is_timestamp(t):
        if t.tz is not None or t.unit == "ns":
            return None
        k = {"s": 1, "ms": 1000, "us": 1_000_000}[t.unit]
        v = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        if k > 1:
            if np.any((v % k != 0) & valid):
                return None
            v = v // k
        if np.any(((v < MIN_S) | (v > MAX_S)) & valid):
            return None
        return v, valid, None
    if not _is_text(t) or not _all_match(arr, _DT_TEXT):
        return None
    return _parse_datetimes(arr, valid)


def _valid(arr):
    import numpy as np
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _text_bytes(arr, valid, width: int):
    """The first ``width`` bytes of each valid value of a string array (each at least that long), (m, width)."""
    import numpy as np
    import pyarrow as pa
    bufs = arr.buffers()
    otype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offs = np.frombuffer(bufs[1], otype)[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offs[:-1][valid]
    return data[starts[:, None] + np.arange(width)]


def _parse_datetimes(arr, valid):
    """Text matching _DT_TEXT -> (seconds, valid, normalised text), or None if some date or time is impossible
    (``model.parse_datetime`` gives None there)."""
    import numpy as np
    n = len(arr)
    secs = np.zeros(n, np.int64)
    text = np.zeros((n, 19), np.uint8)
    if valid.any():
        b = _text_bytes(arr, valid, 19)
        d = b.astype(np.int64) - 48
        y = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
        mo, dd = d[:, 5] * 10 + d[:, 6], d[:, 8] * 10 + d[:, 9]
        hh, mi, ss = d[:, 11] * 10 + d[:, 12], d[:, 14] * 10 + d[:, 15], d[:, 17] * 10 + d[:, 18]
        if np.any((y < 1) | (mo < 1) | (mo > 12) | (dd < 1) | (hh > 23) | (mi > 59) | (ss > 59)):
            return None
        leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
        dim = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[mo] + (leap & (mo == 2))
        if np.any(dd > dim):
            return None
        secs[valid] = _days_from_civil(y, mo, dd) * 86400 + hh * 3600 + mi * 60 + ss
        b = b.copy()
        b[:, 10] = 32
        text[valid] = b
    return secs, valid, _fixed_text(text, valid)


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm), numpy int64, year >= 1."""
    import numpy as np
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(m > 2, m - 3, m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z):
    import numpy as np
    z = z + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return y + (m <= 2), m, d


def format_datetimes(secs, valid, *, quoted: bool = False):
    """``model.format_datetime`` column-wise: a string array of ``YYYY-MM-DD HH:MM:SS`` (NULL where not valid;
    ``quoted``: in double quotes, as JSON); seconds within Python's datetime range."""
    import numpy as np
    n = len(secs)
    s = np.where(valid, secs, 0)
    days, sod = s // 86400, s % 86400
    y, m, d = _civil_from_days(days)
    cols = [y // 1000, y // 100 % 10, y // 10 % 10, y % 10, None, m // 10, m % 10, None, d // 10, d % 10, None,
            sod // 36000, sod // 3600 % 10, None, sod // 60 % 60 // 10, sod // 60 % 10, None, sod % 60 // 10,
            sod % 10]
    seps = {4: 45, 7: 45, 10: 32, 13: 58, 16: 58}
    q = 1 if quoted else 0
    text = np.empty((n, 19 + 2 * q), np.uint8)
    if quoted:
        text[:, 0] = text[:, 20] = 34
    for i, c in enumerate(cols):
        text[:, i + q] = seps[i] if c is None else c + 48
    return _fixed_text(text, valid)


def _fixed_text(text, valid):
    """(n, w) uint8 -> a pyarrow string array of n values of w bytes, NULL where not valid."""
    import numpy as np
    import pyarrow as pa
    n, w = text.shape
    offsets = pa.py_buffer(np.arange(0, w * (n + 1), w, dtype=np.int32).tobytes())
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.string(), n, [bitmap, offsets, pa.py_buffer(np.ascontiguousarray(text).tobytes())])


def typed_batch(arrays: dict, n: int, path: str, file: int, offsets, lengths, index0: int,
                table: str = TABLE) -> Batch | None:
    """Arrow columns by declared name (absent: None) -> a Batch, or None when some value is one the fast path
    does not convert exactly as the reference (the caller then runs the reference over these rows)."""
    import numpy as np
    ints, strs, dts, dt_text = {}, {}, {}, {}
    for c in COLUMNS:
        arr = arrays.get(c.name)
        if c.kind == "int":
            if arr is None:
                return None
            v = int_column(c, arr)
            if v is None:
                return None
            ints[c.name] = v
        elif c.kind == "str":
            if arr is None:
                import pyarrow as pa
                arr = pa.nulls(n, pa.string())
            v = str_column(c, arr)
            if v is None:
                return None
            strs[c.name] = v
        else:
            if arr is None:
                dts[c.name], dt_text[c.name] = (np.zeros(n, np.int64), np.zeros(n, bool)), None
                continue
            v = datetime_column(c, arr)
            if v is None:
                return None
            dts[c.name], dt_text[c.name] = (v[0], v[1]), v[2]
    b = Batch(path, file, n, ints, strs, dts, dt_text, offsets, lengths, index0)
    b.table = table
    return b


# ---------------------------------------------------------------- readers
def _parquet_batch(reader: TableReader, src: Source, file: int, batch, cols: list, n0: int):
    import numpy as np
    n = batch.num_rows
    if not n:
        return
    arrays = {d: (None if c is None else batch.column(c)) for d, c in zip(COLUMN_NAMES, cols)}
    b = typed_batch(arrays, n, src.path, file, np.arange(n0, n0 + n, dtype=np.int64), np.zeros(n, np.int64),
                    reader.records, reader.log.table)
    if b is None:
        from .reader import parquet_rows
        yield from parquet_rows(reader, src, file, batch, cols, n0)
        return
    reader.records += n
    yield b


def read_parquet(reader: TableReader, src: Source, file: int, last: bool):
    """``reader._read_parquet`` with batches."""
    return _read_parquet(reader, src, file, last, batches=_parquet_batch, batch_size=PARQUET_BATCH)


def read_csv(reader: TableReader, src: Source, file: int, last: bool):
    """``reader._read_csv`` in blocks of whole records: each block pyarrow parses (when the block's quoting reads
    the same both ways and every value converts exactly) becomes a Batch, any other block and the file's tail
    (the records after its last newline) go through the reference."""
    head = csv_header(src)
    if head is None:
        yield from _read_csv(reader, src, file, last)
        return
    header, where, fs, pos = head
    yield from fs
    if where is None:
        return
    from ..fileio import open_regular
    fd = open_regular(src.path)
    with os.fdopen(fd, "rb", buffering=0) as f:
        size = os.fstat(fd).st_size
        while pos < size:
            f.seek(pos)
            blk = f.read(CSV_BLOCK)
            cut = _record_end(blk)
            if cut <= 0:        # a record longer than the block: the reference reads it, then blocks again
                end = _next_item(src, pos)
                if end is None:
                    break
                yield from csv_range(reader, src, file, header, where, pos, end, last)
                pos = end
                continue
            blk = blk[:cut]
            b = _csv_block(reader, src, file, header, where, blk, pos)
            if b is None:
                yield from csv_range(reader, src, file, header, where, pos, pos + cut, last)
            elif b.n:
                reader.records += b.n
                yield b
            pos += cut
    if pos < size:
        yield from csv_range(reader, src, file, header, where, pos, None, last)
    count_bytes(reader, src)


def _next_item(src: Source, pos: int) -> int | None:
    """Where the reference's next CSV item after the one at ``pos`` starts (None: that one is the file's last)."""
    items = _csv_records(src, pos)
    try:
        next(items, None)
        nxt = next(items, None)
        return None if nxt is None else nxt[0]
    finally:
        items.close()


def _record_end(blk: bytes) -> int:
    """The end of the last whole record in ``blk`` (which starts at a record start): a newline after an even
    number of quotes; 0 if there is none (a record longer than the block)."""
    end = len(blk)
    for _ in range(64):
        nl = blk.rfind(b"\n", 0, end)
        if nl < 0:
            return 0
        if blk.count(b'"', 0, nl) % 2 == 0:
            return nl + 1
        end = nl
    return 0


def _csv_block(reader, src, file, header, where, blk: bytes, pos: int) -> Batch | None:
    """Whole CSV records (after the header) -> a Batch, or None: the reference reads this block."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    quoted = b'"' in blk
    if quoted:
        if _CSV_BLOCK_RE.fullmatch(blk) is None:
            return None
    elif b"\r" in blk and blk.count(b"\r") != blk.count(b"\r\n"):
        return None
    names = [f"c{i}" for i in range(len(header))]
    used = sorted({w for w in where if w is not None})
    try:
        t = pcsv.read_csv(pa.py_buffer(blk), read_options=pcsv.ReadOptions(column_names=names, use_threads=False,
                                                                          block_size=len(blk) + 1),
                          parse_options=pcsv.ParseOptions(delimiter=",", quote_char='"', double_quote=True,
                                                          escape_char=False, newlines_in_values=True,
                                                          ignore_empty_lines=True),
                          convert_options=pcsv.ConvertOptions(column_types={names[i]: pa.string() for i in
                                                                            range(len(names))},
                                                              include_columns=[names[i] for i in used],
                                                              strings_can_be_null=True, null_values=["", "\\N"],
                                                              quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    a = np.frombuffer(blk, np.uint8)
    nl = np.flatnonzero(a == 10)
    if quoted:
        nl = nl[(np.searchsorted(np.flatnonzero(a == 34), nl) & 1) == 0]
    ends = nl + 1
    starts = np.concatenate(([0], ends[:-1])).astype(np.int64)
    lengths = ends - starts
    blank = (lengths == 1) | ((lengths == 2) & (a[np.minimum(starts, len(a) - 1)] == 13))
    if blank.any():
        starts, lengths = starts[~blank], lengths[~blank]
    if len(starts) != t.num_rows:
        return None
    arrays = {d: (None if w is None else t.column(names[w]).combine_chunks()) for d, w in zip(COLUMN_NAMES, where)}
    return typed_batch(arrays, t.num_rows, src.path, file, starts + pos, lengths, reader.records, reader.log.table)


FAST_READERS = {"csv": read_csv, "parquet": read_parquet}


# ---------------------------------------------------------------- ids seen (``IdSet``), a batch at a time
def add_ids(seen: IdSet, ids):
    """``IdSet.add`` over a batch in order: True where the id is new (not seen before, nor earlier in the
    batch). Pages follow IdSet's representation (a set while sparse, a bitmap of 8 KiB once dense)."""
    import numpy as np
    n = len(ids)
    new = np.zeros(n, bool)
    if not n:
        return new
    uniq, first = np.unique(ids, return_index=True)
    pages, lows = uniq >> IdSet._SHIFT, uniq & 0xFFFF
    cuts = [0, *(np.flatnonzero(np.diff(pages)) + 1).tolist(), len(uniq)]
    fresh = np.zeros(len(uniq), bool)
    for a, b in zip(cuts, cuts[1:]):
        k = int(pages[a])
        low = lows[a:b]
        p = seen.pages.get(k)
        if p is None or p.__class__ is set:
            cur = p if p is not None else set()
            if len(cur) + (b - a) < IdSet._DENSE:
                vals = low.tolist()
                fresh[a:b] = [x not in cur for x in vals]
                cur.update(vals)
                seen.pages[k] = cur
                continue
            bits = np.zeros(1 << IdSet._SHIFT, np.uint8)
            if cur:
                bits[np.fromiter(cur, np.int64, len(cur))] = 1
        else:
            bits = np.unpackbits(np.frombuffer(bytes(p), np.uint8), bitorder="little")
        fresh[a:b] = bits[low] == 0
        bits[low] = 1
        seen.pages[k] = bytearray(np.packbits(bits, bitorder="little").tobytes())
    new[first[fresh]] = True
    return new


# ---------------------------------------------------------------- checks: which rows the reference must see
def suspects(b: Batch, status, ctx: CheckContext, alive_arr):
    """Rows ``RowChecker.check`` may give a finding or the LOST flag for (a superset: it runs on them); the
    others give none."""
    import numpy as np
    import pyarrow.compute as pc
    i = b.ints
    tc, hc, al = i["trigger_code"], i["handle_code"], i["alarm_status"]
    tt, ttv = b.dts["trigger_time"]
    st_, stv = b.dts["schedule_time"]
    ht, htv = b.dts["handle_time"]
    addr = b.strs["executor_address"]
    addr_null = ~_valid(addr)
    now, before = ctx.as_of_local, ctx.lost_before
    m = (i["id"] < 1) | ~ttv | ((hc != 0) & ~htv) | ((tc == 200) & addr_null)
    msg = b.strs["handle_msg"]
    if len(msg) > msg.null_count:
        m |= pc.fill_null(pc.greater(pc.utf8_length(msg), HANDLE_MSG_MAX_CHARS), False).to_numpy(
            zero_copy_only=False)
    m |= ~np.isin(al, list(_ALARM)) | ~np.isin(tc, list(_TRIGGER_CODES)) | ~np.isin(hc, list(_HANDLE_CODES))
    m |= ((tc == 0) & (hc != 0)) | ((hc == 0) & htv) | (htv & ttv & (ht < tt)) | (al == -1)
    m |= np.isin(al, (1, 2, 3)) & np.isin(status, [_S[s] for s in ctx.rules.alarm_quiet])
    m |= (ttv & (tt > now)) | (stv & (st_ > now)) | (htv & (ht > now))
    old = (hc == 0) & ttv & (tt <= before)
    m |= old & (tc == 0)
    pend = old & (tc == 200)
    if pend.any():
        m |= pend & ~_alive(addr, alive_arr)
    return m


def _alive(addr, alive_arr):
    import pyarrow.compute as pc
    return pc.fill_null(pc.is_in(addr, value_set=alive_arr), False).to_numpy(zero_copy_only=False)


_S = {s: k for k, s in enumerate(STATUS_LABELS)}


# ---------------------------------------------------------------- the digest, column-wise
def _json_text(arr):
    """json.dumps(value, ensure_ascii=False) of each string (``null`` for NULL). Few distinct values (executor
    addresses, handlers): each distinct value once, then taken by index."""
    import pyarrow.compute as pc
    n = len(arr)
    if n == arr.null_count:
        return pc.fill_null(arr.cast("string"), "null")
    if n >= 64:
        d = pc.dictionary_encode(arr)
        if len(d.dictionary) <= n // 8:
            return pc.fill_null(_json_quoted(d.dictionary).take(d.indices), "null")
    return pc.fill_null(_json_quoted(arr), "null")


def _json_quoted(arr):
    import pyarrow.compute as pc
    s = arr
    for ch in ("\\", '"'):
        if pc.any(pc.match_substring(s, ch)).as_py():
            s = pc.replace_substring(s, ch, _JSON_ESC[ch])
    if not pc.all(pc.utf8_is_printable(s)).as_py() and \
            pc.any(pc.match_substring_regex(s, "[\\x00-\\x1f]")).as_py():
        for ch in ("\n", "\r", "\t", "\b", "\f"):
            s = pc.replace_substring(s, ch, _JSON_ESC[ch])
        for ch in _CTRL:
            s = pc.replace_substring(s, ch, f"\\u{ord(ch):04x}")
    return pc.binary_join_element_wise('"', s, '"', "")


def digest_lines(b: Batch, status, sel=None):
    """``replay.digest_line`` of each row (``sel``: those rows only), as a pyarrow string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def pick_np(x):
        return x if sel is None else x[sel]

    def pick_pa(x):
        return x if sel is None else x.take(pa.array(sel))

    def int_text(name):
        return pa.array(pick_np(b.ints[name])).cast(pa.string())

    labels = pa.array([f'"{s}"' for s in STATUS_LABELS])
    parts = []
    for c in COLUMNS:
        if c.kind == "int":
            parts.append(int_text(c.name))
        elif c.kind == "str":
            parts.append(_json_text(pick_pa(b.strs[c.name])))
        else:
            txt = b.dt_text.get(c.name)
            if txt is None:
                s, v = b.dts[c.name]
                txt = format_datetimes(pick_np(s), pick_np(v), quoted=True)
            else:
                txt = pc.binary_join_element_wise('"', pick_pa(txt), '"', "")
            parts.append(pc.fill_null(txt, "null"))
    head = pc.binary_join_element_wise("[", parts[0], "")
    st = labels.take(pa.array(pick_np(status)))
    parts[-1] = pc.binary_join_element_wise(parts[-1], "]", "")
    return pc.binary_join_element_wise(head, st, *parts, ",")


def digest_sum(lines) -> int:
    """Sum of the lines' sha256 (as 256-bit big-endian integers) mod 2**256 — ``line_hash`` summed."""
    import numpy as np
    n = len(lines)
    if not n:
        return 0
    sha = hashlib.sha256
    dg = b"".join([sha(x).digest() for x in lines.cast("binary").to_pylist()])
    words = np.frombuffer(dg, ">u4").reshape(-1, 8).sum(axis=0, dtype=np.uint64)
    return sum(int(w) << (32 * (7 - k)) for k, w in enumerate(words.tolist())) % _MOD


# ---------------------------------------------------------------- counts
def _dict_keys(arr, none_label: str):
    """A nullable string array -> (codes numpy int64, labels list) with NULL as ``none_label``."""
    import pyarrow.compute as pc
    d = pc.dictionary_encode(arr, null_encoding="encode")
    if hasattr(d, "chunks"):
        d = d.combine_chunks()
    labels = [none_label if x is None else x for x in d.dictionary.to_pylist()]
    return d.indices.to_numpy(zero_copy_only=False).astype("int64"), labels


def _count(keys):
    import numpy as np
    u, c = np.unique(keys, return_counts=True)
    return zip(u.tolist(), c.tolist())


def _bump_n(d: dict, key, label: str, n: int) -> None:
    from collections import Counter
    c = d.get(key)
    if c is None:
        c = d[key] = Counter()
    c[label] += n


def stats_add(stats: RecordStats, b: Batch, status) -> None:
    """``RecordStats.add(facts(row))`` for every row of the batch."""
    import numpy as np
    stats.records += b.n
    stats.bytes += int(b.lengths.sum())
    for k, n in _count(status):
        lab = STATUS_LABELS[k]
        stats.by_type[lab] += n
        stats.bytes_by_type[lab] += int(b.lengths[status == k].sum())
    for j in np.unique(b.ints["job_id"]).tolist():
        stats.jobs.add(long_key(j))


def tally_add(t: Tally, b: Batch, status, rows, flags: dict, sus, ctx: CheckContext, alive_arr) -> None:
    """``Tally.add`` for the rows ``rows`` (numpy indexes into the batch, in order); ``flags``: the reference's
    flags of the suspect rows among them (index -> flags), ``sus`` the suspect mask."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if not len(rows):
        return
    whole = len(rows) == b.n
    sel = None if whole else rows

    def pick(x):
        return x if whole else x[rows]

    def pick_pa(x):
        return x if whole else x.take(pa.array(rows))

    t.rows += len(rows)
    t.digest_sum = (t.digest_sum + digest_sum(digest_lines(b, status, sel))) % _MOD
    s = pick(status).astype(np.int64)
    for k, n in _count(s):
        t.by_status[STATUS_LABELS[k]] += n
    g = pick(b.ints["job_group"])
    for key, n in _count(g * 8 + s):
        _bump_n(t.by_group, key >> 3, STATUS_LABELS[key & 7], n)
    tc, hc = pick(b.ints["trigger_code"]), pick(b.ints["handle_code"])
    tt, ttv = pick(b.dts["trigger_time"][0]), pick(b.dts["trigger_time"][1])
    ht, htv = pick(b.dts["handle_time"][0]), pick(b.dts["handle_time"][1])
    if ttv.any():
        bucket = bucket_index({"trigger_code": tc, "handle_code": hc}).astype(np.int64)
        for key, n in _count((tt[ttv] // 86400) * 4 + bucket[ttv]):
            _bump_n(t.daily, day_of((key >> 2) * 86400), REPORT_BUCKETS[key & 3], n)
    for name, dest, none in (("executor_address", t.executors, NO_ADDRESS),
                             ("executor_handler", t.handlers, NO_HANDLER)):
        codes, labels = _dict_keys(pick_pa(b.strs[name]), none)
        for key, n in _count(codes * 8 + s):
            _bump_n(dest, labels[key >> 3], STATUS_LABELS[key & 7], n)
    lat = (hc > 0) & htv & ttv
    if lat.any():
        for k, n in _count(ht[lat] - tt[lat]):
            t.latency[k] += n
    plain = ~pick(sus)
    pend = plain & (tc == 200) & (hc == 0) & ttv & (tt <= ctx.lost_before)
    if pend.any():  # not suspect, so registered (a LOST row is a suspect)
        t.pending_online += int((pend & _alive(pick_pa(b.strs["executor_address"]), alive_arr)).sum())
    marked = plain & (hc == LOST_HANDLE_CODE)
    if marked.any():
        msg = pick_pa(b.strs["handle_msg"])
        t.marked_lost += int((marked & pc.fill_null(pc.is_in(msg, value_set=pa.array(sorted(_LOST_MSGS))),
                                                     False).to_numpy(zero_copy_only=False)).sum())
    for i, fl in flags.items():
        if fl & RowChecker.LOST:
            tti = int(b.dts["trigger_time"][0][i])
            a = b.strs["executor_address"][i].as_py()
            a = a if a is not None else NO_ADDRESS
            e = t.lost.get(a)
            if e is None:
                t.lost[a] = [1, tti]
            else:
                e[0] += 1
                e[1] = min(e[1], tti)
        if fl & RowChecker.PENDING_ONLINE:
            t.pending_online += 1
        if fl & RowChecker.MARKED_LOST:
            t.marked_lost += 1


class BatchReplay:
    """``JobLogReplay.apply`` a batch at a time, on the same replay (ids seen, checker, tally): the findings in
    row order (``apply`` returns them), the tally and (``stats``) the record statistics of every row."""

    def __init__(self, replay: JobLogReplay, stats: RecordStats | None = None):
        import pyarrow as pa
        self.replay = replay
        self.stats = stats
        self.alive = pa.array(sorted(replay.ctx.registry.alive), pa.string())

    def apply(self, b: Batch) -> list[Finding]:
        import numpy as np
        rp = self.replay
        status = status_index(b.ints, rp.ctx.rules)
        if self.stats is not None:
            stats_add(self.stats, b, status)
        new = add_ids(rp.seen, b.ints["id"])
        sus = suspects(b, status, rp.ctx, self.alive)
        out: list[Finding] = []
        flags: dict[int, int] = {}
        for i in np.flatnonzero(~new | sus).tolist():
            r = b.row(i)
            if not new[i]:
                out.append(duplicate_finding(r))
                continue
            found, fl = rp.checker.check(r)
            out.extend(found)
            flags[i] = fl
        rows = np.arange(b.n) if new.all() else np.flatnonzero(new)
        tally_add(rp.tally, b, status, rows, flags, sus, rp.ctx, self.alive)
        return out


def events(reader: TableReader) -> Iterator:
    """The reader's events with the fast readers standing in where they can (Batch, Row, Finding)."""
    return reader.events(FAST_READERS)
