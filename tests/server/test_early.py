"""The lean start's early loop (wqtool/server/workq/early.py): the first requests are answered while asyncio is
still being imported, and the connections, their half-read requests, their blocked leases and the timers go on
on the asyncio loop after the hand-over. ``WQTOOL_SERVE_EARLY_HOLD`` keeps the early loop serving while its file
exists, so every step below runs on the loop it names."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.server.conftest import Client, jid
from tests.server.test_prebind import _connect_when_bound, _free_port
from wqtool.server.workq import wire


def _stderr_until(p: subprocess.Popen, seen: bytearray, needle: bytes, timeout: float) -> bool:
    """Read the server's stderr (non-blocking) into ``seen`` until ``needle`` shows up (True) or ``timeout``."""
    deadline = time.monotonic() + timeout
    fd = p.stderr.fileno()
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            chunk = None
        if chunk:
            seen += chunk
        if needle in seen:
            return True
        if time.monotonic() > deadline or chunk == b"":
            return False
        time.sleep(0.01)


#: the installed console script (bin/wqtool) next to this interpreter: how users start the server
SCRIPT = os.path.join(os.path.dirname(sys.executable), "wqtool")


def _serve(port: int, log, env: dict, *args: str, launcher=None) -> subprocess.Popen:
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env)
    return subprocess.Popen([*(launcher or (sys.executable, "-m", "wqtool")), "serve", "-listen", f"127.0.0.1:{port}",
                             "-cmdlog-path", str(log), "--create", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=e, cwd=ROOT)


def test_the_early_loop_serves_and_hands_every_connection_over(tmp_path):
    hold = tmp_path / "hold"
    hold.write_bytes(b"")
    log = tmp_path / "log"
    port = _free_port()
    p = _serve(port, log, {"WQTOOL_SERVE_EARLY_HOLD": str(hold)})
    err = bytearray()
    try:
        _connect_when_bound(port, p, 30).close()
        assert p.stdout.readline() == b"\n"                  # upstream's banner, then Listening: printed early
        while not (line := p.stdout.readline()).startswith(b"Listening on"):
            assert line, "no Listening line"
        assert line == b"Listening on 127.0.0.1:%d\n" % port
        a, b, c = (Client(("127.0.0.1", port), timeout=20) for _ in range(3))
        a.add(jid(1), b"q", 1000, 60000, b"one")
        a.expect(b"lease q2 300\r\n", b"-TIMEOUT\r\n")        # a timer of the early loop
        b.send(b"lease q3 15000\r\n")                         # blocked: answered after the hand-over
        c.send(b"add %s q 1000 60000 3\r\nfo" % jid(4))       # half a request: the rest after the hand-over
        assert b.quiet(0.2) and c.quiet(0.2)
        # still the early loop: the asyncio start logs "listening" (with its start-up marks) when it has taken over
        assert not _stderr_until(p, err, b"msg=listening", 0.3), err.decode()

        hold.unlink()
        assert _stderr_until(p, err, b"msg=listening", 30), err.decode()
        assert b"early=" in err                               # the start-up mark of the early loop
        c.expect(b"o\r\n", b"+OK\r\n")
        a.add(jid(3), b"q3", 1000, 60000, b"three")
        assert b.line() == b"+OK 1"
        assert b.line() == b"%s q3 1000 5" % jid(3) and b.read_exact(7) == b"three\r\n"
        assert a.lease([b"q"], 0) == (jid(1), b"q", 1000, b"one")
        a.complete(jid(1), b"done")
        for x in (a, b, c):
            x.close()
    finally:
        p.terminate()
        p.wait(20)
    assert p.returncode == 0
    # what the early loop acknowledged is in the log: the restarted server has it
    port = _free_port()
    p = _serve(port, log, {})
    try:
        _connect_when_bound(port, p, 30).close()
        s = Client(("127.0.0.1", port), timeout=20)
        assert s.inspect_queue(b"q") == (1, 0)                # jid(4): added; jid(1): completed
        assert s.lease([b"q"], 0)[0] == jid(4)
        s.close()
    finally:
        p.terminate()
        p.wait(20)
    assert p.returncode == 0


def test_a_stop_asked_for_during_the_early_loop_stops_the_server_cleanly(tmp_path):
    """SIGTERM while the early loop serves: kept until the asyncio loop runs, which then stops as always (final
    commit and fsync, locks released, exit 0) — not the default action's abrupt end."""
    hold = tmp_path / "hold"
    hold.write_bytes(b"")
    port = _free_port()
    p = _serve(port, tmp_path / "log", {"WQTOOL_SERVE_EARLY_HOLD": str(hold)})
    err = bytearray()
    try:
        _connect_when_bound(port, p, 30).close()
        a = Client(("127.0.0.1", port), timeout=20)
        a.add(jid(7), b"q", 1000, 60000, b"x")
        p.terminate()
        with pytest.raises(subprocess.TimeoutExpired):       # kept: the early loop goes on until the hand-over
            p.wait(0.5)
        assert a.inspect_queue(b"q") == (1, 0)
        hold.unlink()
        assert p.wait(30) == 0
        assert _stderr_until(p, err, b"msg=stopped", 5), err.decode()
        assert b"signal=SIGTERM" in err and b"records=1" in err
        a.close()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)


