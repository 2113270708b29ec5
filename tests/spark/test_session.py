"""Sessions as a user meets them: a fresh process with --master / --spark-conf (Spark's logging at WARN), Spark
Connect (--remote) against a real server on loopback, and the one-line errors (no Java, no server, a failed job,
an export that would overwrite)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import AS_OF, ROOT, cli

WQTOOL = os.path.join(os.path.dirname(sys.executable), "wqtool")
LOGS = [os.path.join("fixtures", "workq", n, "log") for n in ("sample-clean", "duplicate-add", "upstream-a-run1")]
KQ = os.path.join("fixtures", "kestrel", "clean-journal", "queue")
CRC = os.path.join("fixtures", "workq", "crc-mismatch-mid-segment", "log")   # failfast: a read error (WQ-CRC)


def _run(*args, env=None, timeout=240):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([WQTOOL, *args], cwd=ROOT, env=e, capture_output=True, text=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_master_and_spark_conf_in_a_fresh_process():
    """A real start-up: the master and confs given are used, stderr holds only wqtool's progress lines and
    Spark's WARN-level logging, even with the user's own driver Java options."""
    local = cli("verify", "-o", "json", "--as-of", AS_OF, *LOGS, KQ)
    res = _run("verify", "--engine", "spark", "--master", "local[1]", "--spark-conf", "spark.sql.shuffle.partitions=3",
               "--spark-conf", "spark.driver.extraJavaOptions=-Dwqtool.test=1", "-o", "json", "--as-of", AS_OF,
               *LOGS, KQ)
    assert (res.returncode, json.loads(res.stdout)) == (local.code, json.loads(local.out)), res.stderr
    lines = res.stderr.splitlines()
    assert "spark: starting a session on local[1] ..." in lines
    assert any(ln.endswith("on 1 slot(s)") for ln in lines), lines     # local[1]: one executor slot
    noise = [ln for ln in lines if not ln.startswith("spark: ")]
    assert noise == [], noise          # not even the JDK's incubator-module line
    assert not [ln for ln in lines if " INFO " in ln]


def test_quiet_verify_on_spark_prints_nothing_for_cron():
    res = _run("verify", "--engine", "spark", "--master", "local[1]", "-q", "--as-of", AS_OF, *LOGS)
    assert (res.returncode, res.stdout, res.stderr) == (4, "", "")


def test_no_java_is_one_line_exit_5():
    res = _run("verify", "--engine", "spark", LOGS[0], env={"JAVA_HOME": "/nonexistent"}, timeout=60)
    assert res.returncode == 5, res.stderr
    last = res.stderr.splitlines()[-1]
    assert last.startswith("wqtool: --engine spark: no session on local[*] (Java 17 on PATH or JAVA_HOME?): ")
    assert "Traceback" not in res.stderr


def test_a_connect_server_that_never_answers_is_one_line_exit_5_within_the_bound():
    """A server that accepts the connection and says nothing — what a plain server is to PySpark's TLS client,
    which a token= URL to an address other than 'localhost' turns on — used to hang the CLI without end. (A new
    process: the client's thread, left waiting, holds PySpark's session-builder lock.)"""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():                       # accept, never answer
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        res = _run("verify", "--engine", "spark", "--remote", f"sc://127.0.0.1:{port}/;token=s3cret", LOGS[0],
                   env={"WQTOOL_SPARK_CONNECT_WAIT": "3"}, timeout=60)
        assert res.returncode == 5, res.stderr
        assert res.stderr.splitlines()[-1] == (
            f"wqtool: --engine spark: the Spark Connect server at sc://127.0.0.1:{port}/;token=*** accepted the "
            "connection but did not answer within 3 s; with token= in the URL PySpark speaks TLS (to any host but "
            "'localhost'): a server without TLS never answers — use sc://localhost:PORT/;token=... for a local "
            "server, or TLS on the server")
        assert "s3cret" not in res.stderr and "Traceback" not in res.stderr
        assert held                     # it did connect
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        srv.close()


def test_no_connect_server_is_one_line_exit_5_and_the_token_stays_secret():
    port = _free_port()
    t = time.monotonic()
    res = cli("verify", "--engine", "spark", "--remote", f"sc://localhost:{port}/;token=s3cret", LOGS[0])
    assert time.monotonic() - t < 15
    assert res.code == 5
    assert f"no Spark Connect server at sc://localhost:{port}/;token=*** (localhost:{port})" in res.err
    assert "s3cret" not in res.err
    slash = cli("verify", "--engine", "spark", "--remote", f"sc://localhost:{port}/;token=ab/cd+ef==;use_ssl=true",
                LOGS[0])
    assert "token=***;use_ssl=true" in slash.err and "cd+ef" not in slash.err
    bad = cli("verify", "--engine", "spark", "--remote", "http://example", LOGS[0])
    assert bad.code == 2 and "--remote: expected sc://host[:port]" in bad.err


def test_a_failed_job_is_one_line(spark):
    from wqtool.errors import SparkError
    from wqtool.spark.session import job_errors
    with pytest.raises(SparkError) as info:
        with job_errors():
            spark.read.format("workq").option("mode", "failfast").load(CRC).collect()
    msg = str(info.value)
    assert msg.startswith("--engine spark: a Spark job failed: ValueError: workq (mode failfast): "
                          "000000001.log@0x11c: WQ-CRC"), msg
    assert "\n" not in msg
    with pytest.raises(KeyError):      # not Spark's: passes through untouched
        with job_errors():
            raise KeyError("x")


def test_task_exit_codes_keep_their_meaning():
    """A failed Spark job: a wqtool error raised in a task keeps its exit code, an OSError is 5, any other
    Python exception is a bug (70, as locally), a failure without a Python exception (executor lost) is 5."""
    from wqtool.cli import exit_code_for
    from wqtool.errors import SparkError
    from wqtool.spark.session import spark_message, task_cause

    def _task_exit_code(exc):
        err = SparkError("x")
        err.cause = task_cause(exc)
        return exit_code_for(err)

    class FakeSparkError(Exception):
        pass
    FakeSparkError.__module__ = "pyspark.errors.exceptions.captured"
    tb = "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n  File \"x.py\"\n{}"
    for line, code in (("wqtool.errors.UnknownOpcode: unknown command type 9", 3), ("wqtool.errors.InputError: gone", 5),
                       ("FileNotFoundError: [Errno 2] No such file", 5), ("KeyError: 'job'", 70)):
        exc = FakeSparkError(tb.format(line))
        assert _task_exit_code(exc) == code, line
        assert spark_message(exc) == (line[len("wqtool.errors."):] if line.startswith("wqtool.") else line)
    assert _task_exit_code(FakeSparkError("org.apache.spark.SparkException: Job aborted: executor lost")) == 5


def test_a_failed_job_is_one_line_in_a_fresh_process(tmp_path):
    """Spark's own ERROR/WARN lines about the failed task (with stack traces) are off: wqtool's line says it."""
    script = tmp_path / "fail.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {ROOT!r})
from wqtool.spark.session import build_session, job_errors
from wqtool.errors import SparkError
from wqtool.cli import exit_code_for
spark = build_session(master="local[1]")
try:
    with job_errors():
        spark.read.format("workq").option("mode", "failfast").load({CRC!r}).collect()
except SparkError as e:
    print(int(exit_code_for(e)), e)
finally:
    spark.stop()     # as the commands do (session.spark_session)
""")
    res = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert res.stdout.startswith("70 --engine spark: a Spark job failed: ValueError: workq (mode failfast): "), \
        res.stdout + res.stderr
    assert res.stderr == "", res.stderr


