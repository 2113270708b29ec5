"""Operability: workq-server's flags and their checks, graceful stop, metrics, the circuit breaker on a failing
disk, in-memory mode."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT, cli
from tests.server.conftest import jid


def run_serve(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wqtool", "serve", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("args, message", [
    (("-cmdlog-sync", "sometimes"), "Invalid cmdlog-sync policy: sometimes"),
    (("-cmdlog-sync", "interval", "-cmdlog-sync-int", "0"), "Invalid sync interval, must be greater than 0"),
    (("-listen", "nowhere"), "expected HOST:PORT"),
    (("-no-such-flag", "1"), "flag provided but not defined: -no-such-flag"),      # as workq-server
])
def test_flag_checks_exit_2(args, message):
    r = run_serve(*args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_go_style_flags_and_sync_always_without_interval_zero(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory(f"-cmdlog-path={d}", "--cmdlog-sync", "always", "-cmdlog-seg-size", "0x400",
                         "-cmdlog-clean-int", "0")
    srv.client().add(jid(0xf001), b"flags", 1000, 60000, b"x")
    assert srv.stop() == 0
    assert os.listdir(d)


def test_sigterm_stops_cleanly_and_releases_the_locks(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d, "-cmdlog-sync", "os")
    c = srv.client()
    c.add(jid(0xf002), b"stop", 1000, 60000, b"x")
    assert srv.stop() == 0
    err = srv.stderr_text()
    assert "msg=stopping signal=SIGTERM" in err and "msg=stopped" in err
    srv2 = server_factory("-cmdlog-path", d)             # the locks are free again at once
    assert srv2.client().inspect_job(jid(0xf002))["state"] == 0
    assert srv2.stop(sig=2) == 0                          # SIGINT too


def test_in_memory_mode_writes_nothing(server_factory, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    srv = server_factory()
    srv.client().add(jid(0xf003), b"mem", 1000, 60000, b"x")
    srv.stop()
    assert os.listdir(tmp_path) == []


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_metrics_endpoint(server_factory, tmp_path):
    port = free_port()
    srv = server_factory("-cmdlog-path", str(tmp_path / "log"), "--metrics", str(port))
    c = srv.client()
    c.add(jid(0xf004), b"met", 1000, 60000, b"x")
    c.expect(b"bogus\r\n", b"-CLIENT-ERROR Unknown command\r\n")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'wqtool_serve_replies_total{command="add",class="ok"} 1' in text
    assert 'wqtool_serve_replies_total{command="?",class="client_error"} 1' in text
    assert 'wqtool_serve_jobs{state="new"} 1' in text and "wqtool_serve_connections 1" in text
    assert "wqtool_serve_read_only 0" in text and "wqtool_serve_records_total 1" in text


def test_circuit_breaker_on_a_failing_disk(tmp_path):
    """An append fails: the command that made the record waits (as upstream's retry loop blocks it), mutating
    commands are refused with upstream's SERVER-ERROR, reads go on; once the disk works again the waiting reply
    is released and the record is in the log; read-only lasts until restart, as upstream."""
    from wqtool.server.workq.server import ServeOptions, Server, StructLog

    async def scenario():
        srv = Server(ServeOptions(listen="127.0.0.1:0", cmdlog_path=str(tmp_path / "log"), create=True),
                     log=StructLog("error"), out=open(os.devnull, "w"))
        await srv.start()
        host, port = srv.address.rsplit(":", 1)
        r, w = await asyncio.open_connection(host, int(port))

        async def ask(data: bytes, n: int) -> bytes:
            w.write(data)
            return await asyncio.wait_for(r.readexactly(n), 5)

        assert await ask(b"add %s br 1000 60000 1\r\nx\r\n" % jid(0xf010), 5) == b"+OK\r\n"
        real = srv.appender.append
        fail = {"on": True}

        def flaky(recs):
            if fail["on"]:
                raise OSError(28, "No space left on device")
            return real(recs)

        srv.appender.append = flaky
        w.write(b"add %s br 1000 60000 1\r\ny\r\n" % jid(0xf011))
        await asyncio.sleep(0.3)
        assert srv.handlers.read_only and not r._buffer           # the reply waits for its record
        r2, w2 = await asyncio.open_connection(host, int(port))
        w2.write(b"add %s br 1000 60000 1\r\nz\r\ninspect queue br\r\n" % jid(0xf012))
        ro = b"-SERVER-ERROR Read-only mode triggered by cmdlog circuit breaker\r\n"
        assert await asyncio.wait_for(r2.readexactly(len(ro)), 5) == ro
        assert (await asyncio.wait_for(r2.readuntil(b"scheduled-len 0\r\n"), 5)).startswith(b"+OK 1\r\nbr 2\r\n")
        fail["on"] = False
        assert await asyncio.wait_for(r.readexactly(5), 5) == b"+OK\r\n"   # released after the retry
        w2.write(b"delete %s\r\n" % jid(0xf010))
        assert await asyncio.wait_for(r2.readexactly(len(ro)), 5) == ro    # read-only until restart
        w.close()
        w2.close()
        await srv.shutdown()

    asyncio.run(scenario())
    rows = cli("dump", "-o", "jsonl", str(tmp_path / "log")).out.splitlines()[:-1]
    assert len(rows) == 2 and cli("verify", str(tmp_path / "log")).code == 0


def test_an_append_failing_after_a_roll_over_writes_no_record_twice(tmp_path):
    """A batch of records rolls over to a new segment and the write there fails: the records already in the old
    segment are not queued again, so the retry after the disk recovers writes each record once (before, the log
    held a duplicate add and the next start-up refused it: WQ-DUPLICATE-JOB)."""
    from wqtool.server.workq.server import ServeOptions, Server, StructLog

    done = []

    async def scenario():
        srv = Server(ServeOptions(listen="127.0.0.1:0", cmdlog_path=str(tmp_path / "log"), create=True, seg_size=200),
                     log=StructLog("error"), out=open(os.devnull, "w"))
        await srv.start()
        host, port = srv.address.rsplit(":", 1)
        r, w = await asyncio.open_connection(host, int(port))
        w.write(b"add %s br 1000 60000 1\r\nx\r\n" % jid(0xf020))
        assert await asyncio.wait_for(r.readexactly(5), 5) == b"+OK\r\n"
        ap = srv.appender
        real_run, real_append = ap._write_run, ap.append
        fail = {"on": True}

        def flaky_run(run, nbytes):
            if fail["on"] and ap.fd is not None and ap.size == 8:       # the first run of a new segment
                raise OSError(28, "No space left on device")
            return real_run(run, nbytes)

        def append(recs):
            try:
                return real_append(recs)
            except OSError as exc:
                done.append(exc.records_done)
                raise

        ap._write_run, ap.append = flaky_run, append
        w.write(b"".join(b"add %s br 1000 60000 1\r\ny\r\n" % jid(0xf021 + i) for i in range(4)))
        await asyncio.sleep(0.3)
        assert srv.handlers.read_only and not r._buffer            # the replies wait for their records
        fail["on"] = False
        assert await asyncio.wait_for(r.readexactly(20), 5) == b"+OK\r\n" * 4
        w.close()
        await srv.shutdown()

    asyncio.run(scenario())
    assert done and done[0] >= 1                  # the failure came after a roll-over had written records
    rows = [json.loads(x) for x in cli("dump", "-o", "jsonl", str(tmp_path / "log")).out.splitlines()[:-1]]
    ids = [x["job_id"] for x in rows]
    assert len(ids) == 5 and len(set(ids)) == 5, ids
    assert cli("verify", str(tmp_path / "log")).code == 0


def test_a_failed_fsync_is_retried_without_writing_the_records_again(tmp_path):
    """-cmdlog-sync always: the records are written and the fsync fails. Nothing is acknowledged; the records
    are cut from the segment and written again by the retry (once: no duplicate), then fsynced."""
    from wqtool.server.workq.server import ServeOptions, Server, StructLog

    async def scenario():
        srv = Server(ServeOptions(listen="127.0.0.1:0", cmdlog_path=str(tmp_path / "log"), create=True, sync="always"),
                     log=StructLog("error"), out=open(os.devnull, "w"))
        await srv.start()
        host, port = srv.address.rsplit(":", 1)
        r, w = await asyncio.open_connection(host, int(port))
        real = srv.appender.sync
        fail = {"on": True}

        def flaky():
            if fail["on"]:
                raise OSError(5, "Input/output error")
            return real()

        srv.appender.sync = flaky
        w.write(b"".join(b"add %s br 1000 60000 1\r\ny\r\n" % jid(0xf031 + i) for i in range(3)))
        await asyncio.sleep(0.3)
        assert srv.handlers.read_only and not r._buffer            # not durable: not acknowledged
        # cut back, to be written again: after a failed fsync the kernel may drop the pages and a later fsync
        # succeed without them ("fsyncgate"), so those bytes are not trusted
        assert os.path.getsize(str(tmp_path / "log" / "000000001.log")) == 8
        fail["on"] = False
        assert await asyncio.wait_for(r.readexactly(15), 5) == b"+OK\r\n" * 3
        w.close()
        await srv.shutdown()

    asyncio.run(scenario())
    ids = [json.loads(x)["job_id"] for x in cli("dump", "-o", "jsonl", str(tmp_path / "log")).out.splitlines()[:-1]]
    assert len(ids) == 3 and len(set(ids)) == 3, ids
    assert cli("verify", str(tmp_path / "log")).code == 0


def test_stop_while_a_client_waits_in_run(server_factory, tmp_path):
    d = str(tmp_path / "log")
    srv = server_factory("-cmdlog-path", d)
    s = srv.sock()
    s.sendall(b"run %s stop-run 1000 60000 1\r\nr\r\n" % jid(0xf020))
    time.sleep(0.3)
    assert srv.stop() == 0
    rows = cli("dump", "-o", "jsonl", d).out.splitlines()[:-1]
    assert len(rows) == 1 and '"cmd": "expire"' in rows[0]     # the run ended, its expire written before the end
    assert cli("verify", d).code == 0
    s.close()


@pytest.mark.parametrize("lean", [True, False], ids=["lean-start", "cli"])
def test_a_missing_cmdlog_path_is_refused_with_nothing_created(tmp_path, lean):
    """As workq-server (cmd/workq-server/main.go:65 -> int/captain/filemutex.go:16: ``open …/read.lock: no such
    file or directory``): a mistyped path does not start an empty queue. Exit 2, nothing created, no port bound;
    ``--create`` makes it. Both ways in: the lean start (plain flags) and the CLI (``--traceback`` takes it)."""
    d = tmp_path / "nowhere" / "log"
    extra = () if lean else ("--traceback",)
    r = subprocess.run([sys.executable, "-m", "wqtool", *extra, "serve", "-listen", "127.0.0.1:0", "-cmdlog-path",
                        str(d)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert f"open {d}/read.lock: no such file or directory" in r.stderr, r.stderr
    assert "Listening" not in r.stdout
    assert not (tmp_path / "nowhere").exists()
    f = tmp_path / "file"
    f.write_bytes(b"")
    r = run_serve("-listen", "127.0.0.1:0", "-cmdlog-path", str(f))
    assert r.returncode == 2 and f"open {f}/read.lock: not a directory" in r.stderr, r.stderr


def test_create_makes_a_missing_cmdlog_path(server_factory, tmp_path):
    d = tmp_path / "new" / "log"
    srv = server_factory("-cmdlog-path", str(d), "--create", "-cmdlog-sync", "always")
    srv.client().add(jid(0xf003), b"made", 1000, 60000, b"x")
    assert srv.stop() == 0
    assert sorted(os.listdir(d)) == ["000000001.log", "append.lock", "read.lock"]


@pytest.mark.parametrize("error, code", [("FormatError", 3), ("UsageError", 2), ("InputError", 5),
                                         ("PackMismatch", 70), ("OSError", 5), ("KeyError", 70)])
def test_an_error_after_the_lean_start_listened_gets_the_clis_exit_code(tmp_path, monkeypatch, error, code):
    """The lean start (no CLI imported) hands an error that stopped a server after it listened to the CLI's funnel:
    the exit code comes from the CLI's table (wqtool/exitcodes.py), not a 5 for every wqtool error."""
    import wqtool.errors
    from tests.conftest import cli
    from wqtool.server import prebind
    from wqtool.server.workq.server import Server
    exc_type = getattr(wqtool.errors, error, None) or {"OSError": OSError, "KeyError": KeyError}[error]

    async def run(self):
        await self.start()
        raise exc_type("broke after listening") if exc_type is not wqtool.errors.PackMismatch else \
            exc_type("broke after listening", expected="a", actual="b", path=str(tmp_path))
    monkeypatch.setattr(Server, "run", run)
    argv = ["-listen", "127.0.0.1:0", "-cmdlog-path", str(tmp_path), "-cmdlog-clean-int", "0"]
    assert prebind.lean(argv) is None               # handed over: the CLI reports it
    r = cli("serve", *argv)
    assert r.code == code, r.err
    assert "broke after listening" in r.err
    assert prebind.handed_over() is None            # once
