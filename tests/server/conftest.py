"""Running ``wqtool serve`` as a subprocess on loopback, and a minimal workq client (as go-workq speaks).

Every network wait here has a timeout; every server started is stopped (SIGTERM, then SIGKILL) by the fixture.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

T = 5.0   # default network timeout (s)


def poll(cond, timeout: float = 20.0, step: float = 0.001):
    """``cond()``'s first true value within ``timeout`` seconds, else its last (a wait bounded in time, never a fixed
    sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def jid(n: int) -> bytes:
    """A v4 job id like the fixtures' (00000000-0000-4000-8000-0000000000nn)."""
    return b"00000000-0000-4000-8000-%012x" % n


class ServerProc:
    """``python -m wqtool serve -listen 127.0.0.1:0 ...`` (after ``prefix``, e.g. an strace command line): waits for
    the Listening line. ``create``: a -cmdlog-path is made if missing (``--create``)."""

    def __init__(self, *args: str, env: dict | None = None, timeout: float = 20.0, prefix: tuple = (),
                 create: bool = True):
        if create and any(a.split("=")[0] in ("-cmdlog-path", "--cmdlog-path") for a in args):
            args = (*args, "--create")      # (tests start on new directories; test_ops tests the refusal)
        e = dict(os.environ)
        e.pop("WQTOOL_SERVE_TIME", None)
        e.update(env or {})
        e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
        self.args = [*prefix, sys.executable, "-m", "wqtool", "serve", "-listen", "127.0.0.1:0", *args]
        self.p = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=ROOT)
        self.addr = None
        self.stdout = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.p.stdout.readline().decode()
            self.stdout += line
            m = re.match(r"Listening on (\S+):(\d+)", line)
            if m:
                self.addr = (m.group(1), int(m.group(2)))
                break
            if not line and self.p.poll() is not None:
                break
        if self.addr is None:
            self.kill()
            raise RuntimeError(f"server did not start (exit {self.p.returncode}): {self.stderr_text()}")

    def client(self, timeout: float = T) -> "Client":
        return Client(self.addr, timeout)

    def sock(self, timeout: float = T) -> socket.socket:
        s = socket.create_connection(self.addr, timeout=timeout)
        s.settimeout(timeout)
        return s

    def stop(self, sig=signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        return self.p.returncode

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(5)

    def stderr_text(self) -> str:
        """Everything the server wrote on stderr (after it exited; read once, then cached)."""
        if getattr(self, "_err", None) is None:
            try:
                _, err = self.p.communicate(timeout=5)
            except (subprocess.TimeoutExpired, ValueError):
                return ""
            self._err = (err or b"").decode(errors="replace")
        return self._err


@pytest.fixture
def server_factory():
    started: list[ServerProc] = []

    def make(*args: str, **kw) -> ServerProc:
        s = ServerProc(*args, **kw)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def mem_server():
    """One in-memory server shared by a module's protocol tests (each test uses its own ids and queues)."""
    s = ServerProc()
    yield s
    s.stop()


class Reply(Exception):
    """A non-OK reply: ``code`` is NOT-FOUND, TIMEOUT, CLIENT-ERROR or SERVER-ERROR, ``text`` the rest."""

    def __init__(self, line: bytes):
        super().__init__(line.decode(errors="replace"))
        code, _, text = line[1:].partition(b" ")
        self.code = code.decode()
        self.text = text.decode(errors="replace")


class Client:
    """A workq client as the Go client speaks the protocol: one request, one reply, in order."""

    def __init__(self, addr, timeout: float = T):
        self.s = socket.create_connection(addr, timeout=timeout)
        self.s.settimeout(timeout)
        self.buf = b""

    def close(self) -> None:
        self.s.close()

    # -- raw
    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            d = self.s.recv(max(65536, n - len(self.buf)))
            if not d:
                raise EOFError(f"connection closed after {self.buf!r}")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError(f"connection closed after {self.buf!r}")
            self.buf += d
        i = self.buf.index(b"\r\n")
        out, self.buf = self.buf[:i], self.buf[i + 2:]
        return out

    def expect(self, data: bytes, reply: bytes) -> None:
        """Send ``data``; the next bytes must be exactly ``reply``."""
        self.send(data)
        got = self.read_exact(len(reply))
        assert got == reply, (data, got, reply)

    def closed(self, timeout: float = 2.0) -> bool:
        """True when the server closes the connection (EOF) with nothing more to read."""
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
                self.buf += d
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.s.settimeout(T)

    def quiet(self, timeout: float = 0.2) -> bool:
        """True when nothing more arrives within ``timeout`` (and the connection stays open)."""
        self.s.settimeout(timeout)
        try:
            d = self.s.recv(65536)
            self.buf += d
            return False
        except socket.timeout:
            return True
        finally:
            self.s.settimeout(T)

    # -- typed, as go-workq
    def _ok(self) -> None:
        line = self.line()
        if line != b"+OK":
            raise Reply(line)

    def _ok_n(self) -> int:
        line = self.line()
        if not line.startswith(b"+OK "):
            raise Reply(line)
        return int(line[4:])

    def add(self, id_: bytes, name: bytes, ttr: int, ttl: int, payload: bytes, **flags) -> None:
        self.send(b"add %s %s %d %d %d%s\r\n%s\r\n" % (id_, name, ttr, ttl, len(payload), _flags(flags), payload))
        self._ok()

    def schedule(self, id_: bytes, name: bytes, ttr: int, ttl: int, when: bytes, payload: bytes, **flags) -> None:
        self.send(b"schedule %s %s %d %d %s %d%s\r\n%s\r\n" % (id_, name, ttr, ttl, when, len(payload), _flags(flags),
                                                                 payload))
        self._ok()

    def lease(self, names: list[bytes], timeout_ms: int) -> tuple[bytes, bytes, int, bytes]:
        self.send(b"lease %s %d\r\n" % (b" ".join(names), timeout_ms))
        self._ok_n()
        id_, name, ttr, size = self.line().split(b" ")
        payload = self.read_exact(int(size) + 2)[:-2]
        return id_, name, int(ttr), payload

    def _result_body(self) -> tuple[bool, bytes]:
        self._ok_n()
        id_, success, size = self.line().split(b" ")
        return success == b"1", self.read_exact(int(size) + 2)[:-2]

    def run(self, id_: bytes, name: bytes, ttr: int, timeout_ms: int, payload: bytes, **flags) -> tuple[bool, bytes]:
        self.send(b"run %s %s %d %d %d%s\r\n%s\r\n" % (id_, name, ttr, timeout_ms, len(payload), _flags(flags),
                                                         payload))
        return self._result_body()

    def result(self, id_: bytes, timeout_ms: int) -> tuple[bool, bytes]:
        self.send(b"result %s %d\r\n" % (id_, timeout_ms))
        return self._result_body()

    def complete(self, id_: bytes, result: bytes) -> None:
        self.send(b"complete %s %d\r\n%s\r\n" % (id_, len(result), result))
        self._ok()

    def fail(self, id_: bytes, result: bytes) -> None:
        self.send(b"fail %s %d\r\n%s\r\n" % (id_, len(result), result))
        self._ok()

    def delete(self, id_: bytes) -> None:
        self.send(b"delete %s\r\n" % id_)
        self._ok()

    def inspect_job(self, id_: bytes) -> dict:
        self.send(b"inspect job %s\r\n" % id_)
        self._ok_n()
        return self._job_block()

    def _job_block(self) -> dict:
        head, n = self.line().rsplit(b" ", 1)
        out = {"id": head}
        for _ in range(int(n)):
            if "payload-size" in out and "payload" not in out:      # raw bytes: no line splitting
                assert self.read_exact(8) == b"payload "
                out["payload"] = self.read_exact(out["payload-size"] + 2)[:-2]
                continue
            k, _, v = self.line().partition(b" ")
            k = k.decode()
            out[k] = int(v) if k in ("ttr", "ttl", "payload-size", "max-attempts", "attempts", "max-fails",
                                     "fails", "priority", "state") else v
        return out

    def inspect_jobs(self, name: bytes, offset: int = 0, limit: int = 100, scheduled: bool = False) -> list[dict]:
        self.send(b"inspect %s %s %d %d\r\n" % (b"scheduled-jobs" if scheduled else b"jobs", name, offset, limit))
        return [self._job_block() for _ in range(self._ok_n())]

    def inspect_queue(self, name: bytes) -> tuple[int, int]:
        self.send(b"inspect queue %s\r\n" % name)
        self._ok_n()
        self.line()
        ready = int(self.line().split(b" ")[1])
        sched = int(self.line().split(b" ")[1])
        return ready, sched

    def inspect_server(self) -> dict:
        self.send(b"inspect server\r\n")
        self._ok_n()
        assert self.line() == b"server 2"
        out = {}
        for _ in range(3):
            k, _, v = self.line().partition(b" ")
            out[k.decode()] = v
        return out


def _flags(flags: dict) -> bytes:
    return b"".join(b" -%s=%s" % (k.replace("_", "-").encode(), str(v).encode()) for k, v in flags.items())
