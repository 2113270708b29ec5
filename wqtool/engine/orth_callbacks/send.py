"""``replay --send URL``: deliver retry files to an Orth admin, deleting each only after the admin accepted it.

Per file (name order): the entries as Orth would send them (``POST {URL}/api/callback``, the canonical Gson body,
``Content-Type: application/json;charset=UTF-8``, the access-token header when a token is given); accepted means
HTTP 200 **and** a JSON body with ``code == 200`` (what Orth's executor requires). Only then is the file deleted
(and its directory fsynced). Upstream deletes first and posts after, so a crash in between loses the callback;
here a crash after the POST leaves the file, which is sent again next time — a duplicate the admin ignores (it
keeps the first result of a row).

``-O admin_release=xxl-job-2.0`` (an xxl-job 2.0.0-2.1.0 admin, which reads no JSON): the same files and the same
steps, but each file is one xxl-rpc call ``AdminBiz.callback(List<HandleCallbackParam>)`` — a Hessian 2
``XxlRpcRequest`` posted to ``{URL}/api`` with the access token inside it (``xxlrpc.py`` has the upstream lines);
accepted means HTTP 200, an ``XxlRpcResponse`` without ``errorMsg`` and ``ReturnT.code == 200``.

Files that cannot be sent as they are stay where they are, counted as failed: invalid UTF-8, JSON Orth rejects
(poison), legacy streams that do not parse, a null batch, and any batch holding a ``handleCode <= 0`` (the admin
would store it and keep the row open). Empty files are skipped (Orth deletes them). Every network wait is bounded
(``-O timeout=SECONDS``, default 10).
"""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Callable

from ...formats.orth import HEAD_DATE_KEY, RPC_MAPPING
from ..findings import ERROR
from ..format import SendReport
from ..fsops import FileSig, fsync_dir
from ..plan import StepRunner
from ..javacodec.gson import Entry, encode
from ..javacodec.jackson import encode_jackson_line
from .model import Callback
from .reader import CallbackReader, CallbackSet
from .xxlrpc import MAX_RESPONSE, decode_response, encode_request

TOKEN_ENV = "ORTH_ACCESS_TOKEN"
TOKEN_HEADER = "ORTH-ACCESS-TOKEN"


def callback_url(target: str) -> str:
    t = target.rstrip("/")
    return t if t.endswith("/api/callback") else t + "/api/callback"


