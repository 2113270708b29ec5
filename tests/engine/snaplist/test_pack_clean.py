"""pack (drop blank runs, pending lines byte-exact) and clean (unlink exhausted hour files but the current and
previous hour's) on the plan framework: crash injection at every step leaves a journal with the same pending
lines; writers that race the swap lose nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from wqtool.engine.findings import Verdict
from wqtool.engine.format import Options, PackOptions, get
from wqtool.engine.fsops import LogBusy
from wqtool.engine.live import fd_holders
from wqtool.engine.plan import InjectedCrash
from wqtool.engine.snaplist.pack import content_lines
from wqtool.engine.snaplist.writer import acknowledge, append_raw, append_request

AS_OF_US = 1_769_743_800_000_000          # 03:30: hours 2 and 3 are kept
AS_OF_NS = AS_OF_US * 1000
MIN = 60_000_000
FMT = get("snaplist")
OPTS = Options(AS_OF_NS)
PACK = PackOptions(AS_OF_NS)


def journal(root) -> str:
    d = str(root)
    os.makedirs(d, exist_ok=True)
    for minutes, uri in ((200, b"zero-a"), (199, b"zero-b")):                   # 0.msg: stale, pending
        append_request(d, b"http://e.com/" + uri, AS_OF_US - minutes * MIN)
    _h, off, ln = append_request(d, b"http://e.com/one", AS_OF_US - 130 * MIN)  # 1.msg: exhausted
    acknowledge(os.path.join(d, "1.msg"), off, len(ln))
    offs = [append_request(d, b"http://e.com/p%d" % i, AS_OF_US - (20 - i) * MIN) for i in range(6)]
    for i in (0, 1, 3):                                                       # 3.msg: blanks at the start, inside
        _h, off, ln = offs[i]
        acknowledge(os.path.join(d, "3.msg"), off, len(ln))
    append_raw(d, 3, b"priority=1;uri=http://e.com/skipped\n")
    append_raw(d, 2, b"\n\n\n")                                                # 2.msg: exhausted, previous hour
    return d


def lines_of(d) -> dict[str, list[bytes]]:
    out = {}
    for n in sorted(os.listdir(d)):
        if n.endswith(".msg"):
            out[n] = content_lines(open(os.path.join(d, n), "rb").read())
    return out


def state(d):
    (log,) = FMT.discover([d], OPTS)
    rep = FMT.passes.run_log(log, OPTS)
    return rep, log


def test_pack_plan_write_and_apply(tmp_path):
    d = journal(tmp_path / "j")
    before, log = state(d)
    plan = FMT.plans.pack(log, PACK)
    doc = plan.report_doc()
    assert {os.path.basename(f["file"]) for f in doc["plan"]["rewrite"]} == {"1.msg", "2.msg", "3.msg"}
    assert doc["digest"] == before.state.digest() and doc["records_dropped"] == before.state.acked_runs
    assert lines_of(d)["3.msg"] and b"\n\n" in open(os.path.join(d, "3.msg"), "rb").read()
    w = plan.write(str(tmp_path / "out"))
    assert w.digest == before.state.digest() and lines_of(str(tmp_path / "out")) == lines_of(d)
    with pytest.raises(Exception):
        plan.write(str(tmp_path / "out"))                     # never over an existing output
    old = lines_of(d)
    res = plan.apply()
    assert lines_of(d) == old
    for n in ("1.msg", "2.msg", "3.msg"):
        data = open(os.path.join(d, n), "rb").read()
        assert b"\n\n" not in data and not data.startswith(b"\n")
    assert oct(os.stat(os.path.join(d, "3.msg")).st_mode & 0o777) == "0o600"      # the writer's mode is kept
    after, _ = state(d)
    assert after.state.digest() == before.state.digest() and res.bytes_after < res.bytes_before


def _steps(plan):
    labels = plan.apply_steps()
    out = [f"{w}:{l}" for l in labels for w in ("before", "after")]
    return out + [f"during:{l}" for l in labels if l.startswith("write-temp:")]


def test_pack_crash_at_every_step_leaves_the_same_pending_lines(tmp_path):
    src = journal(tmp_path / "src")
    want = lines_of(src)
    digest = state(src)[0].state.digest()
    steps = _steps(FMT.plans.pack(state(src)[1], PACK))
    assert len(steps) > 20
    for i, at in enumerate(steps):
        d = str(tmp_path / f"c{i}")
        shutil.copytree(src, d)
        plan = FMT.plans.pack(state(d)[1], PACK)
        with pytest.raises(InjectedCrash):
            plan.apply(fail_at=at)
        rep, log = state(d)
        assert lines_of(d) == want, at
        assert rep.state.digest() == digest, at
        assert {f.code for f in rep.findings} - {"SL-TEMP-FILE", "SL-STALE-FILE", "SL-MISSING-FIELD",
                                                   "SL-ACK-OUT-OF-ORDER"} == set(), at
        # a second run finishes the job: clean removes a leftover temp file, pack completes
        FMT.plans.clean(log, OPTS).apply()
        FMT.plans.pack(state(d)[1], PACK).apply()
        assert lines_of(d)["3.msg"] == want["3.msg"] and not os.path.exists(os.path.join(d, ".3.msg.wqtool-pack"))


def _holder(path: str, ready: str) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import os, time
        fd = os.open({path!r}, os.O_RDONLY)
        open({ready!r}, "w").close()
        time.sleep(30)
    """)
    return subprocess.Popen([sys.executable, "-c", code])


