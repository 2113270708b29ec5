"""``replay --send URL``: deliver retry files to an Orth admin, deleting each only after the admin accepted it.

Per file (name order): the entries as Orth would send them (``POST {URL}/api/callback``, the canonical Gson body,
``Content-Type: application/json;charset=UTF-8``, the access-token header when a token is given); accepted means
HTTP 200 **and** a JSON body with ``code == 200`` (what Orth's executor requires). Only then is the file deleted
(and its directory fsynced). Upstream deletes first and posts after, so a crash in between loses the callback;
here a crash after the POST leaves the file, which is sent again next time — a duplicate the admin ignores (it
keeps the first result of a row).

Files that cannot be sent as they are stay where they are, counted as failed: invalid UTF-8, JSON Orth rejects
(poison), legacy streams that do not parse, a null batch, and any batch holding a ``handleCode <= 0`` (the admin
would store it and keep the row open). Empty files are skipped (Orth deletes them). Every network wait is bounded
(``-O timeout=SECONDS``, default 10).
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Callable

from ...formats.orth import HEAD_DATE_KEY
from ..findings import ERROR
from ..format import SendReport
from ..fsops import FileSig, fsync_dir
from ..plan import StepRunner
from .callbacks import CallbackReader, CallbackSet
from .gson import Entry, encode
from .jackson import encode_jackson_line
from .model import Callback

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
#: (xxl-job 2.0.x-2.1.x admins take callbacks over xxl-rpc, not JSON: deliver to a 2.2.0 or later admin.)
ADMIN_BODIES = ("orth", "xxl-job-2.2", "xxl-job-2.3", "xxl-job-head")


def body_for(entries, admin: str) -> bytes:
    es = [Entry(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in entries]
    if admin == "xxl-job-2.2":
        return encode_jackson_line(es)[:-2]
    if admin == "xxl-job-head":         # HEAD CallbackRequest.java:9: {"callbackList": [CallbackData...]}
        return b'{"callbackList":' + encode(es, HEAD_DATE_KEY) + b"}"
    return encode(es)


def send(cs: CallbackSet, target: str, *, token: str | None, header: str = TOKEN_HEADER, timeout: float = 10.0,
         dry_run: bool = False, progress: Callable[[str], None] | None = None,
         hook: Callable[[str, str], None] | None = None, fail_at: str | None = None,
         admin: str = "orth") -> SendReport:
    url = callback_url(target)
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
            body = body_for(entries, admin)
            ids = ", ".join(f"{e.log_id}:{e.handle_code}" for e in entries[:8]) + (" ..." if len(entries) > 8 else "")
            if dry_run:
                rep.sent += 1
                rep.lines.append(f"{name}: would POST {len(entries)} callback(s) ({len(body)} bytes) to {url}: "
                                 f"log id:handleCode {ids}")
                continue
            if progress is not None:
                progress(f"send: {name}: {len(entries)} callback(s)")
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
