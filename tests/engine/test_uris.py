"""The CLI's PATHs as URIs (issue 24 item 3), through the engine's one filesystem layer (``engine.uris``, the one
the Spark data sources use): ``file:`` URIs and ``s3://`` / ``s3a://`` against moto's S3 server on loopback.
verify, replay, stats and dump give what they give for the local copy, with every path named by the URI; a remote
log is a read-only staged copy (writing commands refused); the staging cache is bounded and never stale; Spark's
``spark.hadoop.fs.s3a.*`` settings serve as the fsspec options."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pytest

from tests.conftest import AS_OF, ROOT, cli, fixture_log, without_aws_environment
from wqtool.engine import uris

LOG = "crc-mismatch-mid-segment"      # a log with findings (an error, folded as-of notes) and a last_file


def _named(text: str, local: str, uri: str) -> str:
    return text.replace(local, uri)


@pytest.fixture
def stage_dir(tmp_path, monkeypatch):
    """A private staging cache (TMPDIR), empty; the shared locks this process took on it released after."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.fixture
def local_log(tmp_path):
    d = tmp_path / "logs" / LOG
    shutil.copytree(fixture_log(LOG), d)
    return str(d)


READS = [("verify", "-o", "json", "--as-of", AS_OF), ("verify", "--as-of", AS_OF),
         ("replay", "-o", "jsonl", "--as-of", AS_OF), ("replay", "--summary", "-o", "json", "--as-of", AS_OF),
         ("stats", "-o", "json", "--as-of", AS_OF), ("dump", "-o", "jsonl", "--as-of", AS_OF),
         ("dump", "-o", "jsonl", "--cmd", "add", "--as-of", AS_OF)]


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_file_uri_reads_as_the_path_named_by_the_uri(local_log, argv):
    """verify, replay, stats, dump of file:///...: the local path's output, every path the URI's."""
    want = cli(*argv, local_log)
    got = cli(*argv, "file://" + local_log)
    assert got.code == want.code
    assert got.out == _named(want.out, local_log, "file://" + local_log)
    assert got.err == _named(want.err, local_log, "file://" + local_log)
    if "json" in argv and "verify" in argv:
        doc = json.loads(got.out)
        assert doc["logs"][0]["root"] == "file://" + local_log
        assert all(f["file"].startswith("file://") for f in doc["logs"][0]["findings"] if f["file"])


#: a log of every other format (replay rows that carry a file: Kestrel, EVTJ, Snap!, Orth)
OTHERS = ["evtj/duplicates/journal", "kestrel/damage-mid-live/queue", "kestrel/torn-tail/queue",
          "orth/executor-runs/logpath", "snaplist/ack-out-of-order/journal", "fastjournal/crc-mid-segment/journal",
          "orth-joblog/clean-csv/orth_job_log.csv"]


@pytest.mark.parametrize("case", OTHERS)
def test_every_format_reads_a_file_uri_named_by_it(tmp_path, case):
    """verify, replay (rows and table), dump, stats of a file:// URI, each format: the local output, every path
    (roots, findings, replay rows' files, dump rows) the URI's, never doubled."""
    root = os.path.join(ROOT, "fixtures")
    src = os.path.join(root, case)
    dst = str(tmp_path / case.replace("/", "_"))
    if os.path.isdir(src):
        shutil.copytree(src, dst)
    else:                             # a CSV table and its registry beside it
        shutil.copy(src, dst)
        shutil.copy(os.path.join(os.path.dirname(src), "orth_job_registry.csv"), tmp_path)
    uri = "file://" + dst
    for argv in (("verify", "-o", "json"), ("verify",), ("replay", "-o", "jsonl"), ("replay",),
                 ("dump", "-o", "jsonl"), ("stats", "-o", "json")):
        want = cli(*argv, "--as-of", AS_OF, dst)
        got = cli(*argv, "--as-of", AS_OF, uri)
        assert (got.code, got.out, got.err) == (want.code, want.out.replace(dst, uri), want.err.replace(dst, uri)), \
            argv
        assert "file://file:" not in got.out + got.err


