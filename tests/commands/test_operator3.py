"""Operator round 3: writers that survive any path, bounded instants, stdin, the incident page's answers."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ROOT, cli

CRC = os.path.join(ROOT, "fixtures/workq/crc-mismatch-mid-segment/log")
AS_OF = "2026-11-22T00:00:00Z"
SVG = "{http://www.w3.org/2000/svg}"


def wqtool(*argv, cwd=None, stdin=None) -> subprocess.CompletedProcess:
    """``python -m wqtool`` in a child process (bytes in argv are passed as they are: a path that is not UTF-8)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "wqtool", *argv], cwd=cwd or ROOT, env=env, input=stdin,
                          capture_output=True, timeout=120)


@pytest.fixture
def bad_name(tmp_path) -> bytes:
    """The crc-mismatch log in a directory whose name is not UTF-8 (``log\\xff``), as bytes."""
    d = os.path.join(os.fsencode(str(tmp_path)), b"log\xff")
    shutil.copytree(CRC, os.fsdecode(d))
    return d


# ---------------------------------------------------------------- writers survive any path
def test_a_non_utf8_log_directory_gets_metrics_with_its_own_exit_code(bad_name, tmp_path):
    prom = tmp_path / "m.prom"
    r = wqtool("verify", "-q", "--as-of", AS_OF, "--metrics-file", str(prom), bad_name)
    assert r.returncode == 3, r.stderr
    text = prom.read_text("utf-8")
    shown = str(tmp_path) + "/log\\\\xff"        # the label's escape of the backslash of \xff
    assert f'wqtool_verify_exit_code{{path="{shown}",format="workq"}} 3\n' in text
    assert "wqtool_verify_run_exit_code 3\n" in text


def test_a_non_utf8_log_directory_gets_a_report_and_an_svg_chart(bad_name, tmp_path):
    page = tmp_path / "r.html"
    r = wqtool("report", "--as-of", AS_OF, "--out", str(page), bad_name)
    assert r.returncode == 3, r.stderr
    assert f"<h2>{tmp_path}/log\\xff</h2>" in page.read_text("utf-8")
    svg = tmp_path / "c.svg"
    r = wqtool("stats", "--as-of", AS_OF, "--chart", str(svg), bad_name)
    assert r.returncode == 3, r.stderr
    root = ET.parse(svg).getroot()
    assert root.tag == SVG + "svg"
    texts = [t.text for t in root.iter(SVG + "text")]
    assert f"{tmp_path}/log\\xff" in texts
    drawn = {g.get("data-series") for g in root.iter(SVG + "g") if g.get("class") == "series"}
    assert {"add", "complete", "damage"} <= drawn


def test_json_shows_a_non_utf8_byte_as_ls_b_does(bad_name):
    r = wqtool("verify", "-o", "json", "--as-of", AS_OF, bad_name)
    doc = json.loads(r.stdout.decode("utf-8"))          # strict UTF-8: no lone surrogate, no raw byte
    assert doc["logs"][0]["root"].endswith("/log\\xff")
    r = wqtool("dump", "-o", "jsonl", "-n", "1", bad_name)
    row, summary = (json.loads(x) for x in r.stdout.decode("utf-8").splitlines())
    assert row["file"].endswith("/log\\xff/000000001.log") and row["at"] == "000000001.log@0x8"
    assert summary["summary"]["exit_code"] == 0
    assert b"log\\xff" in r.stderr or r.stderr == b""


def test_chart_html_is_the_page_and_other_suffixes_are_usage_errors(in_root, tmp_path):
    r = cli("stats", "--as-of", AS_OF, "--chart", str(tmp_path / "c.html"), CRC)
    assert r.code == 3
    assert (tmp_path / "c.html").read_text().startswith("<!DOCTYPE html>")
    r = cli("stats", "--chart", str(tmp_path / "c.png"), CRC)
    assert r.code == 2
    assert "--chart" in r.err and "'.png'" in r.err and not (tmp_path / "c.png").exists()


