"""A crashed ``--apply`` is finished by the same command (issue 18, item 5).

SIGKILL at a syscall (``strace -e inject=<syscall>:signal=KILL:when=N``) of pack, repair or clean ``--apply``, in
every format that rewrites, then the identical command: it exits 0 or the uncrashed run's code (done, or nothing to
do), ``verify`` and the replay digest are the uncrashed run's, no temp or new copy is left and every cut byte is in a
quarantine or backup (``crashsweep.trial``). A failed write or fsync (ENOSPC, EIO injected) changes nothing or
leaves the finished result, never a file (``crashsweep.failed_trial``); the real full disk on a small tmpfs too.

The full sweep (every rename, fsync, unlink, mkdir... of a reference run, ~400 trials) is ``slow``; the quick suite
runs the trials that failed before the fix. Without strace (or ptrace) those skip with the reason.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest

from tests.commands import crashsweep as cs

_PROBE: str | None = None


def _strace_reason() -> str | None:
    """Why strace cannot inject here (None: it can)."""
    global _PROBE
    if _PROBE is None:
        if cs.STRACE is None:
            _PROBE = "strace is not installed (.ci/run installs it)"
        else:
            r = subprocess.run([cs.STRACE, "-qq", "-o", os.devnull, "-e", "inject=getpid:retval=42", "true"],
                               capture_output=True, text=True, timeout=30)
            _PROBE = "" if r.returncode == 0 else f"strace cannot trace here: {r.stderr.strip()[:200]}"
    return _PROBE or None


needs_strace = pytest.mark.skipif("_strace_reason() is not None", reason="strace cannot inject a fault here")
if not os.path.exists(cs.WQTOOL):
    pytestmark = pytest.mark.skip(reason=f"no console script {cs.WQTOOL} (make install-test)")

_REFS: dict[str, cs.Reference] = {}


def _ref(name: str, tmp_path_factory) -> cs.Reference:
    if name not in _REFS:
        _REFS[name] = cs.reference(cs.SCENARIOS[name], str(tmp_path_factory.mktemp(f"ref-{name}")))
    return _REFS[name]


# ---------------------------------------------------------------- quick: the trials that failed before
QUICK = [
    # workq repair --salvage killed after the quarantine, before the temp dir's rename: the identical command
    # exited 2 ("the quarantine directory exists and is not empty")
    ("workq-repair-salvage", "rename", 1),
    # ... killed at the exchange: a verified new copy (log.repair-new-*) and the quarantine were left
    pytest.param("workq-repair-salvage", "renameat2", 2, marks=pytest.mark.slow),
    # Kestrel torn tail killed between rotating the live file and publishing the pack: no live file, the torn
    # record in a rotated file (verify said CORRUPT, repair refused without --salvage)
    ("kestrel-repair-torn", "rename", 2),
    # EVTJ: the temp file of the killed run was "in the way" (exit 5)
    pytest.param("evtj-pack", "rename", 1, marks=pytest.mark.slow),
]


@needs_strace
@pytest.mark.parametrize("name,syscall,n", QUICK,
                         ids=[f"{p[0]}-{p[1]}{p[2]}" if isinstance(p, tuple) else f"{p.values[0]}-{p.values[1]}"
                              f"{p.values[2]}" for p in QUICK])
def test_killed_apply_then_the_same_command_finishes(name, syscall, n, tmp_path, tmp_path_factory):
    ref = _ref(name, tmp_path_factory)
    assert ref.counts.get(syscall, 0) >= n, ref.counts      # the reference run still makes that call
    assert cs.trial(cs.SCENARIOS[name], ref, str(tmp_path), syscall, n) == []


@needs_strace
@pytest.mark.slow
def test_failed_clean_apply_leaves_no_rw_file(tmp_path, tmp_path_factory):
    """ENOSPC at each write of workq clean --apply (the .rw copy of a segment): exit 5, nothing added or changed
    (before: a partial 000000002.log.rw stayed)."""
    sc = cs.SCENARIOS["workq-clean"]
    ref = _ref("workq-clean", tmp_path_factory)
    bad = []
    for n in range(1, ref.counts["write"] + 1):
        bad += cs.failed_trial(sc, ref, str(tmp_path), "write", n)
    assert bad == []


# Kestrel repair --salvage of damage in a rotated file killed mid-swap (issue 34, D1): the rerun said "nothing to
# repair" (the published .pack superseded the damaged files), left the queue half swapped and the backup empty.
# Every link, mkdir and rename of the reference run, and the fsyncs around the swap.
D1 = [("link", 1), ("link", 2), ("link", 3), ("mkdir", 1), ("mkdir", 2), ("rename", 1), ("rename", 2),
      ("fsync", 5), ("fsync", 7)]


@needs_strace
@pytest.mark.sweep
@pytest.mark.parametrize("syscall,n", D1, ids=[f"{s}{n}" for s, n in D1])
def test_kestrel_repair_killed_mid_swap_is_finished_by_the_rerun(syscall, n, tmp_path, tmp_path_factory):
    sc = cs.SCENARIOS["kestrel-repair-salvage"]
    ref = _ref("kestrel-repair-salvage", tmp_path_factory)
    if ref.counts.get(syscall, 0) < n:
        pytest.skip(f"the reference run makes {ref.counts.get(syscall, 0)} {syscall} call(s)")
    assert cs.trial(sc, ref, str(tmp_path), syscall, n) == []
    # the trial removes a passing work directory; run it again to look at the layout and the backup
    work = str(tmp_path / "again")
    os.makedirs(work)
    q = sc.make(work)
    original = {name: open(os.path.join(q, name), "rb").read() for name in os.listdir(q)}
    cs.run([cs.STRACE, "-f", "-qq", "-o", os.devnull, "-e", "trace=" + syscall,
            "-e", f"inject={syscall}:signal=KILL:when={n}", cs.WQTOOL, *sc.argv, q], work)
    again = cs.run([cs.WQTOOL, *sc.argv, q], work)
    assert again.returncode in (0, ref.code), again.stderr
    assert os.listdir(q) == ["jobs"]                              # the uncrashed run's layout: one live file
    [backup] = [d for d in os.listdir(work) if ".pre-repair-" in d]
    kept = {name: open(os.path.join(work, backup, name), "rb").read() for name in os.listdir(os.path.join(work,
                                                                                                          backup))}
    assert kept == original


def test_kestrel_repair_backs_up_before_any_original_is_superseded(tmp_path):
    """Every pre-repair file is in the backup before the repaired journal is published as a .pack (from there the
    .pack rule supersedes the originals: Kestrel's start-up or a clean would delete them)."""
    from wqtool.engine.kestrel import repair
    from wqtool.engine.kestrel.reader import discover
    from wqtool.engine.instant import parse_instant
    q = cs.kestrel_rotated_set(str(tmp_path))
    original = {name: open(os.path.join(q, name), "rb").read() for name in os.listdir(q)}
    plan = repair.repair_plan(discover([q])[0], parse_instant(cs.AS_OF), salvage=True)
    seen = []

    def hook(when, label):
        if when == "before" and label.startswith(("rename", "unlink")):
            bdir = repair.default_dirs(plan)[0]
            names = os.listdir(bdir) if os.path.isdir(bdir) else []
            seen.append((label, {n: open(os.path.join(bdir, n), "rb").read() for n in names} == original))
    plan.apply(hook=hook, fsync=False)
    assert seen and all(ok for _, ok in seen), seen


# ---------------------------------------------------------------- slow: every syscall of every scenario
@needs_strace
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cs.SCENARIOS))
def test_crash_sweep(name, tmp_path):
    done, bad = cs.sweep(cs.SCENARIOS[name], str(tmp_path))
    assert done > 0 and bad == []