#: what the first reply on an empty log must not wait for: the event loop (imported once the early loop is idle),
#: the command line interface, the on-disk schemas' construct objects (a write needs the C encoder only)
NOT_BEFORE_THE_FIRST_REPLY = ("asyncio", "uvloop", "concurrent.futures", "ssl", "typer", "click", "rich",
                              "construct", "wqtool.cli", "wqtool.commands",
                              # nothing to replay: not the replay's verifier either
                              "wqtool.engine.workq.startup", "wqtool.engine.workq.verify", "wqtool.engine.run",
                              "wqtool.engine.stats", "json",
                              # nor modules the lean path has no use for there: annotations, inspect's times
                              "typing", "datetime", "google_crc32c", "socket", "selectors",
                              # nor what makes dataclasses, enums and patterns (CmdType and the schema's patterns
                              # are built on first use; the queue's lists are short ones until they grow), nor the
                              # replay's and the record encoders' modules when there is nothing to replay
                              "dataclasses", "inspect", "enum", "re", "tokenize", "sortedcontainers",
                              "wqtool.offsets", "wqtool.engine.findings", "wqtool.engine.fileio",
                              "wqtool.engine.workq.reader", "wqtool.engine.workq.replay",
                              "wqtool.engine.workq.fastreplay", "wqtool.engine.workq.fastpath",
                              "wqtool.engine.workq.model", "wqtool.engine.workq.writer",
                              # nor the plan template's file primitives (LogBusy is errors.py's, fsync_dir
                              # engine/fsync.py's) with the progress hooks
                              "wqtool.engine.fsops", "wqtool.engine.progress")
#: ... and, started by the console script (no runpy), not what runpy imports either: importlib.util (the
#: cleaner is looked for once the event loop runs) with warnings, nor the collections package with functools,
#: contextlib, operator and types (deque and OrderedDict are _collections', the abstract classes
#: _collections_abc's, GoTime and FileSig named tuples written out, the server's counts a dict with __missing__),
#: nor heapq's, bisect's and struct's Python wrappers of their C modules
NOT_BEFORE_THE_FIRST_REPLY_SCRIPT = NOT_BEFORE_THE_FIRST_REPLY + ("importlib.util", "importlib.machinery",
                                                                  "warnings", "runpy", "collections", "functools",
                                                                  "contextlib", "operator", "types", "reprlib",
                                                                  "keyword", "heapq", "bisect", "struct")
#: the server runs the Python reference (``WQTOOL_PURE_PYTHON=1``, or the C module not built: wire.proto_c), whose
#: first reply takes what the C path leaves out, and only that: the empty job table is fastreplay.new_table's
#: ``PyJobTable`` (wqtool/server/workq/queue.py:73-80 imports the replay's modules for it: fastreplay, replay,
#: reader, model, fastpath, findings, fileio, progress, offsets, and the stdlib they take: dataclasses, enum, re,
#: inspect, tokenize, collections, functools, ...), and a record is written by the engine's encoders
#: (server.py:94-127 add_record_py / short_record_py: fastpath, model, struct, google_crc32c) instead of
#: _proto.add_record / short_record. The rest of the lists above holds on both paths: no event loop, no CLI, no
#: construct, no json, typing, datetime, socket, no verifier, writer, file primitives, runpy nor importlib.util.
REFERENCE = wire._c is None
REFERENCE_TAKES = ("wqtool.engine.workq.fastreplay", "wqtool.engine.workq.replay", "wqtool.engine.workq.reader",
                   "wqtool.engine.workq.model", "wqtool.engine.workq.fastpath", "wqtool.engine.findings",
                   "wqtool.engine.fileio", "wqtool.engine.progress", "wqtool.offsets", "dataclasses", "enum", "re",
                   "inspect", "tokenize", "collections", "functools", "contextlib", "operator", "types", "reprlib",
                   "keyword", "warnings", "importlib.machinery", "struct", "google_crc32c")


