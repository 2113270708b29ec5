"""The options of the ``workq`` and ``kestrel`` data sources: partitioning, payload renderings (hex, text,
binary), per-segment indexes, Kestrel's ``queue`` / ``kestrel_version`` / globs, and bad option values."""
from __future__ import annotations

import base64
import glob
import json
import os
import shutil
from decimal import Decimal

import pytest

from tests.conftest import AS_OF, ROOT, cli, jsonl_rows

#: One multi-segment log, an undecodable payload (unknown-command), results (double-lease-and-result,
#: sample-clean), an empty and large payloads (upstream-a-run1).
PAYLOAD_LOGS = ["sample-clean", "unknown-command", "double-lease-and-result", "upstream-a-run1",
                "upstream-a2-run2"]


def _plain(row: dict) -> dict:
    return {k: int(v) if isinstance(v, Decimal) else v for k, v in row.items()}


def _dump(*args: str) -> list[dict]:
    res = cli("dump", "-o", "jsonl", "--as-of", AS_OF, *args)
    assert res.code in (0, 1, 3, 4), res.err
    return jsonl_rows(res.out)


def _records(df) -> list[dict]:
    """The record rows (not the permissive ``_corrupt`` rows), in partition order, as dump's dicts."""
    out = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        if d.pop("_corrupt", None) is None:
            out.append(_plain(d))
    return out


@pytest.fixture(scope="module", autouse=True)
def _registered(spark):
    from wqtool.spark import register
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        register(spark)   # the registered sources remember the repo root: relative fixture paths work
    finally:
        os.chdir(old)


def _workq(spark, paths, **options):
    r = spark.read.format("workq")
    for k, v in options.items():
        r = r.option(k, v)
    return r.option("paths", json.dumps(list(paths))).load()


def _kestrel(spark, paths, **options):
    r = spark.read.format("kestrel")
    for k, v in options.items():
        r = r.option(k, v)
    return r.option("paths", json.dumps(list(paths))).load()


# ---------------------------------------------------------------- workq: partitions
def test_workq_one_partition_per_segment(spark, corpus):
    from wqtool.engine.workq.reader import discover
    path = corpus["sample-clean"]
    [log] = discover([path])
    assert len(log.segments) == 4
    df = spark.read.format("workq").load(path)
    assert df.rdd.getNumPartitions() == 4


def test_workq_one_partition_per_segment_over_a_glob_of_two_logs(spark):
    from wqtool.engine.workq.reader import discover
    pattern = "fixtures/workq/upstream-b-*/log"
    dirs = sorted(glob.glob(pattern))
    assert len(dirs) == 2
    logs = discover(dirs)
    n = sum(len(log.segments) for log in logs)
    assert n == 6
    df = spark.read.format("workq").option("payload", "true").load(pattern)
    assert df.rdd.getNumPartitions() == n
    # rows: both logs, each numbered from 0, equal to dump over the two directories
    assert _records(df) == _dump(*dirs)


# ---------------------------------------------------------------- workq: payload renderings
@pytest.mark.parametrize("payload", ["hex", "text"])
def test_workq_payload_rendering_equals_dump(spark, corpus, payload):
    paths = [corpus[n] for n in PAYLOAD_LOGS]
    df = _workq(spark, paths, payload=payload)
    assert dict(df.dtypes)["payload"] == "string" and dict(df.dtypes)["result"] == "string"
    rows = _records(df)
    expected = _dump("--payload", payload, *paths)
    assert any(r["error"] for r in expected)          # the undecodable payload is among them
    assert rows == expected


def test_workq_payload_upper_case_is_accepted(spark, corpus):
    rows = _records(_workq(spark, [corpus["unknown-command"]], payload="HEX"))
    assert rows == _dump("--payload", "hex", corpus["unknown-command"])


def test_workq_payload_binary_is_the_decoded_bytes(spark, corpus):
    paths = [corpus[n] for n in PAYLOAD_LOGS]
    df = _workq(spark, paths, payload="binary")
    assert dict(df.dtypes)["payload"] == "binary" and dict(df.dtypes)["result"] == "binary"
    rows = _records(df)
    expected = _dump(*paths)     # base64 by default
    b64 = lambda v: None if v is None else base64.b64decode(v)  # noqa: E731
    for e in expected:
        e["payload"], e["result"] = b64(e["payload"]), b64(e["result"])
    rows = [{**r, "payload": None if r["payload"] is None else bytes(r["payload"]),
             "result": None if r["result"] is None else bytes(r["result"])} for r in rows]
    assert rows == expected
    # the record whose payload does not decode: the raw payload bytes (unknown command type 9)
    [bad] = [r for r in rows if r["error"]]
    assert (bad["cmd"], bad["payload"], bad["payload_len"]) == (None, b"\x09\x00", 2)
    assert b"" in [r["payload"] for r in rows]        # upstream-a-run1's empty payload stays b"", not null


