"""orth-joblog's columnar fast path == the reference (reader -> JobLogReplay a row at a time, RecordStats of
every row): same findings (codes, messages, offsets, order), verdict, counts, digest, analytics, record
statistics — on every fixture, on random tables written as CSV and Parquet (duplicates, NULLs, odd codes, lost
jobs, tricky strings, small blocks and batches so that tables span many), on randomly damaged CSV, on Parquet
columns of other types; and its pieces (ids seen, status rules, datetimes, JSON text, digest) against theirs."""
from __future__ import annotations

import datetime as dt
import json
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")
import pyarrow.parquet as pq  # noqa: E402

from tests.conftest import ROOT, examples  # noqa: E402
from wqtool.commands._options import parse_time  # noqa: E402
from wqtool.engine.caps import Passes  # noqa: E402
from wqtool.engine.format import Options, resolve  # noqa: E402
from wqtool.engine.orth_joblog import fastpath, writer  # noqa: E402
from wqtool.engine.orth_joblog.format import FORMAT  # noqa: E402
from wqtool.engine.orth_joblog.model import format_datetime, parse_datetime  # noqa: E402
from wqtool.engine.orth_joblog.reader import Source, TableLog, TableReader  # noqa: E402
from wqtool.engine.orth_joblog.replay import IdSet, digest_line, line_hash  # noqa: E402
from wqtool.engine.orth_joblog.rules import bucket_index, report_bucket, status_index, status_of  # noqa: E402
from wqtool.engine.serialize import finding_json  # noqa: E402
from wqtool.formats.orth_joblog import COLUMN_NAMES, LOST_MESSAGES, REGISTRY_COLUMN_NAMES, Status  # noqa: E402

FIX = os.path.join(ROOT, "fixtures", "orth-joblog")
SCENARIOS = sorted(n for n in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, n)))
AS_OF = "2026-01-30T12:30:00Z"
OPTS = Options(parse_time(AS_OF, "--as-of"))


@pytest.fixture(autouse=True)
def _fast_path_on(monkeypatch):
    """These tests hold the fast path against the reference (called directly): they need it on, also in a run
    under WQTOOL_PURE_PYTHON=1 (the switch itself is tested below, where it is set)."""
    monkeypatch.delenv("WQTOOL_PURE_PYTHON", raising=False)
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


def _key(report) -> dict:
    return {"root": report.root, "segments": report.segments, "records": report.records, "bytes": report.bytes,
            "verdict": report.verdict, "counts": dict(report.counts), "severities": dict(report.severities),
            "last_good": report.last_good, "findings": [finding_json(f) for f in report.findings]}


def assert_same(log, opts=OPTS, *, want_batches: bool = False):
    """The fast path's stats_log and run_log(state=False) == the reference's, in every respect."""
    assert fastpath.available()
    ref_report, ref_stats = Passes.stats_log(FORMAT.passes, log, opts)        # the base class: the reference pass
    fast_report, fast_stats = FORMAT.passes.stats_log(log, opts)
    assert _key(fast_report) == _key(ref_report)
    assert fast_report.state.tally == ref_report.state.tally
    assert fast_report.state.digest() == ref_report.state.digest()
    assert fast_report.state.analytics() == ref_report.state.analytics()
    assert fast_stats == ref_stats and fast_stats.to_jsonable() == ref_stats.to_jsonable()
    ref = FORMAT.run(log, opts, limit=None)
    for _ in ref.events():
        pass
    fast = FORMAT.passes.run_log(log, opts, limit=None, state=False)
    assert _key(fast) == _key(ref.report)
    assert fast.state.tally == ref.report.state.tally
    took = any(e.__class__ is fastpath.Batch for e in fastpath.events(TableReader(log)))
    if currently_in_test_context():
        event(f"the fast path took a batch: {took}")
    assert took or not want_batches, "the fast path took no batch"
    return ref.report


# ---------------------------------------------------------------- every fixture
@pytest.mark.parametrize("name", SCENARIOS)
def test_fixture_fast_equals_reference(name, in_root):
    with open(os.path.join(FIX, name, "expected-verify.json"), encoding="utf-8") as f:
        exp = json.load(f)
    opts = Options(parse_time(exp["as_of"], "--as-of"))
    for log in resolve(exp["paths"], "orth-joblog", opts):
        rep = assert_same(log.data, opts, want_batches=name in ("clean-csv", "clean-parquet", "lost-jobs"))
        assert rep.state.digest() == exp["digest"]


