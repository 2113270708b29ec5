"""A whole log format in one file: what a new format needs, and nothing more (``test_toy_format`` registers it and
drives it through the CLI). A toy log is a file whose first line is ``TOY1``, then one record per line,
``set KEY`` or ``del KEY``; a line that is not a record is damage. Its replay is the set of keys alive at the end."""
from __future__ import annotations

import hashlib
import os
from dataclasses import field, make_dataclass

from wqtool.engine.caps import About, Dump, bound
from wqtool.engine.findings import ERROR, NOTE, WARNING, Finding, Verdict
from wqtool.engine.format import Column, Evidence, Format, RecordFacts, RecordView, StateView
from wqtool.engine.run import ReplayPass


ToyRecord = make_dataclass("ToyRecord", ["path", "offset", "length", "index", "op", "key"], slots=True)
ToyLog = make_dataclass("ToyLog", ["root", "path", ("is_dir", bool, False), ("findings", list, field(default=()))])


class ToyReader:
    def __init__(self, log: ToyLog):
        self.log, self.records, self.bytes, self.segments_read = log, 0, 0, 1

    def events(self):
        data = open(self.log.path, "rb").read()
        self.bytes, pos = len(data), len(b"TOY1\n")
        lines = data[pos:].split(b"\n")
        for i, line in enumerate(lines):
            last = i == len(lines) - 1
            if last and line == b"":
                break
            op, _, key = line.decode("ascii", "replace").partition(" ")
            if op in ("set", "del") and key and not last:
                yield ToyRecord(self.log.path, pos, len(line) + 1, self.records, op, key)
                self.records += 1
            else:       # damage: a torn tail when it is the unterminated last line
                yield Finding(ERROR, "TOY-BAD-LINE", "not a record" + ("; torn tail" if last else ""),
                              path=self.log.path, offset=pos, record_index=self.records, last_good_offset=pos,
                              verdict=Verdict.TORN_TAIL if last else Verdict.CORRUPT)
            pos += len(line) + 1


class ToyState:     # the replay state machine and its state: the keys alive
    def __init__(self):
        self.keys: set[str] = set()
        self.findings: list[Finding] = []

    def apply(self, rec: ToyRecord) -> None:
        if rec.op == "set":
            self.keys.add(rec.key)
        elif rec.key in self.keys:
            self.keys.discard(rec.key)
        else:
            self.findings.append(Finding(WARNING, "TOY-UNKNOWN-KEY", f"del of {rec.key}, which is not set",
                                         path=rec.path, offset=rec.offset, record_index=rec.index))

    def digest(self) -> str:
        return hashlib.sha256("\n".join(sorted(self.keys)).encode()).hexdigest()


class ToyRun(ReplayPass):
    record_cls = ToyRecord

    def finish(self):
        return self.replay, [Finding(NOTE, "TOY-NOTE", f"{len(self.replay.keys)} key(s) alive")]


class ToyView(RecordView, StateView):      # the records' view (dump) and the state's (replay, stats) in one
    fields = ("file", "offset", "length", "record_index", "op", "key", "error")
    types = {"file": "string", "offset": "long", "length": "long", "record_index": "long", "op": "string",
             "key": "string", "error": "string"}
    columns = (Column("offset", 8, ">"), Column("op", 4, gap=2), Column("key", None))
    rows_key = "keys"

    def __init__(self, state: ToyState | None = None):
        self.state = state

    def summary(self):
        return {"keys_alive": len(self.state.keys), "digest": self.digest()}

    def rows(self, payload="base64"):
        return ({"key": k} for k in sorted(self.state.keys))

    def counts_by_state(self):
        return {"alive": len(self.state.keys)}

    def digest(self):
        return self.state.digest()


class ToyDump(Dump):
    record_kinds = ("set", "del")       # dump --type


class ToyFormat(Format):
    name, title, record_cls, record_view, dump = "toy", "toy log", ToyRecord, ToyView(), bound(ToyDump)
    codes = {"TOY-BAD-LINE": (ERROR, "a line that is not a record"),
             "TOY-UNKNOWN-KEY": (WARNING, "del of a key that is not set"), "TOY-NOTE": (NOTE, "keys alive")}
    about = About(plural="toy logs", file_expected="a toy log (first line TOY1)", dir_expected="a toy log directory",
                  replay_codes=frozenset({"TOY-UNKNOWN-KEY", "TOY-NOTE"}))

    def detect(self, path):
        if os.path.isfile(path) and open(path, "rb").read(5) == b"TOY1\n":
            return Evidence(True, "the TOY1 magic line")
        return None

    def discover(self, paths, opts):
        return [ToyLog(p, p) for p in paths]

    def files(self, log):
        return [log.path]

    def run(self, log, opts, *, limit=None):
        return ToyRun(log.root, ToyReader(log), ToyState(), limit)

    def facts(self, rec):
        return RecordFacts(rec.op, rec.length, None, rec.key.encode())

    def state_view(self, state, log=None):
        return ToyView(state)
