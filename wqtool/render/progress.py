"""Progress on stderr, only when stderr is a terminal (never in pipes, cron or tests)."""
from __future__ import annotations

import sys
import time

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from .console import stderr_console

MIN_BYTES = 32 * 1024 * 1024  # below this, no bar


class ByteProgress:
    """``update(done_bytes)`` at most every 0.1 s; a no-op unless stderr is a TTY and the input is large."""

    def __init__(self, total: int, label: str, *, enabled: bool | None = None):
        if enabled is None:
            enabled = sys.stderr.isatty() and total >= MIN_BYTES
        self.enabled = enabled
        self._last = 0.0
        if enabled:
            self._p = Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                               TimeRemainingColumn(), console=stderr_console(), transient=True)
            self._task = self._p.add_task(label, total=total)
            self._p.start()

    def update(self, done: int) -> None:
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= 0.1:
                self._last = now
                self._p.update(self._task, completed=done)

    def close(self) -> None:
        if self.enabled:
            self._p.stop()
            self.enabled = False
