"""The console script: Ctrl-C while Python is still importing wqtool exits 130 quietly, like Ctrl-C later."""
from __future__ import annotations

import sys


def main() -> None:
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
