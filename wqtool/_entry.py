"""The console script: Ctrl-C while Python is still importing wqtool exits 130 quietly, like Ctrl-C later."""
from __future__ import annotations

import sys


def main() -> None:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("wqtool: interrupted\n")
        sys.exit(130)
    cli_main()