def test_pure_python_switch_takes_the_reference(monkeypatch):
    monkeypatch.setenv("WQTOOL_PURE_PYTHON", "1")
    assert not fastpath.available()


# ---------------------------------------------------------------- random tables
ALIVE = ["http://10.0.0.1:9999/", "http://10.0.0.2:9999/"]
ADDRS = st.sampled_from([None, *ALIVE, "http://10.0.0.9:9999/", "http://10.0.0.1:9999", "HTTP://10.0.0.2:9999/"])
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
TRICKY = st.sampled_from(['a"b', "back\\slash", "line\nbreak", "cr\rlf\r\n", "\x00\x01\x1f\x7f", "\u2028<&>",
                          "ünï©ødé 漢字 🎉", "\\N", "", " ", ",", '""', "\t\b\f"])
STR = st.none() | TEXT | TRICKY
NOW = 1769776200          # AS_OF as naive UTC seconds
TIMES = st.none() | st.sampled_from([NOW - 86400 * 3, NOW - 601, NOW - 600, NOW - 599, NOW - 30, NOW, NOW + 5,
                                     946684799, -86400 * 365 * 1800, 0]) | st.integers(NOW - 86400 * 40, NOW)
CODES = st.sampled_from([0, 200, 500, 502, -1, 404])
MSG = st.none() | STR | st.sampled_from(list(LOST_MESSAGES.values()) + ["x" * 15_001])
ROW = st.fixed_dictionaries({
    "id": st.integers(1, 40) | st.sampled_from([0, -3, 2**40, 65_536, 65_537]),
    "job_group": st.integers(-2, 4), "job_id": st.integers(0, 5),
    "executor_address": ADDRS, "executor_handler": st.none() | st.sampled_from(["h1", "h2", "demoJobHandler"]),
    "executor_param": STR, "executor_sharding_param": st.none() | st.sampled_from(["0/2", "1/2"]),
    "executor_fail_retry_count": st.integers(0, 3),
    "trigger_time": TIMES, "schedule_time": TIMES, "trigger_code": CODES, "trigger_msg": STR,
    "handle_time": TIMES, "handle_code": CODES, "handle_msg": MSG, "alarm_status": st.sampled_from([-1, 0, 1, 2, 3, 7]),
})



@st.composite
def tables(draw):
    """Rows; sometimes one the reference refuses (a varchar overflow: its batch / block takes the reference)."""
    rows = draw(st.lists(ROW, min_size=1, max_size=60))
    bad = draw(st.integers(-4 * len(rows), len(rows) - 1))
    if bad >= 0:
        rows[bad] = {**rows[bad], "executor_sharding_param": "x" * 21}
    return rows


TABLES = tables()


def _as_text(rows):
    return [{k: (format_datetime(v) if k.endswith("_time") else v) for k, v in r.items()} for r in rows]


def _registry(rows_dir, ext: str):
    reg = [{"id": i + 1, "registry_group": "EXECUTOR", "registry_key": "app", "registry_value": a,
            "update_time": "2026-01-30 12:29:50"} for i, a in enumerate(ALIVE)]
    if ext == "csv":
        (rows_dir / "orth_job_registry.csv").write_bytes(writer.csv_bytes(reg, REGISTRY_COLUMN_NAMES))
    else:
        writer.write_parquet(str(rows_dir / "orth_job_registry.parquet"), reg, REGISTRY_COLUMN_NAMES)


def _discover(path: str) -> TableLog:
    return FORMAT.discover([path], OPTS)[0]


@given(TABLES, st.sampled_from([150, 400, 1000, 3000, fastpath.CSV_BLOCK]), st.booleans())
@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
def test_random_csv_fast_equals_reference(tmp_path_factory, monkeypatch, rows, block, crlf):
    d = tmp_path_factory.mktemp("csv")
    _registry(d, "csv")
    data = writer.csv_bytes(_as_text(rows))
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    (d / "orth_job_log.csv").write_bytes(data)
    monkeypatch.setattr(fastpath, "CSV_BLOCK", block)
    assert_same(_discover(str(d / "orth_job_log.csv")))


