"""Kestrel journals on Spark: the ``kestrel`` data source (rows == `dump -o jsonl --format kestrel`, permissive
findings == the reader's findings verify reports, failfast), the fleet (verify / replay / stats == the local
engine, a task per queue; mixed with workq logs) and the Parquet export — on every fixture under
``fixtures/kestrel/*/queue`` and damaged copies made here."""
from __future__ import annotations

import glob
import json
import os
import shutil
import struct

import pytest

from tests.conftest import AS_OF, ROOT, cli, jsonl_rows
from tests.spark.conftest import as_of_ns

KESTREL_FIXTURES = sorted(os.path.basename(os.path.dirname(p))
                          for p in glob.glob(os.path.join(ROOT, "fixtures", "kestrel", "*", "queue")))

from wqtool.engine.kestrel.codes import KESTREL_REPLAY_CODES


def _poke(name: str, at: int, data: bytes):
    def damage(d: str) -> None:
        with open(os.path.join(d, name), "r+b") as f:
            f.seek(at)
            f.write(data)
    return damage


def _cut(name: str, by: int):
    def damage(d: str) -> None:
        p = os.path.join(d, name)
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) - by)
    return damage


# name -> (source fixture, damage(dir), exit code verify gives)
DAMAGE = {
    "k-truncated-live": ("clean-journal", _cut("things", 10), 1),              # inside the ADDX at 177: torn tail
    "k-truncated-pack": ("rotated-set-with-pack", _cut("jobs.2000.pack", 4), 3),   # damage in a rotated file
    "k-bad-opcode-rotated": ("rotated-set-with-pack", _poke("jobs.3000", 28, b"\x0c"), 3),
    "k-bad-opcode-live": ("clean-journal", _poke("things", 70, b"\xee"), 3),  # records resume at 71
    "k-negative-size": ("legacy-1x-journal", _poke("legacy", 74, struct.pack("<i", -5)), 3),
    "k-absurd-size": ("clean-journal", _poke("things", 105, struct.pack("<i", 0x7FFFFFF0)), 3),
}
NAMES = KESTREL_FIXTURES + sorted(DAMAGE)


@pytest.fixture(scope="session")
def kcorpus(tmp_path_factory):
    """{name: queue directory}: the fixtures (relative to the repo root, as the CLI tests use them) and the
    damaged copies (absolute, in a temp dir)."""
    base = tmp_path_factory.mktemp("kestrel-damaged")
    out = {n: os.path.join("fixtures", "kestrel", n, "queue") for n in KESTREL_FIXTURES}
    for name, (src, damage, _) in DAMAGE.items():
        d = str(base / name)
        shutil.copytree(os.path.join(ROOT, "fixtures", "kestrel", src, "queue"), d)
        for p in os.listdir(d):
            os.chmod(os.path.join(d, p), 0o644)
        damage(d)
        out[name] = d
    return out


def _owner(kcorpus, path: str) -> str:
    return next(n for n, d in kcorpus.items() if path.startswith(d + os.sep))


@pytest.fixture(scope="module")
def kloaded(spark, kcorpus):
    """Every queue of the corpus read in one Spark job per source: {name: (record rows, [(row, _corrupt)] of the
    unreadable ranges, finding rows)}."""
    from wqtool.spark import register
    register(spark)  # the registered source remembers the working directory: the repo root here
    paths = json.dumps([kcorpus[n] for n in NAMES])
    df = spark.read.format("kestrel").option("payload", "true").option("paths", paths).load()
    out = {n: ([], [], []) for n in NAMES}
    for r in df.collect():
        r = r.asDict(recursive=True)
        bad = r.pop("_corrupt")
        if bad is None:
            out[_owner(kcorpus, r["file"])][0].append(r)
        else:
            out[_owner(kcorpus, r["file"])][1].append((r, bad))
    found = spark.read.format("kestrel-findings").option("as_of", AS_OF).option("paths", paths).load()
    for r in found.collect():
        d = r.asDict()
        out[_owner(kcorpus, d.pop("log"))][2].append(d)
    return out


