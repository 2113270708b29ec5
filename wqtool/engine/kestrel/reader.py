"""Kestrel file-set discovery and the streaming journal reader.

Discovery follows Kestrel 2.x (``Journal`` companion object, ``LocalDirectory``): a queue ``q`` is the files
``q.<ms>`` (numeric order), then the live file ``q``; a ``q.<ms>.pack`` supersedes every ``q.<ts>`` with
``ts <= ms`` and takes their place; ``q~~<ms>`` temp files are deleted at startup. wqtool applies these rules
**virtually**: it never deletes or renames anything while discovering, dumping, verifying or replaying; what
Kestrel would do is reported as findings.

The reader mmaps each file read-only and checks every block size (sign, bytes left, sanity cap) before slicing.
``events()`` yields ``Record`` and ``Finding`` objects interleaved in file order, like the workq reader.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.kestrel import (ITEM_OPS, LIBKESTREL_READER_MAGIC, LIBKESTREL_WRITER_MAGIC, LONG_MAX, LONG_MIN,
                                PACK_SUFFIX,
                                TEMP_MARKER)
from ..fileio import FileView, input_error, listdir
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from .fastpath import SIZE_ABSURD, SIZE_NEGATIVE, Damage, decode_fields, decode_op
from .model import Record

KESTREL_VERSIONS = ("1", "2", "auto")

ROLE_ROTATED = "rotated"
ROLE_LIVE = "live"
ROLE_PACK = "pack"          # a .pack that the .pack rule would rename into place as <q>.<ms>
ROLE_EXPLICIT = "explicit"  # named on the command line, outside Kestrel's naming


@dataclass(frozen=True, slots=True)
class JournalFile:
    path: str
    role: str
    ts: int | None = None          # <ms> of a rotated file or pack
    pinned_size: int | None = None  # (FileView compatibility)


@dataclass(slots=True)
class FileSet:
    """One queue's journal: its files in Kestrel 2.x replay order, after the virtual cleanup.

    ``files`` is what Kestrel would replay; ``superseded`` what its startup would delete (temps, files a
    ``.pack`` supersedes); ``stray`` names that make 2.x startup fail. ``segments`` is an alias of ``files``
    for code written against the workq ``LogSet``.
    """

    root: str
    queue: str
    files: list[JournalFile]
    findings: list[Finding] = field(default_factory=list)
    is_dir: bool = True
    kestrel_version: str = "auto"
    superseded: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    packs: list[str] = field(default_factory=list)   # .pack files present (each also in files or superseded)
    temps: list[str] = field(default_factory=list)

    @property
    def segments(self) -> list[JournalFile]:
        return self.files

    @property
    def newest(self) -> JournalFile | None:
        return self.files[-1] if self.files else None

    @property
    def live_path(self) -> str:
        return os.path.join(self.root, self.queue)

    @property
    def label(self) -> str:
        """What reports call this set: a directory's queue by its live file's path, files named one by one by
        those names (not by their directory)."""
        if self.is_dir or not self.files:
            return self.live_path
        return ", ".join(f.path for f in self.files)

    @property
    def on_disk(self) -> list[str]:
        """Every file of the queue that is on disk (replayed, superseded, temps; not stray names)."""
        seen = [f.path for f in self.files] + list(self.superseded)
        return list(dict.fromkeys(seen))


def queue_of(name: str) -> str:
    """The queue a file name belongs to: the part before ``~~`` for temps, else ``name.split('.')(0)``."""
    if TEMP_MARKER in name:
        return name.split(TEMP_MARKER, 1)[0]
    return name.split(".", 1)[0]


_LONG = re.compile(r"^[+-]?\d+$")


def parse_ts(name: str, queue: str) -> int | None:
    """2.x's ``name.split('.')(1).toLong`` for a name starting with ``<queue>.``, or None where it throws."""
    parts = [p for p in name[len(queue) + 1:].split(".")]
    # Java's String.split drops trailing empty strings: "q." -> ["q"] -> index 1 throws
    while parts and parts[-1] == "":
        parts.pop()
    if not parts or not _LONG.match(parts[0]):
        return None
    v = int(parts[0])
    return v if LONG_MIN <= v <= LONG_MAX else None