@given(TABLES, st.sampled_from([1, 3, 7, 65_536]), st.integers(1, 3))
@settings(max_examples=examples(150), deadline=None, suppress_health_check=HEALTH)
def test_random_parquet_fast_equals_reference(tmp_path_factory, monkeypatch, rows, batch, parts):
    d = tmp_path_factory.mktemp("pq")
    _registry(d, "parquet")
    text = _as_text(rows)
    k = max(1, len(text) // parts)
    for i, lo in enumerate(range(0, len(text), k)):
        writer.write_parquet(str(d / f"part-{i:05d}.parquet"), text[lo:lo + k], row_group_size=5)
    monkeypatch.setattr(fastpath, "PARQUET_BATCH", batch)
    assert_same(_discover(str(d)))


# ---------------------------------------------------------------- damaged CSV: the block checks and the fallback
CLEAN_ROWS = [{"id": i, "job_group": 1, "job_id": i % 3, "executor_address": ALIVE[i % 2], "executor_handler": "h1",
               "trigger_time": "2026-01-30 12:00:00", "trigger_code": 200, "handle_time": "2026-01-30 12:00:09",
               "handle_code": 200 if i % 4 else 500, "handle_msg": 'ok "quoted", done' if i % 5 else None,
               "alarm_status": 0} for i in range(1, 40)]
EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from([b'"', b"\r", b"\n", b",", b"\xff", b" ", b"\\N",
                                                                    b"", b"x", b'""', b"\r\n", b"9" * 20, b"T"]),
                           st.integers(0, 3)), min_size=1, max_size=4)


@given(EDITS, st.sampled_from([64, 300, fastpath.CSV_BLOCK]), st.booleans())
@settings(max_examples=examples(300), deadline=None, suppress_health_check=HEALTH)
def test_damaged_csv_fast_equals_reference(tmp_path_factory, monkeypatch, edits, block, cut_tail):
    data = bytearray(writer.csv_bytes(CLEAN_ROWS))
    header = data.index(b"\n") + 1
    for pos, ins, dele in edits:         # edits after the header: a header edit makes a different table
        p = header + pos % (len(data) - header)
        data[p:p + dele] = ins
    if cut_tail:
        data = data[:len(data) - 7]
    d = tmp_path_factory.mktemp("bad")
    (d / "orth_job_log.csv").write_bytes(bytes(data))
    monkeypatch.setattr(fastpath, "CSV_BLOCK", block)
    assert_same(_discover(str(d / "orth_job_log.csv")))


def test_csv_quirks_fall_back_exactly(tmp_path):
    """Inputs where pyarrow's CSV reading differs from split_csv: each still gives the reference's result."""
    head = ",".join(COLUMN_NAMES).encode() + b"\n"
    good = b'1,1,1,"a",,,,0,2026-01-30 12:00:00,,200,,2026-01-30 12:00:01,200,,0\n'
    for i, bad in enumerate([b'2,1,1,a"b,,,,0,2026-01-30 12:00:00,,200,,,0,,0\n',       # quote inside a field
                             b'2,1,1,"a"b,,,,0,2026-01-30 12:00:00,,200,,,0,,0\n',      # text after a quote
                             b'2,1,1,a\rb,,,,0,2026-01-30 12:00:00,,200,,,0,,0\n',      # a bare CR
                             b"   \n", b"\xc2\xa0\n",                                   # blank to str.strip()
                             b"2,1,1,,,,,0,2024-02-30 00:00:00,,200,,,0,,0\n",          # no such day
                             b"2,1,1,,,,,0,2024-01-01 23:59:60,,200,,,0,,0\n",          # no such second
                             b"2,1,1,,,,,0,2024-01-01T23:59:59.000,,200,,,0,,0\n",      # MySQL's other form
                             b"2,1,1,,,,,0,\xd9\xa2024-01-01 23:59:59,,200,,,0,,0\n",   # a non-ASCII digit
                             b"2,+1,1,,,,,0,,,200,,,0,,0\n", b"2,1,1,,,,,0,,,200,,,0,,0,\n",
                             b"99999999999999999999,1,1,,,,,0,,,200,,,0,,0\n"]):
        p = tmp_path / f"t{i}" / "orth_job_log.csv"
        p.parent.mkdir()
        p.write_bytes(head + good + bad + good.replace(b"1,", b"3,", 1))
        assert_same(_discover(str(p)))


