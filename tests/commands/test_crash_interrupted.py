"""An interrupted workq ``--apply`` is recognised by what it leaves (engine/workq/interrupted.py).

The leftovers are the names of wqtool/engine/workq/swap.py's ``install`` (its docstring, steps 2-4): the temp copy
``P/<name>.<tag>-tmp-<pid>-<n>``, the verified copy ``P/<name>.<tag>-new-<ino>-<stamp>`` (before the swap: the new
log, its inode the one in its name; after the exchange: the old log), and, in the rename fallback's window, no ``D``
beside the verified copy. Each is laid out here as a killed install leaves it (its lock files unlocked: a SIGKILL
drops the flocks); the crash sweep (tests/commands/crashsweep.py) reaches the same states by killing real runs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.commands import crashsweep as cs
from tests.conftest import cli
from wqtool.engine.workq.interrupted import LINE

AS_OF = cs.AS_OF
TORN = ("workq", "torn-tail-mid-record", "log")          # verify: torn tail, exit 1
STAMP = "20261121T233000Z"


def _log(tmp_path) -> str:
    return cs.copy_of(*TORN)(str(tmp_path))


def _copy_beside(log: str, suffix: str) -> str:
    p = log + suffix
    shutil.copytree(log, p)
    return p


def _new(log: str, tag: str, *, same_inode: bool) -> str:
    """A ``-new-`` copy: named after its own inode (the verified new log) or another one (the old log after the
    exchange)."""
    tmp = _copy_beside(log, ".scratch")
    ino = os.stat(tmp).st_ino if same_inode else os.stat(log).st_ino
    p = f"{log}.{tag}-new-{ino}-{STAMP}"
    os.rename(tmp, p)
    return p


LAYOUTS = {
    "tmp": lambda log: _copy_beside(log, f".repair-tmp-{2 ** 22 + 7}-123"),
    "new-before-swap": lambda log: _new(log, "pack", same_inode=True),
    "old-after-exchange": lambda log: _new(log, "repair", same_inode=False),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_verify_reads_the_log_as_it_is_and_says_rerun(layout, tmp_path):
    log = _log(tmp_path)
    left = LAYOUTS[layout](log)
    v = cli("verify", "--as-of", AS_OF, log)
    assert v.code == 1, v.out                         # the input's class (a torn tail), never CORRUPT
    assert f"warning WQ-INTERRUPTED-APPLY {os.path.basename(left)}: {LINE}" in v.out, v.out
    j = cli("verify", "-o", "json", "--as-of", AS_OF, log)
    [f] = [f for f in __import__("json").loads(j.out)["logs"][0]["findings"] if f["code"] == "WQ-INTERRUPTED-APPLY"]
    assert f["severity"] == "warning" and f["file"].endswith(os.path.basename(left))


def test_a_temp_copy_without_lock_files_of_a_dead_pid_is_a_leftover(tmp_path):
    log = _log(tmp_path)
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(p.stdout)                              # exited and reaped
    left = f"{log}.pack-tmp-{dead}-1"
    os.mkdir(left)                                    # killed between mkdir-temp and lock-files-temp
    v = cli("verify", "--as-of", AS_OF, log)
    assert v.code == 1 and f"{os.path.basename(left)}: {LINE}" in v.out, v.out


def test_a_running_install_is_no_leftover(tmp_path):
    """Its copies' lock files are locked (LockSet, as install takes them), or a temp copy without lock files yet
    belongs to a live pid: nothing is said, the log is read as usual."""
    from wqtool.engine.fsops import LockSet
    from wqtool.formats.workq import LOCK_FILES
    log = _log(tmp_path)
    ready = _new(log, "pack", same_inode=True)
    os.mkdir(f"{log}.repair-tmp-{os.getpid()}-9")     # this process lives
    locks = LockSet(ready, LOCK_FILES, 1.0)
    try:
        v = cli("verify", "--as-of", AS_OF, log)
        assert v.code == 1 and "WQ-INTERRUPTED-APPLY" not in v.out, v.out
    finally:
        locks.release()
    v = cli("verify", "--as-of", AS_OF, log)
    assert f"{os.path.basename(ready)}: {LINE}" in v.out, v.out


def test_other_siblings_are_not_leftovers(tmp_path):
    """A backup (``.pre-<tag>-``), a quarantine, another log's copies: not this log's interrupted install."""
    log = _log(tmp_path)
    _copy_beside(log, f".pre-repair-{STAMP}")
    os.mkdir(log + ".quarantine-" + STAMP)
    other = cs.copy_of(*TORN, name="log2")(str(tmp_path))
    _copy_beside(other, ".repair-tmp-1-1")
    v = cli("verify", "--as-of", AS_OF, log)
    assert v.code == 1 and "WQ-INTERRUPTED-APPLY" not in v.out, v.out


def test_missing_log_beside_its_verified_copy_is_one_line(tmp_path):
    """The rename fallback killed between rename(D -> backup) and rename(ready -> D): D is missing. verify, dump
    and replay say so in one line (exit 2: nothing was read) instead of "no such file or directory" (exit 5)."""
    log = _log(tmp_path)
    ready = _new(log, "repair", same_inode=True)
    os.rename(log, f"{log}.pre-repair-{STAMP}")
    for argv in (["verify"], ["dump", "-n", "1"], ["replay"]):
        r = cli(*argv, "--as-of", AS_OF, log)
        text = (r.out + r.err).strip()
        assert r.code == 2, (argv, text)
        for stream in (r.out, r.err):      # verify: its one-line report on stdout too, as for any unread PATH
            assert len(stream.strip().splitlines()) <= 1, (argv, stream)
        assert LINE in r.err and os.path.basename(ready) in r.err, (argv, text)
        assert "no such file" not in text
    # ... and the rerun finishes it: D is the verified copy, nothing left
    r = cli("repair", "--apply", "--as-of", AS_OF, log)
    assert r.code == 1, r.err        # the copy laid out here is the torn input itself: installed, then repaired
    assert (f"  recovered: finished an interrupted swap: renamed {os.path.basename(ready)} to "
            f"{os.path.basename(log)}\n") in r.out, r.out
    assert cli("verify", "-q", "--as-of", AS_OF, log).code == 0
    assert not [n for n in os.listdir(tmp_path) if "-new-" in n or "-tmp-" in n]


def test_a_missing_log_without_a_copy_is_still_missing(tmp_path):
    log = _log(tmp_path)
    _copy_beside(log, ".repair-tmp-1-1")
    shutil.rmtree(log)
    r = cli("verify", log)
    assert r.code == 5 and "no such file or directory" in r.out + r.err


def test_dump_tells_it_first(tmp_path):
    log = _log(tmp_path)
    left = LAYOUTS["tmp"](log)
    r = cli("dump", "-n", "1", "--as-of", AS_OF, log)
    assert r.code == 0 and f"warning: {os.path.basename(left)}: WQ-INTERRUPTED-APPLY {LINE}" in r.err, r.err
    r = cli("replay", "--as-of", AS_OF, log)
    assert r.code == 1 and f"WQ-INTERRUPTED-APPLY {LINE}" in r.err, r.err


def _tree(d) -> list:
    """Every name under ``d`` with its inode, size and mtime: what a command that writes nothing leaves alone."""
    out = []
    for root, dirs, names in os.walk(d):
        for n in sorted(dirs + names):
            st = os.stat(os.path.join(root, n))
            out.append((os.path.relpath(os.path.join(root, n), d), st.st_ino, st.st_size, st.st_mtime_ns))
    return sorted(out)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("argv", [["pack"], ["repair"], ["repair", "--apply", "--out", "{out}"], ["pack", "--out", "{out}"]],
                         ids=["pack", "repair", "repair-out", "pack-out"])
def test_a_plan_or_an_out_copy_leaves_the_leftovers_as_they_are(layout, argv, tmp_path):
    """Without ``--apply`` the input is read-only, leftovers of an interrupted install included: the plan of pack
    and repair, and their ``--out`` copies, rename nothing (their plans finished the install themselves: a plan
    alone renamed the old log after the exchange to its backup name)."""
    src = tmp_path / "src"
    src.mkdir()
    log = _log(src)
    LAYOUTS[layout](log)
    before = _tree(src)
    r = cli(*[a.format(out=tmp_path / "out") for a in argv], "--as-of", AS_OF, log)
    assert r.code == 1, r.err                       # the input's class (a torn tail)
    assert _tree(src) == before


def test_the_rerun_removes_the_leftover(tmp_path):
    log = _log(tmp_path)
    LAYOUTS["tmp"](log)
    r = cli("repair", "--apply", "--as-of", AS_OF, log)
    assert r.code == 1, r.err
    assert not [n for n in os.listdir(tmp_path) if "-tmp-" in n or "-new-" in n], os.listdir(tmp_path)
    v = cli("verify", "--as-of", AS_OF, log)
    assert v.code == 0 and "WQ-INTERRUPTED-APPLY" not in v.out


def _serve(log: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([cs.WQTOOL, "serve", "--cmdlog-path", log, "--listen", "127.0.0.1:0", *extra],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, NO_COLOR="1"))


@pytest.mark.skipif(not os.path.exists(cs.WQTOOL), reason="no console script (make install-test)")
@pytest.mark.parametrize("layout", ["new-before-swap", "missing"])
def test_serve_refuses_a_half_installed_log(layout, tmp_path):
    """workq-server would start on whatever D holds (cmd/workq-server/main.go:59-80); a server holding append.lock
    for its life would keep the rerun from finishing: refused in one line, exit 2, nothing created (--create
    neither makes a missing D beside its verified copy)."""
    log = cs.copy_of("workq", "upstream-a-run1", "log")(str(tmp_path))     # a log the server starts on
    ready = _new(log, "pack", same_inode=True)
    if layout == "missing":
        os.rename(log, f"{log}.pre-pack-{STAMP}")
    before = cs.tree(str(tmp_path))
    r = _serve(log, *(["--create"] if layout == "missing" else []))
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and LINE in lines[0] and os.path.basename(ready) in lines[0], r.stderr
    assert cs.tree(str(tmp_path)) == before


# ---------------------------------------------------------------- the rename fallback, killed for real
_KILLED_PACK = """
import os, signal, sys
from wqtool.engine.instant import parse_instant
from wqtool.engine.workq.pack import pack_plan
from wqtool.engine.workq.reader import discover
log, when, label = sys.argv[1:4]
def hook(w, l):
    if (w, l) == (when, label):
        os.kill(os.getpid(), signal.SIGKILL)