def _heavy(modules: list[str], banned: tuple[str, ...]) -> list[str]:
    """The modules of ``banned`` (or in one of its packages) imported, but for ``REFERENCE_TAKES`` when the server
    runs the Python reference."""
    def under(m: str, names) -> bool:
        return any(m == h or m.startswith(h + ".") for h in names)
    return sorted(m for m in modules if under(m, banned) and not (REFERENCE and under(m, REFERENCE_TAKES)))


def _first_reply_probe(tmp_path, request: bytes, lines: int, *args: str,
                       launcher=None) -> tuple[list[str], bytes, list[bytes]]:
    """Start ``wqtool serve`` on an empty directory with ``WQTOOL_SERVE_STARTUP_PROBE``, send ``request`` as soon as
    the port accepts, read ``lines`` reply lines: (the modules imported when the first reply was written, the
    server's log lines, the reply)."""
    probe = tmp_path / "probe"
    port = _free_port()
    p = _serve(port, tmp_path / "log", {"WQTOOL_SERVE_STARTUP_PROBE": str(probe)}, *args, launcher=launcher)
    try:
        s = _connect_when_bound(port, p, 30)
        s.settimeout(20)
        s.sendall(request)
        got = b""
        while got.count(b"\r\n") < lines:
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
        s.close()
        # the event loop takes over (the cyclic collector runs again from then on)
        deadline = time.monotonic() + 60
        while not probe.exists() or "handover" not in probe.read_text():
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.01)
    finally:
        p.terminate()
        _, err = p.communicate(timeout=20)
    assert p.returncode == 0
    text = probe.read_text().splitlines()
    # at the first reply: the event loop's import not started, no cyclic collection (wqtool._entry's hold_gc)
    assert text[0].startswith("cpu_ms ") and text[1:3] == ["import_started False", "gc_enabled False"], text[:4]
    assert text[-1] == "handover gc_enabled True"
    modules = [m for m in text[3:-1] if not m.startswith("thread ")]
    return modules, err, got.split(b"\r\n")[:lines]


_ALC = (b"add %s q 1000 60000 3\r\nabc\r\nlease q 0\r\ncomplete %s 2\r\nok\r\n" % (jid(1), jid(1)), 5)


@pytest.mark.parametrize("request_, lines, args", [
    (b"inspect server\r\n", 4, ()),
    (b"add %s q 1000 60000 3\r\nabc\r\n" % jid(1), 1, ()),
    # sent together: answered before the import starts, so the probe (rewritten at each reply until then) tells
    # what an add, a lease and a complete needed, under both group-commit policies
    (*_ALC, ("-cmdlog-sync", "interval")),
    (*_ALC, ("-cmdlog-sync", "always"))], ids=["inspect", "add", "add-lease-complete-interval", "alc-always"])
def test_the_first_reply_on_an_empty_log_waits_for_no_heavy_import(tmp_path, request_, lines, args):
    """The first requests are answered before the event loop's import starts (it starts once the early loop is
    idle) and without the CLI, construct, dataclasses, enum, re nor the replay's modules: their modules are not
    imported when the first replies are written (under the Python reference: but for what it takes, REFERENCE_TAKES;
    still before the event loop, the CLI and construct)."""
    assert os.access(SCRIPT, os.X_OK), f"no console script at {SCRIPT} (make install-test)"
    modules, err, reply = _first_reply_probe(tmp_path, request_, lines, *args, launcher=(SCRIPT,))
    assert _heavy(modules, NOT_BEFORE_THE_FIRST_REPLY_SCRIPT) == []
    assert "wqtool.server.workq.early" in modules
    assert "signal" not in modules                         # (the early loop takes _signal)
    if lines == 1:
        assert reply == [b"+OK"]
    elif lines == 5:
        assert reply == [b"+OK", b"+OK 1", jid(1) + b" q 1000 3", b"abc", b"+OK"]
        assert "wqtool.engine.workq.payloads" in modules    # (the add's record written: where its body is)
    # the empty log's start says what the replay of the lock files alone says (segments, records, jobs, and the
    # reader's one WQ-NO-SEGMENTS warning), with or without the replay's modules
    line = next(x for x in err.splitlines() if b'msg="log replayed"' in x)
    assert b" segments=0 records=0 bytes=0 jobs=0 " in line and line.split()[-1] == b"warnings=1", line