def test_parquet_column_types_fall_back_exactly(tmp_path):
    """Columns typed otherwise than the writer's (text datetimes, timestamps with fractions or a zone, small
    and unsigned ints, floats, large strings, no schedule_time): fast where exact, else the reference."""
    n = 6
    base = {"id": pa.array(range(1, n + 1), pa.int64()), "job_group": pa.array([1] * n, pa.int8()),
            "job_id": pa.array([2] * n, pa.uint16()), "executor_address": pa.array(ALIVE * 3, pa.large_string()),
            "executor_handler": pa.array(["h"] * n), "executor_param": pa.nulls(n, pa.string()),
            "executor_sharding_param": pa.nulls(n, pa.string()), "executor_fail_retry_count": pa.array([0] * n),
            "trigger_time": pa.array(["2026-01-30 12:00:00"] * n), "trigger_code": pa.array([200] * n),
            "trigger_msg": pa.nulls(n, pa.string()),
            "handle_time": pa.array([dt.datetime(2026, 1, 30, 12, 0, 9)] * n, pa.timestamp("ms")),
            "handle_code": pa.array([200] * n, pa.int32()), "handle_msg": pa.nulls(n, pa.string()),
            "alarm_status": pa.array([0] * n, pa.int8())}
    variants = {
        "as-is": {},
        "us-fraction": {"handle_time": pa.array([dt.datetime(2026, 1, 30, 12, 0, 9, 5)] * n, pa.timestamp("us"))},
        "zoned": {"handle_time": pa.array([dt.datetime(2026, 1, 30, 12, 0, 9, tzinfo=dt.timezone.utc)] * n,
                                          pa.timestamp("s", tz="Asia/Shanghai"))},
        "float-codes": {"handle_code": pa.array([200.0] * n)},
        "text-codes": {"trigger_code": pa.array(["200"] * n)},
        "uint64-id": {"id": pa.array(range(1, n + 1), pa.uint64())},
        "bad-text-time": {"trigger_time": pa.array(["2026-01-30 12:00:00"] * (n - 1) + ["2026-02-30 12:00:00"])},
        "date-type": {"trigger_time": pa.array([dt.date(2026, 1, 30)] * n)},
        "null-code": {"trigger_code": pa.array([200] * (n - 1) + [None])},
        "bool-alarm": {"alarm_status": pa.array([False] * n)},
    }
    for name, change in variants.items():
        cols = {**base, **change}
        d = tmp_path / name
        d.mkdir()
        pq.write_table(pa.table(cols), str(d / "part-00000.parquet"))
        assert_same(_discover(str(d)))


# ---------------------------------------------------------------- the pieces
@given(st.lists(st.lists(st.integers(-70_000, 70_000) | st.integers(0, 2**63 - 1) | st.integers(60_000, 60_600),
                         max_size=400), max_size=5))
@settings(max_examples=examples(200), deadline=None)
def test_add_ids_equals_idset(batches):
    ref, fast = IdSet(), IdSet()
    for b in batches:
        want = [ref.add(i) for i in b]
        got = fastpath.add_ids(fast, np.array(b, dtype=np.int64))
        assert got.tolist() == want
    probe = [i for b in batches for i in b][:50] + [7, -1, 2**62]
    for i in probe:
        assert IdSet.add(ref, i) == IdSet.add(fast, i)


@given(st.lists(st.tuples(st.sampled_from([0, 200, 500, 502, -1, 404]) | st.integers(-2**31, 2**31 - 1),
                          st.sampled_from([0, 200, 500, 502, -1, 404]) | st.integers(-2**31, 2**31 - 1)),
                min_size=1, max_size=50))
@settings(max_examples=examples(200), deadline=None)
def test_vectorised_rules_equal_the_row_rules(pairs):
    cols = {"trigger_code": np.array([t for t, _ in pairs], np.int64),
            "handle_code": np.array([h for _, h in pairs], np.int64)}
    order = list(Status)
    assert [order[i] for i in status_index(cols)] == [status_of(t, h) for t, h in pairs]
    assert [("running", "suc", "fail")[i] for i in bucket_index(cols)] == [report_bucket(t, h) for t, h in pairs]


