"""``-q/--quiet`` (every command): nothing on stdout, errors still on stderr, the exit code unchanged.

``silence()`` points ``sys.stdout`` at a sink for the rest of the command (and turns progress bars off);
``restore()`` — the CLI's funnel calls it when the command ends — puts the real stdout back (the in-process test
harness and the API keep running after a command)."""
from __future__ import annotations

import io
import sys

_saved: list = []


class _Sink(io.TextIOBase):
    """stdout under --quiet: takes every write, keeps nothing."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        return len(s)

    def isatty(self) -> bool:
        return False


def silence() -> None:
    if not _saved:
        _saved.append(sys.stdout)
        sys.stdout = _Sink()


def active() -> bool:
    return bool(_saved)


def restore() -> None:
    if _saved:
        sys.stdout = _saved.pop()