def test_export_never_overwrites_and_binary_needs_parquet(tmp_path):
    out = tmp_path / "exists"
    out.mkdir()
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--out", str(out), LOGS[0])
    assert res.code == 2 and "already exists; the export never overwrites" in res.err
    assert cli("dump", "--payload", "binary", LOGS[0]).code == 2


_SERVER: dict = {}     # the Connect server's process id (connect_server)


def _server_pythons(pid: int) -> int:
    """The Python processes under the Connect server (its PySpark daemon and workers)."""
    ps = subprocess.run(["ps", "-eo", "pid=,ppid=,comm="], capture_output=True, text=True, timeout=30).stdout
    kids: dict[int, list] = {}
    for line in ps.splitlines():
        c, pp, comm = line.split(None, 2)
        kids.setdefault(int(pp), []).append((int(c), comm))
    todo, n = [pid], 0
    while todo:
        for c, comm in kids.get(todo.pop(), []):
            todo.append(c)
            n += comm.startswith("python")
    return n


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server (local[2]) on a free loopback port, with a token; killed at the end."""
    port, token = _free_port(), "wq-test-token"
    env = dict(os.environ, SPARK_CONNECT_AUTHENTICATE_TOKEN=token)
    log = tmp_path_factory.mktemp("connect") / "server.out"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "spark", "connect_server.py"),
                                 str(port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and "ready" not in log.read_text().split():
            time.sleep(0.5)
        assert "ready" in log.read_text().split(), \
            f"the Spark Connect server did not start (exit {proc.poll()}):\n{log.read_text()[-2000:]}"
        _SERVER["pid"] = proc.pid
        yield f"sc://localhost:{port}/;token={token}"
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_spark_connect_gives_the_local_results(connect_server, tmp_path):
    """--remote: the same verify document, replay digest, stats and export as the local engine."""
    r = connect_server
    local = cli("verify", "-o", "json", "--as-of", AS_OF, *LOGS, KQ)
    res = _run("verify", "--engine", "spark", "--remote", r, "-o", "json", "--as-of", AS_OF, *LOGS, KQ)
    assert (res.returncode, json.loads(res.stdout)) == (local.code, json.loads(local.out)), res.stderr
    assert "token=***" in res.stderr and "wq-test-token" not in res.stderr
    wrong = _run("verify", "--engine", "spark", "--remote", r.replace("wq-test-token", "nope"), LOGS[0])
    assert wrong.returncode == 5 and wrong.stderr.splitlines()[-1].startswith(
        "wqtool: --engine spark: no session on sc://localhost:") and "UNAUTHENTICATED" in wrong.stderr, wrong.stderr
    for path in (LOGS[2], KQ):
        a = _run("replay", "--engine", "spark", "--remote", r, "-o", "json", "--as-of", AS_OF, path)
        b = cli("replay", "-o", "json", "--as-of", AS_OF, path)
        assert (a.returncode, json.loads(a.stdout)) == (b.code, json.loads(b.out)), a.stderr
    a = _run("stats", "--engine", "spark", "--remote", r, "-o", "json", "--as-of", AS_OF, *LOGS, KQ)
    b = cli("stats", "-o", "json", "--as-of", AS_OF, *LOGS, KQ)
    assert (a.returncode, json.loads(a.stdout)) == (b.code, json.loads(b.out)), a.stderr
    out = str(tmp_path / "export")
    a = _run("dump", "--engine", "spark", "--remote", r, "-o", "parquet", "--as-of", AS_OF, "--out", out, *LOGS)
    assert a.returncode == cli("dump", "-o", "jsonl", "--as-of", AS_OF, *LOGS).code == 4, a.stderr
    import pyarrow.parquet as pq
    rows = pq.read_table(out + "/records").to_pylist()
    local_rows = [json.loads(line) for line in cli("dump", "-o", "jsonl", *LOGS).out.splitlines()[:-1]]
    assert len([r_ for r_ in rows if r_["_corrupt"] is None]) == len(local_rows)
    found = pq.read_table(out + "/findings").to_pylist()
    assert {f["code"] for f in found} >= {"WQ-DUPLICATE-JOB", "WQ-TTL-RESET"}


def test_progress_lines_while_a_job_runs(spark):
    """A job longer than the interval reports its stage's task counts (only when they change)."""
    from wqtool.spark.session import task_progress, warm_up
    lines: list[str] = []
    with task_progress(spark, lines.append, every_s=0.2):
        warm_up(spark, hold_s=1.5)
    assert lines, "no progress line during a 1.5 s job"
    assert all(ln.startswith("spark: stage ") and "task(s) done" in ln for ln in lines), lines
    assert any(ln.endswith("0/2 task(s) done, 2 running") for ln in lines), lines   # both warm-up tasks hold a slot
    assert len(lines) == len(set(lines))          # a line only when the counts changed
    import threading
    with task_progress(spark, None, every_s=0.2):   # no progress callback (verify -q): no polling thread
        assert "wqtool-spark-progress" not in {t.name for t in threading.enumerate()}
    with task_progress(spark, lines.append, every_s=0.2):
        assert "wqtool-spark-progress" in {t.name for t in threading.enumerate()}
    assert "wqtool-spark-progress" not in {t.name for t in threading.enumerate()}   # stopped at the end


