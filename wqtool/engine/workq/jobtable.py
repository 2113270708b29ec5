"""The compact job state of the hot kernel, and its pure-Python twin.

The kernel (fastreplay.py) replays into a *job table*: one fixed-size row per live job, no payload, and no
Python object per job when the C kernel runs (``_kernel.JobTable``: 104-byte C records in insertion order, an
open-addressing index over the 16-byte ids, queue names interned, results in one arena; it compacts itself when
dead records outnumber live ones, so memory follows the live jobs). ``PyJobTable`` below is the same table in
pure Python (``WQTOOL_PURE_PYTHON=1``, or where the extension is not built): a dict id -> list of the row's
fields. Both have the same methods and the tests hold them equal (tests/engine/workq/test_kernel_c.py).

A row (``get_row(id)``, ``rows()``, ``put(id, row)``), fields in this order (``ROW``):

  kind            1 add, 2 schedule (CmdType)
  name            the queue name (str; replay admitted it: [A-Za-z0-9_.-]{1,255})
  ttr, ttl        ms (ttr uint32-truncated as upstream)
  priority        int32
  max_attempts    uint8-truncated as upstream;  max_fails: uint8
  created_ns      ns since the Unix epoch (int64: the kernel hands years outside 1678..2262 to the reference path)
  scheduled_ns    schedule: the wake-up time; add: None
  log_expires_ns  created+TTL (add) / time+TTL (schedule)
  payload_len, payload_crc   the job body is not kept: its length and CRC-32C (the digest's fields; 0 when the
                  scan keeps no state: verify); the body is read back from the add record (seg, offset) when an
                  output needs it (pack)
  seg, offset     the add/schedule record: segment number in the log, byte offset
  state           JobState (0 new .. 4 leased);  attempts: uint32
  result          bytes (complete / fail / a timeout failure) or None; kept only when the scan keeps state

What depends on the as-of (expires_ns of an add-job, lease_expires_ns) is computed on the way out
(``replay.CompactJobs``), as ``WorkqReplay.finish`` does.

The other methods: ``ids()`` (insertion order), ``sorted_ids()``, ``note_counts()`` -> (live add-jobs, leased),
``counts()`` -> ([jobs per state], {queue: [jobs per state]}), ``delete(id)``.

Both write the digest lines (``digest(h, as_of_ns)``); the C table also replay's JSON rows
(``encode_rows(style, as_of_ns, start, stop)``).

``ScanStats`` / ``PyScanStats``: what ``stats`` needs of every record (records and bytes per command type, first and
last record time, the distinct job ids), collected by the same scan.
"""
from __future__ import annotations

from ...formats import workq as _schema     # (its NAME_RE, built on first use: serve imports no re)

_KIND = ("?", "add", "schedule")
_STATE = ("new", "completed", "failed", "pending", "leased")

ROW = ("kind", "name", "ttr", "ttl", "priority", "max_attempts", "max_fails", "created_ns", "scheduled_ns",
       "log_expires_ns", "payload_len", "payload_crc", "seg", "offset", "state", "attempts", "result")
(K_KIND, K_NAME, K_TTR, K_TTL, K_PRIO, K_MA, K_MF, K_CREATED, K_SCHED, K_LOGEXP, K_PLEN, K_PCRC, K_SEG, K_OFF,
 K_STATE, K_ATT, K_RES) = range(len(ROW))
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1


