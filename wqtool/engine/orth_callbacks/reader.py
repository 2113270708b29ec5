"""Retry files (``orth-callbacks``): discovery and the reader (one file at a time: bytes -> entries and findings).
The replay (each log id's callback state) is ``replay.py``, the pass ``verify.py``.

A log is one retry directory set: the ``callbacklogs/`` (and legacy ``callbacklog/``) of one ``logPath``, one of
those directories, or files named explicitly. Files are read in name order (deterministic); Orth's own order is
its directory listing (``File.listFiles``: readdir order), which decides what a poison file blocks, so that order
is recorded at discovery and named in the poison findings' ``upstream`` text.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field

from ...formats.orth import (HEAD_DATE_KEY, HS_LIST_STARTS, JACKSON_CALLBACK_FILE, CALLBACK_DIR, CALLBACK_NAME, DATE_DIR, GLUE_DIR, HandleCode, JAVA_TRIM_MAX, KNOWN_DIRS, LEGACY_CALLBACK_DIR,
                             LEGACY_NAME, STREAM_HEAD)
from ..fileio import FileView, input_error, kind_of, listdir
from ..findings import ERROR, NOTE, WARNING, Finding, Verdict
from ..javacodec.gson import GsonError, encode, parse_lenient, strict_error
from ..javacodec.hessian import HessianError, parse_hessian
from ..javacodec.jackson import JacksonError, java_lines as _java_lines, parse_jackson_line
from ..javacodec.javaser import JavaStreamError, parse_legacy
from .md5name import entry_changes, recover_flip
from .model import Callback

#: A retry file larger than this is not read (a batch is everything queued at one moment; 256 MiB is far beyond).
MAX_FILE = 256 << 20

DIR_JSON, DIR_LEGACY, DIR_OTHER = "callbacklogs", "callbacklog", "explicit"
DIR_JACKSON = "logpath"         # xxl-job 2.0.0-2.0.1: {logPath}/xxl-job-callback.log


@dataclass(frozen=True, slots=True)
class CallbackFile:
    path: str
    dir_kind: str           # callbacklogs | callbacklog | explicit (a file or directory outside Orth's names)
    pinned_size: int | None = None


@dataclass(slots=True)
class CallbackSet:
    root: str
    files: list[CallbackFile]
    findings: list[Finding] = field(default_factory=list)
    is_dir: bool = True
    #: directory -> its entries in readdir order (Orth's retry order)
    listing: dict[str, list[str]] = field(default_factory=dict)
    log_path: str | None = None      # the logPath these directories belong to, when known
    #: resolved from a logPath that also gave an orth-executor-logs log (auto-detection): the two logs share it
    shared: bool = False

    @property
    def name(self) -> str:
        """What reports call it: a logPath read for its retry files is named by its retry directory (the logPath's
        own name is its executor logs')."""
        if self.is_dir and self.log_path == self.root:
            dirs = [d for d in (CALLBACK_DIR, LEGACY_CALLBACK_DIR, JACKSON_CALLBACK_FILE)
                    if os.path.lexists(os.path.join(self.root, d))]
            if len(dirs) == 1:
                return os.path.join(self.root, dirs[0])
        return self.root


# ---------------------------------------------------------------- discovery
def discover(paths, opts=None) -> list[CallbackSet]:
    out = []
    for p in paths:
        st = os.stat(p)
        name = os.path.basename(os.path.normpath(p))
        if stat.S_ISDIR(st.st_mode):
            if name in (CALLBACK_DIR, LEGACY_CALLBACK_DIR):
                cs = CallbackSet(root=p, files=[], log_path=os.path.dirname(os.path.normpath(p)) or ".")
                _add_dir(cs, p, DIR_JSON if name == CALLBACK_DIR else DIR_LEGACY)
            elif any(os.path.lexists(os.path.join(p, d)) for d in (CALLBACK_DIR, LEGACY_CALLBACK_DIR)) or \
                    os.path.isfile(os.path.join(p, JACKSON_CALLBACK_FILE)):
                cs = CallbackSet(root=p, files=[], log_path=p)
                if os.path.isfile(os.path.join(p, JACKSON_CALLBACK_FILE)):
                    cs.files.append(CallbackFile(os.path.join(p, JACKSON_CALLBACK_FILE), DIR_JACKSON))
                for d, kind in ((CALLBACK_DIR, DIR_JSON), (LEGACY_CALLBACK_DIR, DIR_LEGACY)):
                    dp = os.path.join(p, d)
                    if os.path.isdir(dp):
                        _add_dir(cs, dp, kind)
                    elif os.path.lexists(dp):
                        cs.findings.append(_not_a_dir(dp, d))
            elif _is_log_path(p):
                cs = CallbackSet(root=p, files=[], log_path=p)      # a logPath without retry directories
            else:
                cs = CallbackSet(root=p, files=[])
                _add_dir(cs, p, DIR_OTHER)
            out.append(cs)
        elif name == CALLBACK_DIR:
            out.append(CallbackSet(root=p, files=[], findings=[_not_a_dir(p, name)], is_dir=False))
        else:
            parent = os.path.dirname(os.path.normpath(p)) or "."
            pname = os.path.basename(os.path.abspath(parent))
            kind = DIR_JSON if pname == CALLBACK_DIR else DIR_LEGACY if pname == LEGACY_CALLBACK_DIR else \
                DIR_JACKSON if name == JACKSON_CALLBACK_FILE else DIR_OTHER
            cs = CallbackSet(root=p, files=[CallbackFile(p, kind)], is_dir=False)
            if kind == DIR_JSON:
                cs.listing[parent] = _listdir(parent)
                cs.log_path = os.path.dirname(os.path.abspath(parent))
            out.append(cs)
    return out


def is_log_path(p: str) -> bool:
    """A directory holding what an executor's logPath holds (a date directory, callbacklogs/, callbacklog/,
    gluesource/): the same test as ``orth_executor_logs.reader.is_log_path`` (the two formats share a logPath and
    never import each other)."""
    try:
        names = listdir(p)
    except OSError:
        return False
    return any(n in KNOWN_DIRS or DATE_DIR.match(n) for n in names)


def _is_log_path(p: str) -> bool:
    try:
        return any(DATE_DIR.match(n) or n == GLUE_DIR for n in listdir(p))
    except OSError:
        return False


def _listdir(d: str) -> list[str]:
    try:
        return listdir(d)       # readdir order, as Java's File.listFiles
    except OSError as exc:
        raise input_error(d, exc) from None


def _add_dir(cs: CallbackSet, d: str, kind: str) -> None:
    names = _listdir(d)
    cs.listing[d] = names
    for n in sorted(names):
        p = os.path.join(d, n)
        try:
            st = os.stat(p)             # Orth's Files.readString follows symbolic links
        except OSError:
            cs.findings.append(Finding(WARNING, "OC-NOT-A-FILE", "a dangling symbolic link in the retry directory: "
                                       "Orth's read of it fails on every pass and it stays", path=p))
            continue
        if stat.S_ISREG(st.st_mode):
            cs.files.append(CallbackFile(p, kind))
        else:
            cs.findings.append(Finding(WARNING, "OC-NOT-A-FILE", f"{kind_of(st.st_mode)} in the retry directory: Orth's read of it "
                                       "fails on every pass and it stays (not read here)", path=p))


def _not_a_dir(p: str, name: str) -> Finding:
    return Finding(ERROR, "OC-NOT-A-DIR", f"'{name}' is not a directory: while it exists, a callback that fails "
                   "cannot be persisted (FileTool.createDirectories throws) and is lost; Orth's retry thread deletes "
                   "it within 30 s", path=p, verdict=Verdict.CORRUPT,
                   upstream="retryFailCallbackFile: FileTool.delete(callbacklogs), then return")


# ---------------------------------------------------------------- the reader: one file
def _blocked_text(cs: CallbackSet, path: str) -> str:
    d = os.path.dirname(path) or "."
    names = cs.listing.get(d)
    if names is None:
        return "Orth's retry pass aborts at this file on every run (listing order unknown: named explicitly)"
    me = os.path.basename(path)
    after = names[names.index(me) + 1:] if me in names else []
    if not after:
        return ("Orth's retry pass aborts at this file on every run; it is listed last here (readdir order), so it "
                "blocks nothing now, but blocks any file listed after it later")
    return (f"Orth's retry pass aborts at this file on every run and never reaches the {len(after)} file(s) listed "
            f"after it (readdir order): {', '.join(after)}")


def _first_bad_utf8(data: bytes) -> int | None:
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        return exc.start


class CallbackReader:
    """Reads the files of one ``CallbackSet`` (or just one of them: ``only``): yields ``Callback`` records and
    findings in file order. ``poison`` collects the files Orth's retry pass aborts at."""

    def __init__(self, cs: CallbackSet, only: int | None = None, start_index: int = 0, discovery: bool = True):
        self.cs = cs
        self.only = only
        self.records = start_index
        self.bytes = 0
        self.segments_read = 0
        self.discovery = discovery
        self.poison: set[str] = set()
        self.states: dict[str, str] = {}

    def events(self):
        if self.discovery:
            yield from self.cs.findings
        files = self.cs.files if self.only is None else [self.cs.files[self.only]]
        for cf in files:
            yield from self._file(cf)

    def _file(self, cf: CallbackFile):
        path = cf.path
        try:
            with FileView(cf) as v:
                if v.size > MAX_FILE:
                    yield Finding(ERROR, "OC-REJECTED", f"{v.size} bytes: larger than {MAX_FILE} bytes, not read",
                                  path=path, offset=0, verdict=Verdict.CORRUPT)
                    return
                data = bytes(v.data)
        except OSError as exc:
            raise input_error(path, exc) from None
        self.segments_read += 1
        self.bytes += len(data)
        name = os.path.basename(path)
        if cf.dir_kind == DIR_JACKSON:
            yield from self._jackson(cf, data)
        elif data.startswith(STREAM_HEAD[:2]):
            yield from self._legacy(cf, data, name)
        elif cf.dir_kind != DIR_JSON and data[:1] and data[0] in HS_LIST_STARTS:
            yield from self._hessian(cf, data, name)
        else:
            yield from self._json(cf, data, name)

    def _emit(self, cf: CallbackFile, entries, source: str, state: str, release: str = "orth"):
        for i, e in enumerate(entries):
            yield Callback(cf.path, e.offset, e.length, self.records, i, source, e.log_id, e.log_date_tim,
                           e.handle_code, e.handle_msg, state, release)
            self.records += 1

    def _codes(self, cf: CallbackFile, entries, first_index: int):
        for i, e in enumerate(entries):
            if e is None:
                continue
            if e.handle_code <= 0:
                yield Finding(ERROR, "OC-BAD-HANDLE-CODE", f"log id {e.log_id}: handleCode {e.handle_code} "
                              "(executors never send <= 0; the admin would accept it and keep the row open); "
                              "replay --send refuses this file", path=cf.path, offset=e.offset,
                              record_index=first_index + i, verdict=Verdict.INVALID_HISTORY)
            elif e.handle_code not in HandleCode._value2member_map_:
                yield Finding(WARNING, "OC-UNKNOWN-HANDLE-CODE", f"log id {e.log_id}: handleCode {e.handle_code} "
                              "is none of 200, 500, 502 (the admin stores it; the UI shows Failed)", path=cf.path,
                              offset=e.offset, record_index=first_index + i)

    def _legacy(self, cf: CallbackFile, data: bytes, name: str):
        path = cf.path
        if cf.dir_kind == DIR_JSON:
            yield Finding(ERROR, "OC-INVALID-UTF8", "a Java-serialized (legacy xxl-job <= 3.2) file in callbacklogs/: "
                          "not UTF-8 (byte 0 is 0xac), Orth keeps it forever and never resends it", path=path,
                          offset=0, verdict=Verdict.CORRUPT)
            state = "stuck"
        else:
            state = "stranded"
        try:
            res = parse_legacy(data)
        except JavaStreamError as exc:
            if exc.eof:
                yield Finding(ERROR, "OC-TRUNCATED", f"legacy Java stream cut short at byte {exc.offset}: "
                              f"{exc.message} (an interrupted write); xxl-job 2.2.0-3.2 fail to read it, delete it and "
                              "lose its callbacks", path=path, offset=exc.offset, last_good_offset=exc.offset,
                              verdict=Verdict.CORRUPT)
            else:
                yield Finding(ERROR, "OC-JAVA-BAD", f"{exc.message} (refused without instantiating anything); "
                              "xxl-job 2.2.0-3.2 (JdkSerializeTool) fail to read it, delete it and lose it", path=path,
                              offset=exc.offset, verdict=Verdict.CORRUPT)
            self.states[path] = "poison"
            return
        if cf.dir_kind != DIR_JSON and res.release == "xxl-job-2.2.0":
            yield Finding(WARNING, "OC-STRANDED", f"xxl-job 2.2.0 retry file ({len(res.entries)} callback(s), "
                          "HandleCallbackParam with ReturnT executeResult): 2.2.0 resends it; xxl-job 2.3-3.2 read it "
                          "as handleCode 0 with no message (their class has no executeResult) and resend that, so "
                          "the admin keeps the rows open; Orth and xxl-job >= 3.3 never read callbacklog/; "
                          "`wqtool replay --send URL` delivers the real codes", path=path, offset=0)
        elif cf.dir_kind != DIR_JSON:
            yield Finding(WARNING, "OC-STRANDED", f"legacy retry file ({len(res.entries)} callback(s), xxl-job "
                          "2.3-3.2): 2.3-3.2 resend it; Orth and xxl-job >= 3.3 never read callbacklog/, so after "
                          "an upgrade these callbacks are never delivered; `wqtool replay --send URL` delivers them",
                          path=path, offset=0)
            if LEGACY_NAME.match(name) is None and cf.dir_kind == DIR_LEGACY:
                yield Finding(WARNING, "OC-FOREIGN-NAME", f"'{name}' is not xxl-job-callback-<ms>[-i].log", path=path)
        if res.trailing:
            yield Finding(NOTE, "OC-NOT-CANONICAL", f"{res.trailing} byte(s) after the end of the Java stream "
                          "(Java's readObject ignores them)", path=path, offset=res.end)
        first = self.records
        if any(e.handle_code <= 0 for e in res.entries):
            state = "refused"
        self.states[path] = state
        yield from self._codes(cf, res.entries, first)
        yield from self._emit(cf, res.entries, "java", state, res.release)

    def _hessian(self, cf: CallbackFile, data: bytes, name: str):
        """xxl-job 2.0.2-2.1.x: Hessian 2 of List<HandleCallbackParam{logId, logDateTim, ReturnT executeResult}>."""
        path = cf.path
        try:
            res = parse_hessian(data)
        except HessianError as exc:
            then = ("xxl-job 2.0.2-2.1.x fail to read it (HessianSerializer throws), and its callbacks are never "
                    "delivered")
            if exc.eof:
                yield Finding(ERROR, "OC-TRUNCATED", f"Hessian file cut short at byte {exc.offset}: {exc.message} "
                              f"(an interrupted write); {then}", path=path, offset=exc.offset,
                              last_good_offset=exc.offset, verdict=Verdict.CORRUPT)
            else:
                yield Finding(ERROR, "OC-HESSIAN-BAD", f"{exc.message} (refused without instantiating anything); "
                              f"{then}", path=path, offset=exc.offset, verdict=Verdict.CORRUPT)
            self.states[path] = "poison"
            return
        yield Finding(WARNING, "OC-STRANDED", f"xxl-job 2.0.2-2.1.x retry file (Hessian 2, {len(res.entries)} "
                      "callback(s)): 2.0.2-2.1.x resend it; xxl-job 2.2.0-3.2 cannot deserialize it (not a Java "
                      "stream), delete it and lose its callbacks; Orth and xxl-job >= 3.3 never read callbacklog/; "
                      "`wqtool replay --send URL` delivers them", path=path, offset=0)
        if res.trailing:
            yield Finding(NOTE, "OC-NOT-CANONICAL", f"{res.trailing} byte(s) after the end of the Hessian list "
                          "(Hessian2Input ignores them)", path=path, offset=res.end)
        state = "refused" if any(e.handle_code <= 0 for e in res.entries) else "stranded"
        self.states[path] = state
        yield from self._codes(cf, res.entries, self.records)
        yield from self._emit(cf, res.entries, "hessian", state, "xxl-job-2.0.2")

    def _jackson(self, cf: CallbackFile, data: bytes):
        """xxl-job 2.0.0-2.0.1: {logPath}/xxl-job-callback.log, one Jackson array per line (FileUtil.appendFileLine:
        content + \\r\\n). Their retry pass reads every line, deletes the file, then parses each line: a line
        Jackson rejects is skipped (JacksonUtil.readValue logs and returns null), so its callbacks are lost."""
        path = cf.path
        entries: list = []
        bad = False
        lines = list(_java_lines(data))
        if not any(t.strip() for _, t in lines):
            yield Finding(WARNING, "OC-EMPTY", "empty: xxl-job 2.0.0-2.0.1 delete it without sending anything",
                          path=path, offset=0)
            self.states[path] = "empty"
            return
        for off, text in lines:
            if not text.strip():
                continue
            try:
                got = parse_jackson_line(text, off)
            except JacksonError as exc:
                bad = True
                yield Finding(ERROR, "OC-REJECTED", f"line at byte {off}: Jackson rejects it ({exc.message}); "
                              "xxl-job 2.0.0-2.0.1 delete the file before parsing it, so this line's callbacks are "
                              "lost on their next retry pass", path=path, offset=exc.offset, verdict=Verdict.CORRUPT)
                continue
            entries += got
        yield Finding(WARNING, "OC-STRANDED", f"xxl-job 2.0.0-2.0.1 retry file ({len(entries)} callback(s), Jackson "
                      "JSON lines): only 2.0.0-2.0.1 read {logPath}/xxl-job-callback.log; 2.0.2 and later never do, "
                      "these callbacks are never delivered; `wqtool replay --send URL` delivers them", path=path,
                      offset=0)
        state = "refused" if any(e.handle_code <= 0 for e in entries) else "stranded"
        self.states[path] = "poison" if bad else state
        yield from self._codes(cf, entries, self.records)
        yield from self._emit(cf, entries, "jackson", state, "xxl-job-2.0.0")

    def _json(self, cf: CallbackFile, data: bytes, name: str):
        path = cf.path
        state = "stranded" if cf.dir_kind == DIR_LEGACY else "pending"
        m = CALLBACK_NAME.match(name)
        if cf.dir_kind == DIR_JSON and m is None:
            yield Finding(WARNING, "OC-FOREIGN-NAME", f"'{name}' is not orth-callback-<md5>.log (Orth still retries "
                          "every file in callbacklogs/, whatever its name)", path=path)
        if cf.dir_kind == DIR_LEGACY:
            yield Finding(WARNING, "OC-STRANDED", "a JSON file in the legacy callbacklog/ directory: Orth and "
                          "xxl-job >= 3.3 never read it (xxl-job 2.2.0-3.2 fail to deserialize it and delete it)",
                          path=path, offset=0)
        bad = _first_bad_utf8(data)
        if bad is not None:
            yield Finding(ERROR, "OC-INVALID-UTF8", f"byte 0x{data[bad]:02x} at {bad} is not UTF-8: Orth's strict read "
                          "fails (MalformedInputException is caught and logged), the file is kept forever and its "
                          "callbacks are never resent", path=path, offset=bad, verdict=Verdict.CORRUPT)
            state = "stuck"
        text = data.decode("utf-8", "surrogateescape")
        if not text.strip("".join(map(chr, range(JAVA_TRIM_MAX + 1)))):
            yield Finding(WARNING, "OC-EMPTY", ("empty" if not data else f"blank ({len(data)} bytes of whitespace)")
                          + ": Orth deletes it without sending anything", path=path, offset=0)
            if m is not None and data and hashlib.md5(data).hexdigest() != m.group("md5"):
                yield _name_md5(path, data, m.group("md5"), [], None)
            self.states[path] = "empty"
            return
        try:
            res = parse_lenient(data)
        except GsonError as exc:
            if state != "stuck":
                self.poison.add(path)
            md5 = hashlib.md5(data).hexdigest()
            named = f"; its name says md5 {m.group('md5')}, the bytes hash to {md5}" if m and m.group("md5") != md5 \
                else ""
            flip = recover_flip(data, m.group("md5")) if named else None
            if flip is not None:
                named += (f" (bit {flip[1]} of byte {flip[0]} was flipped: flipped back, the bytes hash to the name"
                          " and Gson reads them)")
            if exc.eof:
                yield Finding(ERROR, "OC-TRUNCATED", f"cut short at byte {len(data)} (an interrupted non-atomic "
                              f"write: {exc.message}){named}; Orth's Gson rejects it: a poison file", path=path,
                              offset=exc.offset, last_good_offset=exc.offset, verdict=Verdict.CORRUPT,
                              upstream=_blocked_text(self.cs, path))
            else:
                yield Finding(ERROR, "OC-REJECTED", f"Orth's Gson rejects it: {exc.message} at byte {exc.offset}"
                              f"{named}: a poison file", path=path, offset=exc.offset, verdict=Verdict.CORRUPT,
                              upstream=_blocked_text(self.cs, path))
            self.states[path] = "poison"
            return
        entries = res.entries
        release = "orth"
        if HEAD_DATE_KEY in res.date_keys and "logDateTim" not in res.date_keys:
            release = "xxl-job-head"            # CallbackData (HEAD): its date is logDateTime
            for i, e in enumerate(entries or []):
                if e is not None:
                    e.log_date_tim = res.head_dates.get(i, 0)
        elif res.date_keys == {HEAD_DATE_KEY, "logDateTim"}:
            yield Finding(WARNING, "OC-NOT-CANONICAL", "both logDateTim (Orth, xxl-job 3.3-3.4) and logDateTime "
                          "(xxl-job HEAD) keys: each release reads only its own (the other's entries at 1970-01-01)",
                          path=path, offset=0)
        if entries is None or any(e is None for e in entries):
            where = "the document is null" if entries is None else \
                f"entry {[i for i, e in enumerate(entries) if e is None][0]} is null"
            yield Finding(ERROR, "OC-NULL", f"{where}: Orth deletes the file, sends the batch, then fails on a "
                          "NullPointerException writing the job logs — if the admin did not accept the batch it is "
                          "lost (never re-persisted), and the rest of that retry pass is skipped", path=path,
                          offset=0, verdict=Verdict.CORRUPT, upstream=_blocked_text(self.cs, path))
            state = "null"
            entries = [e for e in entries or [] if e is not None]
        elif not entries:
            yield Finding(WARNING, "OC-EMPTY", "an empty batch []: Orth deletes it without sending anything",
                          path=path, offset=0)
            self.states[path] = "empty"
            return
        strict = strict_error(text) if bad is None else None
        canonical = encode(entries, HEAD_DATE_KEY if release == "xxl-job-head" else "logDateTim") \
            if state != "null" else None
        if strict is not None:
            uses = f" (uses {', '.join(res.lenient)})" if res.lenient else ""
            yield Finding(WARNING, "OC-LENIENT-JSON", f"Orth's lenient Gson accepts it but strict JSON does not: "
                          f"{strict}{uses}", path=path, offset=0)
        elif canonical is not None and canonical != data and bad is None:
            i = next((k for k, (a, b) in enumerate(zip(canonical, data)) if a != b), min(len(canonical), len(data)))
            yield Finding(NOTE, "OC-NOT-CANONICAL", f"not the bytes Orth writes for these {len(entries)} "
                          f"entr{'y' if len(entries) == 1 else 'ies'} (first difference at byte {i}; Orth would write "
                          f"{len(canonical)} bytes)", path=path, offset=i)
        if m is not None:
            f = _name_md5(path, data, m.group("md5"), entries, canonical)
            if f is not None:
                yield f
        first = self.records
        if state == "pending" and any(e.handle_code <= 0 for e in entries):
            state = "refused"
        self.states[path] = state
        yield from self._codes(cf, entries, first)
        yield from self._emit(cf, entries, "json", state, release)


def _name_md5(path: str, data: bytes, named: str, entries, canonical: bytes | None) -> Finding | None:
    """OC-NAME-MD5 (an error: the name is the file's only checksum) when the bytes do not hash to the name, with
    what can be known of the change: the entries that now parse differently (a single flipped bit is found and
    undone), or that the values are Orth's own (its canonical encoding hashes to the name)."""
    md5 = hashlib.md5(data).hexdigest()
    if md5 == named:
        return None
    head = f"name says md5 {named}, the bytes hash to {md5}: the file is not what was written"
    tail = "; Orth does not check the name, so its retry pass resends the entries as they read now"
    if canonical is not None and hashlib.md5(canonical).hexdigest() == named:
        return Finding(ERROR, "OC-NAME-MD5", f"{head}, but "
                       + ("its entry is the value" if len(entries) == 1 else f"its {len(entries)} entries are the values")
                       + " written (their canonical encoding hashes to the name): the bytes were "
                       "re-encoded" + tail, path=path, offset=0, verdict=Verdict.CORRUPT)
    flip = recover_flip(data, named)
    if flip is None:
        return Finding(ERROR, "OC-NAME-MD5", f"{head} (changed after it was written, or renamed; which entries "
                       "differ cannot be known: no single flipped bit explains it)" + tail, path=path, offset=0,
                       verdict=Verdict.CORRUPT)
    off, bit, original = flip
    try:
        before = parse_lenient(original).entries or []
    except GsonError:
        before = None
    what = f"bit {bit} of byte {off} flipped (0x{original[off]:02x} -> 0x{data[off]:02x}; flipped back, the bytes " \
           "hash to the name)"
    if before is None:
        return Finding(ERROR, "OC-NAME-MD5", f"{head}: {what}" + tail, path=path, offset=off,
                       verdict=Verdict.CORRUPT)
    changes = entry_changes(before, entries or [])
    said = ("entries that now parse differently: " + "; ".join(changes)) if changes else \
        "every entry still parses to the values written"
    return Finding(ERROR, "OC-NAME-MD5", f"{head}: {what}; {said}" + tail, path=path, offset=off,
                   verdict=Verdict.CORRUPT)
