"""Progress on stderr, only when stderr is a terminal (never in pipes, cron or tests): a bar with bytes done,
throughput and time remaining, fed by the engine's reports (``engine.progress``)."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator

from ..engine import progress as engine_progress
from ..engine.run import files_size
from . import quiet
from .console import stderr_console

#: below this many bytes of input, no bar (``WQTOOL_PROGRESS_MIN_BYTES`` overrides it)
MIN_BYTES = 32 * 1024 * 1024


def min_bytes() -> int:
    try:
        return int(os.environ.get("WQTOOL_PROGRESS_MIN_BYTES", MIN_BYTES))
    except ValueError:
        return MIN_BYTES


def pass_label(label: str, name: str, k: int, n: int) -> str:
    """``verify: read (pass 1 of 1)``: the command, the pass and where it stands among the command's passes."""
    return f"{label}: {name} (pass {k} of {max(n, k)})"


def _bar(label: str):
    """The rich Progress of a bar on the terminal (rich is imported only here: when a bar is drawn)."""
    from rich.progress import (BarColumn, DownloadColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)
    from rich.text import Text

    class _Amount(ProgressColumn):
        """Bytes as the download column shows them; any other unit as ``done/total unit``."""

        def __init__(self) -> None:
            super().__init__()
            self._bytes = DownloadColumn()

        def render(self, task) -> Text:
            unit = task.fields.get("unit", "bytes")
            if unit == "bytes":
                return self._bytes.render(task)
            return Text(f"{int(task.completed):,}/{int(task.total or 0):,} {unit}", style="progress.download")

    class _Speed(TransferSpeedColumn):
        def render(self, task) -> Text:
            return super().render(task) if task.fields.get("unit", "bytes") == "bytes" else Text("")

    # stdout is never redirected: data goes where the user sent it, the bar only to the terminal
    return Progress(TextColumn("{task.description}"), BarColumn(), _Amount(), _Speed(), TextColumn("eta"),
                    TimeRemainingColumn(), console=stderr_console(), transient=True, redirect_stdout=False,
                    redirect_stderr=True)


class ByteProgress:
    """``update(done)`` at most every 0.1 s; a no-op unless stderr is a TTY and the input is large.

    A command of several passes (``passes``: their names, in order) shows each with ``pass k of n`` and that
    pass's own total: ``on_pass`` (the engine's ``progress.begin``) starts the next one."""

    def __init__(self, total: int, label: str, *, enabled: bool | None = None, passes: tuple[str, ...] = ("read",)):
        if enabled is None:
            enabled = sys.stderr.isatty() and total >= min_bytes()
        self.enabled = enabled
        self.total = self.input_total = total
        self.label = label
        self.passes = list(passes) or ["read"]
        self.k = 1
        self._last = 0.0
        if enabled:
            self._p = _bar(label)
            self._task = self._p.add_task(pass_label(label, self.passes[0], 1, len(self.passes)), total=total,
                                          unit="bytes")
            self._p.start()

    def on_pass(self, name: str, total: int | None, unit: str) -> None:
        """The next pass begins: a new description, total and count (the bar starts again at 0)."""
        self.k += 1
        if self.k > len(self.passes):
            self.passes.append(name)
        self.total = self.input_total if total is None else total
        if self.enabled:
            self._p.reset(self._task, total=self.total, completed=0,
                          description=pass_label(self.label, name, self.k, len(self.passes)), unit=unit)
            self._last = 0.0

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
def track(logs, label: str, *, enabled: bool = True, streaming: bool = False,
          passes: tuple[str, ...] = ("read",)) -> Iterator[ByteProgress]:
    """A bar over every file of ``logs`` (``engine.format.Log``s) while the block reads them: the engine reports
    the bytes it has read (files opened and closed, records passed), and each further pass it begins (``passes``:
    the ones the command expects, for ``pass k of n``). ``streaming``: the block writes to stdout as it goes
    (dump): no bar when stdout is that same terminal (the bar would tear the lines)."""
    if streaming and sys.stdout.isatty():
        enabled = False
    if quiet.active():      # -q: nothing but errors
        enabled = False
    total = files_size(p for log in logs for p in log.files) if enabled else 0
    bar = ByteProgress(total, label, enabled=None if enabled else False, passes=passes)
    if not bar.enabled:
        yield bar
        return
    try:
        with engine_progress.listen(bar.update, bar.on_pass):
            yield bar
    finally:
        bar.close()
