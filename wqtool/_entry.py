"""The console script: Ctrl-C while Python is still importing wqtool says "interrupted" and exits 130, like
Ctrl-C later; ``--version`` alone is answered before the CLI (typer, the formats) is imported; a plain command line
of a hot command is run without typer (``wqtool._run.plain``), anything else by the typer app (``wqtool.cli``).
Small on purpose: ``--version`` compiles only this module where no bytecode cache is kept."""
from __future__ import annotations

import os
import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):    # the CLI's own answer, without importing it (start-up)
        from . import __version__
        sys.stdout.write(f"wqtool {__version__}\n")
        sys.exit(0)
    try:
        if sys.argv[1:2] == ["serve"]:      # listen before the CLI is imported (wqtool.server.prebind), and
            from .server.prebind import early, hold_gc, lean, release_gc    # serve without importing it when
            hold_gc()                                                       # the flags are plain; no collection
            early(sys.argv[2:])                                             # until the first requests are served
            if lean(sys.argv[2:]):      # served, then a clean stop
                sys.exit(0)
            release_gc()
        from ._run import plain
        code = plain(sys.argv[1:], exiting=True)
        if code is not None:
            finish(code)
        from .cli import main as cli_main
    except (KeyboardInterrupt, RuntimeError) as e:
        if not interrupted(e):
            raise
        sys.stderr.write("wqtool: interrupted\n")
        sys.stderr.flush()
        os._exit(130)      # not sys.exit: see finish (CPython would end the process with SIGINT instead)
    cli_main()


def interrupted(exc: BaseException) -> bool:
    """``exc`` is a Ctrl-C, or one that Python wrapped on the way (3.11 wraps what ``__set_name__`` raises while
    a class is made — a dataclass at import — in a RuntimeError)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def finish(code: int) -> None:
    """Exit with ``code``."""
    if code == 130:
        # Exit 130 for certain: CPython 3.11 ends a process with SIGINT (status -2) after a Ctrl-C that landed in
        # code run by exec() of a string (a dataclass being made at import: pythonrun.c run_eval_code_obj sets
        # _Py_UnhandledKeyboardInterrupt), although the funnel handled it. Nothing of wqtool runs at exit.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(int(code))
    sys.exit(code)