def test_a_missing_file_uri_is_one_line(tmp_path):
    r = cli("verify", f"file://{tmp_path}/nope")
    assert r.code == 5 and r.err == f"wqtool: file://{tmp_path}/nope: no such file or directory\n"


def test_without_fsspec_a_uri_names_the_extra(monkeypatch, stage_dir):
    monkeypatch.setitem(sys.modules, "fsspec", None)       # import fsspec -> ImportError
    r = cli("verify", "s3://bucket/log")
    assert r.code == 5
    assert r.err == ("wqtool: s3://bucket/log: a URI is read through fsspec, which is not installed: pip install "
                     "'wqtool[uri]' (s3fs for s3:// and s3a://)\n")


def test_a_database_url_is_still_the_formats():
    """A URL a format reads itself (orth-joblog's mysql://) is not staged: the format's own error."""
    r = cli("verify", "--format", "orth-joblog", "mysql://nobody@127.0.0.1:1/none?table=xxl_job_log")
    assert "fsspec" not in r.err and "stage" not in r.err


# ---------------------------------------------------------------- S3 on loopback (moto's server)
moto_server = pytest.importorskip("moto.server", reason="moto[server] not installed")


@pytest.fixture
def s3(monkeypatch, stage_dir):
    """moto's S3 in server mode on loopback, a bucket, and the AWS CLI's environment pointing at it (what s3fs
    reads when no option is given); (s3fs filesystem, endpoint)."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(endpoint + "/moto-api/reset", method="POST"), timeout=10)
    for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    import s3fs
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="test", secret="test", skip_instance_cache=True)
    fs.mkdir("wq-bucket")
    try:
        yield fs, endpoint
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()


@pytest.mark.sweep
@pytest.mark.parametrize("scheme", ["s3", "s3a"])
@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_s3_uri_reads_as_the_local_log(s3, local_log, scheme, argv):
    """Each reading command on s3:// and s3a://: the local log's output with every path the URI's (never the
    staged copy's); the bucket unchanged."""
    fs, _ = s3
    fs.put(local_log, "wq-bucket/fleet/" + LOG, recursive=True)
    before = {k: v["ETag"] for k, v in fs.find("wq-bucket", detail=True).items()}
    uri = f"{scheme}://wq-bucket/fleet/{LOG}"
    want = cli(*argv, local_log)
    got = cli(*argv, uri)
    assert (got.code, got.out, got.err) == (want.code, _named(want.out, local_log, uri),
                                            _named(want.err, local_log, uri))
    assert uris.cache_root() not in got.out + got.err
    fs.invalidate_cache()
    assert {k: v["ETag"] for k, v in fs.find("wq-bucket", detail=True).items()} == before


def test_s3_glob_and_missing_key(s3, local_log):
    fs, _ = s3
    fs.put(local_log, "wq-bucket/a/" + LOG, recursive=True)
    fs.put(local_log, "wq-bucket/b/" + LOG, recursive=True)
    r = cli("verify", "-o", "json", "--as-of", AS_OF, f"s3://wq-bucket/*/{LOG}")
    assert r.code == 3
    assert [lg["root"] for lg in json.loads(r.out)["logs"]] == [f"s3://wq-bucket/a/{LOG}", f"s3://wq-bucket/b/{LOG}"]
    r = cli("verify", "s3://wq-bucket/nope")
    assert (r.code, r.err) == (5, "wqtool: s3://wq-bucket/nope: no such file or directory\n")


@pytest.mark.parametrize("argv", [("repair", "--apply"), ("clean", "--apply"), ("pack", "--apply"), ("repair",)])
def test_writing_commands_refuse_a_staged_copy(s3, local_log, argv):
    fs, _ = s3
    fs.put(local_log, "wq-bucket/" + LOG, recursive=True)
    before = {k: v["ETag"] for k, v in fs.find("wq-bucket", detail=True).items()}
    uri = f"s3://wq-bucket/{LOG}"
    r = cli(*argv, uri)
    assert r.code == 2, r
    assert f"{uri}: {argv[0]} changes files, and this log is a read-only local copy of a remote URI" in r.err
    assert len(r.err.strip().splitlines()) == 1
    fs.invalidate_cache()
    assert {k: v["ETag"] for k, v in fs.find("wq-bucket", detail=True).items()} == before


