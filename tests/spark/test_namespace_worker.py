"""A standalone worker that shares nothing on disk with the driver: started in its own mount namespace
(``unshare -m``, root only) with a private tmpfs over the driver's temporary directory and the test's (so it
cannot see the driver's staged copies of remote logs nor the test's files) and its own TMPDIR and HOME. Fleet
verify, replay --summary and stats of ``s3a://`` logs (moto's S3 on loopback) give the local engine's answer —
each task stages its log itself (``engine.uris.restage``) under the worker's own TMPDIR, never at the path the
driver staged it at (``spark.cluster._here`` moves the task's paths there) — and a ``file://`` log
the worker cannot see is an error naming it, within a bounded time, not a hang. Skipped, with the reason, where
``unshare -m`` is not permitted (not root); CI runs as root."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import AS_OF, ROOT, fixture_log
from tests.spark.test_standalone import _free_port, _wait_for

pytestmark = pytest.mark.slow
moto_server = pytest.importorskip("moto.server", reason="moto[server] not installed")


def _unshare_refused() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True,
                       timeout=30)
    return None if r.returncode == 0 else f"unshare -m is not permitted here ({r.stderr.strip()[:200]})"


def _hidden(dirs: list[str]) -> list[str]:
    """The directories to cover with a tmpfs: each existing one not inside another already covered."""
    out: list[str] = []
    for d in sorted({os.path.realpath(x) for x in dirs if os.path.isdir(x)}):
        if not any(d == o or d.startswith(o + "/") for o in out):
            out.append(d)
    return out


@pytest.fixture(scope="module")
def s3():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"), timeout=10)
    import s3fs
    fs = s3fs.S3FileSystem(endpoint_url=f"http://{host}:{port}", key="test", secret="test", skip_instance_cache=True)
    fs.mkdir("wq-bucket")
    try:
        yield fs, f"{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ns_cluster(tmp_path_factory):
    """(master URL, the driver's environment, the worker's pid, the hidden directories, the worker's TMPDIR): a
    standalone master, and a worker in its own
    mount namespace where the driver's TMPDIR and the test's temporary directories are an empty tmpfs."""
    why = _unshare_refused()
    if why:
        pytest.skip(why)
    import pyspark
    home = os.path.dirname(pyspark.__file__)
    cls = os.path.join(home, "bin", "spark-class")
    d = tmp_path_factory.mktemp("ns-cluster")
    driver_tmp = d / "driver-tmp"
    driver_tmp.mkdir()
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "TMPDIR": str(driver_tmp)}
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        env.pop(k, None)
    env["AWS_DEFAULT_REGION"] = "us-east-1"
    hide = _hidden([tempfile.gettempdir(), str(tmp_path_factory.getbasetemp()), str(driver_tmp)])
    own = os.path.join(hide[0], "wq-worker")      # inside the first private tmpfs: the worker's own dirs
    port = _free_port()
    procs = []
    try:
        mlog = str(d / "master.log")
        m = subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                              str(port), "--webui-port", str(_free_port())], stdout=open(mlog, "w"),
                             stderr=subprocess.STDOUT, env={**env, "SPARK_WORKER_DIR": str(d / "mwork")},
                             start_new_session=True)
        procs.append(m)
        _wait_for(mlog, r"New state: ALIVE", m, 300)
        url = f"spark://127.0.0.1:{port}"
        script = "".join(f'mount -t tmpfs -o size=1g wq-private "{h}" && ' for h in hide) + \
            f'mkdir -p "{own}/tmp" "{own}/home" "{own}/work" && exec "$@"'
        wenv = {**env, "TMPDIR": f"{own}/tmp", "HOME": f"{own}/home", "SPARK_WORKER_DIR": f"{own}/work"}
        wlog = str(d / "worker.log")
        w = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", cls,
                              "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
                              "--memory", "2g", "--webui-port", str(_free_port())], stdout=open(wlog, "w"),
                             stderr=subprocess.STDOUT, env=wenv, start_new_session=True)
        procs.append(w)
        _wait_for(wlog, r"Successfully registered with master", w, 300)
        yield url, env, w.pid, hide, f"{own}/tmp"
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=60)


def _wqtool(*argv, env, timeout=900):
    return subprocess.run([sys.executable, "-m", "wqtool", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _plain(doc):
    for d in doc if isinstance(doc, list) else [doc]:
        for k in ("elapsed_s", "engine"):
            d.pop(k, None)
    return doc


@pytest.fixture(scope="module")
def bucket_log(s3, tmp_path_factory):
    fs, _ = s3
    log = str(tmp_path_factory.mktemp("ns-log") / "crc")
    shutil.copytree(fixture_log("crc-mismatch-mid-segment"), log)
    fs.put(log, "wq-bucket/crc", recursive=True)
    return log


@pytest.mark.parametrize("argv", [("verify", "-o", "json"), ("replay", "--summary", "-o", "json"),
                                  ("stats", "-o", "json")], ids=" ".join)
def test_a_worker_in_its_own_mount_namespace_reads_s3a_logs(ns_cluster, s3, bucket_log, argv):
    url, env, worker, hide, worker_tmp = ns_cluster
    _, host = s3
    conf = [f"--spark-conf=spark.hadoop.fs.s3a.{k}" for k in (
        f"endpoint={host}", "connection.ssl.enabled=false", "access.key=test", "secret.key=test",
        "path.style.access=true")]
    conf.append("--spark-conf=spark.wqtool.inDriver.threshold=0")   # a job: else the driver reads one log's summary
    uri = "s3a://wq-bucket/crc"
    local = _wqtool(*argv, "--as-of", AS_OF, bucket_log, env=env)
    remote = _wqtool(*argv, "--as-of", AS_OF, "--engine", "spark", "--master", url, *conf, uri, env=env)
    assert remote.returncode == local.returncode, remote.stderr[-2000:]
    assert _plain(json.loads(remote.stdout)) == _plain(json.loads(local.stdout.replace(bucket_log, uri)))
    # the driver staged its copy under its TMPDIR; the worker, which cannot see it, staged its own under its own
    # TMPDIR, in its namespace, and wrote nothing at the driver's path there
    stage = os.path.join(env["TMPDIR"], f"wqtool-stage-{os.getuid()}")
    assert os.path.isdir(stage)
    ns = ["nsenter", "-t", str(worker), "-m"]
    here = subprocess.run([*ns, "find", worker_tmp, "-name", "000000001.log"], capture_output=True, text=True,
                          timeout=60)
    assert here.returncode == 0, here.stderr
    mine = os.path.join(worker_tmp, f"wqtool-stage-{os.getuid()}") + "/"
    assert here.stdout.strip() and all(p.startswith(mine) for p in here.stdout.split()), here.stdout
    there = subprocess.run([*ns, "sh", "-c", 'ls -A "$1" 2>/dev/null || true', "sh", env["TMPDIR"]],
                           capture_output=True, text=True, timeout=60)
    assert there.returncode == 0 and there.stdout == "", (there.stdout, there.stderr)


def test_a_file_uri_the_worker_cannot_see_is_a_named_error(ns_cluster, bucket_log):
    url, env, _, _, _ = ns_cluster
    uri = "file://" + bucket_log
    r = _wqtool("verify", "--engine", "spark", "--master", url, "--spark-conf", "spark.task.maxFailures=1",
                uri, env=env, timeout=600)
    assert r.returncode not in (0, 3), r.stdout[-1500:]
    assert bucket_log in r.stderr or uri in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