def _local(path: str, limit=None, keep_open=False):
    from wqtool.engine.kestrel import reader as kreader, verify as kverify
    [fs] = kreader.discover([path])
    return kverify.run_log(fs, as_of_ns(), limit=limit, keep_open=keep_open)


# ---------------------------------------------------------------- the data source
@pytest.mark.parametrize("name", NAMES)
def test_rows_equal_dump_jsonl(name, kloaded, kcorpus):
    res = cli("dump", "-o", "jsonl", "--format", "kestrel", "--as-of", AS_OF, kcorpus[name])
    expected = jsonl_rows(res.out)
    assert expected and kloaded[name][0] == expected


@pytest.mark.parametrize("name", NAMES)
def test_findings_source_yields_the_findings_verify_reports(name, kloaded, kcorpus):
    """The reader's findings file by file, then (the queue's last partition) the replay's and the closing
    notes: verify's findings, each with its queue in the ``log`` column."""
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    report = _local(kcorpus[name])
    ordered = ([f for f in report.findings if f.code not in KESTREL_REPLAY_CODES]
               + [f for f in report.findings if f.code in KESTREL_REPLAY_CODES])
    assert kloaded[name][2] == [finding_to_jsonable(f) for f in ordered]
    assert any(f.code == "KQ-NO-CHECKSUM" for f in ordered)
    if name in DAMAGE:
        assert CODES.of(report.verdict) == DAMAGE[name][2]     # DAMAGE: verify's exit code


@pytest.mark.parametrize("name", NAMES)
def test_permissive_rows_are_the_unreadable_ranges(name, kloaded, kcorpus):
    """A row per stretch of bytes no record covers (with the damage row's fields: file, offset, error) and the
    finding in ``_corrupt``; no row for warnings or notes."""
    from wqtool.engine.findings import Verdict
    from wqtool.engine.kestrel.serialize import damage_to_jsonable
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    report = _local(kcorpus[name])
    bad = [f for f in report.findings if f.severity == "error" and f.verdict in (Verdict.TORN_TAIL, Verdict.CORRUPT)]
    assert [b for _, b in kloaded[name][1]] == [finding_to_jsonable(f) for f in bad]
    assert [row for row, _ in kloaded[name][1]] == [damage_to_jsonable(f) for f in bad]
    assert len(kloaded[name][0]) == report.records
    if name in DAMAGE and DAMAGE[name][2] in (1, 3):
        assert kloaded[name][1]


def test_history_false_and_keep_open(spark, kcorpus):
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    path = kcorpus["rotated-set-with-pack"]
    strip = lambda rows: [{k: v for k, v in r.asDict().items() if k != "log"} for r in rows]  # noqa: E731
    off = strip(spark.read.format("kestrel-findings").option("history", "false").load(path).collect())
    assert off == [finding_to_jsonable(f) for f in _local(path).findings
                   if f.code not in KESTREL_REPLAY_CODES]
    codes = {}
    for keep_open in (False, True):
        got = strip(spark.read.format("kestrel-findings").option("as_of", AS_OF)
                    .option("keep_open", str(keep_open).lower()).load(path).collect())
        want = [finding_to_jsonable(f) for f in _local(path, keep_open=keep_open).findings]
        assert sorted(json.dumps(r, sort_keys=True) for r in got) == sorted(json.dumps(w, sort_keys=True) for w in want)
        codes[keep_open] = {r["code"] for r in got}
    assert codes[False] - codes[True] == {"KQ-OPEN-BACKED-OUT"}   # the open transaction: backed out, or kept open


def test_one_partition_per_journal_file_in_replay_order(spark, kcorpus):
    df = spark.read.format("kestrel").option("mode", "failfast").load(kcorpus["rotated-set-with-pack"])
    assert df.rdd.getNumPartitions() == 3
    rows = df.collect()
    assert [r["record_index"] for r in rows] == list(range(len(rows)))   # indexes run across the queue's files
    assert os.path.basename(rows[0]["file"]) == "jobs.2000.pack"
    assert os.path.basename(rows[-1]["file"]) == "jobs"
    per_file = (spark.read.format("kestrel").option("mode", "failfast").option("index", "file")
                .load(kcorpus["rotated-set-with-pack"]).collect())
    assert [r["record_index"] for r in per_file if r["file"].endswith("/jobs")] == [0, 1]


