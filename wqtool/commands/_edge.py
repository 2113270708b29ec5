"""What the CLI hands its commands: the exit codes (``wqtool.exitcodes.CODES``; ``wqtool.cli.run`` runs every
command inside ``handing(CODES)``). The commands pass them on to the renderers that print an exit code; neither
imports the exit-code module (import-linter: pyproject.toml)."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from ..render.outcome import ExitCodes

_HANDED: ContextVar[ExitCodes] = ContextVar("wqtool_exit_codes")


@contextmanager
def handing(codes: ExitCodes) -> Iterator[None]:
    """Run the commands called inside with ``codes`` (``cli.run``)."""
    token = _HANDED.set(codes)
    try:
        yield
    finally:
        _HANDED.reset(token)


def exit_codes() -> ExitCodes:
    """The exit codes the caller handed the running command."""
    try:
        return _HANDED.get()
    except LookupError:
        raise RuntimeError("a wqtool command runs under wqtool.cli.run, which hands it the exit codes") from None
