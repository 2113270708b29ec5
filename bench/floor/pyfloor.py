"""The floor server's loop inside a Python process (bench/floor/README.md), started as workq-server is:

    python bench/floor/pyfloor.py VARIANT -listen HOST:PORT -cmdlog-path DIR [-cmdlog-sync interval|always]

VARIANT:
  c2          the C loop (_floor.serve) in a thread that released the GIL; the main thread blocked in join(): the
              process shape of ``wqtool serve`` with none of its Python on the request path
  c3          C framing and handlers, and per request one call back into Python under the GIL (``cb(reply)``,
              returning the reply: the cost of the call and the GIL alone)
  c3burnN     the same, the callback spinning N us of Python (time.perf_counter_ns) before it returns the reply
  c3wq        C framing only; per request ``cb(conn_id, request)`` runs wqtool's own request path — a ``Conn`` of
              ``wqtool.server.workq`` on a fake transport, the handlers, the queue, the record builders and the
              group commit (``Server._commit``: the log write, and the fdatasync under always) — and returns the
              reply bytes; the C side then sends them.  What a C-framing + Python-handler split would be.
"""
from __future__ import annotations

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _floor  # noqa: E402


def burn(us: int):
    ns = us * 1000
    clock = time.perf_counter_ns

    def cb(reply: bytes) -> bytes:
        end = clock() + ns
        while clock() < end:
            pass
        return reply
    return cb


def wqtool_handler(args: list[str]):
    """cb(conn_id, request) -> reply bytes through wqtool serve's Python request path (no event loop: a fake one
    whose call_soon work runs right after each request, so each request's records are committed before its reply
    is returned, as the group commit of a loop iteration with one request in it)."""
    root = os.path.dirname(os.path.dirname(HERE))
    sys.path.insert(0, root)
    from tests.server.test_hot_path import FakeLoop, FakeTransport
    from wqtool.server.workq.conn import Conn
    from wqtool.server.workq.server import Server, ServeOptions

    d = args[args.index("-cmdlog-path") + 1]
    sync = args[args.index("-cmdlog-sync") + 1] if "-cmdlog-sync" in args else "interval"
    srv = Server(ServeOptions(cmdlog_path=d, sync=sync, log_level="error", create=True))
    srv.loop = FakeLoop(srv.clock)
    srv.open_log()
    srv.inherits_sockopts = True
    conns: dict[int, tuple] = {}
    run_due = srv.loop.run_due

    def cb(cid: int, req: bytes) -> bytes:
        ct = conns.get(cid)
        if ct is None:
            ct = conns[cid] = (Conn(srv), FakeTransport())
            ct[0].connection_made(ct[1])
        c, t = ct
        c.data_received(req)
        run_due()
        out = bytes(t.got)
        t.got.clear()
        return out
    return cb, d


def main() -> int:
    variant, args = sys.argv[1], sys.argv[2:]
    if variant == "c2":
        cb, mode = None, 0
    elif variant == "c3":
        cb, mode = (lambda r: r), 1
    elif variant.startswith("c3burn"):
        cb, mode = burn(int(variant[6:])), 1
    elif variant == "c3wq":
        cb, d = wqtool_handler(args)
        mode = 2
        # the C side writes no records in this mode (the Python handler owns the state and the command log) but
        # opens a log file: one of its own, beside wqtool's
        args = [a if a != d else os.path.join(d, "floor-c") for a in args]
        os.makedirs(os.path.join(d, "floor-c"), exist_ok=True)
    else:
        raise SystemExit(f"pyfloor: unknown variant {variant}")
    t = threading.Thread(target=_floor.serve, args=(args, cb, mode), daemon=True)
    t.start()
    t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