@given(st.lists(st.none() | st.integers(fastpath.MIN_S, fastpath.MAX_S), min_size=1, max_size=40))
@settings(max_examples=examples(200), deadline=None)
def test_datetimes_format_and_parse_as_the_model(secs):
    valid = np.array([s is not None for s in secs])
    arr = np.array([s or 0 for s in secs], np.int64)
    text = fastpath.format_datetimes(arr, valid)
    assert text.to_pylist() == [format_datetime(s) for s in secs]
    got = fastpath.datetime_column(None, text)
    assert got is not None
    assert [int(s) if v else None for s, v in zip(got[0], got[1])] == [parse_datetime(t) if t else None
                                                                    for t in text.to_pylist()]


@given(st.lists(st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.0+)?\Z"), min_size=1,
                max_size=20))
@settings(max_examples=examples(300), deadline=None)
def test_datetime_text_is_taken_only_when_the_model_takes_it(texts):
    got = fastpath.datetime_column(None, pa.array(texts))
    want = [parse_datetime(t) for t in texts]
    if got is None:
        assert None in want
    else:
        assert [int(s) for s in got[0]] == want
        assert got[2].to_pylist() == [t[:10] + " " + t[11:19] for t in texts]


@given(st.lists(st.none() | st.text(st.characters(blacklist_categories=("Cs",))) | TRICKY, min_size=1, max_size=30))
@settings(max_examples=examples(200), deadline=None)
def test_json_text_equals_json_dumps(values):
    got = fastpath._json_text(pa.array(values, pa.string())).to_pylist()
    assert got == [json.dumps(v, ensure_ascii=False) for v in values]


@given(TABLES)
@settings(max_examples=examples(100), deadline=None, suppress_health_check=HEALTH)
def test_digest_lines_equal_digest_line(tmp_path_factory, rows):
    d = tmp_path_factory.mktemp("dg")
    writer.write_parquet(str(d / "t.parquet"), _as_text(rows))
    log = TableLog(str(d / "t.parquet"), [Source("parquet", str(d / "t.parquet"))])
    batches = [e for e in fastpath.events(TableReader(log)) if e.__class__ is fastpath.Batch]
    for b in batches:
        status = status_index(b.ints)
        want = [digest_line(b.row(i)) for i in range(b.n)]
        lines = fastpath.digest_lines(b, status)
        assert lines.to_pylist() == want
        assert fastpath.digest_sum(lines) == sum(line_hash(x) for x in want) % (1 << 256)


@given(st.lists(st.lists(st.integers(-70_000, 70_000) | st.integers(60_000, 60_600), max_size=300), min_size=2,
                max_size=4))
@settings(max_examples=examples(200), deadline=None)
def test_idset_absorb_is_a_disjoint_union(parts):
    """IdSet.absorb (Spark: the tasks' ids) adds a set of ids that has none in common, refuses one that has."""
    sets = []
    for p in parts:
        s = IdSet()
        fastpath.add_ids(s, np.array(p, dtype=np.int64))
        sets.append(s)
    acc, seen = IdSet(), set()
    for p, s in zip(parts, sets):
        ok = acc.absorb(s)
        assert ok == seen.isdisjoint(p)
        if not ok:
            return
        seen |= set(p)
    for i in sorted(seen)[:100]:
        assert not acc.add(i)
    for i in (-70_001, 70_001, 2**40):
        assert acc.add(i)


@given(TABLES, st.integers(0, 60))
@settings(max_examples=examples(60), deadline=None, suppress_health_check=HEALTH)
def test_tallies_of_parts_merge_into_the_whole(tmp_path_factory, rows, cut):
    """Tally.merge (Spark: the tasks' tallies) of two runs over disjoint ids == the run over all rows."""
    from wqtool.engine.orth_joblog.replay import Tally
    seen, uniq = set(), []
    for r in rows:
        if r["id"] not in seen:
            seen.add(r["id"])
            uniq.append(r)
    d = tmp_path_factory.mktemp("merge")
    _registry(d, "csv")
    parts = [uniq[:cut], uniq[cut:]]
    tallies = []
    for k, part in enumerate([*parts, uniq]):
        p = d / f"t{k}.csv"
        p.write_bytes(writer.csv_bytes(_as_text(part)))
        rep, _ = FORMAT.passes.stats_log(_discover(str(p)), OPTS)
        tallies.append(rep.state.tally)
    merged = Tally()
    merged.merge(tallies[0])
    merged.merge(tallies[1])
    assert merged == tallies[2]