pack_plan(discover([log])[0], parse_instant(sys.argv[4])).apply(swap="rename", hook=hook, stale_lock_hold=0)
"""


@pytest.mark.sweep
@pytest.mark.parametrize("when,label", [("after", "rename-temp-to-ready"), ("after", "rename-log-to-backup"),
                                        ("after", "fsync-dir:parent:backup"), ("before", "rename-ready-to-log")])
def test_rename_fallback_killed_between_its_renames(when, label, tmp_path):
    """``swap="rename"`` (no renameat2; the CLI always takes the exchange where it exists, so the strace sweep
    never reaches this window) SIGKILLed around its two renames: the readers say the interrupted line (exit 2 while
    D is missing: ``crashsweep.between``), and ``pack --apply`` run again finishes with the uncrashed digest."""
    sc = cs.SCENARIOS["workq-pack"]
    ref_work = tmp_path / "ref"
    ref_work.mkdir()
    ref_log = sc.make(str(ref_work))
    assert cli(*sc.argv, ref_log).code == 0
    want = cs.state(str(ref_work), ref_log, sc)
    work = tmp_path / "w"
    work.mkdir()
    log = sc.make(str(work))
    r = subprocess.run([sys.executable, "-c", _KILLED_PACK, log, when, label, AS_OF], capture_output=True, text=True,
                       timeout=120, cwd=cs.ROOT)
    assert r.returncode == -9, r.stderr
    assert (not os.path.lexists(log)) == (label != "rename-temp-to-ready")
    ref = cs.Reference(0, {}, want, [], input_verify=0)
    assert cs.between(sc, ref, str(work), log, f"killed {when} {label}") == []
    again = cs.run([cs.WQTOOL, *sc.argv, log], str(work))
    assert again.returncode == 0, again.stderr
    assert cs.state(str(work), log, sc) == want
    assert not [n for n in os.listdir(work) if "-tmp-" in n or "-new-" in n], os.listdir(work)


#: what the rerun says it finished, for each layout: (where in the JSON, the line); the apply itself removes what
#: only a holder of the log's locks may remove (swap.py's finish_interrupted with cleanup)
RECOVERED = {
    "tmp": ("applied", "removed {left} (an unfinished rewrite)"),
    "new-before-swap": ("applied", "removed {left} (a verified rewrite whose swap never started)"),
    "old-after-exchange": ("top", "finished an interrupted swap: the old log {left} renamed to {log}.pre-repair-"),
}


@pytest.mark.parametrize("layout, command", [(k, "repair") for k in sorted(LAYOUTS)]
                         + [("old-after-exchange", "clean")])
def test_the_rerun_says_what_it_finished(layout, command, tmp_path):
    """repair and clean --apply finish what a crashed earlier --apply left, and their reports say so, one line each
    (text: ``recovered: ...``; JSON: ``recovered`` of the log's entry, or of ``applied`` for what the apply's own
    look under the locks removed). Before, both discarded those lines and said nothing. (A clean with nothing to
    clean runs no install, so a repair's temp and verified copies stay for the repair's rerun.)"""
    import json
    log = _log(tmp_path)
    twin = _copy_beside(log, ".twin")                   # the same input and leftover, for the JSON run
    where, line = RECOVERED[layout]
    lines = [line.format(left=os.path.basename(LAYOUTS[layout](p)), log=os.path.basename(p)) for p in (log, twin)]
    r = cli(command, "--apply", "--as-of", AS_OF, log)
    assert r.code == 1, r.err                           # the input's class: a torn tail
    assert f"  recovered: {lines[0]}" in r.out, r.out
    j = cli(command, "--apply", "-o", "json", "--as-of", AS_OF, twin)
    [doc] = json.loads(j.out)["logs"]
    got = (doc["applied"] if where == "applied" else doc).get("recovered", [])
    assert any(x.startswith(lines[1]) for x in got), got
    assert not [n for n in os.listdir(tmp_path) if "-new-" in n or "-tmp-" in n]
