"""Issue 20 (operator round 2): items 1, 2, 5 and 7 — one test group per point."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import ROOT, cli

A_RUN1 = os.path.join(ROOT, "fixtures/workq/upstream-a-run1/log")   # workq-server 0.2.0, written 2026-11-21
LATE = "2026-11-30T00:00:00Z"    # a fixed time after every TTL of A_RUN1 ran out: what --as-of now sees


@pytest.fixture
def a_run1(tmp_path) -> str:
    d = tmp_path / "log"
    shutil.copytree(A_RUN1, d)
    for p in d.iterdir():
        p.chmod(0o644)
    return str(d)


# ---------------------------------------------------------------- 1. quiet healthy logs at --as-of now
def test_a_healthy_old_log_at_as_of_now_is_one_note_per_code(in_root):
    r = cli("verify", A_RUN1)
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].endswith("28 records, 71865 bytes: clean (exit 0)")
    # before: 28 warning lines (11 WQ-ADD-EXPIRED, 17 WQ-UNKNOWN-JOB); now one note per code
    assert [l.split()[:2] for l in lines[1:-1]] == [["note", "WQ-ADD-EXPIRED"], ["note", "WQ-UNKNOWN-JOB"]]
    assert ("000000001.log@0x8: 11 add/schedule record(s) of jobs already expired at --as-of now (their TTLs ran "
            "out between 2026-11-21T23:14:56Z and 2026-11-22T00:15:53Z); --as-of last shows the log as of its "
            "newest record; --all-findings lists them") in lines[1]
    assert "000000001.log@0x11417: 17 record(s) concern jobs not live at --as-of now" in lines[2]
    assert lines[-1] == "  counts: WQ-ADD-EXPIRED 11, WQ-UNKNOWN-JOB 17"     # every finding still counted


def test_all_findings_lists_them_one_by_one(in_root):
    r = cli("verify", "--all-findings", A_RUN1)
    assert r.code == 0
    listed = [l for l in r.out.splitlines() if l.startswith("  warning ")]
    assert len(listed) == 28
    assert sum("WQ-ADD-EXPIRED" in l for l in listed) == 11


def test_an_explicit_as_of_lists_every_finding(in_root):
    """--as-of TIME, last, first ask about that time: nothing is folded (the goldens use a fixed --as-of)."""
    r = cli("verify", "--as-of", LATE, A_RUN1)
    assert sum(l.startswith("  warning ") for l in r.out.splitlines()) == 28
    r = cli("verify", "--as-of", "last", A_RUN1)
    assert sum(l.startswith("  warning ") for l in r.out.splitlines()) == 6


def test_the_summary_in_json_has_count_and_first_and_last_offsets(in_root):
    r = cli("verify", "-o", "json", A_RUN1)
    [log] = json.loads(r.out)["logs"]
    by_code = {f["code"]: f for f in log["findings"]}
    s = by_code["WQ-ADD-EXPIRED"]
    assert (s["severity"], s["count"], s["offset"], s["last_offset"]) == ("note", 11, 0x8, 0x1183f)
    assert s["file"].endswith("000000001.log") and s["last_file"] == s["file"]
    assert by_code["WQ-UNKNOWN-JOB"]["count"] == 17 and by_code["WQ-UNKNOWN-JOB"]["last_offset"] == 0x11894
    assert log["counts"] == {"WQ-ADD-EXPIRED": 11, "WQ-UNKNOWN-JOB": 17} and log["omitted_findings"] == 0
    assert json.loads(r.out)["exit_code"] == 0


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_the_summary_counts_findings_past_the_cap(engine, monkeypatch):
    """The kernel stops building findings past --max-findings (CappedFindings.over); the summary still has every
    one's place and TTL: the same as the reference pass."""
    from wqtool.engine.workq import fastreplay
    if engine == "fast":        # the kernel's pass against the reference: also under WQTOOL_PURE_PYTHON=1
        if fastreplay._kernel is None:
            pytest.skip("the C kernel (wqtool.engine.workq._kernel) is not built")
        monkeypatch.setattr(fastreplay, "KERNEL", "c")
    from wqtool.engine.findings import present
    from wqtool.engine.workq.reader import discover
    from wqtool.engine.workq.verify import run_log
    from wqtool.engine.instant import parse_instant
    [log] = discover([A_RUN1])
    rep = run_log(log, parse_instant(LATE), limit=2, state=False, engine=engine)
    fold = rep.folds["WQ-ADD-EXPIRED"]
    assert (fold.count, fold.first[1], fold.last[1]) == (11, 0x8, 0x1183f)
    assert rep.folds["WQ-UNKNOWN-JOB"].count == 17
    shown, omitted = present(rep.findings, rep.counts, rep.folds, 2, as_of="now")
    assert [(f.code, f.count) for f in shown] == [("WQ-ADD-EXPIRED", 11), ("WQ-UNKNOWN-JOB", 17)]
    assert omitted == 0