def post(url: str, body: bytes, token: str | None, header: str, timeout: float) -> tuple[bool, str]:
    """(accepted, what the admin said)."""
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json;charset=UTF-8")
    req.add_header("Accept-Charset", "UTF-8")
    if token is not None:
        req.add_header(header, token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status = resp.status
            text = resp.read(1 << 20).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        hint = f" (the admin requires the {header} header: -O access_token=... or ${TOKEN_ENV})" \
            if exc.code == 400 and token is None else ""
        return False, f"HTTP {exc.code}{hint}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"not delivered: {reason}"
    if status != 200:
        return False, f"HTTP {status}"
    try:
        doc = json.loads(text)
        code = doc.get("code") if isinstance(doc, dict) else None
    except ValueError:
        return False, f"HTTP 200 but not a JSON response: {text[:80]!r}"
    if code != 200:
        return False, f"refused: {text[:200]}"
    return True, text[:200]


#: The body each admin's ``/api/callback`` reads (``-O admin_release=``): Orth and xxl-job 2.3-3.4 take
#: ``[{logId, logDateTim, handleCode, handleMsg}]``; 2.2.0 takes ``HandleCallbackParam`` with ``executeResult
#: {code, msg, content}`` (v2.2.0 HandleCallbackParam.java:9-14); HEAD takes ``{"callbackList": [CallbackData]}``
#: with ``logDateTime`` (HEAD CallbackRequest.java:9, CallbackData.java:8-15).
#: xxl-job 2.0.0-2.1.0 admins take no JSON: ``xxl-job-2.0`` calls ``AdminBiz.callback`` over xxl-rpc, a Hessian 2
#: ``XxlRpcRequest`` posted to ``{URL}/api`` with the token inside (``xxlrpc.py``). 2.1.1-2.1.2 admins read the
#: 2.2.0 body at ``/api/callback`` (2.1.1 JobApiController.java:39-60, token header XXL-RPC-ACCESS-TOKEN).
ADMIN_BODIES = ("orth", "xxl-job-2.0", "xxl-job-2.2", "xxl-job-2.3", "xxl-job-head")
#: The admins reached over xxl-rpc rather than JSON.
RPC_ADMINS = frozenset({"xxl-job-2.0"})


def rpc_url(target: str) -> str:
    t = target.rstrip("/")
    return t if t.endswith(RPC_MAPPING) else t + RPC_MAPPING


def post_rpc(url: str, entries, token: str | None, timeout: float) -> tuple[bool, str]:
    """``AdminBiz.callback(entries)`` over xxl-rpc: (accepted, what the admin said). The request is made here, at
    send time: the admin refuses one older than 3 minutes (XxlRpcProviderFactory.java:201)."""
    rid = str(uuid.uuid4())
    body = encode_request(entries, token=token, request_id=rid, millis=int(time.time() * 1000))
    u = urllib.parse.urlsplit(url)
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    try:
        conn = conn_cls(u.hostname, u.port, timeout=timeout)
        try:        # as NettyHttpConnectClient.java:103-106: POST, Host, Connection, Content-Length; no Content-Type
            conn.request("POST", u.path or "/", body=body, headers={"Connection": "keep-alive"})
            resp = conn.getresponse()
            status, data = resp.status, resp.read(MAX_RESPONSE)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return False, f"not delivered: {exc}"
    if status != 200:       # JettyClient.java:71 (2.0.0/2.0.1): any other status fails the call
        return False, f"HTTP {status}"
    ans = decode_response(data, rid)
    return ans.accepted, ans.said


def _entries(entries) -> list[Entry]:
    return [Entry(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in entries]


def body_for(entries, admin: str) -> bytes:
    es = _entries(entries)
    if admin == "xxl-job-2.2":
        return encode_jackson_line(es)[:-2]
    if admin == "xxl-job-head":         # HEAD CallbackRequest.java:9: {"callbackList": [CallbackData...]}
        return b'{"callbackList":' + encode(es, HEAD_DATE_KEY) + b"}"
    return encode(es)


def send(cs: CallbackSet, target: str, *, token: str | None, header: str = TOKEN_HEADER, timeout: float = 10.0,
         dry_run: bool = False, progress: Callable[[str], None] | None = None,
         hook: Callable[[str, str], None] | None = None, fail_at: str | None = None,
         admin: str = "orth") -> SendReport:
    rpc = admin in RPC_ADMINS
    url = rpc_url(target) if rpc else callback_url(target)
    rep = SendReport(target=url, dry_run=dry_run)
    with StepRunner(fail_at, hook) as run:
        for i, cf in enumerate(cs.files):
            name = os.path.relpath(cf.path, cs.root) if cs.is_dir else cf.path
            sig = FileSig.of(cf.path)
            reader = CallbackReader(cs, only=i, discovery=False)
            entries: list[Callback] = []
            errors = []
            for ev in reader.events():
                if ev.__class__ is Callback:
                    entries.append(ev)
                elif ev.severity == ERROR:
                    errors.append(ev)
            state = reader.states.get(cf.path)
            if state == "empty":
                rep.skipped += 1
                rep.lines.append(f"{name}: empty (Orth deletes it): nothing to send")
                continue
            if errors:
                rep.failed += 1
                rep.lines.append(f"{name}: not sent, kept: {errors[0].code}: {errors[0].message}")
                continue
            body = encode_request(_entries(entries), token=token, request_id=str(uuid.UUID(int=0)),
                                  millis=int(time.time() * 1000)) if rpc else body_for(entries, admin)
            ids = ", ".join(f"{e.log_id}:{e.handle_code}" for e in entries[:8]) + (" ..." if len(entries) > 8 else "")
            if dry_run:
                rep.sent += 1
                how = " (xxl-rpc AdminBiz.callback)" if rpc else ""
                rep.lines.append(f"{name}: would POST {len(entries)} callback(s) ({len(body)} bytes) to {url}{how}: "
                                 f"log id:handleCode {ids}")
                continue
            if progress is not None:
                progress(f"send: {name}: {len(entries)} callback(s)")
            if rpc:
                ok, said = run(f"post:{name}", lambda es=_entries(entries): post_rpc(url, es, token, timeout))
            else:
                ok, said = run(f"post:{name}", lambda body=body: post(url, body, token, header, timeout))
            if not ok:
                rep.failed += 1
                rep.lines.append(f"{name}: not accepted, kept: {said}")
                continue
            gone = run(f"delete:{name}", lambda cf=cf, sig=sig: _delete(cf.path, sig))
            rep.sent += 1
            rep.lines.append(f"{name}: {len(entries)} callback(s) accepted ({ids}); "
                             + ("deleted" if gone else "kept: the file changed meanwhile"))
    return rep


def _delete(path: str, sig: FileSig) -> bool:
    if FileSig.of(path) != sig:
        return False      # rewritten meanwhile (Orth wrote a batch under this name again): keep it
    os.unlink(path)
    fsync_dir(os.path.dirname(path) or ".")
    return True