def classify(queue: str, root: str, names: Sequence[str]) -> FileSet:
    """Apply Kestrel 2.x's naming, .pack and temp rules to one queue's file names (virtually)."""
    fs = FileSet(root=root, queue=queue, files=[])
    rotated: list[tuple[int, str, bool]] = []   # (ts, name, from_pack)
    packs: list[tuple[int, str]] = []
    live = False
    for name in names:
        path = os.path.join(root, name)
        if TEMP_MARKER in name:
            fs.temps.append(path)
            fs.superseded.append(path)
            fs.findings.append(Finding(WARNING, "KQ-TEMP-FILE", "leftover rewrite/pack temp file; Kestrel 2.x "
                                       "deletes it at startup (not replayed)", path=path,
                                       upstream="deleted at the start of replay"))
            continue
        if name == queue:
            live = True
            continue
        ts = parse_ts(name, queue)
        if ts is None:
            fs.stray.append(path)
            fs.findings.append(Finding(WARNING, "KQ-STRAY-FILE", f"'{name}' is not <queue>.<ms>[.pack]: Kestrel 2.x "
                                       "fails at startup parsing it (NumberFormatException); wqtool replays the "
                                       "queue without it", path=path,
                                       upstream="Kestrel 2.x refuses to start while this file is in the directory"))
            continue
        if name.endswith(PACK_SUFFIX):
            packs.append((ts, name))
            fs.packs.append(path)
            continue
        rest = name[len(queue) + 1:].split(".", 1)
        if len(rest) > 1 and rest[1]:
            fs.findings.append(Finding(WARNING, "KQ-ODD-NAME", f"'{name}' is replayed by Kestrel 2.x as rotated "
                                       f"journal {ts} (only the part after the first dot is parsed)", path=path))
        rotated.append((ts, name, False))
    # the .pack rule (cleanUpPackedFiles), simulated
    packs.sort(key=lambda p: p[0])
    for ts, pname in packs:
        victims = sorted((r for r in rotated if r[0] <= ts), key=lambda r: r[0])
        rotated = [r for r in rotated if r[0] > ts]
        for v in victims:
            fs.superseded.append(os.path.join(root, v[1]))
        ppath = os.path.join(root, pname)
        target = f"{queue}.{ts}"
        if victims:
            fs.findings.append(Finding(WARNING, "KQ-HALF-PACK", f"half-finished pack: Kestrel 2.x deletes "
                                       f"{', '.join(v[1] for v in victims)} and renames {pname} to {target}; "
                                       "wqtool replays it that way without touching the directory", path=ppath,
                                       upstream="cleanUpPackedFiles runs whenever the file list is computed"))
        else:
            fs.findings.append(Finding(NOTE, "KQ-PACK-PENDING", f"pack superseding nothing: Kestrel 2.x renames "
                                       f"{pname} to {target}", path=ppath))
        rotated.append((ts, pname, True))
    rotated.sort(key=lambda r: r[0])  # stable, like Scala's sortBy
    for ts, name, from_pack in rotated:
        fs.files.append(JournalFile(os.path.join(root, name), ROLE_PACK if from_pack else ROLE_ROTATED, ts))
    interrupted = _interrupted_rotation(fs, queue) if not live else None
    if live:
        fs.files.append(JournalFile(os.path.join(root, queue), ROLE_LIVE))
    elif interrupted is not None:
        last, temp = interrupted
        fs.files[-1] = JournalFile(last.path, ROLE_LIVE, last.ts)
        fs.findings.append(Finding(WARNING, "KQ-INTERRUPTED-APPLY", "an interrupted wqtool repair (or pack, clean): "
                                   f"rerun it to finish; read as before it started, {os.path.basename(last.path)} as "
                                   f"the live journal and {os.path.basename(temp)} as its unfinished rewrite",
                                   path=last.path, upstream="Kestrel 2.x would read the file as a rotated journal "
                                   "(a torn tail there as damage) and delete the temp"))
    elif fs.files or fs.temps:
        fs.findings.append(Finding(NOTE, "KQ-NO-LIVE", f"no live journal '{queue}': Kestrel 2.x replays the other "
                                   "files and starts a new one", path=os.path.join(root, queue)))
    return fs


def _interrupted_rotation(fs: FileSet, queue: str):
    """(the newest rotated file, the temp) when a queue without a live file has a temp ``q~~<T+1>`` beside its
    newest rotated file ``q.<T>``: a wqtool pack or repair ``--apply`` killed between rotating the live file and
    publishing its rewrite (``kestrel.pack``'s steps 3-4; its ``finish_interrupted`` rolls it back). Else None."""
    if not fs.files or fs.files[-1].role != ROLE_ROTATED or fs.files[-1].ts is None:
        return None
    want = f"{queue}{TEMP_MARKER}{fs.files[-1].ts + 1}"
    temp = next((t for t in fs.temps if os.path.basename(t) == want), None)
    return None if temp is None else (fs.files[-1], temp)