def test_replay_all_findings_prints_the_warnings_too(in_root):
    r = cli("replay", "--summary", A_RUN1)
    assert "WQ-ADD-EXPIRED" not in r.err.replace("(WQ-ADD-EXPIRED)", "")
    r = cli("replay", "--summary", "--all-findings", A_RUN1)
    assert sum(l.startswith("wqtool: warning: ") for l in r.err.splitlines()) == 28


# ---------------------------------------------------------------- 7. --max-findings keeps the most severe
def test_max_findings_keeps_an_error_behind_warnings(in_root, a_run1):
    seg = os.path.join(a_run1, "000000001.log")
    b = bytearray(open(seg, "rb").read())
    b[0x11894 + 20] ^= 0xFF                 # the last record's bytes: WQ-CRC after 27 warnings at LATE
    open(seg, "wb").write(b)
    r = cli("verify", "--as-of", LATE, "--max-findings", "1", a_run1)
    assert r.code == 1
    shown = [l for l in r.out.splitlines() if l.startswith(("  error", "  warning", "  note"))]
    assert len(shown) == 1 and shown[0].startswith("  error   WQ-CRC               000000001.log@0x11894 #-")
    assert "  ... 27 more finding(s) not shown (--max-findings)" in r.out
    r = cli("verify", "--as-of", LATE, "--max-findings", "3", a_run1)      # then by offset, shown in file order
    shown = [l.split()[1] + " " + l.split()[2] for l in r.out.splitlines() if l.startswith(("  error", "  warning"))]
    assert shown == ["WQ-ADD-EXPIRED 000000001.log@0x8", "WQ-ADD-EXPIRED 000000001.log@0x5d",
                     "WQ-CRC 000000001.log@0x11894"]


# ---------------------------------------------------------------- 2. a PATH named twice is read once
def test_a_path_named_twice_is_read_once_with_a_note(in_root, tmp_path):
    seg = "fixtures/workq/upstream-a2-run2/log/000000001.log"
    r = cli("verify", "--as-of", "last", seg, seg)       # before: WQ-DUPLICATE-JOB per add, INVALID HISTORY, exit 4
    assert r.code == 0
    assert r.out.count("clean (exit 0)") == 1 and "WQ-DUPLICATE-JOB" not in r.out
    assert r.err == f"wqtool: note: {seg} named twice: read once\n"
    link = tmp_path / "link"
    link.symlink_to(os.path.join(ROOT, "fixtures/workq/upstream-a2-run2/log"))
    d = "fixtures/workq/upstream-a2-run2/log"
    r = cli("verify", "--as-of", "last", d, f"./{d}/", str(link))
    assert r.code == 0 and r.out.count("clean (exit 0)") == 1
    assert r.err.splitlines() == [f"wqtool: note: {d} named again as ./{d}/ (the same directory): read once",
                                  f"wqtool: note: {d} named again as {link} (the same directory): read once"]
    assert cli("verify", "-q", "--as-of", "last", seg, seg).err == ""     # --quiet: nothing but errors
    r = cli("replay", "--summary", "--as-of", "last", seg, seg)
    assert r.code == 0 and "read once" in r.err