def test_failfast_raises_on_the_first_error_and_schema_is_dump_fields(spark, kcorpus):
    from wqtool.engine.kestrel.serialize import KESTREL_RECORD_FIELDS
    with pytest.raises(Exception, match="KQ-BAD-OPCODE"):
        spark.read.format("kestrel").option("mode", "failfast").load(kcorpus["damage-mid-live"]).collect()
    df = spark.read.format("kestrel").option("mode", "failfast").load(kcorpus["clean-journal"])
    assert tuple(df.columns) == tuple(f for f in KESTREL_RECORD_FIELDS if f != "payload")
    assert dict(df.dtypes)["xid"] == "bigint"
    binary = spark.read.format("kestrel").option("payload", "binary").load(kcorpus["clean-journal"])
    assert dict(binary.dtypes)["payload"] == "binary"
    from wqtool.engine.kestrel import model as kmodel, reader as kreader
    [fs] = kreader.discover([kcorpus["clean-journal"]])
    data = [ev.data for ev in kreader.JournalReader(fs).events() if ev.__class__ is kmodel.Record]
    assert [r["payload"] for r in binary.where("_corrupt is null").collect()] == data


# ---------------------------------------------------------------- fleet
def test_run_kestrel_equals_local_on_every_queue(spark, kcorpus):
    from wqtool.engine.kestrel import reader as kreader
    from wqtool.engine.serialize import finding_to_jsonable
    from wqtool.exitcodes import CODES
    from wqtool.engine.format import Options, get
    from wqtool.spark.fleet import PerLogFleet
    sets = [kreader.discover([kcorpus[n]])[0] for n in NAMES]
    for keep_open, limit in ((False, None), (True, 1)):
        fleet = PerLogFleet(get("kestrel")).run(spark, sets, Options(as_of_ns(), settings={"keep_open": keep_open}),
                                                limit=limit, items=True)
        for name, (a, _) in zip(NAMES, fleet):
            b = _local(kcorpus[name], limit, keep_open)
            assert ([finding_to_jsonable(f) for f in a.findings]
                    == [finding_to_jsonable(f) for f in b.findings])
            assert (a.root, a.verdict, a.counts, a.severities, a.records, a.bytes, a.segments, a.last_good) == \
                (b.root, b.verdict, b.counts, b.severities, b.records, b.bytes, b.segments, b.last_good), name
            assert a.state.digest() == b.state.digest(), name
            assert a.state.canonical_rows() == b.state.canonical_rows(), name


def test_verify_cli_same_output_and_exit_code_mixed_with_workq(kcorpus):
    paths = [kcorpus[n] for n in NAMES] + [os.path.join("fixtures", "workq", "sample-clean", "log")]
    local = cli("verify", "-o", "json", "--as-of", AS_OF, *paths)
    spark = cli("verify", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *paths)
    assert spark.code == local.code == 3
    assert json.loads(spark.out) == json.loads(local.out)
    assert "a task per log" in spark.err
    for name in ("torn-tail", "k-truncated-live", "clean-journal"):   # exit 1 and 0 on their own
        args = ("-o", "json", "--keep-open", "--max-findings", "1", "--as-of", AS_OF, kcorpus[name])
        local, spark = cli("verify", *args), cli("verify", "--engine", "spark", *args)
        assert (spark.code, json.loads(spark.out)) == (local.code, json.loads(local.out)), name


@pytest.mark.parametrize("name", ["clean-journal", "torn-tail", "k-bad-opcode-live", "half-finished-pack"])
def test_replay_cli_same_state(kcorpus, name):
    for extra in ((), ("--keep-open",)):
        local = cli("replay", "-o", "json", "--as-of", AS_OF, *extra, kcorpus[name])
        spark = cli("replay", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *extra, kcorpus[name])
        assert (spark.code, json.loads(spark.out)) == (local.code, json.loads(local.out))
        assert json.loads(spark.out)["digest"]