def _check_version(kestrel_version: str) -> str:
    v = str(kestrel_version)
    if v not in KESTREL_VERSIONS:
        raise UsageError(f"--kestrel-version must be one of 1, 2, auto (got {kestrel_version!r})")
    return v


def discover(paths: Sequence[str], kestrel_version: str = "auto", *, queue: str | None = None,
             evidence: bool = False) -> list[FileSet]:
    """Resolve PATHs into Kestrel file sets.

    A directory yields one file set per queue in it (``queue=`` keeps just that one), with 2.x's ordering and
    the .pack / temp rules applied virtually. Files named explicitly form a set per (directory, queue) holding
    exactly those files, in Kestrel's order when every name parses (else as given); the last one is treated as
    the live file; a KQ-PARTIAL-SET warning lists the queue's files that were not named.
    """
    v = _check_version(kestrel_version)
    if not paths:
        raise UsageError("no PATH given")
    out: list[FileSet] = []
    explicit: dict[tuple[str, str], list[str]] = {}
    for p in paths:
        try:
            os.stat(p)
        except OSError as exc:
            raise input_error(p, exc) from None
        if os.path.isdir(p):
            sets = _discover_dir(p, queue, evidence)
            for fs in sets:
                fs.kestrel_version = v
            out.extend(sets)
            continue
        if not os.access(p, os.R_OK):
            raise InputError("permission denied", path=p)
        key = (os.path.dirname(os.path.abspath(p)), queue_of(os.path.basename(p)))
        if key not in explicit:
            explicit[key] = []
            out.append(FileSet(root=os.path.dirname(p) or ".", queue=key[1], files=[], is_dir=False,
                               kestrel_version=v))
        explicit[key].append(p)
    for fs in out:
        if fs.is_dir:
            continue
        named = explicit[(os.path.abspath(fs.root), fs.queue)]
        fs.files = _explicit_order(fs.queue, named)
        try:
            siblings = sorted(n for n in listdir(fs.root) if os.path.isfile(os.path.join(fs.root, n))
                              and queue_of(n) == fs.queue)
        except OSError:
            siblings = []
        named_names = {os.path.basename(p) for p in named}
        others = [n for n in siblings if n not in named_names]
        if others:
            fs.findings.append(Finding(WARNING, "KQ-PARTIAL-SET", f"queue '{fs.queue}' has other files not named "
                                       f"here ({', '.join(others[:6])}{', ...' if len(others) > 6 else ''}); "
                                       "pass the directory to replay the whole set as Kestrel does",
                                       path=fs.files[-1].path))
    return out


def whole_queue(fileset: FileSet, what: str) -> FileSet:
    """The queue's whole file set for a command that rewrites it (``what``: "repair", "clean", "pack --apply"):
    a directory's set as it is; one journal file named alone names its queue (every file of it in that directory,
    as the directory would: issue 34), as do files named one by one when they are every file of their queue;
    several files that are part of a queue are a usage error naming the files left out (rewriting part of a queue
    would lose or duplicate the rest)."""
    if fileset.is_dir:
        return fileset
    d = fileset.root
    try:
        siblings = sorted(n for n in listdir(d)
                          if os.path.isfile(os.path.join(d, n)) and queue_of(n) == fileset.queue)
    except OSError as exc:
        raise input_error(d, exc) from None
    named = sorted({os.path.basename(f.path) for f in fileset.files})
    if siblings != named and len(named) > 1:
        left = [n for n in siblings if n not in named]
        raise UsageError(f"{what} rewrites a whole queue: queue '{fileset.queue}' also has "
                         f"{', '.join(left[:6])}{', ...' if len(left) > 6 else ''} here; name its directory "
                         f"({d}) or every one of its files", path=fileset.label)
    [whole] = _discover_dir(d, fileset.queue) or [None]
    if whole is None:
        raise UsageError(f"{what}: no Kestrel queue '{fileset.queue}' found in {d}", path=fileset.label)
    whole.kestrel_version = fileset.kestrel_version
    return whole