def test_a_kestrel_queue_named_twice_is_read_once(in_root):
    q = "fixtures/kestrel/rotated-set-with-pack/queue"
    one, two = cli("verify", "--as-of", "last", q), cli("verify", "--as-of", "last", q, q)
    assert two.out == one.out and two.code == one.code


# ---------------------------------------------------------------- 7. empty segments: no contradiction
def test_empty_segments_are_corrupt_without_a_truncation_promise(tmp_path):
    """Three 0-byte segments: the newest is a torn tail on its own (the server died right after creating it), but
    the older ones make the log CORRUPT (workq-server refuses to start: invalid segment header: EOF); before, the
    table said CORRUPT and then "truncating there loses no valid record" (the newest file's torn tail)."""
    d = tmp_path / "log"
    d.mkdir()
    for i in (1, 2, 3):
        (d / f"{i:09d}.log").touch()
    r = cli("verify", "--as-of", "2026-11-21T23:30:00Z", str(d))
    assert r.code == 3 and "CORRUPT (exit 3)" in r.out
    assert "truncating there loses no valid record" not in r.out
    assert (f"  the newest file is torn at {d}/000000003.log@0x0 (0), but the log is CORRUPT before it: truncating "
            "there alone does not repair it (see the errors)") in r.out.splitlines()
    d2 = tmp_path / "torn"
    d2.mkdir()
    (d2 / "000000001.log").write_bytes(open(os.path.join(A_RUN1, "000000001.log"), "rb").read())
    (d2 / "000000002.log").touch()
    r = cli("verify", "--as-of", "2026-11-21T23:30:00Z", str(d2))   # only the newest is empty: a torn tail, said so
    assert r.code == 1 and "truncating there loses no valid record" in r.out


