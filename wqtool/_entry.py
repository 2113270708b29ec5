"""The console script: Ctrl-C while Python is still importing wqtool says "interrupted" and exits 130, like
Ctrl-C later; ``--version`` alone is answered before the CLI (typer, the formats) is imported."""
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
            from .server.prebind import early, lean     # serve without importing it when the flags are plain
            early(sys.argv[2:])
            code = lean(sys.argv[2:])
            if code is not None:
                sys.exit(code)
        from .cli import main as cli_main
    except (KeyboardInterrupt, RuntimeError) as e:
        if not interrupted(e):
            raise
        sys.stderr.write("wqtool: interrupted\n")
        sys.stderr.flush()
        os._exit(130)      # not sys.exit: see cli.main (CPython would end the process with SIGINT instead)
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