def _wait_for(path: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "helper process did not start"
        time.sleep(0.01)


def test_pack_refuses_while_another_process_holds_an_hour_file(tmp_path):
    d = journal(tmp_path / "j")
    before = open(os.path.join(d, "3.msg"), "rb").read()
    p = _holder(os.path.join(d, "3.msg"), str(tmp_path / "ready"))
    try:
        _wait_for(str(tmp_path / "ready"))
        with pytest.raises(LogBusy, match="holds 3.msg open|holds"):
            FMT.plans.pack(state(d)[1], PACK).apply()
    finally:
        p.kill()
        p.wait(10)
    assert open(os.path.join(d, "3.msg"), "rb").read() == before


WRITER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)   # the list plugin's writer
open(sys.argv[2], "w").close()
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, sys.argv[3].encode())
os.close(fd)
"""


def _late_writer(tmp_path, path: str, line: bytes):
    """A writer that opens the hour file now and waits for its lock (held by the apply)."""
    ready = str(tmp_path / f"w{time.monotonic_ns()}")
    p = subprocess.Popen([sys.executable, "-c", WRITER, path, ready, line.decode()])
    _wait_for(ready)
    return p


def test_a_writer_that_opened_the_old_file_during_pack_loses_nothing(tmp_path):
    d = journal(tmp_path / "j")
    line = b"priority=1;key_start_date=%d;uri=http://e.com/late\n" % (AS_OF_US - MIN)
    procs = []

    def hook(when, label):
        if when == "after" and label == "check:3.msg":        # checked alone; now a writer opens the old file
            procs.append(_late_writer(tmp_path, os.path.join(d, "3.msg"), line))

    want = lines_of(d)["3.msg"] + [line]
    FMT.plans.pack(state(d)[1], PACK).apply(hook=hook)
    procs[0].wait(10)
    assert lines_of(d)["3.msg"] == want


def test_a_late_writers_bytes_survive_short_writes(tmp_path, monkeypatch):
    """The late writer's bytes are appended to the new file with every write checked: a short write (a nearly full
    disk takes a few bytes at a time) goes on from where it stopped (``os.write``'s count was ignored: the line was
    cut to its first 8 bytes)."""
    d = journal(tmp_path / "j")
    line = b"priority=1;key_start_date=%d;uri=http://e.com/late\n" % (AS_OF_US - MIN)
    procs = []
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:8])))

    def hook(when, label):
        if when == "after" and label == "check:3.msg":
            procs.append(_late_writer(tmp_path, os.path.join(d, "3.msg"), line))

    want = lines_of(d)["3.msg"] + [line]
    FMT.plans.pack(state(d)[1], PACK).apply(hook=hook)
    procs[0].wait(10)
    assert lines_of(d)["3.msg"] == want


def test_clean_removes_exhausted_files_but_the_current_and_previous_hour(tmp_path):
    d = journal(tmp_path / "j")
    open(os.path.join(d, ".0.msg.wqtool-pack"), "wb").close()
    (log,) = FMT.discover([d], OPTS)
    plan = FMT.plans.clean(log, OPTS)
    doc = plan.report_doc()
    assert [os.path.basename(r["file"]) for r in doc["actions"]] == ["1.msg", ".0.msg.wqtool-pack"]
    assert doc["reclaimed"]["files"] == 2 and doc["after"]["files"] == doc["before"]["files"] - 1
    assert {os.path.basename(k["file"]): k["reason"][:8] for k in doc["keep"]} == \
        {"0.msg": "still ho", "2.msg": "previous", "3.msg": "current "}
    assert (doc["current_hour"], doc["previous_hour"]) == (3, 2)
    res = plan.apply()
    assert sorted(os.listdir(d)) == ["0.msg", "2.msg", "3.msg"] and len(res.removed) == 2


def test_clean_crash_at_every_step(tmp_path):
    src = journal(tmp_path / "src")
    want = {k: v for k, v in lines_of(src).items() if v}
    steps = _steps(FMT.plans.clean(state(src)[1], OPTS))
    for i, at in enumerate(steps):
        d = str(tmp_path / f"c{i}")
        shutil.copytree(src, d)
        with pytest.raises(InjectedCrash):
            FMT.plans.clean(state(d)[1], OPTS).apply(fail_at=at)
        assert {k: v for k, v in lines_of(d).items() if v} == want, at
        FMT.plans.clean(state(d)[1], OPTS).apply()
        assert "1.msg" not in os.listdir(d)


def test_clean_keeps_a_file_a_writer_appended_to_since_the_plan(tmp_path):
    d = journal(tmp_path / "j")
    plan = FMT.plans.clean(state(d)[1], OPTS)
    append_raw(d, 1, b"priority=1;key_start_date=%d;uri=http://e.com/new\n" % (AS_OF_US - 130 * MIN))
    plan.apply()
    assert lines_of(d)["1.msg"] == [b"priority=1;key_start_date=%d;uri=http://e.com/new\n" % (AS_OF_US - 130 * MIN)]


def test_a_writer_that_opened_an_exhausted_file_before_clean_unlinked_it_loses_nothing(tmp_path):
    d = journal(tmp_path / "j")
    line = b"priority=1;key_start_date=%d;uri=http://e.com/late\n" % (AS_OF_US - 130 * MIN)
    procs = []

    def hook(when, label):
        if when == "after" and label == "check:1.msg":
            procs.append(_late_writer(tmp_path, os.path.join(d, "1.msg"), line))

    FMT.plans.clean(state(d)[1], OPTS).apply(hook=hook)
    procs[0].wait(10)
    assert lines_of(d)["1.msg"] == [line]           # recreated the way the writer creates it
    assert oct(os.stat(os.path.join(d, "1.msg")).st_mode & 0o777) == "0o600"


def test_fd_holders_sees_other_processes_only(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x")
    fd = os.open(p, os.O_RDONLY)
    try:
        assert fd_holders(fd) == []
    finally:
        os.close(fd)
