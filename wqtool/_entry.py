"""The console script: Ctrl-C while Python is still importing wqtool exits 130 quietly, like Ctrl-C later."""
from __future__ import annotations

import sys


def main() -> None:
    try:
        if sys.argv[1:2] == ["serve"]:      # listen before the CLI is imported (wqtool.server.prebind)
            from .server.prebind import early
            early(sys.argv[2:])
        from .cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("wqtool: interrupted\n")
        sys.exit(130)
    cli_main()