class PyJobTable:
    """``_kernel.JobTable`` in pure Python: ``d`` maps id -> a list of the row's fields (the scan mutates it)."""

    __slots__ = ("d", "names")

    def __init__(self) -> None:
        self.d: dict[bytes, list] = {}
        self.names: dict[bytes, str] = {}     # interned queue names

    def __len__(self) -> int:
        return len(self.d)

    def __contains__(self, jid) -> bool:
        return jid in self.d

    def get_row(self, jid: bytes) -> tuple | None:
        if not isinstance(jid, bytes) or len(jid) != 16:
            raise TypeError("a job id is 16 bytes")
        v = self.d.get(jid)
        return None if v is None else tuple(v)

    def ids(self) -> list[bytes]:
        return list(self.d)

    def sorted_ids(self) -> list[bytes]:
        return sorted(self.d)

    def rows(self) -> list[tuple]:
        return [(k, *v) for k, v in self.d.items()]

    def put(self, jid: bytes, row: tuple) -> None:
        if not isinstance(jid, bytes) or len(jid) != 16:
            raise TypeError("a job id is 16 bytes")
        if not isinstance(row, tuple) or len(row) != len(ROW):
            raise ValueError("JobTable.put: a row has 17 fields")
        if not isinstance(row[K_NAME], str) or not _schema.NAME_RE.match(row[K_NAME].encode("latin-1", "replace")):
            raise ValueError("JobTable.put: the name is not [A-Za-z0-9_.-]{1,255}")
        self.d[jid] = list(row)

    def delete(self, jid: bytes) -> None:
        del self.d[jid]

    def note_counts(self) -> tuple[int, int]:
        adds = leased = 0
        for v in self.d.values():
            adds += v[K_KIND] == 1
            leased += v[K_STATE] == 4
        return adds, leased

    def digest(self, h, as_of_ns: int) -> None:
        """h.update() with every job's digest line (``replay.digest_line`` of its Job), in id order, from the rows."""
        from .replay import lease_expires_at
        d, nl, lines = self.d, "null", []
        for k in sorted(d):
            kind, name, ttr, ttl, prio, ma, mf, created, sched, log_exp, plen, pcrc, _, _, st, att, res = d[k]
            x = k.hex()
            lines.append(
                f'{{"attempts":{att},"created_ns":{created},'
                f'"expires_ns":{as_of_ns + ttl * 1_000_000 if kind == 1 else log_exp},'
                f'"id":"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}","kind":"{_KIND[kind]}",'
                f'"lease_expires_ns":{lease_expires_at(as_of_ns, ttr) if st == 4 else nl},'
                f'"log_expires_ns":{log_exp},"max_attempts":{ma},"max_fails":{mf},"name":"{name}",'
                f'"payload_crc32c":"{pcrc:08x}","payload_len":{plen},"priority":{prio},'
                f'"result":{nl if res is None else chr(34) + res.hex() + chr(34)},'
                f'"scheduled_ns":{nl if sched is None else sched},"state":"{_STATE[st]}","ttl_ms":{ttl},'
                f'"ttr_ms":{ttr}}}\n')
            if len(lines) >= 4096:
                h.update("".join(lines).encode())
                lines.clear()
        h.update("".join(lines).encode())

    def counts(self) -> tuple[list[int], dict[str, list[int]]]:
        by = [0] * 5
        per: dict[str, list[int]] = {}
        for v in self.d.values():
            st = v[K_STATE]
            by[st] += 1
            q = per.get(v[K_NAME])
            if q is None:
                q = per[v[K_NAME]] = [0] * 5
            q[st] += 1
        return by, per


class PyScanStats:
    """``_kernel.ScanStats`` in pure Python (the scan updates the attributes)."""

    __slots__ = ("n_records", "n_bytes", "first", "last", "id_set")

    def __init__(self) -> None:
        self.n_records = [0] * 9
        self.n_bytes = [0] * 9
        self.first: int | None = None
        self.last: int | None = None
        self.id_set: set[bytes] = set()

    def add(self, cmd: int, nbytes: int, time_ns: int, job_id: bytes | None) -> None:
        """Count one record (as ``_kernel.ScanStats.add``)."""
        if job_id is not None:
            self.id_set.add(job_id)
        self.n_records[cmd] += 1
        self.n_bytes[cmd] += nbytes
        if self.first is None or time_ns < self.first:
            self.first = time_ns
        if self.last is None or time_ns > self.last:
            self.last = time_ns

    def records(self) -> list[int]:
        return list(self.n_records)

    def bytes(self) -> list[int]:
        return list(self.n_bytes)

    def first_ns(self) -> int | None:
        return self.first

    def last_ns(self) -> int | None:
        return self.last

    def distinct(self) -> int:
        return len(self.id_set)

    def ids(self) -> set[bytes]:
        return set(self.id_set)

    def packed_ids(self) -> bytes:
        """The distinct ids, sorted, 16 bytes each (as ``_kernel.ScanStats.packed_ids``)."""
        return b"".join(sorted(self.id_set))

    def add_ids(self, packed: bytes) -> None:
        """Count the ids of ``packed_ids()`` as distinct ids of this one (as ``_kernel.ScanStats.add_ids``)."""
        if len(packed) % 16:
            raise ValueError("ScanStats.add_ids: packed ids are 16 bytes each")
        self.id_set.update(bytes(packed[i:i + 16]) for i in range(0, len(packed), 16))