# ---------------------------------------------------------------- workq: index
def test_workq_index_segment_restarts_in_each_segment(spark, corpus):
    paths = [corpus["sample-clean"], corpus["upstream-b-after-clean"]]
    by_log = _records(_workq(spark, paths, payload="true"))
    by_seg = _records(_workq(spark, paths, payload="true", index="segment"))
    assert by_log == _dump(*paths)
    # index=log (default): 0..n-1 across each log
    for p in paths:
        idx = [r["record_index"] for r in by_log if r["file"].startswith(p + "/")]
        assert idx == list(range(len(idx)))
    # index=segment: 0..k-1 in each segment file; everything else identical
    files = list(dict.fromkeys(r["file"] for r in by_seg))
    assert len(files) == 7
    expected = []
    for f in files:
        rows = [r for r in by_log if r["file"] == f]
        expected += [{**r, "record_index": i} for i, r in enumerate(rows)]
    assert by_seg == expected
    assert [r["record_index"] for r in by_seg] != [r["record_index"] for r in by_log]


# ---------------------------------------------------------------- bad option values
@pytest.mark.parametrize("fmt", ["workq", "kestrel"])
@pytest.mark.parametrize("option, value, message", [
    ("payload", "nope", r"option payload must be one of false, true, base64, hex, text, binary, got 'nope'"),
    ("mode", "nope", r"option mode must be permissive or failfast, got 'nope'"),
    ("index", "nope", r"option index must be "),
])
def test_bad_option_value_names_the_option(spark, fmt, option, value, message):
    path = "fixtures/workq/sample-clean/log" if fmt == "workq" else "fixtures/kestrel/clean-journal/queue"
    with pytest.raises(Exception, match=f"{fmt}: {message}"):
        spark.read.format(fmt).option(option, value).load(path).collect()


def test_bad_index_lists_the_values(spark):
    """index is log or file (segment: its other name) for every format."""
    with pytest.raises(Exception, match=r"workq: option index must be log or file or segment, got 'nope'"):
        spark.read.format("workq").option("index", "nope").load("fixtures/workq/sample-clean/log").collect()
    a = spark.read.format("workq").option("index", "file").load("fixtures/workq/sample-clean/log").collect()
    b = spark.read.format("workq").option("index", "segment").load("fixtures/workq/sample-clean/log").collect()
    assert a == b
    with pytest.raises(Exception, match=r"kestrel: option index must be log or file or segment, got 'nope'"):
        spark.read.format("kestrel").option("index", "nope").load("fixtures/kestrel/clean-journal/queue")


def test_no_path_is_an_error(spark):
    with pytest.raises(Exception, match=r"workq: no path given"):
        spark.read.format("workq").load().collect()


# ---------------------------------------------------------------- kestrel
@pytest.fixture(scope="module")
def two_queues(tmp_path_factory):
    """A spool directory with two queues: ``jobs`` (rotated-set-with-pack's three files) and ``things``."""
    d = tmp_path_factory.mktemp("spool")
    for src in ("rotated-set-with-pack", "clean-journal"):
        q = os.path.join(ROOT, "fixtures", "kestrel", src, "queue")
        for name in os.listdir(q):
            shutil.copy(os.path.join(q, name), d / name)
            os.chmod(d / name, 0o644)
    return str(d)


def _kdump(*args: str) -> list[dict]:
    return _dump("--format", "kestrel", *args)


def test_kestrel_queue_selects_one_queue_of_a_directory(spark, two_queues):
    whole = _kdump(two_queues)
    queues = {os.path.basename(r["file"]).split(".")[0] for r in whole}
    assert queues == {"jobs", "things"}
    for queue in ("jobs", "things"):
        df = _kestrel(spark, [two_queues], queue=queue, payload="true")
        assert df.rdd.getNumPartitions() == (3 if queue == "jobs" else 1)
        rows = _records(df)
        expected = [r for r in whole if os.path.basename(r["file"]).split(".")[0] == queue]
        assert expected and rows == expected
    # jobs alone equals the fixture it was copied from (paths aside)
    jobs = _records(_kestrel(spark, [two_queues], queue="jobs", payload="true"))
    orig = _kdump("fixtures/kestrel/rotated-set-with-pack/queue")
    strip = lambda rows: [{**r, "file": os.path.basename(r["file"])} for r in rows]  # noqa: E731
    assert strip(jobs) == strip(orig)


def test_kestrel_queue_that_is_not_there_is_an_input_error(spark, two_queues):
    from wqtool.engine.kestrel import reader as kreader
    from wqtool.errors import InputError
    with pytest.raises(InputError, match="no journal files for queue 'nosuch'"):
        kreader.discover([two_queues], queue="nosuch")
    with pytest.raises(Exception, match="no journal files for queue 'nosuch'"):
        _kestrel(spark, [two_queues], queue="nosuch").collect()


