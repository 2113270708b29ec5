"""One snapshot per job (issue 35, item 1): ``replay --engine spark -o parquet`` reads each log ONCE, from the bytes
the driver pinned when it planned, so under a writer that appends throughout the table, ``summary.json`` and the
printed digest agree — or the run exits non-zero with a named error. A file replaced (another inode) or shrunk
below its pinned size is an error naming it, in the task and on the driver."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, cli
from tests.spark import live_writer

AS_OF = "2026-11-21T23:59:00Z"     # an hour after the writer's records: nothing expires


@pytest.fixture(scope="module", autouse=True)
def _registered(spark):
    from wqtool.spark import register
    register(spark)


def _poll(proc: subprocess.Popen, least: int) -> int:
    """Lines of the writer until it has written ``least`` records (it prints its count after each batch)."""
    while True:
        line = proc.stdout.readline()
        assert line and line.strip() != "done", "the writer stopped before the test was done with it"
        if line.strip().isdigit() and int(line) >= least:
            return int(line)


def _size(log: str) -> int:
    return sum(os.path.getsize(os.path.join(log, n)) for n in os.listdir(log) if n.endswith(".log"))


@pytest.mark.parametrize("run", range(3))
def test_the_export_under_a_live_writer_gives_one_state(spark, tmp_path, run):
    log = str(tmp_path / "cmdlog")
    live_writer.build(log, 100_000)
    proc = subprocess.Popen([sys.executable, "-m", "tests.spark.live_writer", log, "100000"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        _poll(proc, 2_000)                      # writing already
        out = str(tmp_path / "state")
        before = _size(log)
        res = cli("replay", "--engine", "spark", "-o", "parquet", "--out", out, "--as-of", AS_OF, log)
        grown = _size(log) - before
        _poll(proc, 1)                          # still writing: it wrote throughout the export
    finally:
        proc.kill()
        proc.wait()
    assert grown > 0
    if res.code != 0:       # a named error, never a silent mismatch
        assert res.code == 5 and "cmdlog" in res.err, (res.code, res.err)
        return
    doc = json.load(open(os.path.join(out, "summary.json")))
    assert f"digest sha256:{doc['digest']}" in res.out
    table = spark.read.parquet(os.path.join(out, "jobs"))
    counts = {r["state"]: r["count"] for r in table.groupBy("state").count().collect()}
    assert counts == {k: v for k, v in doc["by_state"].items() if v}
    assert sum(counts.values()) == doc["job_count"]
    # the state is the log's at one instant: its first doc["records"] records, replayed locally, give the same digest
    prefix = str(tmp_path / "prefix")
    _copy_records(log, prefix, doc["records"])
    local = cli("replay", "-o", "json", "--summary", "--as-of", AS_OF, prefix)
    assert json.loads(local.out)["digest"] == doc["digest"]


def _copy_records(src: str, dst: str, n: int) -> None:
    """The first ``n`` records of the log ``src`` as a log of their own (same segments, cut after record n)."""
    from wqtool.engine.format import Options, get
    fmt = get("workq")
    [lg] = fmt.discover([src], Options(0))
    os.makedirs(dst)
    seen = 0
    rec_cls = fmt.record_cls
    for i, path in enumerate(fmt.files(lg)):
        end = 8
        if seen < n:
            for ev in fmt.passes.file_events(lg, i):
                if ev.__class__ is rec_cls:
                    seen += 1
                    end = ev.offset + ev.length
                    if seen == n:
                        break
        with open(path, "rb") as f, open(os.path.join(dst, os.path.basename(path)), "wb") as g:
            g.write(f.read(end))
        if seen >= n:
            break


# ---------------------------------------------------------------- replaced and shrunk files are named errors
def _pinned_log(tmp_path):
    from wqtool.engine.fileio import Snapshot
    log = str(tmp_path / "cmdlog")
    live_writer.build(log, 3_000)
    seg = os.path.join(log, "000000001.log")
    return log, seg, Snapshot.take([seg])


def test_a_replaced_file_is_named(tmp_path):
    from wqtool.engine.fileio import FileChanged, FileView, pinned
    from wqtool.engine.workq.reader import Segment
    _, seg, snap = _pinned_log(tmp_path)
    data = open(seg, "rb").read()
    os.rename(seg, seg + ".old")
    with open(seg, "wb") as f:          # the same bytes, and more, in a new file (another inode)
        f.write(data + b"\0" * 10)
    with pytest.raises(FileChanged, match=r"replaced since the job was planned") as e:
        with pinned(snap), FileView(Segment(seg, 1)):
            pass
    assert e.value.path == seg and str(e.value).startswith(seg + ": ")
    with pytest.raises(FileChanged, match="replaced") as e:
        snap.check()
    assert e.value.path == seg


def test_a_shrunk_file_is_named_and_a_grown_one_read_as_pinned(tmp_path):
    from wqtool.engine.fileio import FileChanged, FileView, pinned
    from wqtool.engine.workq.reader import Segment
    _, seg, snap = _pinned_log(tmp_path)
    size = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(b"\x01" * 100)
    with pinned(snap), FileView(Segment(seg, 1)) as v:
        assert v.size == size                         # an append is not read
    snap.check()
    os.truncate(seg, size - 1)
    with pytest.raises(FileChanged, match=rf"shrank since the job was planned \({size} bytes, now {size - 1}"):
        with pinned(snap), FileView(Segment(seg, 1)):
            pass
    with pytest.raises(FileChanged, match="shrank") as e:
        snap.check()
    assert e.value.path == seg


@pytest.mark.parametrize("how", ["shrunk", "replaced"])
def test_a_fleet_job_over_a_changed_file_exits_5_naming_it(spark, tmp_path, how):
    """The check on the driver after the job: a file changed between the pin and the end of the job."""
    from wqtool.engine.fileio import FileChanged
    from wqtool.engine.format import Options, resolve
    from wqtool.spark import fleet
    log, seg, _ = _pinned_log(tmp_path)
    [lg] = resolve([log], "workq", Options(0))
    cluster = fleet._cluster(spark, [lg])
    with pytest.raises(FileChanged) as e:
        with fleet.one_snapshot(cluster):
            if how == "shrunk":
                os.truncate(seg, os.path.getsize(seg) - 5)
            else:
                data = open(seg, "rb").read()
                with open(seg + ".new", "wb") as f:     # a rewrite as pack and clean do it: a new file renamed over
                    f.write(data)
                os.replace(seg + ".new", seg)
    assert e.value.path == seg
    res = cli("verify", "--engine", "spark", log)     # planned after the change: the log as it is now
    assert res.code in (0, 1, 3), res.err


# ---------------------------------------------------------------- the local engine's processes (verify --workers)
def _before_the_processes(monkeypatch, change):
    """``change()`` runs once the local engine has planned its processes, before they start reading the log."""
    import multiprocessing
    real = multiprocessing.get_context

    def get_context(method=None):
        change()
        return real(method)
    monkeypatch.setattr(multiprocessing, "get_context", get_context)


def test_verify_workers_read_the_pinned_bytes(tmp_path, monkeypatch):
    log, seg, _ = _pinned_log(tmp_path)
    want = cli("verify", "-o", "json", "--as-of", AS_OF, "--workers", "1", log)
    more = live_writer.add(5_000) + live_writer.add(5_001)

    def append():
        with open(seg, "ab") as f:
            f.write(more)
    _before_the_processes(monkeypatch, append)
    got = cli("verify", "-o", "json", "--as-of", AS_OF, "--workers", "2", log)
    assert (got.code, got.out) == (want.code, want.out)      # two processes, one state: the appended jobs unseen


def test_verify_workers_name_a_shrunk_segment(tmp_path, monkeypatch):
    log, seg, _ = _pinned_log(tmp_path)
    _before_the_processes(monkeypatch, lambda: os.truncate(seg, os.path.getsize(seg) - 3))
    res = cli("verify", "--workers", "2", log)
    assert res.code == 5 and f"{seg}: shrank since the job was planned" in res.err, res.err


# ---------------------------------------------------------------- the data sources: partitions read what was planned
@pytest.mark.parametrize("source", ["workq", "workq-findings", "workq-state"])
def test_a_data_source_reads_the_bytes_its_plan_pinned(tmp_path, source):
    """The partitions are planned (the files pinned), then a writer appends and another file shrinks: the appended
    records are not read; the shrunk file is named."""
    from wqtool.engine.fileio import FileChanged
    from wqtool.engine.format import get
    from wqtool.spark import datasources as ds
    log, seg, _ = _pinned_log(tmp_path)
    fmt = get("workq")
    kind = source.partition("-")[2]
    reader = {"": ds.RecordSourceReader, "findings": ds.FindingSourceReader, "state": ds.StateSourceReader}[kind]
    given = {"path": log} if kind == "" else {"path": log, "as_of": AS_OF}
    opts = ds.Options.parse(fmt, given, str(tmp_path), findings=kind == "findings", state=kind == "state")

    def rows() -> int:
        return sum(b.num_rows for p in reader(opts).partitions() for b in reader(opts).read(p))
    want = rows()
    parts = reader(opts).partitions()
    with open(seg, "ab") as f:
        f.write(live_writer.add(7_000))
    assert sum(b.num_rows for p in parts for b in reader(opts).read(p)) == want
    assert rows() != want or kind == "findings"        # planned now: the appended job is read
    os.truncate(seg, os.path.getsize(seg) - 100)
    parts = reader(opts).partitions()
    os.truncate(seg, os.path.getsize(seg) - 3)
    with pytest.raises(FileChanged, match="shrank") as e:
        for p in parts:
            list(reader(opts).read(p))
    assert e.value.path == seg


def test_a_task_that_finds_its_file_shrunk_is_exit_5_naming_it(spark, tmp_path, always_a_job):
    """The check in the task: the job planned (the files pinned), then a segment shrinks before the tasks read it:
    the task's FileChanged is the job's error, with its exit code (5) and the file named. (A job forced: else the
    driver reads this one log itself, ``test_in_driver.py``.)"""
    from wqtool.engine.fileio import Snapshot
    from wqtool.engine.workq.fleet import run_fleet
    from wqtool.engine.workq.reader import discover
    from wqtool.errors import FileChanged
    from wqtool.exitcodes import exit_code_for
    from wqtool.spark.cluster import Cluster
    from wqtool.spark.session import job_errors, task_cause
    log, seg, _ = _pinned_log(tmp_path)
    cluster = Cluster(spark, (), Snapshot.take([seg]))
    os.truncate(seg, os.path.getsize(seg) - 7)
    with pytest.raises(Exception) as e:
        with job_errors():
            run_fleet(cluster, discover([log]), 0)
    assert task_cause(e.value.__cause__) is FileChanged
    assert int(exit_code_for(e.value)) == 5
    assert f"{seg}: shrank since the job was planned" in str(e.value)
