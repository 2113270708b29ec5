"""The executor logs' pass (``orth-executor-logs``): the reader's entries through the replay
(``engine.run.ReplayPass``), whose finish cross-references the retry files of the same ``logPath``."""
from __future__ import annotations

from ..format import get
from ..options import Options
from ..run import ReplayPass
from .model import LogEntry
from .reader import ExecutorLogSet, ExecutorReader, _has_callbacks
from .replay import ExecutorReplay


def retry_references(log_path: str | None) -> dict[int, list[tuple[str, int]]]:
    """log id -> [(retry file, handleCode)] of the retry files under ``log_path`` (read by the orth-callbacks
    format, through the registry: this package never imports it; its findings are that format's business)."""
    out: dict[int, list[tuple[str, int]]] = {}
    if not log_path or not _has_callbacks(log_path):
        return out
    callbacks = get("orth-callbacks")
    for cs in callbacks.discover([log_path], Options(as_of_ns=0)):
        for i in range(len(callbacks.files(cs))):
            for ev in callbacks.passes.file_events(cs, i):
                if ev.__class__ is callbacks.record_cls:
                    out.setdefault(ev.log_id, []).append((ev.path, ev.handle_code))
    return out


class ExecutorRun(ReplayPass):
    record_cls = LogEntry

    def __init__(self, s: ExecutorLogSet, limit: int | None = None):
        super().__init__(s.root, ExecutorReader(s), ExecutorReplay(), limit)
        self.s = s

    def finish(self):
        state = self.replay.finish(retry_references(self.s.log_path))
        closing = list(self.replay.findings)
        self.replay.findings.clear()
        return state, closing