def test_the_staged_copy_follows_the_bucket(s3, local_log):
    """A segment deleted from the bucket is gone from the copy; one rewritten is fetched again."""
    fs, _ = s3
    fs.put(local_log, "wq-bucket/" + LOG, recursive=True)
    uri = f"s3://wq-bucket/{LOG}"
    top = uris.stage(uri)
    assert sorted(os.listdir(top)) == sorted(os.listdir(local_log))
    fs.rm(f"wq-bucket/{LOG}/000000004.log")
    with open(os.path.join(local_log, "000000001.log"), "r+b") as f:   # the CRC error mended: another ETag
        f.seek(0x11c)
        f.write(b"\x00")
    fs.put(os.path.join(local_log, "000000001.log"), f"wq-bucket/{LOG}/000000001.log")
    fs.invalidate_cache()
    top = uris.stage(uri)
    assert "000000004.log" not in os.listdir(top)
    with open(os.path.join(top, "000000001.log"), "rb") as a, open(os.path.join(local_log, "000000001.log"),
                                                                   "rb") as b:
        assert a.read() == b.read()


def test_spark_s3a_settings_serve_as_the_fsspec_options(s3, local_log, monkeypatch):
    """No AWS environment: spark.hadoop.fs.s3a.endpoint / access.key / secret.key / path.style.access (what
    --spark-conf gives Spark's S3A connector) are the options s3fs gets."""
    fs, endpoint = s3
    fs.put(local_log, "wq-bucket/" + LOG, recursive=True)
    without_aws_environment(monkeypatch)
    uri = f"s3a://wq-bucket/{LOG}"
    assert cli("verify", "-q", uri).code == 5          # no endpoint, no keys: cannot read it
    host = endpoint.split("://", 1)[1]
    conf = {"spark.hadoop.fs.s3a.endpoint": host, "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": "test", "spark.hadoop.fs.s3a.secret.key": "test",
            "spark.hadoop.fs.s3a.path.style.access": "true", "spark.master": "local[2]"}
    assert uris.s3a_storage(conf) == {"endpoint_url": endpoint, "key": "test", "secret": "test",
                                      "config_kwargs": {"s3": {"addressing_style": "path"}}}
    monkeypatch.setattr(uris, "DEFAULTS", {})
    uris.use_spark_conf(conf)
    r = cli("verify", "-o", "json", "--as-of", AS_OF, uri)
    assert r.code == 3 and json.loads(r.out)["logs"][0]["root"] == uri


@pytest.mark.parametrize("cmd", [("verify", "-o", "json"), ("replay", "--summary", "-o", "json")])
def test_spark_conf_s3a_settings_reach_the_commands_own_paths(s3, local_log, monkeypatch, cmd):
    """Issue 24: ``--spark-conf spark.hadoop.fs.s3a.*`` on the command line is the s3fs options of the command's
    own PATHs, which are staged before any Spark session exists — no AWS environment, and no session here (the
    local engine: the settings are known from the command line alone)."""
    fs, endpoint = s3
    fs.put(local_log, "wq-bucket/" + LOG, recursive=True)
    without_aws_environment(monkeypatch)
    uri = f"s3a://wq-bucket/{LOG}"
    assert cli(*cmd, "--as-of", AS_OF, uri).code == 5          # no endpoint, no keys: cannot read it
    host = endpoint.split("://", 1)[1]
    conf = [f"--spark-conf=spark.hadoop.fs.s3a.{k}" for k in (
        f"endpoint={host}", "connection.ssl.enabled=false", "access.key=test", "secret.key=test",
        "path.style.access=true")]
    r = cli(*cmd, "--as-of", AS_OF, *conf, uri)
    local = cli(*cmd, "--as-of", AS_OF, local_log)
    assert r.code == local.code, r.err
    assert r.out == local.out.replace(json.dumps(local_log)[1:-1], uri)


