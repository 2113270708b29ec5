"""xxl-rpc, as xxl-job 2.0.0-2.1.0 executors and admins speak it for ``AdminBiz.callback``: the Hessian 2
``XxlRpcRequest`` an executor posts to ``{admin}/api`` and the ``XxlRpcResponse`` the admin answers.

Upstream (the layouts and constants are in ``formats.orth``, ``RPC_*``):

- the executor (xxl-job 2.0.2 ``XxlJobExecutor.java:116-132``; 2.1.0 ``:117-133``): an ``XxlRpcReferenceBean`` of
  ``AdminBiz`` over ``NetEnum.NETTY_HTTP`` with ``Serializer.SerializeEnum.HESSIAN`` (= ``HessianSerializer``,
  ``new Hessian2Output(os).writeObject(obj)``, xxl-rpc 1.4.0 ``Serializer.java:21``, ``HessianSerializer.java:19-25``)
  at ``address + AdminBiz.MAPPING`` (``"/api"``, ``AdminBiz.java:14``); 2.0.0/2.0.1 use ``NetEnum.JETTY`` of xxl-rpc
  1.2.x (v2.0.0 ``XxlJobExecutor.java:122``), the same Hessian request in an HTTP POST.
- the request (xxl-rpc 1.4.0 ``XxlRpcReferenceBean.java:201-208``): a random UUID ``requestId``, ``createMillisTime``
  = now, the ``accessToken``, ``className`` = ``com.xxl.job.core.biz.AdminBiz``, ``methodName`` = ``callback``,
  ``parameterTypes`` = ``{java.util.List}``, ``parameters`` = ``{ArrayList<HandleCallbackParam>}``, ``version`` null;
  sent as ``POST {path}`` with Host, Connection and Content-Length only (``NettyHttpConnectClient.java:100-108``).
- the admin (2.0.2 ``JobApiController.java:27-31`` -> ``XxlJobDynamicScheduler.java:119-121`` -> xxl-rpc 1.4.0
  ``ServletServerHandler.java:48-63``): Hessian-reads the request, ``XxlRpcProviderFactory.invokeService``
  (``:185-233``: service key = className [+ "#" version]; refuses a request older than 3 minutes (``:201``) or with a
  token other than its own (``:205``), each as ``errorMsg``; else ``result`` = ``AdminBiz.callback``'s ``ReturnT``),
  and writes the Hessian ``XxlRpcResponse`` with HTTP 200. A body it cannot read gets HTTP 200 and the stack trace
  as text (``ServletServerHandler.java:53-55``).
- accepted, for the executor: no ``errorMsg`` (``XxlRpcReferenceBean.java:220-223``) and ``ReturnT.code == 200``
  (2.0.2 ``TriggerCallbackThread.java:161-162``).

The callback list inside the request is the retry files' own Hessian writer (``hessian.encode_params``), started after
the request's two class definitions and four references; both directions are read back by the one bounded reader
(``hessian.HessianReader``). Checked byte for byte against real hessian 4.0.38 (``tests/engine/orth/test_xxlrpc.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...formats.orth import (ADMIN_BIZ_CLASS, CALLBACK_METHOD, CALLBACK_PARAM_TYPE, HESSIAN_RETURNT_FIELDS,
                             HS_OBJECT_DIRECT, JAVA_CLASS_CLASS, PARAM_CLASS, RETURNT_CLASS, RPC_REQUEST_CLASS,
                             RPC_REQUEST_CLASSES, RPC_REQUEST_REFS, RPC_RESPONSE_CLASS, hs_class_def,
                             rpc_callback_params_head, rpc_request_head, rpc_response_head)
from ..javacodec.gson import Entry
from ..javacodec.hessian import HessianError, HObject, HessianReader, encode_params, h_int, h_long, h_string

#: The largest answer read from an admin (an XxlRpcResponse of a ReturnT is ~150 bytes; a stack trace a few KiB).
MAX_RESPONSE = 1 << 20


def encode_request(entries, *, token: str | None, request_id: str, millis: int) -> bytes:
    """``Hessian2Output.writeObject(XxlRpcRequest)`` of ``AdminBiz.callback(entries)`` (``Entry``: the ReturnT's
    code and msg are handle_code / handle_msg; logId written as the 2.1.0 executor's ``long``)."""
    return b"".join((rpc_request_head.build({}), h_string(request_id), h_long(millis), h_string(token),
                     h_string(ADMIN_BIZ_CLASS), h_string(CALLBACK_METHOD), h_string(None),
                     rpc_callback_params_head.build({}),
                     encode_params(entries, classes=RPC_REQUEST_CLASSES, ref0=RPC_REQUEST_REFS)))


def encode_response(request_id: str | None, *, error: str | None = None, code: int | None = None,
                    msg: str | None = None) -> bytes:
    """What the admin writes (``ServletServerHandler.java:62``): ``XxlRpcResponse{requestId, errorMsg, result}``,
    result = ``ReturnT{code, msg, content=null}`` when ``code`` is given, else null."""
    out = [rpc_response_head.build({}), h_string(request_id), h_string(error)]
    if code is None:
        out.append(h_string(None))
    else:                                           # ReturnT: the second class definition (1), fields code msg content
        out.append(hs_class_def(RETURNT_CLASS, HESSIAN_RETURNT_FIELDS) + bytes((HS_OBJECT_DIRECT[0] + 1,))
                   + h_int(code) + h_string(msg) + h_string(None))
    return b"".join(out)


@dataclass(slots=True)
class RpcRequest:
    request_id: str | None
    millis: int
    token: str | None
    class_name: str | None
    method: str | None
    version: str | None
    param_types: list[str]
    entries: list[Entry]


def decode_request(data: bytes) -> RpcRequest:
    """An ``XxlRpcRequest`` read as the admin's Hessian2Input would, then ``AdminBiz.callback``'s one argument as
    the list of callbacks; HessianError (offset) for anything else."""
    r = HessianReader(data)
    top = r.read_value()
    if not isinstance(top, HObject) or top.cls != RPC_REQUEST_CLASS:
        raise HessianError(f"not an {RPC_REQUEST_CLASS}", 0)
    f = top.fields
    types = []
    for t in f.get("parameterTypes") or []:
        if not isinstance(t, HObject) or t.cls != JAVA_CLASS_CLASS or not isinstance(t.fields.get("name"), str):
            raise HessianError("a parameter type that is not a java.lang.Class", top.offset)
        types.append(t.fields["name"])
    params = f.get("parameters") or []
    entries: list[Entry] = []
    if types == [CALLBACK_PARAM_TYPE] and len(params) == 1 and isinstance(params[0], list):
        for i, p in enumerate(params[0]):
            if not isinstance(p, HObject) or p.cls != PARAM_CLASS:
                raise HessianError(f"callback {i} is not a {PARAM_CLASS}", getattr(p, "offset", 0))
            res = p.fields.get("executeResult")
            code, msg = (res.fields.get("code"), res.fields.get("msg")) if isinstance(res, HObject) else (0, None)
            entries.append(Entry(p.fields.get("logId"), p.fields.get("logDateTim"), code, msg))
    millis = f.get("createMillisTime")
    return RpcRequest(f.get("requestId"), millis if isinstance(millis, int) else 0, f.get("accessToken"),
                      f.get("className"), f.get("methodName"), f.get("version"), types, entries)


@dataclass(slots=True)
class RpcAnswer:
    accepted: bool
    said: str


def decode_response(data: bytes, request_id: str) -> RpcAnswer:
    """What the executor makes of the admin's answer: accepted only for no errorMsg and a ReturnT of code 200."""
    try:
        top = HessianReader(data).read_value()
    except HessianError as exc:
        top, why = None, f"{exc} at byte {exc.offset}"
    else:
        why = "" if isinstance(top, HObject) and top.cls == RPC_RESPONSE_CLASS else "another value"
    if top is None or why:
        text = data[:120].decode("utf-8", "replace").split("\n")[0]
        return RpcAnswer(False, f"HTTP 200 but not an XxlRpcResponse ({why}): {text!r}")
    f = top.fields
    if f.get("errorMsg") is not None:
        first = (str(f["errorMsg"]).splitlines() or [""])[0]       # a stack trace: its first line
        return RpcAnswer(False, f"refused: {first[:200]!s}")
    if f.get("requestId") != request_id:
        return RpcAnswer(False, f"the answer is for request {f.get('requestId')!r}, not {request_id!r}")
    res = f.get("result")
    if not isinstance(res, HObject) or res.cls != RETURNT_CLASS:
        return RpcAnswer(False, "refused: no ReturnT in the answer")
    code, msg = res.fields.get("code"), res.fields.get("msg")
    said = f"ReturnT code={code} msg={msg!r}"
    return RpcAnswer(code == 200, said if code == 200 else f"refused: {said}")
