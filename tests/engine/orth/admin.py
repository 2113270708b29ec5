"""Loopback admins for the tests. ``LoopbackAdmin`` serves POSTs on a thread (request numbers, headers, start and
stop); ``Admin`` is a minimal Orth admin callback endpoint: ``POST .../api/callback`` answers the admin's
``{"code":200,"msg":"Success"}``, records every body and token, and fails on demand."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackAdmin:
    """An HTTP admin on 127.0.0.1 (``url`` ends with ``context``): each POST is counted (``requests``, 1-based),
    its headers kept (``headers``, lower-cased names), and handed to ``handle(h, n, body)``, which answers with
    ``h.reply(status, data)``. ``fail``: request numbers the admin refuses (each admin says how)."""

    context = ""

    def __init__(self, token: str | None = None):
        self.token = token
        self.requests = 0
        self.received: list = []                 # accepted calls, in order
        self.fail: set[int] = set()
        self.headers: list[dict] = []
        admin = self

        class H(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *a):
                pass

            def do_POST(self):
                admin.requests += 1
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                admin.headers.append({k.lower(): v for k, v in self.headers.items()})
                admin.handle(self, admin.requests, body)

            def reply(self, status, data):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html;charset=UTF-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass            # the executor was killed (the crash sweeps): nobody to answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.context}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def handle(self, h, n: int, body: bytes) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class Admin(LoopbackAdmin):
    context = "/orth-admin"

    def __init__(self, token: str | None = None):
        super().__init__(token)
        self.drop: set[int] = set()              # request numbers whose connection is closed without an answer

    def handle(self, h, n: int, body: bytes) -> None:
        if not h.path.endswith("/api/callback"):
            return h.reply(404, b"not found")
        if n in self.drop:
            h.close_connection = True
            h.connection.close()
            return
        if self.token is not None and h.headers.get("ORTH-ACCESS-TOKEN") != self.token:
            return h.reply(200, b'{"code":500,"msg":"The access token is wrong."}')
        if n in self.fail:                       # answered {"code":500}
            return h.reply(200, b'{"code":500,"msg":"database down"}')
        self.received.append(json.loads(body))
        h.reply(200, b'{"code":200,"msg":"Success"}')

    def callbacks(self) -> list[tuple]:
        return [(c["logId"], c["handleCode"], c.get("handleMsg")) for body in self.received for c in body]