def _explicit_order(queue: str, named: list[str]) -> list[JournalFile]:
    keyed = []
    for p in named:
        name = os.path.basename(p)
        ts = None if name == queue else parse_ts(name, queue)
        keyed.append((name, ts, p))
    if all(name == queue or ts is not None for name, ts, _ in keyed):
        # Kestrel's order: rotated / packs by ts, the live file last
        keyed.sort(key=lambda k: (k[0] == queue, k[1] if k[1] is not None else 0))
    files = []
    for i, (name, ts, p) in enumerate(keyed):
        last = i == len(keyed) - 1
        files.append(JournalFile(p, ROLE_LIVE if last else (ROLE_ROTATED if ts is not None else ROLE_EXPLICIT), ts))
    return files


def _discover_dir(d: str, only: str | None, evidence: bool = False) -> list[FileSet]:
    """One file set per queue. ``evidence`` (auto-detection): a queue is read only if one of its files carries
    journal evidence (records parse; an empty file only beside real journals); the others are named in a
    KQ-NOT-JOURNAL warning, never read as journals and never silently skipped."""
    try:
        entries = sorted(listdir(d))
    except OSError as exc:
        raise input_error(d, exc) from None
    groups: dict[str, list[str]] = {}
    others: list[str] = []
    for name in entries:
        path = os.path.join(d, name)
        if os.path.isfile(path):
            groups.setdefault(queue_of(name), []).append(name)
        elif not os.path.isdir(path):
            others.append(name)          # FIFOs, devices, sockets: never opened
    if only is not None:
        groups = {only: groups.get(only, [])}
        if not groups[only]:
            raise InputError(f"no journal files for queue '{only}'", path=d)
    if not groups:
        raise UsageError("not a Kestrel queue directory: no files", path=d)
    skipped: list[str] = []
    if evidence:
        keep = {}
        for q, names in groups.items():
            grades = [journal_evidence(os.path.join(d, n))[0] for n in names if journal_name(n)]
            if STRONG in grades or (WEAK in grades and None not in grades):
                keep[q] = names
            else:
                skipped += names
        groups = keep
        if not groups:
            raise UsageError("not a Kestrel queue directory: no file parses as a journal", path=d)
    sets = [classify(q, d, names) for q, names in sorted(groups.items())]
    if skipped or others:
        what = []
        if skipped:
            what.append(f"not journals (no record parses): {', '.join(skipped[:8])}{', ...' if len(skipped) > 8 else ''}"
                        " — pass --format kestrel to read them anyway")
        if others:
            what.append(f"not regular files, never opened: {', '.join(others[:8])}")
        sets[0].findings.append(Finding(WARNING, "KQ-NOT-JOURNAL", "; ".join(what), path=d))
    return sets


# ---------------------------------------------------------------- resynchronisation after damage
#: Item records with a plausible add time (ms in 2004..2103: byte 5 of the LE i64 is 01..03, bytes 6-7 zero).
_CANDIDATE = re.compile(rb"\x02(?=[\s\S]{9}[\x01-\x03]\x00\x00)|[\x07\x08](?=[\s\S]{13}[\x01-\x03]\x00\x00)")
PLAUSIBLE_MS = (1_075_000_000_000, 4_200_000_000_000)
RESYNC_CHAIN = 8


def _plausible_chain(data, p: int, end: int) -> bool:
    """True when records parse from p to the end of the file, or for RESYNC_CHAIN records, starting with a
    plausible item (add time 2004..2103, expiry 0 or plausible)."""
    lo, hi = PLAUSIBLE_MS
    n = 0
    pos = p
    while pos < end and n < RESYNC_CHAIN:
        try:
            op, nxt = decode_op(data, pos, end)
        except Damage:
            return False
        if n == 0:
            if op.add_time is None or not lo <= op.add_time <= hi or not (op.expiry == 0 or lo <= op.expiry <= hi * 2):
                return False
        n += 1
        pos = nxt
    return n > 0


def find_resync(data, start: int, end: int) -> int | None:
    """The first offset after ``start`` where valid records plausibly resume, or None. Kestrel itself never
    resynchronises (it stops reading the file); this is how wqtool tells damage from a torn tail."""
    p = start
    while True:
        m = _CANDIDATE.search(data, p + 1, end)
        if m is None:
            return None
        p = m.start()
        if _plausible_chain(data, p, end):
            return p


# ---------------------------------------------------------------- evidence (detection)
#: how much of a file detection reads (bounded, whatever the file's size)
EVIDENCE_BYTES = 64 * 1024
STRONG, WEAK = "strong", "weak"


def journal_name(name: str) -> bool:
    """A name Kestrel 2.x gives a journal file: the live ``<q>`` (no dot), ``<q>.<ms>[.pack]`` or a temp
    ``<q>~~<ms>``."""
    if TEMP_MARKER in name:
        return True
    q = queue_of(name)
    return name == q or parse_ts(name, q) is not None