def test_the_jvm_stderr_filter_drops_only_worker_teardown(capfd):
    """_pump: the JDK's incubator line and a PySpark daemon worker's BrokenPipe / ConnectionReset traceback go;
    any other line or traceback (a worker's real error) passes whole, in order."""
    from wqtool.spark.session import _pump
    teardown = (b"Traceback (most recent call last):\n"
                b'  File "/x/pyspark.zip/pyspark/daemon.py", line 264, in manager\n'
                b"    code = worker(sock, authenticated)\n"
                b"ConnectionResetError: [Errno 104] Connection reset by peer\n")
    real = (b"Traceback (most recent call last):\n"
            b'  File "/x/pyspark.zip/pyspark/worker.py", line 1, in main\n'
            b"ValueError: boom\n")
    rfd, wfd = os.pipe()
    os.write(wfd, b"WARNING: Using incubator modules: jdk.incubator.vector\n" + teardown + b"kept line\n" + real
             + teardown.replace(b"ConnectionResetError: [Errno 104] Connection reset by peer",
                                b"BrokenPipeError: [Errno 32] Broken pipe") + b"Traceback (most recent call last):\n")
    os.close(wfd)
    _pump(rfd)
    assert capfd.readouterr().err == (b"kept line\n" + real + b"Traceback (most recent call last):\n").decode()


