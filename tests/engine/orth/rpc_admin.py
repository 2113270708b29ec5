"""A loopback xxl-job 2.0.2-2.1.0 admin's ``/api`` for the tests: it does with a POST what upstream's admin does,
step by step, and answers the Hessian ``XxlRpcResponse`` it would.

- xxl-job 2.0.2 ``JobApiController.java:27-31``: ``{admin}/api`` (``AdminBiz.MAPPING``, AdminBiz.java:14) ->
  ``XxlJobDynamicScheduler.invokeAdminService`` (``:119-121``) -> xxl-rpc 1.4.0 ``ServletServerHandler.handle``.
- ``ServletServerHandler.java:84-91``: the body, Hessian-read as an ``XxlRpcRequest`` (here the engine's bounded
  reader, ``xxlrpc.decode_request``; the Java oracle of test_xxlrpc.py checks the same bytes with real Hessian); a
  body that does not read is answered HTTP 200 with the stack trace as text (``:53-55``).
- ``XxlRpcProviderFactory.java:185-233``: service key = className (+ "#" version, ``:157-163``), unknown ->
  ``errorMsg "The serviceKey[...] not found."`` (``:196-198``); older than 3 minutes (``:201-203``); a token other
  than the admin's (``:205-207``); then ``getMethod(methodName, parameterTypes)`` (``:217``) — here only
  ``callback(java.util.List)`` exists — and ``result`` = the admin's ``ReturnT`` (``:225``).
- the answer, Hessian-written with HTTP 200 (``ServletServerHandler.java:62-63, 71-78``).
"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from wqtool.engine.javacodec.hessian import HessianError
from wqtool.engine.orth_callbacks.xxlrpc import decode_request, encode_response
from wqtool.formats.orth import ADMIN_BIZ_CLASS, CALLBACK_METHOD, CALLBACK_PARAM_TYPE, RPC_MAX_AGE_MS


class RpcAdmin:
    def __init__(self, token: str | None = None):
        self.token = token
        self.requests = 0
        self.received: list[list[tuple]] = []    # accepted calls: [(logId, logDateTim, code, msg)]
        self.fail: set[int] = set()              # request numbers (1-based) whose AdminBiz answers ReturnT 500
        self.http_error: set[int] = set()        # request numbers answered HTTP 502 (a proxy in front)
        self.garbage: set[int] = set()           # request numbers answered a stack trace, as for an unreadable body
        self.requests_seen = []                  # every decoded request
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
                if not self.path.endswith("/api"):
                    return self._reply(404, b"not found")
                if n in admin.http_error:
                    return self._reply(502, b"Bad Gateway")
                try:
                    if n in admin.garbage:
                        raise HessianError("xxl-rpc request data is empty.", 0)
                    req = decode_request(body)
                except HessianError as exc:
                    return self._reply(200, f"com.xxl.rpc.util.XxlRpcException: {exc}\n\tat ...".encode())
                admin.requests_seen.append(req)
                key = req.class_name + ("#" + req.version if req.version else "")
                if key != ADMIN_BIZ_CLASS:
                    return self._answer(req, error=f"The serviceKey[{key}] not found.")
                if time.time() * 1000 - req.millis > RPC_MAX_AGE_MS:
                    return self._answer(req, error="The timestamp difference between admin and executor exceeds "
                                                   "the limit.")
                if admin.token and admin.token.strip() != req.token:
                    return self._answer(req, error=f"The access token[{req.token}] is wrong.")
                if req.method != CALLBACK_METHOD or req.param_types != [CALLBACK_PARAM_TYPE]:
                    return self._answer(req, error=f"java.lang.NoSuchMethodException: {req.method}"
                                                   f"({', '.join(req.param_types)})")
                if n in admin.fail:
                    return self._answer(req, code=500, msg="database down")
                admin.received.append([(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in req.entries])
                return self._answer(req, code=200)

            def _answer(self, req, **kw):
                self._reply(200, encode_response(req.request_id, **kw))

            def _reply(self, status, data):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html;charset=UTF-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass            # the executor was killed (the crash sweep): nobody to answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/xxl-job-admin"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "RpcAdmin":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def callbacks(self) -> list[tuple]:
        return [(lid, code, msg) for call in self.received for lid, _, code, msg in call]
