"""Executor log files: the line grammar (prefix, continuation lines, invalid UTF-8 tolerated), the markers, the run
state, and readLog's "from line N" rules (checked against Java's own reader)."""
from __future__ import annotations

import os
import random

import pytest

from wqtool.engine import format as registry
from wqtool.engine.format import Options
from wqtool.engine.orth_executor_logs.model import LogEntry
from wqtool.engine.orth_executor_logs.readlog import read_lines, read_log
from tests.writers.orth_executor_logs import ExecutorLogWriter

T = 1769740800000


def _entries(path):
    fmt = registry.get("orth-executor-logs")
    (log,) = fmt.discover([path], Options(0))
    return [ev for ev in fmt.run(log, Options(0)).events() if ev.__class__ is LogEntry]


def test_the_prefix_grammar_and_continuation_lines(tmp_path):
    p = tmp_path / "2026-01-30" / "5.log"
    p.parent.mkdir()
    p.write_bytes(
        b"2026-01-30 12:00:05 [com.abyss.orth.core.thread.JobThread#runSerial]-[202]-[orth-job-thread-7-1769740800000]"
        b" <br>----------- Orth job execute start -----------<br>----------- Param: foo\n"
        b"2026-01-30 12:00:06 [com.x.Y#lambda$run$0]-[-1]-[orth, EmbedServer bizThreadPool-123] multi\r\n"
        b"line \xff message\r"
        b"\tat x.Y(Y.java:1)\n"
        b"2026-01-30 12:00:07 [com.abyss.orth.core.thread.JobThread#runSerial]-[241]-[t] <br>----------- Orth job "
        b"execute end(finish) -----------<br>----------- Result: handleCode=200, handleMsg=null\n")
    es = _entries(str(p))
    assert [(e.kind, e.line, e.lines) for e in es] == [("start", 1, 1), ("log", 2, 3), ("end-finish", 5, 1)]
    assert es[1].method == "lambda$run$0" and es[1].src_line == -1 and es[1].thread == "orth, EmbedServer bizThreadPool-123"
    assert es[1].message == "multi\nline \ufffd message\n\tat x.Y(Y.java:1)" and not es[1].utf8
    assert es[2].handle_code == 200
    assert sum(e.length for e in es) == p.stat().st_size and es[1].offset == es[0].length


def test_markers_make_the_run_state(tmp_path):
    lp = str(tmp_path / "lp")
    w = ExecutorLogWriter(lp)
    w.start(1, T, T)
    w.finish(1, T, T, 500, "bad")
    w.callback(1, T, T, "error", "Connection refused")
    w.start(2, T, T)
    w.timeout(2, T, T)
    w.start(3, T, T)
    w.stopped(3, T, T)
    w.start(4, T, T)
    w.error(4, T, T, "java.lang.RuntimeException: x\n\tat a.b(c.java:1)")
    w.callback(4, T, T, "success")
    fmt = registry.get("orth-executor-logs")
    (log,) = fmt.discover([lp], Options(0))
    rep = fmt.passes.run_log(log, Options(0))
    rows = {r["log_id"]: r for r in rep.state.rows()}
    assert (rows[1]["executor"], rows[1]["handle_code"], rows[1]["status"], rows[1]["callback"],
            rows[1]["admin_status"]) == ("failed", 500, "Failed", "error", "Pending")
    assert (rows[2]["executor"], rows[2]["status"]) == ("timeout", "Timeout")
    assert (rows[3]["executor"], rows[3]["status"]) == ("killed", "Failed")
    assert (rows[4]["executor"], rows[4]["status"], rows[4]["admin_status"]) == ("failed", "Failed", "Failed")
    assert rep.counts["OE-CALLBACK-FAILED"] == 1


def test_read_log_from_line_n(tmp_path):
    p = tmp_path / "1.log"
    p.write_bytes(b"a\r\nb\rc\n\nd")
    assert read_log(str(p), 1).content == "a\nb\nc\n\nd\n" and read_log(str(p), 1).to_line == 5
    r = read_log(str(p), 4)
    assert (r.from_line, r.to_line, r.content, r.end) == (4, 5, "\nd\n", False)
    r = read_log(str(p), 9)
    assert (r.to_line, r.content, r.end) == (0, "", False)                 # nothing returned: toLineNum 0
    r = read_log(str(tmp_path / "missing.log"), 3)
    assert (r.from_line, r.to_line, r.content, r.end) == (3, 0, "Log file does not exist", True)


