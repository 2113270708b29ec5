"""The Python API: wqtool.open(path) for any registered format, times as datetime or strings (never raw ns),
the same answers as the CLI; `import wqtool` stays lazy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import wqtool
from tests.conftest import AS_OF, ROOT, cli

AS_OF_DT = datetime(2026, 11, 21, 23, 30, tzinfo=timezone.utc)
PATHS = ["fixtures/workq/sample-clean/log", "fixtures/workq/crc-mismatch-mid-segment/log",
         "fixtures/workq/duplicate-add/log", "fixtures/kestrel/rotated-set-with-pack/queue",
         "fixtures/kestrel/torn-tail/queue"]


@pytest.mark.parametrize("path", PATHS)
def test_the_api_gives_the_clis_answers(in_root, path):
    log = wqtool.open(path)
    state = log.replay(as_of=AS_OF_DT)
    r = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, path).out)
    assert state.digest == r["digest"]
    assert state.summary["digest"] == r["digest"]
    report = log.verify(as_of=AS_OF)
    v = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, path).out)["logs"][0]
    assert report.to_dict() == v and report.exit_code == v["exit_code"]
    rows = list(log.records())
    *dumped, summary = [json.loads(l) for l in cli("dump", "-o", "jsonl", "--as-of", AS_OF, path).out.splitlines()]
    assert rows == dumped and set(summary) == {"summary"}


def test_times_are_datetimes_or_strings_never_raw_numbers(in_root):
    log = wqtool.open("fixtures/workq/sample-clean/log", format="workq")
    d = log.replay(as_of=AS_OF_DT).digest
    assert log.replay(as_of="2026-11-21T23:30:00Z").digest == d
    assert log.replay(as_of="2026-11-21 23:30:00").digest == d
    assert log.replay(as_of=datetime(2026, 11, 21, 23, 30)).digest == d             # naive: UTC
    assert log.replay(as_of=datetime(2026, 11, 22, 0, 30, tzinfo=timezone(timedelta(hours=1)))).digest == d
    assert log.replay(as_of="last").as_of == datetime(2026, 11, 21, 23, 0, 0, 91654, tzinfo=timezone.utc)
    with pytest.raises(TypeError, match="raw numbers are ambiguous"):
        log.replay(as_of=1795303800)
    with pytest.raises(ValueError, match="as_of: expected RFC 3339"):
        log.verify(as_of="yesterday")


def test_open_names_one_log_and_open_all_several(in_root, tmp_path):
    import shutil
    spool = tmp_path / "spool"
    spool.mkdir()
    for src in ("rotated-set-with-pack", "clean-journal"):
        q = os.path.join(ROOT, "fixtures", "kestrel", src, "queue")
        for n in os.listdir(q):
            shutil.copy(os.path.join(q, n), spool / n)
    from wqtool.errors import UsageError
    with pytest.raises(UsageError, match="2 logs here"):
        wqtool.open(spool)
    logs = wqtool.open_all(spool)
    assert sorted(lg.name.rsplit("/", 1)[1] for lg in logs) == ["jobs", "things"]
    assert wqtool.open(spool, queue="things").replay(as_of="last").counts == {"queued": 3, "open": 0}
    with pytest.raises(UsageError, match="--format: unknown format 'nope'"):
        wqtool.open(spool, format="nope")


def test_import_wqtool_is_lazy():
    code = ("import sys, wqtool; assert callable(wqtool.open); "
            "print(sorted(m for m in ('rich', 'typer', 'pyspark', 'wqtool.engine', 'wqtool.api') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", "import sys, wqtool; print(sorted(m for m in ('rich', 'typer', "
                        "'pyspark', 'wqtool.engine') if m in sys.modules))"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.strip() == "[]", r.stderr
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "typer" not in r.stdout and "pyspark" not in r.stdout and "wqtool.api" in r.stdout, r.stderr
