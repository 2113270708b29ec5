"""A crashed ``replay --send -O admin_release=xxl-job-2.0`` loses no callback: SIGKILL (``strace -e
inject=<syscall>:signal=KILL:when=N``) at each connect, send, receive, unlink and fsync of a reference run to a
loopback xxl-job 2.0.2-2.1.0 admin (tests/engine/orth/rpc_admin.py), then the identical command: it exits 0, no retry
file is left, and the admin has every callback at least once (a duplicate is what upstream's admin tolerates: it
keeps a log row's first handle result). The full sweep is ``slow``; the quick suite runs two representative kills
(after the admin took the call but before its answer was read; between two deletes)."""
from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from tests.commands import crashsweep as cs
from tests.commands.test_crash_apply import _strace_reason
from tests.engine.orth.rpc_admin import RpcAdmin
from tests.engine.orth.test_send import ALL, _left, _logpath

pytestmark = [pytest.mark.skipif("_strace_reason() is not None", reason="strace cannot inject a fault here")]
if not os.path.exists(cs.WQTOOL):
    pytestmark.append(pytest.mark.skip(reason=f"no console script {cs.WQTOOL} (make install-test)"))

SYSCALLS = ("connect", "sendto", "recvfrom", "unlink", "unlinkat", "fsync")
ARGV = ["replay", "--send", "{url}", "-O", "admin_release=xxl-job-2.0", "-O", "access_token=s3cret",
        "-O", "timeout=10"]


def _argv(url: str, lp: str) -> list[str]:
    return [cs.WQTOOL, *(a.format(url=url) for a in ARGV), lp]


def _trial(base: str, syscall: str, n: int) -> tuple[list[str], bool]:
    """(what is wrong, whether the run was killed): how many reads an answer takes varies with timing (the loopback
    admin writes headers and body apart), so the last ``recvfrom`` of the reference may not come in a trial."""
    work = os.path.join(base, f"{syscall}-{n}")
    os.makedirs(work)
    lp = _logpath(pathlib.Path(work))
    where = f"SIGKILL at {syscall} #{n}"
    with RpcAdmin(token="s3cret") as admin:
        crashed = cs.run([cs.STRACE, "-f", "-qq", "-o", os.devnull, "-e", "trace=" + syscall,
                          "-e", f"inject={syscall}:signal=KILL:when={n}", *_argv(admin.url, lp)], work)
        again = cs.run(_argv(admin.url, lp), work)
    bad = []
    killed = crashed.returncode in (-9, 137)
    if not killed and crashed.returncode != 0:
        bad.append(f"{where}: the crashed run was neither killed nor done (exit {crashed.returncode})")
    if again.returncode != 0:
        bad.append(f"{where}: the second run exits {again.returncode}: {again.stdout.strip().splitlines()[-3:]}")
    if _left(lp):
        bad.append(f"{where}: left {_left(lp)}")
    if set(admin.callbacks()) != ALL:
        bad.append(f"{where}: lost {sorted(ALL - set(admin.callbacks()))}")
    if not bad:
        shutil.rmtree(work)
    return bad, killed


def _reference(base: str) -> dict[str, int]:
    work = os.path.join(base, "ref")
    os.makedirs(work)
    lp = _logpath(pathlib.Path(work))
    trace = os.path.join(base, "ref.strace")
    with RpcAdmin(token="s3cret") as admin:
        r = cs.run([cs.STRACE, "-f", "-qq", "-o", trace, "-e", "trace=" + ",".join(SYSCALLS),
                    *_argv(admin.url, lp)], work)
    assert r.returncode == 0 and _left(lp) == [] and set(admin.callbacks()) == ALL, r.stdout + r.stderr
    return cs.counts(trace)


def test_killed_after_the_admin_took_the_call_or_between_deletes(tmp_path):
    counts = _reference(str(tmp_path))
    assert counts.get("recvfrom", 0) >= 4 and counts.get("unlink", 0) + counts.get("unlinkat", 0) >= 4, counts
    unlink = "unlink" if counts.get("unlink") else "unlinkat"
    assert _trial(str(tmp_path), "recvfrom", 1) == ([], True)
    assert _trial(str(tmp_path), unlink, 2) == ([], True)


@pytest.mark.slow
def test_every_kill_of_a_send_loses_nothing(tmp_path):
    counts = _reference(str(tmp_path))
    bad, killed = [], 0
    for syscall in SYSCALLS:
        for n in range(1, counts.get(syscall, 0) + 1):
            b, k = _trial(str(tmp_path), syscall, n)
            bad += b
            killed += k
    assert killed >= 20 and bad == [], "\n".join(bad)
