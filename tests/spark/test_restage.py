"""A task on a machine without the driver's staged copy of a remote log stages it under its own TMPDIR
(``engine.uris.restage``: ``tempfile.gettempdir()`` where the task runs), never at the path the driver computed,
reads it there (``spark.cluster._here`` moves the task's paths and snapshot to that copy) and names what it
returns as the driver does (``_named_back``). No Spark session: the task wrapper is called as an executor calls
it, with fsspec's in-memory filesystem as the remote side (the namespace test runs the same on a real worker)."""
from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import tempfile

import pytest

pa = pytest.importorskip("pyarrow")
fsspec = pytest.importorskip("fsspec")


class _ReadTask:
    """Reads the segment at the driver's path through the engine's FileView (inside the task's snapshot) and
    returns its path and bytes, as a string column and inside a pickled result."""

    def __init__(self, path: str):
        self.path = path

    def __call__(self, batches):
        from wqtool.engine.fileio import FileView

        class Src:
            path, pinned_size = self.path, None
        with FileView(Src) as v:
            data = bytes(v.data)
        blob = pickle.dumps({"path": self.path, "data": data, "paths": [self.path]}, protocol=5)
        yield pa.RecordBatch.from_arrays([pa.array([self.path]), pa.array([blob], pa.binary()),
                                          pa.array([b"\x80not a pickle " + self.path.encode()], pa.binary())],
                                         names=["path", "blob", "raw"])


def _use_tmp(monkeypatch, d) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(d))


@contextlib.contextmanager
def _remote(name: str, body: bytes):
    """A one-segment log at ``memory://<name>/log`` for the test's length: (the filesystem, its URI)."""
    mem = fsspec.filesystem("memory")
    mem.pipe(f"/{name}/log/000000001.log", body)
    try:
        yield mem, f"memory://{name}/log"
    finally:
        mem.rm(f"/{name}", recursive=True)


def _driver_plan(uri: str):
    """The driver's staged copy of ``uri`` (in this TMPDIR) and the staging plan its tasks get."""
    from wqtool.engine import uris
    lo = uris.stage(uri)
    base = os.path.dirname(lo)
    return lo, ((lo, uri, uris._options(uri, None), base, uris._stamps(base)),)


def test_a_task_without_the_drivers_copy_stages_its_own_under_its_tmpdir(tmp_path, monkeypatch):
    from wqtool.engine import uris
    from wqtool.engine.fileio import Snapshot
    from wqtool.spark.cluster import _InDir
    body = b"wq" * 3000
    with _remote("wq-restage", body) as (_, uri):
        driver_tmp, worker_tmp = tmp_path / "driver", tmp_path / "worker"
        driver_tmp.mkdir()
        worker_tmp.mkdir()
        _use_tmp(monkeypatch, driver_tmp)                  # the driver stages and plans
        lo, plan = _driver_plan(uri)
        assert lo.startswith(str(driver_tmp) + os.sep)
        seg = os.path.join(lo, "000000001.log")
        snap = Snapshot.take([seg], unstamped=[lo])
        task = _InDir(_ReadTask(seg), str(tmp_path), plan, snap)
        shutil.rmtree(driver_tmp)                          # another machine: the driver's copy is not there
        _use_tmp(monkeypatch, worker_tmp)
        (batch,) = list(task(iter([])))
        got = batch.to_pydict()
        assert got["path"] == [seg]                        # named as the driver named it
        res = pickle.loads(got["blob"][0])
        assert res == {"path": seg, "data": body, "paths": [seg]}
        # bytes that are no pickle pass as the task made them (its path: this machine's copy)
        assert got["raw"][0].startswith(b"\x80not a pickle " + str(worker_tmp).encode() + b"/")
        here = uris.cache_root()
        assert here.startswith(str(worker_tmp) + os.sep)
        staged = [os.path.join(d, n) for d, _, ns in os.walk(here) for n in ns if n.endswith(".log")]
        assert len(staged) == 1 and open(staged[0], "rb").read() == body
        assert not os.path.exists(driver_tmp)              # nothing written at the driver's path


def test_a_task_on_the_drivers_machine_reads_the_drivers_copy(tmp_path, monkeypatch):
    from wqtool.engine import uris
    from wqtool.spark.cluster import _InDir
    with _remote("wq-restage2", b"x" * 5000) as (_, uri):
        _use_tmp(monkeypatch, tmp_path)
        lo, plan = _driver_plan(uri)
        assert uris.restage(plan) == {}                    # the same copy: nothing staged again, nothing moved
        seg = os.path.join(lo, "000000001.log")
        (batch,) = list(_InDir(_ReadTask(seg), str(tmp_path), plan)(iter([])))
        assert batch.column(0).to_pylist() == [seg]


def test_a_remote_file_changed_since_the_drivers_read_is_an_error(tmp_path, monkeypatch):
    from wqtool.engine import uris
    from wqtool.errors import InputError
    with _remote("wq-restage3", b"x" * 5000) as (mem, uri):
        (tmp_path / "d").mkdir()
        (tmp_path / "w").mkdir()
        _use_tmp(monkeypatch, tmp_path / "d")
        _, plan = _driver_plan(uri)
        mem.pipe("/wq-restage3/log/000000001.log", b"y" * 6000)
        shutil.rmtree(tmp_path / "d")
        _use_tmp(monkeypatch, tmp_path / "w")
        with pytest.raises(InputError, match="changed between the driver's read and this executor's"):
            uris.restage(plan)