@needs_strace
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cs.SCENARIOS))
def test_error_sweep(name, tmp_path):
    done, bad = cs.error_sweep(cs.SCENARIOS[name], str(tmp_path))
    assert done > 0 and bad == []


# ---------------------------------------------------------------- slow: SIGKILL at random times
#: the seed of the random-time kills: WQTOOL_CRASH_SEED=<n> replays a run (each failure names its seed)
CRASH_SEED = int(os.environ.get("WQTOOL_CRASH_SEED") or random.SystemRandom().randrange(1_000_000))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(cs.SCENARIOS))
def test_random_time_kills(name, tmp_path):
    """Every command that rewrites, in every format: SIGKILL at a random time in the apply (polled until the
    command has changed something beside the log, then a delay drawn uniformly over the uncrashed run's writing
    time, seeded), then the readers (input's class, never CORRUPT; the interrupted line where the format knows it),
    the identical command, and the uncrashed run's verdict, digest and kept bytes (``crashsweep.after_kill``).
    Needs no strace: it reaches the moments between syscalls the syscall sweep cannot name."""
    print(f"WQTOOL_CRASH_SEED={CRASH_SEED}")
    trials, landed, bad = cs.random_sweep(cs.SCENARIOS[name], str(tmp_path), seed=CRASH_SEED, count=4)
    assert bad == [], f"WQTOOL_CRASH_SEED={CRASH_SEED}"
    assert landed >= 1, f"no kill of {trials} landed before the command ended (WQTOOL_CRASH_SEED={CRASH_SEED})"


