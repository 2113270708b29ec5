"""Which engine reads which PATH: --format auto|workq|kestrel, resolved once per command."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..engine import kestrel
from ..engine.workq.reader import discover, segment_seq
from ..errors import UsageError
from ..formats.workq import LOCK_FILES


@dataclass(slots=True)
class Log:
    fmt: str                       # "workq" | "kestrel"
    log: object                    # engine.reader.LogSet | engine.kestrel.FileSet

    @property
    def root(self) -> str:
        return self.log.root


def _looks_workq_dir(d: str) -> bool:
    try:
        names = os.listdir(d)
    except OSError:
        return True  # let the workq reader report the I/O error
    return any(segment_seq(n) is not None or n in LOCK_FILES for n in names)


def _looks_kestrel_dir(d: str) -> bool:
    """Some regular file whose first byte could start a journal (an opcode 0..9), or an empty journal."""
    for n in sorted(os.listdir(d)):
        p = os.path.join(d, n)
        if os.path.isfile(p):
            try:
                with open(p, "rb") as f:
                    b = f.read(1)
            except OSError:
                continue
            if b == b"" or b[0] <= 9:
                return True
    return False


def _detect_file(path: str) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return "workq"  # the reader reports the I/O error with the right exit code
    if head == b"wqwq" or segment_seq(os.path.basename(path)) is not None:
        return "workq"
    if head == b"" or head[0] <= 9:  # a Kestrel journal: headerless, first byte an opcode 0..9 (or empty)
        return "kestrel"
    raise UsageError(f"cannot detect the log format: not a workq segment (expected magic 77717771 'wqwq' at "
                     f"offset 0) nor a Kestrel journal (first byte an opcode 0-9), found {head.hex()}; "
                     "pass --format to force one", path=path)


def resolve(paths: list[str], fmt: str, *, horizon: bool = False, kestrel_version: str = "auto",
            queue: str | None = None) -> list[Log]:
    """Discover the logs behind PATHs, each with the engine that reads it."""
    if not paths:
        raise UsageError("no PATH given")
    if fmt == "workq":
        return [Log("workq", ls) for ls in discover(paths, horizon=horizon)]
    if fmt == "kestrel":
        return [Log("kestrel", fs) for fs in kestrel.discover(paths, kestrel_version, queue=queue)]
    workq_paths, kestrel_paths = [], []
    for p in paths:
        if os.path.isdir(p):
            if _looks_workq_dir(p):
                workq_paths.append(p)
            elif _looks_kestrel_dir(p):
                kestrel_paths.append(p)
            else:
                raise UsageError("not a workq log directory (no segments NNNNNNNNN.log, no lock files) nor a "
                                 "Kestrel queue directory (no journal files)", path=p)
        elif os.path.exists(p):
            (workq_paths if _detect_file(p) == "workq" else kestrel_paths).append(p)
        else:
            workq_paths.append(p)  # missing: the workq reader reports it (exit 5)
    out: list[Log] = []
    if workq_paths:
        out += [Log("workq", ls) for ls in discover(workq_paths, horizon=horizon)]
    if kestrel_paths:
        sets = kestrel.discover(kestrel_paths, kestrel_version, queue=queue)
        if not sets:
            raise UsageError("no workq segments and no Kestrel journals found", path=kestrel_paths[0])
        out += [Log("kestrel", fs) for fs in sets]
    return out
