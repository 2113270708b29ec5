"""Issue 9: an operator-grade CLI — one test group per numbered point (items 0, 0b, 0c, 3: test_safety.py)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from wqtool.engine import format as registry

from tests.conftest import AS_OF, ROOT, cli, fixture_log
from wqtool.engine.findings import Verdict

CRC = "fixtures/workq/crc-mismatch-mid-segment/log"
TORN = "fixtures/workq/torn-tail-mid-record/log"
CLEAN = "fixtures/workq/sample-clean/log"
K_TORN = "fixtures/kestrel/torn-tail/queue"
K_ROT = "fixtures/kestrel/rotated-set-with-pack/queue"


def run(*argv: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wqtool", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, **kw)


# ---------------------------------------------------------------- 1. one bad path hides the others
def test_verify_gives_every_path_its_verdict_and_the_most_severe_exit(in_root, tmp_path):
    note = tmp_path / "notes.txt"
    note.write_text("not a log\n")
    r = cli("verify", "--as-of", AS_OF, CRC, "/nonexistent", CLEAN, str(note))
    assert r.code == 3                      # the corruption is not hidden by the I/O error (5) or the usage error (2)
    lines = [l for l in r.out.splitlines() if not l.startswith(" ")]
    assert lines == [f"{CRC}: 4 segment(s), 59 records, 3721 bytes: CORRUPT (exit 3)",
                     "/nonexistent: unreadable: no such file or directory (exit 5)",
                     f"{CLEAN}: 4 segment(s), 60 records, 3721 bytes: clean (exit 0)",
                     f"{note}: not a log: cannot detect the log format: its first bytes 6e6f7420 match none of the "
                     f"formats ({', '.join(registry.names())}); pass --format NAME to read it as one (it says what "
                     "that format expects; man 5 wqtool-formats lists each format's evidence) (exit 2)"]
    assert "wqtool: /nonexistent: no such file or directory" in r.err

    doc = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, CRC, "/nonexistent", CLEAN).out)
    assert doc["exit_code"] == 3
    assert [(lg["root"], lg["exit_code"], lg["verdict"]) for lg in doc["logs"]] == \
        [(CRC, 3, "CORRUPT"), ("/nonexistent", 5, "unreadable"), (CLEAN, 0, "clean")]
    assert doc["logs"][1]["error"] == "no such file or directory"

    rows = [json.loads(l) for l in cli("verify", "-o", "jsonl", "/nonexistent", CLEAN).out.splitlines()]
    summary = rows[-1]["summary"]          # the stream's last line: the run's summary, every PATH's entry in it
    assert (summary["exit_code"], summary["verdict"]) == (5, "unreadable")
    assert summary["logs"][0] == {"root": "/nonexistent", "verdict": "unreadable", "exit_code": 5,
                                  "error": "no such file or directory"}


@pytest.mark.parametrize("paths,code", [
    ([CLEAN, "/nonexistent"], 5), ([TORN, "/nonexistent"], 5), ([TORN, "README.md"], 2),
    (["/nonexistent", "README.md"], 5), (["fixtures/workq/duplicate-add/log", "/nonexistent"], 4),
    ([CRC, "fixtures/workq/duplicate-add/log", "/nonexistent"], 3), ([CLEAN, TORN], 1),
])
def test_the_exit_precedence_across_paths(in_root, paths, code):
    """3 > 4 > 5 > 2 > 1 > 0, for verify, stats and dump alike (and verify -q says it with no report)."""
    for argv in (["verify", "-q"], ["stats"], ["dump", "-o", "jsonl"]):
        r = cli(*argv, "--as-of", AS_OF, *paths)
        assert r.code == code, (argv, r.err)
    r = cli("verify", "-q", "--as-of", AS_OF, *paths)
    assert r.out == ""


def test_the_precedence_table():
    from wqtool.exitcodes import ExitCode as E, PRECEDENCE_TEXT, most_severe
    assert most_severe([]) == E.OK
    assert most_severe([E.TORN_TAIL, E.USAGE]) == E.USAGE
    assert most_severe([E.USAGE, E.IO, E.TORN_TAIL]) == E.IO
    assert most_severe([E.IO, E.INVALID_HISTORY]) == E.INVALID_HISTORY
    assert most_severe([E.INVALID_HISTORY, E.CORRUPT, E.IO]) == E.CORRUPT
    assert PRECEDENCE_TEXT == "3 > 4 > 5 > 2 > 1 > 0"


def test_stats_and_dump_report_the_bad_path_and_the_others(in_root):
    r = cli("stats", "-o", "json", "--as-of", AS_OF, "/nonexistent", CLEAN)
    doc = json.loads(r.out)
    assert [lg["root"] for lg in doc["logs"]] == ["/nonexistent", CLEAN]
    assert doc["logs"][0] == {"root": "/nonexistent", "verdict": "unreadable", "exit_code": 5,
                              "error": "no such file or directory"}
    assert doc["total"]["logs"] == 1 and doc["total"]["records"] == 60 and doc["total"]["exit_code"] == 5
    assert r.code == 5
    r = cli("stats", "--as-of", AS_OF, "/nonexistent", CLEAN)
    assert r.out.startswith("/nonexistent: unreadable: no such file or directory (exit 5)\n")
    r = cli("dump", "-o", "jsonl", "--as-of", AS_OF, CLEAN, "/nonexistent", K_ROT)
    rows = [json.loads(l) for l in r.out.splitlines()]
    assert len(rows) == 60 + 10 + 1 and r.code == 5          # the records, then the summary line
    assert rows[-1]["summary"]["exit_code"] == 5 and rows[-1]["summary"]["verdict"] == "unreadable"
    assert r.err == "wqtool: /nonexistent: no such file or directory\n"


def test_resolve_each_keeps_files_of_one_directory_together_and_names_the_bad_one(tmp_path):
    from wqtool.engine.format import Log, Options, Unresolved, resolve_each
    segs = [os.path.join(fixture_log("sample-clean"), f"00000000{i}.log") for i in (1, 2)]
    entries = resolve_each([segs[0], str(tmp_path / "gone.log"), segs[1]], "auto", Options(0))
    assert [type(e) for e in entries] == [Log, Unresolved]
    assert len(entries[0].files) == 2 and entries[1].path.endswith("gone.log")
    entries = resolve_each([segs[0], str(tmp_path / "gone.log")], "workq", Options(0))
    assert [type(e) for e in entries] == [Log, Unresolved]


# ---------------------------------------------------------------- 2. a live log mid-append is in flight
@pytest.fixture
def torn_copy(tmp_path):
    d = tmp_path / "log"
    shutil.copytree(fixture_log("torn-tail-mid-record"), d)
    return str(d)


@pytest.fixture
def flock_held():
    """Hold a flock on a path in another process (as workq-server holds append.lock), with flock(1)."""
    procs = []

    def hold(path: str):
        p = subprocess.Popen(["flock", "-x", path, "sleep", "60"])
        deadline = time.monotonic() + 10
        from wqtool.engine.live import is_locked
        while not is_locked(path):
            assert time.monotonic() < deadline, "flock did not take the lock"
            time.sleep(0.02)
        procs.append(p)
        return p
    yield hold
    for p in procs:
        p.kill()
        p.wait()


def test_a_torn_tail_under_a_held_append_lock_is_in_flight(torn_copy, flock_held):
    assert cli("verify", "-q", torn_copy).code == 1
    flock_held(os.path.join(torn_copy, "append.lock"))
    for extra in ([], ["--horizon"]):
        r = cli("verify", *extra, "--as-of", AS_OF, torn_copy)
        assert r.code == 0, r.out
        assert "WQ-IN-FLIGHT" in r.out and "clean (exit 0)" in r.out
        assert "truncat" not in r.out.replace("do not truncate", "")     # never "safe to truncate"
        assert "append.lock is held" in r.out
    doc = json.loads(cli("verify", "-o", "json", "--as-of", AS_OF, torn_copy).out)["logs"][0]
    assert doc["verdict"] == "clean" and doc["last_good"] is None
    assert doc["counts"] == {"WQ-IN-FLIGHT": 1, "WQ-LEASE-RESTORED": 1, "WQ-TTL-RESET": 1}
    [f] = [f for f in doc["findings"] if f["code"] == "WQ-IN-FLIGHT"]
    assert f["severity"] == "note" and f["offset"] == 0x24e and f["at"] == "000000004.log@0x24e" and "exit_class" not in f
    # dump, replay and stats agree with verify
    assert cli("replay", "--summary", torn_copy).code == 0
    lg = json.loads(cli("stats", "-o", "json", torn_copy).out)["logs"][0]
    st = dict(lg["damage"], exit_code=lg["exit_code"])
    assert (st["exit_code"], st["errors"], st["counts"].get("WQ-IN-FLIGHT"), "WQ-TRUNCATED" in st["counts"]) == \
        (0, 0, 1, False)
    d = cli("dump", "-o", "hex", torn_copy)
    assert d.code == 0 and "WQ-IN-FLIGHT" in d.err and "0x24e..0x262 IN FLIGHT" in d.out and "UNREADABLE" not in d.out


def test_pack_apply_refuses_a_live_log_and_changes_nothing(torn_copy, flock_held):
    flock_held(os.path.join(torn_copy, "append.lock"))
    before = {n: open(os.path.join(torn_copy, n), "rb").read() for n in os.listdir(torn_copy)}
    r = cli("pack", "--apply", "--format", "workq", torn_copy)
    assert r.code == 5 and "the writer must be stopped before pack --apply" in r.err and r.err.count("\n") == 1
    assert {n: open(os.path.join(torn_copy, n), "rb").read() for n in os.listdir(torn_copy)} == before


def test_live_flag_and_the_plan(torn_copy):
    r = cli("verify", "--live", torn_copy)
    assert r.code == 0 and "WQ-IN-FLIGHT" in r.out and "--live was given" in r.out
    r = cli("pack", "--apply", "--live", "--format", "workq", torn_copy)
    assert r.code == 5 and "--live was given" in r.err
    assert cli("pack", "--live", torn_copy).code == 0        # the plan: the input's verdict, in flight
    assert cli("pack", torn_copy).code == 1


def test_a_kestrel_journal_held_open_by_a_writer_is_in_flight(tmp_path):
    q = tmp_path / "queue"
    shutil.copytree(os.path.join(ROOT, K_TORN), q)
    assert cli("verify", "-q", str(q)).code == 1
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); "
                               "print('ok', flush=True); time.sleep(60)", str(q / "mail")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"ok"
        r = cli("verify", str(q))
        assert r.code == 0 and "KQ-IN-FLIGHT" in r.out and f"pid {holder.pid}" in r.out, r.out
        assert cli("pack", "--apply", str(q)).code == 5
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("mode, writer", [("rb", False), ("ab", True), ("r+b", True)])
def test_only_a_holder_open_for_writing_is_a_live_writer(tmp_path, mode, writer):
    """A process that only reads the journal (another wqtool verify, a tail) is no writer: the torn tail stays
    damage (exit 1). Two verifies of one queue used to take each other for its writer and report it in flight,
    exit 0. A holder open for writing (append, or read-write) makes it in flight; replacing files is refused on
    any holder."""
    from wqtool.engine.live import holders
    q = tmp_path / "queue"
    shutil.copytree(os.path.join(ROOT, K_TORN), q)
    holder = subprocess.Popen([sys.executable, "-c", f"import sys, time; f = open(sys.argv[1], {mode!r}); "
                               "print('ok', flush=True); time.sleep(60)", str(q / "mail")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"ok"
        assert [pid for pid, _p, _c in holders([str(q / "mail")])] == [holder.pid]
        assert [pid for pid, _p, _c in holders([str(q / "mail")], writing=True)] == ([holder.pid] if writer else [])
        r = cli("verify", str(q))
        assert (r.code, "KQ-IN-FLIGHT" in r.out) == ((0, True) if writer else (1, False)), r.out
        assert cli("pack", "--apply", str(q)).code == 5           # Kestrel's pack refuses any holder
    finally:
        holder.kill()
        holder.wait()


def test_a_live_file_that_changes_during_the_read_is_in_flight(tmp_path):
    """Kestrel has no lock files: a writer another host or container runs is only seen by the live file
    changing while wqtool reads it."""
    from wqtool.engine.format import Options, resolve
    from wqtool.engine.live import LiveWatch
    q = tmp_path / "queue"
    shutil.copytree(os.path.join(ROOT, K_TORN), q)
    [log] = resolve([str(q)], "auto", Options(0))
    watch = LiveWatch(log)
    [report] = log.fmt.passes.verify([log.data], Options(0)).logs
    assert report.verdict == Verdict.TORN_TAIL
    with open(q / "mail", "ab") as f:          # the writer appends while we read
        f.write(b"\x00")
    report = watch.settle(report)
    assert report.verdict == Verdict.CLEAN and report.counts["KQ-IN-FLIGHT"] == 1
    assert "changed while it was read" in report.findings[0].message or \
        any("changed while it was read" in f.message for f in report.findings)
    # unchanged and not held: a torn tail stays a torn tail
    [log] = resolve([os.path.join(ROOT, K_TORN)], "auto", Options(0))
    watch = LiveWatch(log)
    [report] = log.fmt.passes.verify([log.data], Options(0)).logs
    assert watch.settle(report).verdict == Verdict.TORN_TAIL


# ---------------------------------------------------------------- 4. a closed pipe: silent 141
@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    from wqtool.engine.workq.sample import SampleSpec, generate
    d = str(tmp_path_factory.mktemp("big") / "log")
    generate(d, SampleSpec(records=3000, segment_size=64 * 1024, payload_max=96))
    return d


@pytest.mark.parametrize("argv", [["dump"], ["dump", "-o", "hex"], ["replay"], ["replay", "-o", "jsonl"]])
def test_a_reader_that_closes_early_gets_141_and_silence(big_log, argv):
    cmd = " ".join([f"'{sys.executable}'", "-m", "wqtool", *argv, "--as-of", AS_OF, f"'{big_log}'"])
    r = subprocess.run(["bash", "-c", cmd + " | head -1 >/dev/null; echo \"${PIPESTATUS[0]}\""], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "141", (r.stdout, r.stderr)
    assert r.stderr == ""


@pytest.fixture(scope="module")
def many_findings(tmp_path_factory):
    """A log whose verify report is far bigger than a pipe's buffer: 1,500 impossible start-attempts."""
    from tests.conftest import already_processed_log
    return already_processed_log(str(tmp_path_factory.mktemp("findings") / "log"), 1500)


