"""Progress on stderr, only when stderr is a terminal (never in pipes, cron or tests): a bar with bytes done,
throughput and time remaining, fed by the engine's reports (``engine.progress``)."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from ..engine import progress as engine_progress
from ..engine.run import files_size
from .console import stderr_console

#: below this many bytes of input, no bar (``WQTOOL_PROGRESS_MIN_BYTES`` overrides it)
MIN_BYTES = 32 * 1024 * 1024


def min_bytes() -> int:
    try:
        return int(os.environ.get("WQTOOL_PROGRESS_MIN_BYTES", MIN_BYTES))
    except ValueError:
        return MIN_BYTES


class ByteProgress:
    """``update(done_bytes)`` at most every 0.1 s; a no-op unless stderr is a TTY and the input is large."""

    def __init__(self, total: int, label: str, *, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and total >= min_bytes()
        self.enabled = enabled
        self.total = total
        self._last = 0.0
        if enabled:
            # stdout is never redirected: data goes where the user sent it, the bar only to the terminal
            self._p = Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                               TextColumn("eta"), TimeRemainingColumn(), console=stderr_console(), transient=True,
                               redirect_stdout=False, redirect_stderr=True)
            self._task = self._p.add_task(label, total=total)
            self._p.start()

    def update(self, done: int) -> None:
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= 0.1:
                self._last = now
                self._p.update(self._task, completed=min(done, self.total))

    def close(self) -> None:
        if self.enabled:
            self._p.stop()
            self.enabled = False


@contextlib.contextmanager
def track(logs, label: str, *, enabled: bool = True, streaming: bool = False) -> Iterator[ByteProgress]:
    """A bar over every file of ``logs`` (``engine.format.Log``s) while the block reads them: the engine reports
    the bytes it has read (files opened and closed, records passed). ``streaming``: the block writes to stdout as
    it goes (dump): no bar when stdout is that same terminal (the bar would tear the lines)."""
    if streaming and sys.stdout.isatty():
        enabled = False
    total = files_size(p for log in logs for p in log.files) if enabled else 0
    bar = ByteProgress(total, label, enabled=None if enabled else False)
    if not bar.enabled:
        yield bar
        return
    try:
        with engine_progress.listen(bar.update):
            yield bar
    finally:
        bar.close()
