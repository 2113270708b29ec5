"""The console script: Ctrl-C while Python is still importing wqtool exits 130 quietly, like Ctrl-C later;
``--version`` alone is answered before the CLI (typer, the formats) is imported."""
from __future__ import annotations

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
    except KeyboardInterrupt:
        sys.stderr.write("wqtool: interrupted\n")
        sys.exit(130)
    cli_main()