# ---------------------------------------------------------------- the cache is bounded
def _entry(root, name: str, size: int, age_s: float, now: float) -> str:
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "log"))
    with open(os.path.join(d, "log", "seg"), "wb") as f:
        f.write(b"x" * size)
    meta = os.path.join(d, ".stage.json")
    with open(meta, "w") as f:
        f.write("{}")
    os.utime(meta, (now - age_s, now - age_s))
    return d


def test_clean_cache_by_age_and_size(stage_dir):
    root = uris.cache_root()
    now = time.time()
    hour = uris.GRACE_S
    old = _entry(root, "old", 10, 8 * 86400, now)
    a = _entry(root, "a", 600, hour + 300, now)
    b = _entry(root, "b", 600, hour + 200, now)
    c = _entry(root, "c", 600, hour + 100, now)
    recent = _entry(root, "recent", 600, 60, now)     # used a minute ago: kept even over the bound
    assert uris.clean_cache(max_bytes=10 << 20, max_age_s=7 * 86400, now=now) == [old]
    assert uris.clean_cache(max_bytes=1900, max_age_s=7 * 86400, now=now) == [a]   # least recently used first
    held = uris._lock(b, True)             # another process is staging b: it stays, c goes instead
    try:
        assert uris.clean_cache(max_bytes=700, max_age_s=7 * 86400, now=now) == [c]
    finally:
        os.close(held)
    assert sorted(os.listdir(root)) == ["b", "recent"]


def test_staging_bounds_the_cache(s3, local_log, monkeypatch):
    """stage() cleans first: an entry older than WQTOOL_STAGE_MAX_AGE goes, the one being staged stays."""
    fs, _ = s3
    fs.put(local_log, "wq-bucket/" + LOG, recursive=True)
    stale = _entry(uris.cache_root(), "stale", 10, 3600, time.time())
    monkeypatch.setenv("WQTOOL_STAGE_MAX_AGE", "60")
    top = uris.stage(f"s3://wq-bucket/{LOG}")
    assert not os.path.exists(stale) and os.path.isdir(top)


@pytest.fixture
def other_store(s3):
    """A second S3 store: moto's server in its own process (its own buckets, unlike a second server in this
    one), with the bucket ``wq-bucket``; (s3fs filesystem, endpoint)."""
    import socket
    import subprocess
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "moto_server"), "-H", "127.0.0.1",
                             "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/reset", data=b"", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server on {endpoint} did not come up") from None
                time.sleep(0.1)
        import s3fs
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="test", secret="test", skip_instance_cache=True)
        fs.mkdir("wq-bucket")
        yield fs, endpoint
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_one_uri_on_two_stores_is_two_copies(s3, other_store, local_log, monkeypatch):
    """s3://wq-bucket/<log> on two endpoints holding different logs: each command reads its endpoint's log, each
    from its own cache entry — the first store's copy is not fetched again after the second's was staged (CI,
    2026-11-26: entries keyed by the URI alone, so two test servers' copies of one URI replaced each other)."""
    fs_a, endpoint_a = s3
    fs_b, endpoint_b = other_store
    clean = fixture_log("sample-clean")
    fs_a.put(local_log, "wq-bucket/" + LOG, recursive=True)
    fs_b.put(clean, "wq-bucket/" + LOG, recursive=True)
    uri = f"s3://wq-bucket/{LOG}"
    argv = ("verify", "-o", "json", "--as-of", AS_OF)
    want_a, want_b = cli(*argv, local_log), cli(*argv, clean)
    assert (want_a.code, want_b.code) == (3, 0)
    got_a = cli(*argv, uri)
    top_a = uris.stage(uri)
    inodes = {n: os.stat(os.path.join(top_a, n)).st_ino for n in os.listdir(top_a)}
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint_b)
    got_b = cli(*argv, uri)
    assert uris.stage(uri) != top_a
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint_a)
    again = cli(*argv, uri)
    assert got_a.out == again.out == _named(want_a.out, local_log, uri)
    assert {n: os.stat(os.path.join(top_a, n)).st_ino for n in os.listdir(top_a)} == inodes
    assert got_b.code == 0 and json.loads(got_b.out)["logs"][0]["root"] == uri
    assert json.loads(got_b.out)["logs"][0]["records"] == json.loads(want_b.out)["logs"][0]["records"]