def test_a_directory_with_more_than_the_lock_files_is_replayed(tmp_path):
    """Anything in the directory but the lock files takes the replay's path: a stray file is the replay's
    WQ-IGNORED-FILE warning (engine/workq/reader.py _discover_dir), and a segment's jobs are restored."""
    log = tmp_path / "log"
    log.mkdir()
    for name in ("append.lock", "read.lock", "notes.txt"):
        (log / name).write_bytes(b"")
    def served(talk) -> bytes:
        """Serve ``log``, ``talk`` to it over one connection, stop it: its 'log replayed' line."""
        port = _free_port()
        p = _serve(port, log, {})
        try:
            _connect_when_bound(port, p, 30).close()
            c = Client(("127.0.0.1", port), timeout=20)
            talk(c)
            c.close()
        finally:
            p.terminate()
            _, err = p.communicate(timeout=20)
        assert p.returncode == 0
        return next(x for x in err.splitlines() if b'msg="log replayed"' in x)

    line = served(lambda c: c.add(jid(5), b"q", 1000, 60000, b"five"))
    assert b" segments=0 records=0 bytes=0 jobs=0 " in line and line.split()[-1] == b"warnings=2", line

    def inspect(c):
        assert c.inspect_queue(b"q") == (1, 0)
    line = served(inspect)
    assert b" segments=1 records=1 " in line and b" jobs=1 " in line and b" warnings=1 " in line, line


def _timestamp_by_datetime(unix_ns: int) -> bytes:
    import datetime as dt
    d = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=unix_ns // 1_000_000_000)
    return b"%04d-%02d-%02dT%02d:%02d:%02dZ" % (d.year, d.month, d.day, d.hour, d.minute, d.second)


@pytest.mark.parametrize("unix_ns", [0, 1, -1, 999_999_999, 1_795_849_576_025_375_574, 951_782_400 * 10**9,
                                     (951_782_400 - 1) * 10**9, 4_107_542_400 * 10**9, -62_135_596_800 * 10**9,
                                     253_402_300_799 * 10**9 + 999_999_999, -86_400 * 10**9 - 1])
def test_inspect_timestamps_are_datetimes_without_importing_it(unix_ns):
    """``inspect``'s times (wire.timestamp) by arithmetic, as the datetime sum they were: leap days, before 1970,
    the first and last second of years 1-9999; outside them datetime's error, as before."""
    from wqtool.server.workq import wire
    assert wire.timestamp(unix_ns) == _timestamp_by_datetime(unix_ns)


@pytest.mark.parametrize("unix_ns", [-62_135_596_801 * 10**9, 253_402_300_800 * 10**9])
def test_inspect_timestamps_outside_datetime_raise_as_before(unix_ns):
    from wqtool.server.workq import wire
    with pytest.raises(OverflowError):
        _timestamp_by_datetime(unix_ns)
    with pytest.raises(OverflowError):
        wire.timestamp(unix_ns)


def serves_a_job(port: int, p: subprocess.Popen) -> None:
    """Once the server ``p`` accepts on ``port``: an add, and a lease that gets that job."""
    _connect_when_bound(port, p, 30).close()
    a = Client(("127.0.0.1", port), timeout=20)
    a.add(jid(9), b"q", 1000, 60000, b"nine")
    assert a.lease([b"q"], 0) == (jid(9), b"q", 1000, b"nine")
    a.close()