@pytest.mark.slow
def test_connect_calls_leave_no_python_workers_behind(connect_server):
    """Issue 24 item 6: 20 CLI calls through one Connect server: its Python processes after the 20th are no more
    than after the first (measured here: 6 then 5; the issue saw a new worker pool per call, 26 after 10)."""
    log = LOGS[2]
    counts = []
    for _ in range(20):
        r = _run("verify", "-q", "--engine", "spark", "--remote", connect_server, log)
        assert r.returncode == 0, r.stderr
        counts.append(_server_pythons(_SERVER["pid"]))
    assert counts[0] > 0 and counts[-1] <= counts[0], counts


def test_a_local_jvm_compiles_with_c1_only_for_a_command(spark):
    """Local mode: a command's session (``sources=False``: fleet jobs) runs C1 only (session.LOCAL_JIT, measured
    in bench_fleet), as the JVM shares the Python tasks' cores; a data-source session (this test session,
    ``sources=True``) keeps the full JIT (its rows cost less CPU once compiled); the caller's own JIT tiers win,
    and a cluster's driver keeps the JVM's default."""
    import inspect

    from wqtool.spark import session
    from wqtool.spark.session import LOCAL_JIT, driver_java_opts
    args = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                .getInputArguments())
    assert LOCAL_JIT not in args
    src = inspect.getsource(session.build_session)     # the command's session (open_session: sources=False)
    assert "driver_java_opts(settings, local and not sources)" in src
    assert "build_session(master=master, conf=settings, remote=remote, sources=False)" in \
        inspect.getsource(session.open_session)
    assert driver_java_opts({}, True).endswith(" " + LOCAL_JIT)
    assert LOCAL_JIT not in driver_java_opts({}, False)
    mine = driver_java_opts({"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"}, True)
    assert "TieredStopAtLevel=4" in mine and LOCAL_JIT not in mine


def test_a_command_session_talks_to_its_python_workers_over_a_unix_socket(spark):
    """On loopback TCP a task's one input row and its end each waited ~40 ms (Nagle's algorithm against delayed
    ACKs, docs/spark.md); a classic session built here uses Spark's Unix-socket transport, and a caller's
    --spark-conf still wins."""
    from wqtool.spark.session import _DEFAULT_CONF
    assert spark.conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert _DEFAULT_CONF["spark.python.unix.domain.socket.enabled"] == "true"


def _daemon_socket(d, *, held: bool):
    """A socket file named as PySpark's worker daemon names its own (``.<uuid4>.sock``), bound by a child
    process that is then killed (``held=False``: the file stays, nobody has it bound) or by this process."""
    import uuid
    path = os.path.join(str(d), f".{uuid.uuid4()}.sock")
    if held:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(1)
        return path, s
    child = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\n"
                              "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)\n"
                              "print('ok', flush=True); time.sleep(600)", path], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ok\n"
    child.kill()                 # as a killed session's daemon: no SIGTERM handler ran, the file stays
    child.wait()
    return path, None


def test_stale_daemon_sockets_are_removed_at_session_start_only_when_nobody_holds_them():
    """A killed session leaves its worker daemons' Unix sockets (``/tmp/.<uuid>.sock``); a session cleans them
    at start: a dead daemon's socket a minute old goes; a live one's (bound), a young one, a regular file of
    that name and a dead socket of another name stay."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="wq", dir="/tmp") as d:      # short: a socket path has 107 bytes
        _clean_stale_sockets_in(d)


def _clean_stale_sockets_in(tmp_path):
    from wqtool.spark.session import STALE_SOCKET_AGE_S, clean_stale_sockets, socket_dir
    dead, _ = _daemon_socket(tmp_path, held=False)
    young, _ = _daemon_socket(tmp_path, held=False)
    live, holder = _daemon_socket(tmp_path, held=True)
    other = os.path.join(str(tmp_path), "other.sock")
    os.rename(_daemon_socket(tmp_path, held=False)[0], other)
    plain = os.path.join(str(tmp_path), ".00000000-0000-4000-8000-000000000000.sock")
    open(plain, "w").close()
    try:
        old = time.time() - STALE_SOCKET_AGE_S - 5
        for p in (dead, live, other, plain):
            os.utime(p, (old, old))
        assert clean_stale_sockets(str(tmp_path)) == [dead]
        assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in (young, live, other, plain))
        assert clean_stale_sockets(str(tmp_path), now=time.time() + STALE_SOCKET_AGE_S + 5) == [young]
    finally:
        holder.close()
    assert socket_dir({}) == "/tmp"
    assert socket_dir({"spark.driver.extraJavaOptions": "-Xss4m -Djava.io.tmpdir=/var/x -Dy=1"}) == "/var/x"
    assert socket_dir({"spark.python.unix.domain.socket.dir": "/run/s",
                       "spark.driver.extraJavaOptions": "-Djava.io.tmpdir=/var/x"}) == "/run/s"