def test_read_lines_stops_where_java_does(oracle, tmp_path):
    """Java's strict decoder fails a whole 8192-char chunk: the lines before that chunk come back."""
    rnd = random.Random(5)
    cases = [b"ok\n\xffbad\n", b"x" * 9000 + b"\n\xff", b"a\n" * 5000 + b"\xe9\n", b"\xf0\x9f\x98\x80" * 5000 + b"\n\xff",
             b"line\n" * 1638 + b"12\xff", b"r\r" * 4096 + b"\xff", b"fine\nno newline", b""]
    for _ in range(40):
        parts = []
        for _ in range(rnd.randint(1, 400)):
            parts.append(rnd.choice([b"x" * rnd.randint(0, 80), "é中😀".encode() * rnd.randint(0, 20), b"\r\n", b"\n",
                                     b"\r"]))
        if rnd.random() < 0.7:
            parts.insert(rnd.randrange(len(parts) + 1), rnd.choice([b"\xff", b"\xe9", b"\xc3", b"\xed\xa0\x80"]))
        cases.append(b"".join(parts))
    files = []
    for i, c in enumerate(cases):
        f = tmp_path / f"{i}.log"
        f.write_bytes(c)
        files.append(str(f))
    for c, line in zip(cases, oracle.run("readlog", files)):
        n, _ = line.split()
        assert len(read_lines(c)) == int(n), (c[:60], line)
    _ = os


def test_long_lines_are_bounded_and_bad_bytes_found_anywhere(tmp_path):
    from wqtool.engine.orth_executor_logs.reader import MESSAGE_CAP, first_bad_utf8
    head = (b"2026-01-30 12:00:05 [c.C#m]-[1]-[t] <br>----------- Orth job execute start -----------<br>----------- "
            b"Param: x\n")
    big = b"y" * (3 * MESSAGE_CAP) + "é".encode() * 600_000 + b"\xff" + b"z" * 100 + b"\n"
    p = tmp_path / "2026-01-30" / "9.log"
    p.parent.mkdir()
    p.write_bytes(head + big)
    fmt = registry.get("orth-executor-logs")
    (log,) = fmt.discover([str(p)], Options(0))
    evs = list(fmt.run(log, Options(0)).events())
    (bad,) = [e for e in evs if e.__class__ is not LogEntry and e.code == "OE-INVALID-UTF8"]
    assert bad.offset == len(head) + 3 * MESSAGE_CAP + 1_200_000
    (e1,) = [e for e in evs if e.__class__ is LogEntry]          # the long line continues the first entry
    assert (e1.lines, e1.length, e1.kind) == (2, len(head) + len(big), "start")
    assert len(e1.message) < 2 * MESSAGE_CAP
    for k in range(1, 5):       # a character split across the 1 MiB pieces is still one character
        data = b"a" * ((1 << 20) - k) + "中".encode() + b"\xff"
        assert first_bad_utf8(data, 0, len(data)) == len(data) - 1


@pytest.mark.parametrize("scenario,base,release", [("xxl-job-executor-runs", 400, "xxl-job 2.3-3.x"),
                                                    ("xxl-job-2-0-executor-runs", 500, "xxl-job 2.0-2.2")])
def test_xxl_job_executor_logs_have_orths_run_states(scenario, base, release):
    """issue 19: xxl-job 2.x-3.x logs (\\r\\n line ends, its own markers) give the same run states as Orth's, no
    false OE-ORPHAN, and the release line that wrote them."""
    from tests.conftest import ROOT
    from wqtool.engine import format as registry
    from wqtool.engine.format import Options
    fmt = registry.get("orth-executor-logs")
    lp = os.path.join(ROOT, "fixtures", "orth", scenario, "logpath")
    data = open(os.path.join(lp, "2026-01-30", f"{base}.log"), "rb").read()
    assert data.count(b"\r\n") == data.count(b"\r") > 0          # every line ends \r\n (XxlJobFileAppender:110)
    run = fmt.run(fmt.discover([lp], Options(0))[0], Options(0))
    for _ in run.events():
        pass
    rep = run.report
    rows = {r["log_id"] - base: (r["executor"], r["handle_code"], r["status"], r["callback"])
            for r in rep.state.rows()}
    assert rows == {0: ("finished", 200, "Success", "success"), 1: ("failed", 500, "Failed", "success"),
                    2: ("timeout", 502, "Timeout", "success"), 3: ("killed", 500, "Failed", "success"),
                    4: ("running", None, "Pending", "none"), 5: ("failed", 500, "Failed", "error")}
    assert sorted(rep.counts) == ["OE-CALLBACK-FAILED", "OE-NO-END"]       # no OE-ORPHAN
    assert fmt.state_view(rep.state).summary()["written_by"] == [release]