# ---------------------------------------------------------------- the real full disk
def _mount_tmpfs(path: str, size: str) -> str | None:
    """Mount a tmpfs of ``size`` at ``path``; the reason it cannot be done here, or None."""
    if shutil.which("mount") is None:
        return "no mount command"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", path],
                       capture_output=True, text=True, timeout=30)
    return None if r.returncode == 0 else f"cannot mount a tmpfs here ({r.stderr.strip()[:120] or r.returncode})"


def _fill(directory: str) -> str:
    """Fill the filesystem: a file grown until ENOSPC."""
    p = os.path.join(directory, "filler")
    with open(p, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return p


@pytest.mark.parametrize("name", ["workq-clean", pytest.param("workq-repair-salvage", marks=pytest.mark.slow),
                                  pytest.param("kestrel-repair-torn", marks=pytest.mark.slow)])
def test_full_disk_apply_changes_nothing_then_finishes(name, tmp_path, tmp_path_factory):
    sc = cs.SCENARIOS[name]
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    why = _mount_tmpfs(str(mnt), "2m")
    if why:
        pytest.skip(why)
    try:
        work = str(mnt / "w")
        os.mkdir(work)
        path = sc.make(work)
        ref = _ref(name, tmp_path_factory) if _strace_reason() is None else None
        filler = _fill(str(mnt))
        before = cs.tree(work)
        r = cs.run([cs.WQTOOL, *sc.argv, path], work)
        after = cs.tree(work)
        assert r.returncode == 5 and "No space left on device" in r.stderr, (r.returncode, r.stderr)
        assert {k: v for k, v in after.items() if not k.endswith(".lock")} == \
            {k: v for k, v in before.items() if not k.endswith(".lock")}
        os.unlink(filler)
        again = cs.run([cs.WQTOOL, *sc.argv, path], work)
        assert again.returncode in (0, ref.code if ref else again.returncode), again.stderr
        st = cs.state(work, path, sc)
        assert st["verify"] == 0
        if ref is not None:
            assert st == ref.state
        assert not [k for k in cs.tree(work) if cs.LEFTOVER.search(k.rstrip("/").rsplit("/", 1)[-1])]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)


# ---------------------------------------------------------------- the rules, in process (no strace needed)
def _queue(tmp_path, fixture: str) -> str:
    return cs.copy_queue(fixture, "")(str(tmp_path))


def test_kestrel_half_done_rotation_is_rolled_back(tmp_path):
    """The state a kill between pack._run_steps' "rename-live" and "rename-temp-to-pack" leaves: no live file, the
    old one as mail.<T0> (its torn record now in a rotated file) and the temp mail~~<T0+1>. repair --apply rolls the
    rotation back first, then cuts the torn tail as the uncrashed run does (exit 1, not 3)."""
    from tests.conftest import cli
    q = _queue(tmp_path, "torn-tail")
    os.rename(os.path.join(q, "mail"), os.path.join(q, "mail.1795659519664"))
    with open(os.path.join(q, "mail~~1795659519665"), "wb") as f:
        f.write(b"\x08")          # whatever the killed run had written
    v = cli("verify", "--as-of", cs.AS_OF, q)        # before: CORRUPT (exit 3), damage the tool itself made
    assert v.code == 1 and "an interrupted wqtool repair (or pack, clean): rerun it to finish" in v.out, v.out
    d = cli("dump", "-n", "1", "--as-of", cs.AS_OF, q)   # dump tells it too (it tells errors only, otherwise)
    assert "KQ-INTERRUPTED-APPLY" in d.err and "rerun it to finish" in d.err, d.err
    r = cli("repair", "--apply", "--as-of", cs.AS_OF, q)
    assert r.code == 1, r.err
    assert sorted(os.listdir(q)) == ["mail"]
    # the report says what the crashed run had left and this one finished first (it said nothing before)
    assert "  recovered: rolled back a half-done rotation: renamed mail.1795659519664 to mail\n" in r.out, r.out
    assert "  recovered: removed mail~~1795659519665 (the temp file of an unfinished pack)\n" in r.out, r.out
    assert cli("verify", "-q", "--as-of", cs.AS_OF, q).code == 0