def test_stats_same_document_mixed_with_workq(kcorpus):
    paths = [kcorpus[n] for n in NAMES] + [os.path.join("fixtures", "workq", "sample-clean", "log")]
    local = cli("stats", "-o", "json", "--as-of", AS_OF, *paths)
    spark = cli("stats", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *paths)
    assert spark.code == local.code == 3
    assert json.loads(spark.out) == json.loads(local.out)
    doc = json.loads(local.out)
    assert [d["root"] for d in doc["logs"]][0] == "fixtures/kestrel/clean-journal/queue/things"   # PATH order
    assert doc["logs"][-1]["root"] == "fixtures/workq/sample-clean/log"
    assert doc["logs"][0]["state"]["queues"] == {"things": {"queued": 3, "open": 0}}


# ---------------------------------------------------------------- export
def test_parquet_round_trip(spark, kcorpus, kloaded, tmp_path):
    names = ["clean-journal", "rotated-set-with-pack", "k-bad-opcode-live"]
    out = str(tmp_path / "kestrel.parquet")
    res = cli("dump", "--engine", "spark", "-o", "parquet", "--as-of", AS_OF, "--out", out,
              *(kcorpus[n] for n in names))
    assert res.code == 3, res.err
    assert "KQ-BAD-OPCODE" in res.err
    back = [r.asDict(recursive=True) for r in spark.read.parquet(out + "/records").collect()]
    key = lambda r: (r["file"], r["offset"] if r["offset"] is not None else -1, r["error"] or "")
    records = sorted(({k: v for k, v in r.items() if k != "_corrupt"} for r in back if r["_corrupt"] is None),
                     key=key)
    assert records == sorted((r for n in names for r in kloaded[n][0]), key=key)
    fkey = lambda f: json.dumps(f, sort_keys=True)  # noqa: E731 — part files come back in any order
    bad = sorted((r["_corrupt"] for r in back if r["_corrupt"] is not None), key=fkey)
    assert bad == sorted((f for n in names for _, f in kloaded[n][1]), key=fkey)
    assert {f["code"] for f in bad} == {"KQ-BAD-OPCODE"}
    found = sorted(({k: v for k, v in r.asDict().items() if k != "log"}
                    for r in spark.read.parquet(out + "/findings").collect()), key=fkey)
    assert found == sorted((f for n in names for f in kloaded[n][2]), key=fkey)
    assert {f["code"] for f in found} >= {"KQ-BAD-OPCODE", "KQ-OPEN-BACKED-OUT", "KQ-NO-CHECKSUM"}


def test_jsonl_export_mixed_with_workq_writes_a_directory_per_format(spark, kcorpus, tmp_path):
    out = str(tmp_path / "mixed")
    res = cli("dump", "--engine", "spark", "-o", "jsonl", "--out", out, kcorpus["torn-tail"],
              os.path.join("fixtures", "workq", "sample-clean", "log"))
    assert res.code == 1, res.err                     # the torn tail of the live Kestrel file
    assert sorted(os.listdir(out)) == ["kestrel", "workq"]
    assert sorted(os.listdir(os.path.join(out, "kestrel"))) == ["findings", "records"]
    rows = []
    for p in sorted(glob.glob(os.path.join(out, "kestrel", "records", "*.json"))):
        with open(p) as f:
            rows += [json.loads(line) for line in f]
    assert {r["op"] for r in rows if r.get("op")} == {"addx", "remove"}


@pytest.mark.parametrize("extra", [("--keep-open",), ("--kestrel-version", "2")])
def test_stats_kestrel_options_same_on_both_engines(kcorpus, extra):
    paths = [kcorpus["rotated-set-with-pack"], kcorpus["legacy-1x-journal"]]
    plain = cli("stats", "-o", "json", "--as-of", AS_OF, *paths)
    local = cli("stats", "-o", "json", "--as-of", AS_OF, *extra, *paths)
    spark = cli("stats", "--engine", "spark", "-o", "json", "--as-of", AS_OF, *extra, *paths)
    assert spark.code == local.code
    assert json.loads(spark.out) == json.loads(local.out) != json.loads(plain.out)   # the option changes the answer
