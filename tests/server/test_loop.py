"""serve's event loop: uvloop's when installed (the optional extra ``wqtool[serve]``), asyncio's own otherwise or
with WQTOOL_SERVE_LOOP=asyncio; both serve the same protocol (the server tests run under whichever is installed,
and tests/server/test_table.py's in-process servers always on asyncio's)."""
from __future__ import annotations

import asyncio
import builtins
import re

import pytest

from tests.server.conftest import jid
from wqtool.errors import UsageError
from wqtool.server.workq.server import event_loop_factory


def test_asyncio_when_asked(monkeypatch):
    monkeypatch.setenv("WQTOOL_SERVE_LOOP", "asyncio")
    assert event_loop_factory() == ("asyncio", asyncio.new_event_loop)


def test_asyncio_when_uvloop_is_missing_and_an_error_when_it_is_required(monkeypatch):
    real = builtins.__import__

    def no_uvloop(name, *a, **kw):
        if name == "uvloop":
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    monkeypatch.delenv("WQTOOL_SERVE_LOOP", raising=False)
    assert event_loop_factory()[0] == "asyncio"
    monkeypatch.setenv("WQTOOL_SERVE_LOOP", "uvloop")
    with pytest.raises(UsageError, match="uvloop is not installed"):
        event_loop_factory()
    monkeypatch.setenv("WQTOOL_SERVE_LOOP", "trio")
    with pytest.raises(UsageError, match="expected asyncio or uvloop"):
        event_loop_factory()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_loop_serves_and_says_which(server_factory, tmp_path, loop):
    if loop == "uvloop":
        pytest.importorskip("uvloop")
    srv = server_factory("-cmdlog-path", str(tmp_path / "log"), env={"WQTOOL_SERVE_LOOP": loop})
    c = srv.client()
    c.add(jid(0xf001), b"lp", 1000, 60000, b"body")
    assert c.lease([b"lp"], 0)[3] == b"body"
    c.complete(jid(0xf001), b"ok")
    c.close()
    srv.stop()
    assert re.search(rf"msg=listening .*loop={loop}", srv.stderr_text())
