"""``python -m wqtool.server.fastjournal [--listen HOST:PORT] [--sync full|write] DIR`` — the priority-FIFO daemon
per the unimplemented libfastjournal design, until SIGTERM / SIGINT (the ``wqtool serve --fastjournal`` command
wires the same ``serve()``)."""
from __future__ import annotations

import argparse
import sys

from .daemon import serve


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wqtool.server.fastjournal",
                                 description="The priority FIFO of the libfastjournal design (per the unimplemented "
                                             "design: no upstream daemon exists), journaled in DIR.")
    ap.add_argument("journal", metavar="DIR", help="the journal directory (created if missing)")
    ap.add_argument("--listen", default="127.0.0.1:4008", metavar="HOST:PORT", help="port 0: an ephemeral port")
    ap.add_argument("--sync", default="full", choices=["full", "write"],
                    help="full: fsync each batch before its replies (default); write: write() only (survives kill "
                         "-9, not a power cut)")
    a = ap.parse_args(argv)
    host, _, port = a.listen.rpartition(":")

    def run() -> None:      # until SIGTERM / SIGINT: a clean stop has nothing to say (exit 0)
        serve(a.journal, host or "127.0.0.1", int(port), sync=a.sync,
              ready=lambda p: print(f"fastjournal: serving {a.journal} on {host or '127.0.0.1'}:{p} "
                                    f"(sync={a.sync})", file=sys.stderr, flush=True))
    from ..._run import settle      # the CLI's one funnel: the same exit-code table, the same error lines
    return settle(run, prog="fastjournal")


if __name__ == "__main__":
    sys.exit(main())