def test_kestrel_version_values_accepted_rows_unchanged(spark):
    paths = ["fixtures/kestrel/legacy-1x-journal/queue", "fixtures/kestrel/starling-legacy-add/queue"]
    for v in ("1", "2", "auto"):
        rows = _records(_kestrel(spark, paths, kestrel_version=v, payload="true"))
        assert rows == _kdump("--kestrel-version", v, *paths), v


def test_kestrel_version_bad_value(spark):
    with pytest.raises(Exception, match=r"kestrel: option kestrel_version must be one of 1, 2, auto, got '3'"):
        spark.read.format("kestrel").option("kestrel_version", "3").load("fixtures/kestrel/clean-journal/queue") \
            .collect()


def test_kestrel_glob_paths(spark):
    dirs = "fixtures/kestrel/[ct]*/queue"            # clean-journal, torn-tail
    files = "fixtures/kestrel/rotated-set-with-pack/queue/jobs*"
    hits = sorted(glob.glob(dirs)) + sorted(glob.glob(files))
    assert [os.path.basename(os.path.dirname(h)) for h in hits[:2]] == ["clean-journal", "torn-tail"]
    assert len(hits) == 5
    df = _kestrel(spark, [dirs, files], payload="hex")
    assert df.rdd.getNumPartitions() == 5
    assert _records(df) == _kdump("--payload", "hex", *hits)


# ---------------------------------------------------------------- as_of on the records source (issue 24 item 5)
def test_as_of_on_workq_records_is_refused_not_ignored(spark, corpus):
    """A workq record's row is the same at every clock: as_of there is an error naming the option, never a
    silently ignored option (issue 24 item 5)."""
    for value in (AS_OF, "last"):
        with pytest.raises(Exception, match="workq: option as_of: the records of .* are the same at every clock"):
            _workq(spark, [corpus["sample-clean"]], as_of=value).count()
    assert _workq(spark, [corpus["sample-clean"]]).count() == len(_dump(corpus["sample-clean"]))


@pytest.mark.parametrize("fmt", ["kestrel", "orth-callbacks", "fastjournal"])
def test_as_of_on_a_clockless_format_is_refused(spark, fmt):
    path = {"kestrel": "fixtures/kestrel/clean-journal/queue", "orth-callbacks": "fixtures/orth/clean-retry-files/logpath",
            "fastjournal": "fixtures/fastjournal/history/journal"}[fmt]
    with pytest.raises(Exception, match=f"{fmt}: option as_of: the records of .* same at every clock"):
        spark.read.format(fmt).option("as_of", AS_OF).load(path).count()


def test_as_of_on_snaplist_records_is_dump_at_that_clock(spark):
    """A Snap! list journal's reading order starts after the current hour of the clock (02:30: hour 3's file
    first, 03:30: hour 2's): the records source honours as_of as `dump --as-of` does (the rows, in order, equal
    the local dump's at that clock)."""
    path = os.path.join("fixtures", "snaplist", "current-hour", "journal")
    orders = []
    for as_of in ("2026-01-30T02:30:00Z", "2026-01-30T03:30:00Z"):
        rows = [r.asDict(recursive=True) for r in spark.read.format("snaplist").option("as_of", as_of).load(path)
                .collect()]
        got = [(r["file"], r["offset"]) for r in rows if r["_corrupt"] is None]
        want = [(d["file"], d["offset"]) for d in jsonl_rows(cli("dump", "-o", "jsonl", "--as-of", as_of, path).out)]
        assert got == want and want
        orders.append(got)
    assert orders[0] != orders[1]       # the clock changed the order: honoured, not ignored


def test_as_of_last_on_snaplist_records_is_the_logs_own_time(spark):
    """as_of=last (as --as-of last): each log at its newest record's time, whenever it is read."""
    from wqtool.engine.format import Options as EngineOptions, get
    path = os.path.join("fixtures", "snaplist", "current-hour", "journal")
    fmt = get("snaplist")
    [log] = fmt.discover([path], EngineOptions(0))
    last = fmt.passes.time_span(log)[1]
    at = lambda v: [(r["file"], r["offset"]) for r in spark.read.format("snaplist").option("as_of", v)  # noqa: E731
                    .load(path).collect() if r["_corrupt"] is None]
    assert at("last") == at(f"@{last}ns")


def test_findings_as_of_last_is_verify_as_of_last(spark, corpus):
    """Issue 20 item 8: the data sources take as_of=last as the CLI's --as-of last (each log's newest record)."""
    path = corpus["double-lease-and-result"]
    got = sorted((r["code"], r["offset"]) for r in spark.read.format("workq-findings").option("as_of", "last")
                 .load(path).collect())
    v = json.loads(cli("verify", "-o", "json", "--as-of", "last", path).out)
    assert got == sorted((f["code"], f["offset"]) for f in v["logs"][0]["findings"]) and got