def test_report_force_replaces_the_page_atomically(in_root, tmp_path):
    page = tmp_path / "r.html"
    page.write_text("old page")
    r = cli("report", "--as-of", AS_OF, "--out", str(page), CRC)
    assert r.code == 2 and "pass --force" in r.err
    assert page.read_text() == "old page"
    ino = page.stat().st_ino
    r = cli("report", "--as-of", AS_OF, "--force", "--out", str(page), CRC)
    assert r.code == 3
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert page.stat().st_ino != ino                   # a new file renamed over the old one, not rewritten
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]     # no temp left beside it


def test_a_write_error_names_the_path_the_user_gave(in_root, tmp_path):
    target = tmp_path / "no-such-dir" / "m.prom"
    r = cli("verify", "-q", "--metrics-file", str(target), CRC)
    assert r.code == 5
    assert f"wqtool: {target}: No such file or directory" in r.err
    assert ".tmp" not in r.err


# ---------------------------------------------------------------- bounded instants
@pytest.mark.parametrize("option,value", [
    ("--as-of", "99999999999999999999"),
    ("--as-of", "9999-12-31T00:00:00Z"),
    ("--as-of", "@9223372036854775808ns"),
    ("--as-of", "-9999999w"),
    ("--as-of", "9" * 5000),
    ("--since", "99999999999999999999"),
    ("--until", "-99999999999999999999"),
])
def test_an_instant_beyond_int64_nanoseconds_is_a_usage_error(in_root, option, value):
    cmd = "dump" if option != "--as-of" else "verify"
    r = cli(cmd, option, value, CRC)
    assert r.code == 2, r.err
    [line] = r.err.splitlines()
    assert line.startswith(f"wqtool: {option}: expected ")
    assert "2262-04-11T23:47:16Z" in line


def test_the_last_instant_that_fits_is_accepted(in_root):
    assert cli("verify", "-q", "--as-of", "2262-04-11T23:47:16Z", CRC).code == 3
    assert cli("verify", "-q", "--as-of", "1677-09-21T00:12:44Z", CRC).code == 3


@pytest.mark.parametrize("value,unit", [("1763766000000", "milliseconds"), ("1763766000000000", "microseconds"),
                                        ("1763766000000000000", "nanoseconds")])
def test_epoch_milliseconds_get_a_hint(in_root, value, unit):
    r = cli("verify", "--as-of", value, CRC)
    assert r.code == 2
    assert r.err.rstrip().endswith(f"; it reads as epoch {unit} (2025-11-21T23:00:00Z): as seconds that is "
                                   "1763766000")


def test_the_engine_bounds_instants_too():
    from wqtool.engine.instant import MAX_NS, parse_instant
    assert parse_instant("@9223372036854775807ns") == MAX_NS
    with pytest.raises(ValueError, match="64-bit Unix nanoseconds"):
        parse_instant("+1000000w", now_ns=0)


# ---------------------------------------------------------------- the incident page answers the next question
def test_report_says_which_jobs_a_repair_would_lose_with_absolute_paths(in_root, tmp_path):
    page = tmp_path / "r.html"
    r = cli("report", "--as-of", AS_OF, "--out", str(page), "fixtures/workq/crc-mismatch-mid-segment/log")
    assert r.code == 3
    text = page.read_text()
    assert "<h3>What a repair would lose</h3>" in text and "<strong>1 job(s)</strong>" in text
    assert ("<td>ae97ba94-d0ed-482f-8f6d-05584ef8aa38</td><td>add</td><td>000000001.log@0x11c</td><td>3</td>"
            in text)
    assert f"wqtool repair --format workq --salvage {CRC}" in text
    assert f"Reproduce it: <code>wqtool stats --format workq --as-of {AS_OF} {CRC}</code>" in text
    assert f"--out {page} {CRC}</code>" in text                 # "Made by": the PATH absolute too


