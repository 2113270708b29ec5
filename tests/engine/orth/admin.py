"""A minimal Orth admin callback endpoint on loopback for the tests: ``POST .../api/callback`` answers the admin's
``{"code":200,"msg":"Success"}``, records every body and token, and fails on demand."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Admin:
    def __init__(self, token: str | None = None):
        self.token = token
        self.received: list[list[dict]] = []     # accepted bodies, in order
        self.requests = 0
        self.fail: set[int] = set()              # request numbers (1-based) answered {"code":500}
        self.drop: set[int] = set()              # request numbers whose connection is closed without an answer
        self.headers: list[dict] = []
        admin = self

        class H(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *a):
                pass

            def do_POST(self):
                admin.requests += 1
                n = admin.requests
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                admin.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/api/callback"):
                    return self._reply(404, b"not found")
                if n in admin.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if admin.token is not None and self.headers.get("ORTH-ACCESS-TOKEN") != admin.token:
                    return self._reply(200, b'{"code":500,"msg":"The access token is wrong."}')
                if n in admin.fail:
                    return self._reply(200, b'{"code":500,"msg":"database down"}')
                admin.received.append(json.loads(body))
                self._reply(200, b'{"code":200,"msg":"Success"}')

            def _reply(self, status, data):
                self.send_response(status)
                self.send_header("Content-Type", "text/html;charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/orth-admin"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "Admin":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def callbacks(self) -> list[tuple]:
        return [(c["logId"], c["handleCode"], c.get("handleMsg")) for body in self.received for c in body]
