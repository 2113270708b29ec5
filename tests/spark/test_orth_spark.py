"""The Orth executor-side formats on Spark through the generic data source and fleet: ``orth-callbacks`` and
``orth-executor-logs`` rows == the local engine's, permissive rows carry verify's findings, and verify / replay
on Spark == local on every Orth fixture."""
from __future__ import annotations

import glob
import json
import os

import pytest

from tests.conftest import ROOT, cli

LOGPATHS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "orth", "*", "logpath")))
AS_OF = "2026-02-01T00:00:00Z"


def _local_rows(fmt: str, lp: str) -> list[dict]:
    r = cli("dump", "-o", "jsonl", "--payload", "none", "--format", fmt, lp)
    return [d for d in (json.loads(x) for x in r.out.split("\n") if x) if list(d) != ["summary"]]  # not splitlines(): U+2028 is data


@pytest.mark.parametrize("fmt", ["orth-callbacks", "orth-executor-logs"])
def test_data_source_rows_equal_dump(spark, fmt):
    """One read of every fixture's logPath (a partition per file): the records of each logPath equal its local
    dump, in order, and format(fmt + "-findings") rows are verify's findings."""
    from wqtool.spark import register
    register(spark)
    df = spark.read.format(fmt).option("paths", json.dumps(LOGPATHS)).load()   # as_of: refused (no clock)
    rows = [r.asDict(recursive=True) for r in df.collect()]
    for lp in LOGPATHS:
        mine = [r for r in rows if (r["file"] or "").startswith(lp)]
        recs = [{k: v for k, v in r.items() if k != "_corrupt"} for r in mine if r["_corrupt"] is None]
        assert recs == _local_rows(fmt, lp), lp
        found = (spark.read.format(fmt + "-findings").option("paths", json.dumps([lp])).option("as_of", AS_OF)
                 .load().collect())
        codes = sorted(r["code"] for r in found)
        v = json.loads(cli("verify", "-o", "json", "--max-findings", "100000", "--as-of", AS_OF, "--format", fmt,
                           lp).out)
        assert codes == sorted(c for c, n in v["logs"][0]["counts"].items() for _ in range(n)), lp


def test_fleet_verify_and_replay_equal_local(spark):
    from wqtool.engine.format import Options, resolve
    from wqtool.spark.fleet import fleet_replay, fleet_verify
    opts = Options(1769904000 * 10**9)
    for fmt in ("orth-callbacks", "orth-executor-logs"):
        logs = resolve(LOGPATHS, fmt, opts)
        remote = fleet_verify(spark, logs, opts)
        local = [log.fmt.passes.run_log(log.data, opts) for log in logs]
        for a, b in zip(remote.logs, local):
            assert (a.verdict, dict(a.counts)) == (b.verdict, dict(b.counts))
            assert [f.code for f in a.findings] == [f.code for f in b.findings]
        for log, b in zip(logs, local):
            a = fleet_replay(spark, log, opts)
            assert log.fmt.state_view(a.state).digest() == log.fmt.state_view(b.state).digest()


def test_a_log_path_on_spark_is_both_logs_as_locally(spark):
    """verify --engine spark on an auto-detected logPath: the retry files and the executor logs, each its own
    verdict, as the local engine gives them."""
    lp = os.path.join(ROOT, "fixtures", "orth", "poison-file", "logpath")
    local = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, lp).out)
    remote = cli("verify", "-o", "json", "--engine", "spark", "--as-of", AS_OF, lp)
    assert remote.code == 3
    assert ([(x["root"], x["verdict"], x["counts"]) for x in json.loads(remote.out)["logs"]]
            == [(x["root"], x["verdict"], x["counts"]) for x in local["logs"]])
    assert [x["root"] for x in local["logs"]] == [lp + "/callbacklogs", lp]