def journal_evidence(path: str) -> tuple[str | None, str]:
    """(STRONG | WEAK | None, why) from the first EVIDENCE_BYTES of a regular file: STRONG when records parse from
    its first byte (8 records, or all of them, including a plausible item), or, after damage at its start, a plausible
    chain of records resumes; WEAK when it is empty (a fresh journal); None otherwise (text, other formats)."""
    from ..fileio import read_head
    head = read_head(path, EVIDENCE_BYTES)
    if not head:
        return WEAK, "an empty file (a fresh journal)"
    size = os.path.getsize(path)
    if _chain_from_start(head, size):
        return STRONG, "records parse from its first byte"
    resume = find_resync(head, 0, len(head))
    if resume is not None:
        return STRONG, f"damaged at its start, records resume at 0x{resume:x}"
    return None, "no record parses"


def _chain_from_start(head: bytes, size: int) -> bool:
    lo, hi = PLAUSIBLE_MS
    pos, n, plausible = 0, 0, False
    end = len(head)
    while pos < end and n < RESYNC_CHAIN:
        try:
            op, nxt = decode_op(head, pos, end)
        except Damage:
            # damage after plausible records (a torn tail, or a record cut by the evidence window) is still a journal
            return n > 0 and plausible
        if op.add_time is not None:
            plausible = plausible or (lo <= op.add_time <= hi and (op.expiry == 0 or lo <= op.expiry <= hi * 2))
        elif op.data is not None:          # a legacy ADD: no add time stored
            plausible = True
        n += 1
        pos = nxt
    return n > 0 and (plausible or pos == size)


# ---------------------------------------------------------------- the reader
def _upstream(code: str, path: str, pos: int, live: JournalFile | None, is_live: bool) -> str:
    if code == SIZE_NEGATIVE:
        return ("Kestrel 2.1.1+ logs 'Exception during startup; exiting!' and exits 1 (NegativeArraySizeException "
                "escapes replay); before 2.1.1 an 'undead' server")
    if code == SIZE_ABSURD:
        return "Kestrel dies with OutOfMemoryError allocating the block"
    base = "Kestrel 2.x: 'DATA MAY HAVE BEEN LOST! Truncated entry will be deleted.', stops reading this file"
    if is_live:
        return base + f" and truncates it to 0x{pos:x}"
    return (base + f"; bug: it truncates the LIVE file to 0x{pos:x} instead of this one (losing valid data there "
            "if it is longer) and meets this damage again on every restart")