def test_a_long_legend_widens_the_drawing_instead_of_being_cut():
    from wqtool.render import charts
    out = ['<svg class="chart" width="900" height="300">']
    label = "other queues (8) (max 59,123)"
    charts._legend_fits(out, "t", [(label, "#000", "")], charts.W - charts.RIGHT + 10)
    width = int(out[0].split('width="')[1].split('"')[0])
    assert width >= charts.W - charts.RIGHT + 10 + 24 + len(label) * 7        # 7 px: 11 px sans-serif, worst case
    short = ['<svg class="chart" width="900" height="300">']
    charts._legend_fits(short, "t", [("q1 (max 3)", "#000", "")], charts.W - charts.RIGHT + 10)
    assert short[0] == '<svg class="chart" width="900" height="300">'      # fits: unchanged


# ---------------------------------------------------------------- small ones
# ---------------------------------------------------------------- stdin
def test_dump_and_verify_read_one_segment_from_stdin(tmp_path):
    seg = open(os.path.join(CRC, "000000001.log"), "rb").read()
    r = wqtool("verify", "--as-of", AS_OF, "-", stdin=seg)
    assert r.returncode == 3, r.stderr
    out = r.stdout.decode()
    assert ": 1 segment(s), 11 records, 1030 bytes: CORRUPT (exit 3)" in out
    assert "WQ-CRC               000000001.log@0x11c #-: crc mismatch" in out and "WQ-IGNORED-FILE" not in out
    r = wqtool("dump", "-o", "jsonl", "-n", "2", "-", stdin=seg)
    rows = [json.loads(x) for x in r.stdout.decode().splitlines()]
    assert [x.get("at") for x in rows[:2]] == ["000000001.log@0x8", "000000001.log@0x7f"] and "summary" in rows[-1]
    fjj = open(os.path.join(ROOT, "fixtures/fastjournal/history/journal/000000001.fjj"), "rb").read()
    assert wqtool("verify", "-q", "-", stdin=fjj).returncode == 0       # named as its reader expects (.fjj)
    kq = open(os.path.join(ROOT, "fixtures/kestrel/clean-journal/queue/things"), "rb").read()
    assert wqtool("dump", "-q", "-", stdin=kq).returncode == 0


def test_a_format_that_needs_its_directory_refuses_stdin_in_one_line():
    msg = open(os.path.join(ROOT, "fixtures/snaplist/superseded/journal/2.msg"), "rb").read()
    r = wqtool("dump", "-", stdin=msg)
    assert r.returncode == 2 and r.stdout == b""
    [line] = r.stderr.decode().splitlines()
    assert line.startswith("wqtool: PATH -: stdin holds none of the files wqtool reads from stdin (one file of "
                           "workq logs, Kestrel journals") and line.endswith("the other formats need their "
                                                                           "directory: save it and name that")
    assert wqtool("verify", "-", stdin=b"").returncode == 2


@pytest.mark.parametrize("command", ["replay", "stats"])
def test_a_dash_path_is_refused_in_one_line_by_the_others(in_root, command):
    r = cli(command, "-")
    assert r.code == 2 and r.err == ("wqtool: PATH -: this command does not read a log from stdin (dump and verify "
                                     "do); save it to a file and name that (./- for a file called -)\n")
    r = cli("verify", "-", "-")
    assert r.code == 2 and r.err == "wqtool: PATH -: stdin can be read once: name - once\n"


def test_verify_help_names_every_format_and_report_help_the_real_bin_count(in_root):
    from wqtool.engine import format as registry
    from wqtool.engine.series import MAX_BINS
    text = " ".join(cli("verify", "--help").out.split())
    for fmt in registry.formats():       # the --format list, and a word of each in the prose
        assert fmt.name in text
    for words in ("workq command logs", "Kestrel queue journals", "callback retry files", "executor log folders",
                  "job-log tables", "list journals", "EVTJ event journals", "fastjournal journals"):
        assert words in text
    assert f"at most {MAX_BINS} time bins" in " ".join(cli("report", "--help").out.split())
