"""Shared test helpers: the repo root, fixture paths, and an in-process CLI runner."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKQ_FIXTURES = os.path.join(ROOT, "fixtures", "workq")
UPSTREAM = sorted(n for n in os.listdir(WORKQ_FIXTURES) if n.startswith("upstream-"))
ALL_WORKQ = sorted(n for n in os.listdir(WORKQ_FIXTURES) if os.path.isdir(os.path.join(WORKQ_FIXTURES, n, "log")))
AS_OF = "2026-11-21T23:30:00Z"

# A runner started as a background job of a non-interactive shell (``cmd &`` in a script) inherits SIGINT
# ignored (POSIX: asynchronous lists ignore SIGINT and SIGQUIT without job control), and so would every wqtool the
# tests start: the Ctrl-C tests (test_progress_follow, test_operator2) send them SIGINT. Caught, not ignored, here:
# a child's handler is reset to the default by exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Pinned terminal for snapshot stability.
os.environ["COLUMNS"] = "120"
os.environ["TERMINAL_WIDTH"] = "120"
os.environ["NO_COLOR"] = "1"


#: ``make test-quick`` (WQTOOL_TESTS=quick): property tests run a tenth of their examples (at least 10); the full
#: run (``make test``, CI) runs every example. Use ``max_examples=examples(N)``.
QUICK = os.environ.get("WQTOOL_TESTS", "") == "quick"


def examples(n: int) -> int:
    return max(10, n // 10) if QUICK else n


#: ``make test-quick`` runs every SWEEP_STRIDE-th case of a test marked ``sweep`` (in collection order, the first
#: always); the full run runs them all.
SWEEP_STRIDE = 5


def pytest_collection_modifyitems(config, items):
    if not QUICK:
        return
    seen: dict[tuple, int] = {}
    kept, dropped = [], []
    for item in items:
        if item.get_closest_marker("sweep") is None:
            kept.append(item)
            continue
        key = (item.fspath, getattr(item, "originalname", item.name))
        n = seen[key] = seen.get(key, -1) + 1
        (kept if n % SWEEP_STRIDE == 0 else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def fixture_log(name: str) -> str:
    return os.path.join(WORKQ_FIXTURES, name, "log")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def cli(*argv: str) -> CliResult:
    """Run wqtool in-process through the same funnel as the console script."""
    from wqtool.cli import run
    from wqtool.render.console import reset
    out, err = io.StringIO(), io.StringIO()
    reset()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run([str(a) for a in argv])
    reset()
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def in_root(monkeypatch):
    """Run from the repo root so paths in outputs are the relative fixtures/... paths."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture
def copy_log(tmp_path):
    """Copy a fixture's log into tmp_path (writable) and return the new directory."""
    def _copy(name: str) -> str:
        dst = tmp_path / name
        shutil.copytree(fixture_log(name), dst)
        for p in dst.iterdir():
            p.chmod(0o644)
        return str(dst)
    return _copy


def run_on_pty(argv, *, cols: int = 120, side: str = "stdout", env: dict | None = None, timeout: float = 120):
    """Run ``python -m wqtool argv`` with its stdout or stderr (``side``) on a pseudo-terminal ``cols`` wide, the
    other stream to a temporary file (a pipe could fill up). Returns (terminal text with "\r\n" as "\n", the
    other stream's bytes, exit code). COLUMNS / TERMINAL_WIDTH are dropped from the environment (``env``, default
    ours)."""
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import tempfile
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    sink = tempfile.TemporaryFile()
    streams = {"stdout": slave, "stderr": sink} if side == "stdout" else {"stdout": sink, "stderr": slave}
    p = subprocess.Popen([sys.executable, "-m", "wqtool", *argv], cwd=ROOT, env=env, **streams)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:        # EIO: the child closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    p.wait(timeout=timeout)
    os.close(master)
    sink.seek(0)
    return b"".join(chunks).decode().replace("\r\n", "\n"), sink.read(), p.returncode


def without_aws_environment(monkeypatch) -> None:
    """No AWS credentials, endpoint or config files, and no fsspec defaults left by another test: what reaches s3fs
    is only what the test itself sets (``--spark-conf spark.hadoop.fs.s3a.*``, ``uris.use_spark_conf``)."""
    from wqtool.engine import uris
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setattr(uris, "DEFAULTS", {})


def already_processed_log(d: str, n: int) -> str:
    """A one-segment log: a job added, started, completed, then ``n`` start-attempts on it (n errors
    WQ-ALREADY-PROCESSED, exit 4) — more findings than the commands show."""
    from wqtool.engine.workq import writer
    from wqtool.formats._common import GoTime
    from wqtool.formats.workq import CmdType
    jid = bytes.fromhex("0123456789ab4def8123456789abcdef")
    t = GoTime(63930899691, 0, -1)
    with writer.SegmentWriter(d) as w:
        w.append(writer.add(jid, "q", ttr=60_000, ttl=86_400_000, created=t), t)
        w.append(writer.simple(CmdType.START_ATTEMPT, jid), t)
        w.append(writer.result(CmdType.COMPLETE, jid), t)
        for _ in range(n):
            w.append(writer.simple(CmdType.START_ATTEMPT, jid), t)
    return d


def jsonl_rows(text: str) -> list[dict]:
    """The rows of a ``-o jsonl`` stream, without its closing ``{"summary": …}`` line."""
    import json
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if not (len(r) == 1 and "summary" in r)]
