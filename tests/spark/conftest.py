"""One SparkSession for the whole spark test run (start-up is ~7 s + ~3 s for the first job), and a corpus of
damaged copies of the fixtures built in code."""
from __future__ import annotations

import os
import random
import shutil

import pytest

from tests.conftest import ALL_WORKQ, AS_OF, ROOT, already_processed_log, fixture_log  # noqa: F401 (re-export)

pyspark = pytest.importorskip("pyspark", reason="pyspark not installed (pip install 'wqtool[spark]')")


def pytest_collection_modifyitems(items):
    for item in items:
        if "/tests/spark/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group("spark"))   # make test (-n 2 --dist loadgroup): one session


@pytest.fixture(scope="session")
def spark():
    from wqtool.spark.session import build_session
    s = build_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    yield s
    s.stop()


def _flip(path: str, at: int) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5A]))


def _truncate(path: str, by: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - by)


def _append(path: str, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


# name -> (source fixture, damage(dir))
DAMAGE = {
    "flip-mid-segment": ("sample-clean", lambda d: _flip(os.path.join(d, "000000002.log"), 300)),
    "flip-first-record": ("upstream-a-run1", lambda d: _flip(os.path.join(d, "000000001.log"), 20)),
    "truncated-newest": ("sample-clean", lambda d: _truncate(os.path.join(d, "000000004.log"), 7)),
    "truncated-mid-only-segment": ("upstream-a-run1", lambda d: _truncate(os.path.join(d, "000000001.log"), 40000)),
    "bad-magic-first": ("sample-clean", lambda d: _flip(os.path.join(d, "000000001.log"), 1)),
    "junk-tail": ("upstream-a2-run2", lambda d: _append(os.path.join(d, "000000001.log"), b"\x01junk" * 9)),
    "size-overflow": ("upstream-b-before-clean", lambda d: _flip(os.path.join(d, "000000002.log"), 8 + 15)),
}


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """{name: log directory} for every workq fixture (as relative paths from the repo root, like the CLI
    tests) and every damaged copy (absolute, in a temp dir)."""
    base = tmp_path_factory.mktemp("damaged")
    out = {n: os.path.relpath(fixture_log(n), ROOT) for n in ALL_WORKQ}
    for name, (src, damage) in DAMAGE.items():
        d = str(base / name)
        shutil.copytree(fixture_log(src), d)
        for p in os.listdir(d):
            os.chmod(os.path.join(d, p), 0o644)
        damage(d)
        out[name] = d
    return out


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)



def as_of_ns() -> int:
    from wqtool.commands._options import parse_time
    return parse_time(AS_OF, "--as-of")


def random_log(d: str, seed: int, damage: str) -> None:
    """A random workq log in ``d`` (600 records, random v4 ids over the whole id space, half reused), ``damage``
    "intact", "flips" (3 random bits flipped past the first segment header's start) or "truncated" (the last
    segment cut at a random offset): the property tests' input that a Spark path must read as the local engine."""
    from wqtool.engine.workq.sample import SampleSpec, generate
    generate(d, SampleSpec(records=600, segment_size=12_000, seed=seed, reuse_ids=0.5))
    rnd = random.Random(seed)
    segs = sorted(p for p in os.listdir(d) if p.endswith(".log"))
    if damage == "flips":
        for _ in range(3):
            p = os.path.join(d, rnd.choice(segs))
            size = os.path.getsize(p)
            if size > 9:
                at = rnd.randrange(8, size)
                with open(p, "r+b") as f:
                    f.seek(at)
                    b = f.read(1)
                    f.seek(at)
                    f.write(bytes([b[0] ^ (1 << rnd.randrange(8))]))
    elif damage == "truncated":
        p = os.path.join(d, segs[-1])
        with open(p, "r+b") as f:
            f.truncate(rnd.randrange(0, os.path.getsize(p)))


@pytest.fixture
def always_a_job(spark):
    """``spark.wqtool.inDriver.threshold`` 0 on the session for the test: one log's ``replay --summary`` runs a
    Spark job, as it did before the driver read such a log itself (tests of what a job does)."""
    from wqtool.spark.session import IN_DRIVER_CONF
    spark.conf.set(IN_DRIVER_CONF, "0")
    yield
    spark.conf.unset(IN_DRIVER_CONF)