# ---------------------------------------------------------------- 7. Ctrl-C always says "interrupted"
def _maps(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f.read()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_ctrl_c_inside_a_command_prints_interrupted(tmp_path):
    """typer turns a KeyboardInterrupt inside a command into a silent exit 130 (typer/core.py _main: ``raise
    Exit(130)``); the CLI's group carries it to the funnel. A real SIGINT, once the command is running: the workq
    kernel is loaded (polled in /proc/PID/maps), with 20,000 empty segments still to read."""
    import signal
    import subprocess
    import sys
    import time
    from wqtool.engine.workq import fastreplay
    if fastreplay._kernel is None:
        pytest.skip("the workq C kernel is not built")
    kernel = os.path.basename(fastreplay._kernel.__file__)
    d = tmp_path / "log"
    d.mkdir()
    for i in range(1, 20001):
        (d / f"{i:09d}.log").touch()
    p = subprocess.Popen([sys.executable, "-m", "wqtool", "verify", "--as-of", "2026-11-21T23:30:00Z", str(d)],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while kernel not in _maps(p.pid) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert p.poll() is None, "the command ended before it could be interrupted"
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=60)[1]
    assert (p.returncode, err) == (130, "wqtool: interrupted\n")


# ---------------------------------------------------------------- 5. Kestrel edge cases
K_SET = os.path.join(ROOT, "fixtures/kestrel/rotated-set-with-pack/queue")


@pytest.fixture
def k_queue(tmp_path) -> str:
    d = tmp_path / "queue"
    shutil.copytree(K_SET, d)
    for p in d.iterdir():
        p.chmod(0o644)
    return str(d)


def test_a_file_named_alone_is_labelled_with_its_name(in_root, k_queue, monkeypatch):
    monkeypatch.chdir(k_queue)
    r = cli("verify", "--as-of", "last", "jobs.3000")        # before: ".: 1 segment(s) ..."
    assert r.out.startswith("jobs.3000: 1 segment(s), 3 records, 34 bytes: clean (exit 0)\n")
    monkeypatch.chdir(ROOT)
    for f in ("fixtures/evtj/truncated/journal/journal-0.events", "fixtures/snaplist/ack-out-of-order/journal/3.msg",
              "fixtures/fastjournal/torn-tail/journal/000000001.fjj"):
        r = cli("verify", "--as-of", "last", f)              # before: the directory
        assert r.out.startswith(f + ": "), r.out


def test_kestrel_replay_summary_is_words_not_a_dict(in_root, k_queue):
    r = cli("replay", "--as-of", "last", os.path.join(k_queue, "jobs.3000"))
    [line] = [l for l in r.out.splitlines() if l.startswith("queue jobs:")]
    assert line.startswith("queue jobs: 0 items (0 bytes): 0 queued, 0 open, 0 expired at as-of, from 3 records")
    assert "{" not in line


def test_a_queue_pack_emptied_is_still_kestrel(tmp_path):
    """pack --apply of a queue with nothing live leaves one 0-byte <q> (Kestrel names journals <q>, <q>.<ms>, ...:
    docs/formats/kestrel-journal.md "File names"); its directory of nothing but empty journal names is a Kestrel
    queue by Kestrel's own rule (listQueues: every such name is a queue). Before: "no log found", exit 2."""
    d = tmp_path / "queue"
    d.mkdir()
    (d / "jobs").touch()
    for argv in (["verify", str(d)], ["verify", str(d / "jobs")], ["replay", "--summary", str(d)],
                 ["repair", str(d)], ["clean", str(d)], ["repair", str(d / "jobs")], ["clean", str(d / "jobs")]):
        r = cli(*argv, "--as-of", "last")
        assert r.code == 0, (argv, r.out, r.err)
    assert cli("verify", str(d)).out.startswith(f"{d}/jobs: 1 segment(s), 0 records, 0 bytes: clean (exit 0)")


def test_repair_and_clean_take_a_single_journal_file_as_pack_does(in_root, k_queue):
    import subprocess
    import sys
    # pack --apply leaves the queue as one <q> file; a file named alone that is all of its queue is the queue
    r = cli("pack", "--apply", "--as-of", "last", k_queue)
    assert r.code == 0, r.err
    assert sorted(os.listdir(k_queue)) == ["jobs"]
    live = os.path.join(k_queue, "jobs")
    for cmd in ("repair", "clean"):     # before: "repair works on a queue directory (files named one by one ...)"
        r = cli(cmd, "--as-of", "last", live)
        assert r.code == 0 and "nothing to" in r.out, (cmd, r.out, r.err)
    r = cli("repair", "--apply", "--as-of", "last", live)
    assert r.code == 0, r.err
    # one journal file of a queue of several names its queue (issue 34), as the directory does
    d = os.path.join(os.path.dirname(k_queue), "set")
    shutil.copytree(K_SET, d)
    def doc(r):
        return {k: v for k, v in json.loads(r.out)["logs"][0].items() if k != "elapsed_s"}
    for cmd in ("repair", "clean"):
        whole = cli(cmd, "-o", "json", "--as-of", "2011-03-13T08:00:00Z", d)
        for name in ("jobs", "jobs.3000", "jobs.2000.pack"):
            r = cli(cmd, "-o", "json", "--as-of", "2011-03-13T08:00:00Z", os.path.join(d, name))
            assert (r.code, doc(r)) == (whole.code, doc(whole)), (cmd, name, r.err)
    # several files that are part of a queue are refused with the files left out named
    r = cli("repair", "--as-of", "last", os.path.join(d, "jobs"), os.path.join(d, "jobs.3000"))
    assert r.code == 2
    assert ("repair rewrites a whole queue: queue 'jobs' also has jobs.2000.pack here; name its "
            f"directory ({d}) or every one of its files") in r.err


def test_an_empty_file_alone_is_no_log_unless_format_says(tmp_path):
    """Before: "a clean Kestrel journal labelled '.'". Now exit 2 with the reason, and --format reads it."""
    f = tmp_path / "empty.bin"
    f.touch()
    (tmp_path / "notes.txt").write_text("x\n")
    r = cli("verify", str(f))
    assert r.code == 2
    assert r.err == (f"wqtool: {f}: cannot detect the log format: an empty file (0 bytes) carries no format's "
                     "evidence; pass --format NAME to read it as one (an emptied Kestrel queue is found by its "
                     "directory: only empty journal names)\n")
    r = cli("verify", "--format", "kestrel", str(f))
    assert r.code == 0 and r.out.startswith(f"{f}: 1 segment(s), 0 records, 0 bytes: clean (exit 0)")
