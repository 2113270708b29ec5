"""A minimal Orth admin callback receiver (spec §7): ``POST {context}/api/callback`` with the ``ORTH-ACCESS-TOKEN``
header and a JSON array body, answered ``{"code":200,"msg":"Success"}`` once the items are stored with the admin's
update rules (``engine.orth_joblog.store``) — into a SQLite file by default, or MySQL / MariaDB given a URL. The
registry beats (``/api/registry``, ``/api/registryRemove``) upsert the executor registry.

    from wqtool.server.orth_admin import serve_orth_admin
    serve_orth_admin("127.0.0.1", 8080, store="orth_job.db", token="default_token")   # blocks

Differences from the admin, on purpose: items are applied before the answer (the admin answers first and works
in a pool), so an acknowledged callback is stored.
"""
from __future__ import annotations

import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from ..engine.orth_joblog.store import CallbackStore, check_items
from ..errors import UsageError

MAX_BODY = 8 << 20
TOKEN_HEADER = "ORTH-ACCESS-TOKEN"
SUCCESS = b'{"code":200,"msg":"Success"}'
WRONG_TOKEN = b'{"code":500,"msg":"The access token is wrong."}'


def make_server(host: str, port: int, *, store: str, token: str | None = "default_token", timezone: str = "UTC",
                log: Callable[[str], None] | None = None, context_path: str = "") -> ThreadingHTTPServer:
    """A bound server (port 0: any free port, see ``server_address``); ``serve_forever()`` runs it."""
    db = CallbackStore(store, timezone=timezone)
    say = log or (lambda _m: None)
    prefix = "/" + context_path.strip("/") if context_path.strip("/") else ""

    class Handler(BaseHTTPRequestHandler):
        server_version = "wqtool-orth-admin"
        timeout = 30

        def log_message(self, fmt, *args):  # noqa: N802 — stdlib name
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            self._send(405, b'{"code":405,"msg":"POST only"}')

        def do_POST(self):  # noqa: N802
            path = self.path.split("?", 1)[0]
            uri = path[len(prefix):] if path.startswith(prefix) else None
            if uri not in ("/api/callback", "/api/registry", "/api/registryRemove"):
                return self._send(404, b'{"code":404,"msg":"Not Found"}')
            try:
                n = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                n = -1
            if n < 0 or n > MAX_BODY:
                return self._send(413 if n > MAX_BODY else 400, b'{"code":400,"msg":"bad Content-Length"}')
            body = self.rfile.read(n)
            sent = self.headers.get(TOKEN_HEADER)
            if sent is None:
                return self._send(400, b'{"code":400,"msg":"Required header ORTH-ACCESS-TOKEN is missing"}')
            if token is not None and not hmac.compare_digest(sent.encode(), token.encode()):
                return self._send(200, WRONG_TOKEN)
            if not body.strip():
                return self._send(400, b'{"code":400,"msg":"empty body"}')
            try:
                data = json.loads(body)
                if uri == "/api/callback":
                    out = db.apply(check_items(data))
                    say(f"callback: {out.updated} stored, {out.duplicate} duplicate(s) ignored, {out.missing} "
                        "unknown log id(s) dropped")
                else:
                    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in
                                                             ("registryGroup", "registryKey", "registryValue")):
                        raise UsageError("registry body needs registryGroup, registryKey, registryValue")
                    db.registry(data["registryGroup"], data["registryKey"], data["registryValue"],
                                remove=uri == "/api/registryRemove")
            except (ValueError, UsageError) as e:
                msg = json.dumps({"code": 500, "msg": f"bad request: {e}"}).encode()
                return self._send(400, msg)
            self._send(200, SUCCESS)

    srv = ThreadingHTTPServer((host, port), Handler)
    srv.daemon_threads = True
    srv.store = db
    return srv


def serve_orth_admin(host: str, port: int, *, store: str, token: str | None = "default_token",
                     timezone: str = "UTC", log: Callable[[str], None] | None = None, context_path: str = "",
                     ready: Callable[[tuple], None] | None = None, stop: threading.Event | None = None) -> None:
    """Serve until ``stop`` is set (or forever): the plain entry ``serve --orth-admin`` calls."""
    srv = make_server(host, port, store=store, token=token, timezone=timezone, log=log, context_path=context_path)
    if ready is not None:
        ready(srv.server_address)
    try:
        if stop is None:
            srv.serve_forever(poll_interval=0.2)
        else:
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
            t.start()
            stop.wait()
            srv.shutdown()
            t.join(timeout=10)
    finally:
        srv.server_close()
        srv.store.close()