def test_kestrel_recovery_leaves_other_sets_alone(tmp_path):
    """A temp beside a live file, or a rotated file whose name is not one ms before a temp, is not a half-done
    rotation of ours: finish_interrupted touches nothing (the plans remove temps as Kestrel's replay does)."""
    from wqtool.engine.kestrel.pack import finish_interrupted
    q = _queue(tmp_path, "half-finished-pack")        # test, test.50, test.100(.pack), test.3000, test~~4000
    before = sorted(os.listdir(q))
    assert finish_interrupted(q) == [] and sorted(os.listdir(q)) == before
    os.rename(os.path.join(q, "test"), os.path.join(q, "test.3998"))  # no live file, but 3998 + 1 != 4000
    assert finish_interrupted(q) == [] and "test.3998" in os.listdir(q)
    os.rename(os.path.join(q, "test.3998"), os.path.join(q, "test.3999"))
    done = finish_interrupted(q)
    assert len(done) == 2 and "test" in os.listdir(q) and "test~~4000" not in os.listdir(q)


def test_quarantine_reused_completed_or_moved_on(tmp_path):
    from wqtool.engine.fsops import Quarantine
    from wqtool.errors import UsageError
    src = tmp_path / "seg"
    src.write_bytes(bytes(range(256)))
    ranges = [(str(src), 0x10, 0x20), (str(src), 0x80, 0x10), (str(src), 0xa0, 0)]
    qd = str(tmp_path / "q")
    first = Quarantine(qd, ranges)
    assert first.path == qd and len(first.ranges) == 2
    files = first.write()
    assert [open(p, "rb").read() for p in files] == [bytes(range(0x10, 0x30)), bytes(range(0x80, 0x90))]
    # a killed run: one file short (a prefix of its range), the other missing -> reused and completed
    with open(files[0], "wb") as f:
        f.write(bytes(range(0x10, 0x18)))
    os.unlink(files[1])
    again = Quarantine(qd, ranges)
    assert again.path == qd and again.write() == files
    assert [open(p, "rb").read() for p in files] == [bytes(range(0x10, 0x30)), bytes(range(0x80, 0x90))]
    # another repair's quarantine (other ranges) is never overwritten: the default name moves on, a named one fails
    other = Quarantine(qd, [(str(src), 0x40, 4)])
    assert other.path == qd + ".2"
    with pytest.raises(UsageError):
        Quarantine(qd, [(str(src), 0x40, 4)], named=True)
    # a failed apply discards this run's files and the directory it made
    other.write()
    other.discard()
    assert not os.path.exists(qd + ".2") and os.path.isdir(qd)


def test_step_on_error_removes_what_the_failing_step_left(tmp_path):
    from wqtool.engine.plan import StepRunner
    part = tmp_path / "x.rw"

    def write():
        part.write_bytes(b"half")
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError):
        with StepRunner() as step:
            step("write:x.rw", write, on_error=lambda: part.unlink())
    assert not part.exists()


def test_stale_exchange_probe_dirs_are_removed(tmp_path):
    from wqtool.engine.fsops import exchange_supported
    p = subprocess.Popen(["true"])
    p.wait()
    dead = p.pid                   # a process that has exited (reaped)
    for x in "ab":
        (tmp_path / f".wqtool-xchg-{x}-{dead}").mkdir()
    (tmp_path / f".wqtool-xchg-a-{os.getppid()}").mkdir()     # a live process's probe stays
    exchange_supported(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == [f".wqtool-xchg-a-{os.getppid()}"]