class JournalReader:
    """Streams one file set's records (and findings, in file order).

    ``events()`` yields ``Record`` and ``Finding`` objects interleaved in file order. A damaged record gives one
    error finding at its start (``last_good_offset`` = that offset); then, with ``resync`` (default), the reader
    looks for a plausible place where records resume in the same file and carries on there, so everything
    readable is read (Kestrel itself stops reading the file). Damage in the live file with nothing valid after
    it is a torn tail (exit 1); damage followed by valid data, damage in a rotated file, and negative or
    absurd sizes anywhere are corruption (exit 3).
    """

    def __init__(self, fileset: FileSet, *, resync: bool = True, from_offset: int | None = None,
                 to_offset: int | None = None):
        self.fileset = fileset
        self.resync = resync
        self.from_offset = from_offset
        self.to_offset = to_offset
        self.records = 0
        self.bytes = 0
        self.segments_read = 0
        self.files_read: list[tuple[str, int]] = []  # (path, size)
        self.damage: list[Finding] = []

    def events(self) -> Iterator[Record | Finding]:
        yield from self.fileset.findings
        index = 0
        files = self.fileset.files
        newest = files[-1] if files else None
        for jf in files:
            with FileView(jf) as sd:
                self.segments_read += 1
                self.bytes += sd.size
                self.files_read.append((jf.path, sd.size))
                is_live = jf is newest and jf.role in (ROLE_LIVE, ROLE_EXPLICIT)
                for ev in self._file_events(sd, index, is_live, newest):
                    if ev.__class__ is Record:
                        index += 1
                    yield ev
        self.records = index

    def _file_events(self, sd: FileView, index: int, is_live: bool, newest) -> Iterator[Record | Finding]:
        data, end, path = sd.data, sd.size, sd.path
        if end >= 4 and bytes(data[:4]) in (LIBKESTREL_WRITER_MAGIC, LIBKESTREL_READER_MAGIC):
            yield Finding(WARNING, "KQ-FOREIGN-FILE", "this is a libkestrel (3.0) "
                          + ("writer segment" if bytes(data[:4]) == LIBKESTREL_WRITER_MAGIC else "reader checkpoint")
                          + ", not a 2.x journal; Kestrel 2.x fails on it", path=path, offset=0)
        lo = self.from_offset or 0
        hi = self.to_offset
        pos = 0
        _Record = Record
        decode = decode_fields
        while pos < end:
            try:
                op, xid, add_time, expiry, item, nxt = decode(data, pos, end)
            except Damage as d:
                f = self._damage(d, data, pos, end, path, index, is_live, newest)
                self.damage.append(f)
                yield f
                if f.resumes_at is None:
                    return
                pos = f.resumes_at
                continue
            if pos >= lo and (hi is None or pos < hi):
                yield _Record(path, pos, nxt - pos, index, op, xid, add_time, expiry, item)
            elif hi is not None and pos >= hi:
                return
            index += 1
            pos = nxt

    def _damage(self, d: Damage, data, pos: int, end: int, path: str, index: int, is_live: bool,
                newest) -> Finding:
        resume = find_resync(data, pos, end) if self.resync else None
        msg = cause = d.message
        always_corrupt = d.code in (SIZE_NEGATIVE, SIZE_ABSURD)
        if resume is None and is_live and not always_corrupt:
            verdict = Verdict.TORN_TAIL
            msg += (f"; torn tail: the live file is valid up to 0x{pos:x} and nothing valid follows "
                    f"({end - pos} bytes) — truncating there (as Kestrel does) loses no valid record")
        else:
            verdict = Verdict.CORRUPT
            if resume is not None:
                msg += (f"; valid records resume at 0x{resume:x} ({resume - pos} bytes unreadable) — Kestrel does "
                        "not resynchronise and loses them")
            elif not is_live:
                msg += f"; damage in a rotated file ({end - pos} bytes after it unreadable)"
            else:
                msg += f" ({end - pos} bytes from here unreadable)"
        return Finding(ERROR, d.code, msg, path=path, offset=pos, next_index=index, last_good_offset=pos,
                       upstream=_upstream(d.code, path, pos, newest, is_live), verdict=verdict,
                       resumes_at=resume, cause=cause)


# ---------------------------------------------------------------- what a damaged range held
_ITEM_OPCODES = frozenset(int(o) for o in ITEM_OPS)


def damaged_items(data, start: int, end: int) -> tuple[list[int], int]:
    """What the unreadable range ``data[start:end]`` held, as far as it can be read: the offsets of the item
    records (an add: ADD, ADDX, ADD_XID, CONTINUE) that decode whole inside the range with a plausible add time
    (records back to back from ``start``; after one that does not decode, the next candidate resync would try),
    and the bytes in which no record could be read. A repair that cuts the range loses these items."""
    lo, hi = PLAUSIBLE_MS
    out: list[int] = []
    unread = 0
    p = start
    while p < end:
        try:
            op, nxt = decode_op(data, p, end)
        except Damage:
            m = _CANDIDATE.search(data, p + 1, end)
            q = end if m is None else m.start()
            if p == start and data[p] in _ITEM_OPCODES:   # the damaged record itself: an add cut short or whose
                out.append(p)                             # size is impossible (its item is lost with it)
            elif p == start and _addx_but_opcode(data, p, end):   # an ADDX whose only damage is its opcode byte
                out.append(p)                                     # (issue 34, D7): its size, times, data intact
                p += _addx_but_opcode(data, p, end)
                continue
            else:
                unread += q - p
            p = q
            continue
        if op.add_time is not None and lo <= op.add_time <= hi:
            out.append(p)
        p = nxt
    return out, unread


def _addx_but_opcode(data, p: int, end: int) -> int:
    """The length of the record at ``p`` read as an ADDX (its opcode byte set aside) when it decodes whole before
    ``end`` with a plausible add time; 0 otherwise."""
    buf = b"\x02" + bytes(data[p + 1:end])
    try:
        op, nxt = decode_op(buf, 0, len(buf))
    except Damage:
        return 0
    lo, hi = PLAUSIBLE_MS
    return nxt if op.add_time is not None and lo <= op.add_time <= hi else 0


def read_damaged_items(path: str, start: int, end: int) -> tuple[list[int], int]:
    with FileView(JournalFile(path, "damaged")) as fv:
        return damaged_items(fv.data, start, min(end, fv.size))