@pytest.mark.parametrize("argv", [["verify", "--max-findings", "5000"], ["verify", "-o", "jsonl", "--max-findings",
                                                                          "5000"]])
def test_verify_into_a_reader_that_closes_early_gets_141(many_findings, argv):
    cmd = " ".join([f"'{sys.executable}'", "-m", "wqtool", *argv, "--as-of", AS_OF, f"'{many_findings}'"])
    r = subprocess.run(["bash", "-c", cmd + " | head -1 >/dev/null; echo \"${PIPESTATUS[0]}\""], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert (r.stdout.strip(), r.stderr) == ("141", "")
    whole = subprocess.run(["bash", "-c", cmd + " | wc -l; echo \"${PIPESTATUS[0]}\""], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert whole.stdout.split()[-1] == "4" and int(whole.stdout.split()[0]) > 1500   # read to the end: the verdict


@pytest.mark.parametrize("argv", [["verify"], ["verify", "-o", "json"], ["replay", "--summary"], ["stats"]])
def test_a_pipe_closed_before_anything_is_written_gets_141(argv):
    """A pipe whose reader is already gone (closed before wqtool starts): the first write fails, wqtool stops
    at once and silently — never 0 (which would say 'clean' for a log it did not finish checking)."""
    rfd, wfd = os.pipe()
    os.close(rfd)
    try:
        r = subprocess.run([sys.executable, "-m", "wqtool", *argv, "--as-of", AS_OF, CLEAN], cwd=ROOT, stdout=wfd,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(wfd)
    assert (r.returncode, r.stderr) == (141, "")


# ---------------------------------------------------------------- 5. hex offsets accepted back
def test_offsets_printed_in_hex_are_accepted_back(in_root):
    r = cli("verify", CRC)
    assert "000000001.log@0x11c" in r.out
    seg = CRC + "/000000001.log"
    dec = cli("dump", "-o", "jsonl", "--from-offset", "404", "--to-offset", "600", seg)
    for a, b in (("0x194", "0x258"), ("@0x194", "0X258"), ("0x1_94", "600")):
        h = cli("dump", "-o", "jsonl", "--from-offset", a, "--to-offset", b, seg)
        assert h.out == dec.out and h.out.count("\n") == 4 + 1, (a, b, h.err)     # 4 records, the summary
    r = cli("dump", "--from-offset", "0xZZ", seg)
    assert r.code == 2 and "expected a byte offset as wqtool prints it (000000001.log@0x11c, 0x11c or @0x11c) or " \
        "in decimal (284), got '0xZZ'" in r.err


# ---------------------------------------------------------------- 6. dump -o hex shows unreadable bytes
def test_hex_dump_shows_the_unreadable_range_between_the_records_around_it(in_root):
    r = cli("dump", "-o", "hex", "--to-offset", "0x200", CRC + "/000000001.log")
    titles = [l for l in r.out.splitlines() if not l.startswith("  ")]
    assert titles[-3:] == ["000000001.log@0xa4 #2 add len=120 size=100 crc=6b27e385",
                           "000000001.log@0x11c..0x194 UNREADABLE: 120 bytes, WQ-CRC",
                           "000000001.log@0x194 #3 add len=120 size=100 crc=cedca14b"]
    i = r.out.splitlines().index("000000001.log@0x11c..0x194 UNREADABLE: 120 bytes, WQ-CRC")
    rows = r.out.splitlines()[i + 1:i + 9]
    assert rows[0].startswith("  0000011c  01 00 00 00") and rows[-1].startswith("  0000018c  51 48 ef ff 68 d3 4f 90")
    assert r.code == 3 and "WQ-CRC" in r.err
    torn = cli("dump", "-o", "hex", TORN + "/000000004.log")
    assert "000000004.log@0x24e..0x262 UNREADABLE: 20 bytes, WQ-TRUNCATED" in torn.out and torn.code == 1
    # outside the selected range: not shown
    assert "UNREADABLE" not in cli("dump", "-o", "hex", "--from-offset", "0x200", CRC + "/000000001.log").out


# ---------------------------------------------------------------- 7. reproducible results
def _digest(*argv):
    return json.loads(cli("replay", "-o", "json", *argv).out)["digest"]


@pytest.mark.parametrize("path", [CLEAN, "fixtures/workq/upstream-a-run1/log", K_ROT])
def test_as_of_last_and_first_are_the_logs_own_times(in_root, path):
    from wqtool.engine.format import Options, resolve
    [log] = resolve([path], "auto", Options(0))
    first, last = log.fmt.passes.time_span(log.data)
    times = [log.fmt.facts(ev).time_ns for ev in log.fmt.run(log.data, Options(0), limit=0).events()
             if ev.__class__ is log.fmt.record_cls]
    assert last == max(t for t in times if t is not None) and first == min(t for t in times if t is not None)
    assert _digest("--as-of", "last", path) == _digest("--as-of", f"@{last}ns", path)
    assert _digest("--as-of", "first", path) == _digest("--as-of", f"@{first}ns", path)
    assert cli("verify", "-q", "--as-of", "last", path).code == cli("verify", "-q", "--as-of", f"@{last}ns",
                                                                     path).code


def test_nothing_live_at_now_says_why_and_suggests_as_of_last(in_root):
    r = cli("replay", "--summary", "fixtures/workq/upstream-a-run1/log")
    assert "0 jobs" in r.out
    assert r.err == ("wqtool: hint: 0 live jobs because all 11 added job(s) had expired at --as-of now "
                     "(WQ-ADD-EXPIRED); replay --as-of last shows the state as of the newest record "
                     "(reproducible)\n")
    assert cli("replay", "--summary", "--as-of", "last", "fixtures/workq/upstream-a-run1/log").err == ""
    assert cli("replay", "--summary", "--as-of", AS_OF, "fixtures/workq/upstream-a-run1/log").err == ""


def _pack_cases():
    cases = []
    for fmt_dir in ("workq", "kestrel"):
        base = os.path.join(ROOT, "fixtures", fmt_dir)
        for name in sorted(os.listdir(base)):
            sub = "log" if fmt_dir == "workq" else "queue"
            p = os.path.join("fixtures", fmt_dir, name, sub)
            if os.path.isdir(os.path.join(ROOT, p)):
                cases.append(p)
    return cases


@pytest.mark.sweep
@pytest.mark.parametrize("path", _pack_cases())
@pytest.mark.parametrize("keep_open", [[], ["--keep-open"]])
def test_pack_prints_the_digest_replay_prints(in_root, path, keep_open):
    from wqtool.engine.format import Options, resolve
    for lg in resolve([path], "auto", Options(0)):
        one = lg.fmt.passes.log_name(lg.data) if lg.fmt.name == "kestrel" and lg.data.is_dir else path
        target = [path, "-O", f"queue={lg.data.queue}"] if lg.fmt.name == "kestrel" and lg.data.is_dir else [path]
        p = cli("pack", "-o", "json", "--salvage", "--as-of", AS_OF, *keep_open, *target)
        if p.code not in (0, 1, 3, 4) or not p.out:
            continue
        r = cli("replay", "-o", "json", "--as-of", AS_OF, *keep_open, *target)
        doc = json.loads(p.out)
        assert doc["digest"] == json.loads(r.out)["digest"], one
        assert doc.get("digest_input", doc["digest"]) == doc["digest"], one


# ---------------------------------------------------------------- 9. consistent options, plain words
def test_version_short_flag_and_traceback_after_the_command(monkeypatch):
    from wqtool import __version__
    assert cli("-V").out == f"wqtool {__version__}\n"
    import wqtool.engine.workq.verify as v
    monkeypatch.setattr(v, "verify", lambda *a, **k: 1 / 0)
    for argv in (["--traceback", "verify", CLEAN], ["verify", CLEAN, "--traceback"], ["verify", "--traceback", CLEAN]):
        r = cli(*argv)
        assert r.code == 70 and "Traceback" in r.err and "ZeroDivisionError" in r.err, argv
    r = cli("verify", CLEAN)
    assert r.code == 70 and "Traceback" not in r.err


def test_usage_shows_path_dots_and_help_has_no_type_names():
    for command in ("dump", "verify", "replay", "stats", "pack"):
        r = cli(command, "--help")
        paths = "PATH..." if command == "pack" else "[PATH...]"      # the readers also take --jdbc URL
        assert f"Usage: wqtool {command} [OPTIONS] {paths}\n" in r.out
        assert "<list[str]>" not in r.out and "{PATH}" not in r.out and "PATH...  Log directories" in r.out
    r = cli("verify")
    assert "Usage: wqtool verify [OPTIONS] [PATH...]" in r.err and r.code == 2


@pytest.mark.parametrize("argv,needle", [
    (["verify", "--max-findings", "abc"], "Invalid value for '--max-findings': expected a whole number, got 'abc'"),
    (["verify", "--max-findings", "-3"], "expected a whole number from 0 to 1000000000, got -3"),
    (["verify", "--workers", "0"], "expected a whole number from 1 to 256, got 0"),
    (["dump", "--limit", "1e3"], "expected a whole number, got '1e3'"),
    (["verify", "-o", "yaml"], "Invalid value for '--output' / '-o': 'yaml' is not one of 'table', 'jsonl', 'json'."),
    (["pack", "--segment-size", "12"], "expected a whole number from 64 to 1099511627776, got 12"),
    (["dump", "--follow", "--poll", "x"], "Invalid value for '--poll': expected a number of seconds, got 'x'"),
    (["dump", "--follow", "--poll", "0"], "expected a number of seconds from 0.05 to 3600, got 0"),
    (["verify", "--as-of", "yesterday"], "--as-of: expected RFC 3339 (2026-11-21T23:30:00Z), '2026-11-21 23:30:00' "
                                         "(UTC), epoch seconds, 'now', or relative to now (-2h, -30m, -1d), got "
                                         "'yesterday'"),
])
def test_value_errors_are_plain_words(argv, needle):
    r = cli(*argv, CLEAN)
    assert r.code == 2 and needle in r.err, r.err
    assert "Value error" not in r.err and "Input should be" not in r.err and "Traceback" not in r.err


def test_times_in_utc_words_and_relative_to_now(in_root):
    a = _digest("--as-of", "2026-11-21T23:15:00Z", CLEAN)
    assert _digest("--as-of", "2026-11-21 23:15:00", CLEAN) == a
    assert _digest("--as-of", "2026-11-22 00:15:00+01:00", CLEAN) == a
    r = cli("dump", "-o", "jsonl", "--since", "2026-11-21 23:00:00.05", CLEAN)
    assert r.code == 0 and 0 < r.out.count("\n") < 60
    from wqtool.engine.instant import parse_instant
    now = 1_800_000_000 * 10**9
    assert parse_instant("-2h", now_ns=now) == now - 2 * 3600 * 10**9
    assert parse_instant("-1d", now_ns=now) == now - 86400 * 10**9
    assert parse_instant("-1h30m", now_ns=now) == now - 5400 * 10**9
    assert parse_instant("+30m", now_ns=now) == now + 1800 * 10**9
    assert cli("dump", "--since", "-1d", CLEAN).out.count("\n") == 1     # only the header: nothing that recent


def test_pack_o_is_the_report_format_and_out_the_path(in_root, tmp_path):
    r = cli("pack", "-o", "json", "--as-of", AS_OF, CLEAN)
    assert r.code == 0 and json.loads(r.out)["digest"] == _digest("--as-of", AS_OF, CLEAN)
    same = json.loads(cli("pack", "--json", "--as-of", AS_OF, CLEAN).out)
    doc = json.loads(r.out)
    for d in (doc, same):
        d.pop("elapsed_s"), d["plan"].pop("elapsed_s")
    assert doc == same
    out = tmp_path / "json"
    r = cli("pack", "-o", str(out), CLEAN)        # the old spelling of a path: refused, not a directory named json
    assert r.code == 2 and f"--out {out}" in r.err and not out.exists()
    r = cli("pack", "--out", str(out), "--as-of", AS_OF, CLEAN)
    assert r.code == 0 and out.is_dir()


# ---------------------------------------------------------------- 10. machine output never wraps
def _narrow_pty_run(argv, cols=40):
    """Run wqtool with stdout on a pseudo-terminal ``cols`` wide; return its output."""
    from tests.conftest import run_on_pty
    return run_on_pty(argv, cols=cols, timeout=60)[0]


@pytest.mark.parametrize("how", ["pipe", "pty"])
def test_digests_notes_and_tables_stay_on_one_line_when_narrow(how):
    argv = ["replay", "--summary", "--as-of", AS_OF, CLEAN]
    if how == "pipe":
        out = run(*argv, env={**os.environ, "COLUMNS": "40"}).stdout
    else:
        out = _narrow_pty_run(argv)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()
    assert "digest sha256:cff5304bb57411136a069da1e142748b24e3d5a4983bc38bf07cfd78d73babd4" in lines
    assert any(l.startswith("note: 7 add-job(s) would get a fresh TTL") and l.endswith("(see expires vs log_expires)")
               for l in lines)
    table = [l for l in lines if l[:1] in "┏┃┡│└"]
    assert len(table) == 8 and len({len(l) for l in table}) == 1      # header, 3 queues + all, borders: unwrapped
    assert "┃ queue ┃ new ┃ completed ┃ failed ┃ pending ┃ leased ┃ total ┃" in lines


def test_verify_notes_stay_on_one_line_when_narrow():
    out = run("verify", K_TORN, env={**os.environ, "COLUMNS": "40"}).stdout
    assert any(l.endswith("flipped bits inside item data or times go unnoticed") and "KQ-NO-CHECKSUM" in l
               for l in out.splitlines())
