"""``wqtool serve --fastjournal``: the priority FIFO of the libfastjournal design on TCP — **per the unimplemented
libfastjournal design** (no upstream daemon exists; nothing here is compatible with anything upstream).

    from wqtool.server.fastjournal import serve, Running
    serve("/var/lib/fastjournal", "127.0.0.1", 4008)          # blocking, until SIGTERM / SIGINT
    with Running(journal_dir) as r:                            # in a thread: r.port, r.server
        ...
"""
from .daemon import FastJournalServer, Running, serve

__all__ = ["FastJournalServer", "Running", "serve"]
