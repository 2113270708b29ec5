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
