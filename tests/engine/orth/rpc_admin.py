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

import time

from tests.engine.orth.admin import LoopbackAdmin
from wqtool.engine.javacodec.hessian import HessianError
from wqtool.engine.orth_callbacks.xxlrpc import decode_request, encode_response
from wqtool.formats.orth import ADMIN_BIZ_CLASS, CALLBACK_METHOD, CALLBACK_PARAM_TYPE, RPC_MAX_AGE_MS


class RpcAdmin(LoopbackAdmin):
    context = "/xxl-job-admin"

    def __init__(self, token: str | None = None):
        super().__init__(token)
        self.received: list[list[tuple]] = []    # accepted calls: [(logId, logDateTim, code, msg)]
        # fail: request numbers (1-based) whose AdminBiz answers ReturnT 500
        self.http_error: set[int] = set()        # request numbers answered HTTP 502 (a proxy in front)
        self.garbage: set[int] = set()           # request numbers answered a stack trace, as for an unreadable body
        self.requests_seen = []                  # every decoded request

    def handle(self, h, n: int, body: bytes) -> None:
        if not h.path.endswith("/api"):
            return h.reply(404, b"not found")
        if n in self.http_error:
            return h.reply(502, b"Bad Gateway")
        try:
            if n in self.garbage:
                raise HessianError("xxl-rpc request data is empty.", 0)
            req = decode_request(body)
        except HessianError as exc:
            return h.reply(200, f"com.xxl.rpc.util.XxlRpcException: {exc}\n\tat ...".encode())
        self.requests_seen.append(req)

        def answer(**kw):
            h.reply(200, encode_response(req.request_id, **kw))
        key = req.class_name + ("#" + req.version if req.version else "")
        if key != ADMIN_BIZ_CLASS:
            return answer(error=f"The serviceKey[{key}] not found.")
        if time.time() * 1000 - req.millis > RPC_MAX_AGE_MS:
            return answer(error="The timestamp difference between admin and executor exceeds the limit.")
        if self.token and self.token.strip() != req.token:
            return answer(error=f"The access token[{req.token}] is wrong.")
        if req.method != CALLBACK_METHOD or req.param_types != [CALLBACK_PARAM_TYPE]:
            return answer(error=f"java.lang.NoSuchMethodException: {req.method}({', '.join(req.param_types)})")
        if n in self.fail:
            return answer(code=500, msg="database down")
        self.received.append([(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in req.entries])
        answer(code=200)

    def callbacks(self) -> list[tuple]:
        return [(lid, code, msg) for call in self.received for lid, _, code, msg in call]