def test_without_the_early_loop_the_bound_socket_still_serves(tmp_path):
    """``WQTOOL_SERVE_EARLY=0``: the socket bound before the imports (an ``_socket.socket`` since the early loop
    runs on those) is turned into a ``socket.socket`` for the asyncio loop, which answers and stops as always."""
    port = _free_port()
    p = _serve(port, tmp_path / "log", {"WQTOOL_SERVE_EARLY": "0"})
    try:
        serves_a_job(port, p)
    finally:
        p.terminate()
        _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err.decode()
    assert b"early=" not in err and b"msg=stopped" in err


def test_python_m_wqtool_serve_answers_first_without_the_heavy_imports_and_finds_the_cleaner(tmp_path):
    """``python -m wqtool serve`` (runpy) keeps the lean start, and the cleaner, looked for once the event loop
    runs (not before the first reply), is found: the ``listening`` line says ``cleaning=on``."""
    modules, err, reply = _first_reply_probe(tmp_path, b"inspect server\r\n", 4)
    assert "runpy" in modules
    assert _heavy(modules, NOT_BEFORE_THE_FIRST_REPLY) == []
    line = next(x for x in err.splitlines() if b"msg=listening" in x)
    assert b" cleaning=on" in line, line


class Done:
    """``EarlyLoop.run``'s ``done``, set already: the loop stops at its first iteration, for the hand-over."""

    def is_set(self) -> bool:
        return True


def early_loop():
    """An EarlyLoop on a new listening socket (127.0.0.1, any port), in this process -> (the loop, the socket)."""
    import _socket

    from wqtool.server.workq.early import EarlyLoop
    lsock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    lsock.setblocking(False)
    return EarlyLoop(lsock, lambda: None), lsock


def test_a_stop_asked_for_during_the_hand_over_is_noted_not_fatal():
    """A SIGTERM after the early loop stopped and before the asyncio loop's own handlers are installed (``Server.run``
    installs them after ``Server.start``: the hand-over, the idle spinner, the listening line) is noted by the early
    loop's handler, which stays until ``restore_signals``, and acted on by ``Server.run``: a clean stop, not the
    default action's end (exit -15, which the probe test above met under load, terminated just after the
    hand-over)."""
    import signal

    before = signal.getsignal(signal.SIGTERM)
    loop, lsock = early_loop()
    try:
        loop.run(Done())                                    # stops at once, for the hand-over
        assert signal.getsignal(signal.SIGTERM) == loop._on_signal     # (else the kill below ends this process)
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 10
        while not loop.signals and time.monotonic() < deadline:
            time.sleep(0.001)
        assert loop.signals == [signal.SIGTERM]
    finally:
        loop.restore_signals()
        lsock.close()
    assert signal.getsignal(signal.SIGTERM) == before


_PROBE_IMPORT_THREAD = '''
import sys, threading
_start = threading.Thread.start
def start(self):
    if self.name == "wqtool-import":
        t = sys.modules.get("typing")
        with open(%r, "w") as f:
            f.write("absent" if t is None else "half" if getattr(t.__spec__, "_initializing", False) else "whole")
    return _start(self)
threading.Thread.start = start
'''


def test_typing_is_whole_before_the_import_thread_starts(tmp_path):
    """The event loop's import thread imports asyncio, which imports typing; a dataclass made by the loop thread
    meanwhile (a module a request imports) reads typing from ``sys.modules`` without the import lock (CPython's
    dataclasses ``_get_field``), and a half-imported typing failed it: ``partially initialized module 'typing' has no
    attribute 'ClassVar'``, exit 70, upstream's TestCmdLog/1K reset by its server beside 8 CPU burners. So typing is
    imported whole before the thread starts (a ``sitecustomize`` on PYTHONPATH notes its state at that moment)."""
    probe, seen = tmp_path / "site", tmp_path / "typing-at-start"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(_PROBE_IMPORT_THREAD % str(seen))
    port = _free_port()
    p = _serve(port, tmp_path / "log", {"PYTHONPATH": f"{probe}{os.pathsep}{ROOT}"}, launcher=(SCRIPT,))
    try:
        c = _connect_when_bound(port, p, 30)
        c.sendall(b"inspect server\r\n")
        deadline = time.monotonic() + 30
        while not seen.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.01)
        c.close()
    finally:
        p.terminate()
        _, err = p.communicate(timeout=20)
    assert seen.read_text() == "whole", err.decode()
