"""The crash sweep: a reference ``--apply`` run under strace counts its renames, fsyncs, unlinks...; then, for each
N of each syscall, a fresh copy of the log gets the same command with ``strace -e inject=<syscall>:signal=KILL:when=N``
(SIGKILL at that call: no cleanup, no flush, as a power cut looks to the process), and the identical command is run
again. After it the log must be what the uncrashed run left: the same ``verify`` verdict, the same replay digest, no
temp or new copy left anywhere beside it, and every byte the reference cut kept in a backup or quarantine.

``random_sweep`` kills at random times instead (no strace): the command is started, the work directory polled until
it changes, and SIGKILL sent after a seeded random delay within the uncrashed run's writing time; the same checks
follow (``after_kill``). Between the kill and the rerun, ``between`` runs the readers: the input's class (the
result's once swapped), and for workq the interrupted line wherever a copy is left.

Used by tests/commands/test_crash_apply.py (and runnable by hand: ``python -m tests.commands.crashsweep``)."""
from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

#: The syscalls a crash is injected at: every one that changes a directory's names or makes data durable.
SYSCALLS = ("rename", "renameat", "renameat2", "fsync", "fdatasync", "unlink", "unlinkat", "rmdir", "mkdir",
            "link", "linkat", "ftruncate")

WQTOOL = os.path.join(os.path.dirname(sys.executable), "wqtool")
STRACE = shutil.which("strace")
AS_OF = "2026-11-21T23:30:00Z"
_LINE = re.compile(r"^(\d+)\s+(\w+)\(")

#: The failures an apply must survive by changing nothing (or finishing): the syscall and the error injected.
ERRORS = {"write": "ENOSPC", "fsync": "EIO", "fdatasync": "EIO", "ftruncate": "EIO"}

#: Names a finished apply never leaves behind (temp and new copies, half-written files).
LEFTOVER = re.compile(r"(-tmp-|-new-|\.rw$|~~|\.tmp$|\.part$|\.wqtool-)")


@dataclass
class Scenario:
    """``make(dst)`` builds a fresh log under ``dst`` and returns the PATH given to the command; ``argv`` is the
    command (PATH is appended); ``verify_argv`` the verify run compared after it."""

    name: str
    make: Callable[[str], str]
    argv: list[str]
    extra_verify: list[str] = field(default_factory=list)
    as_of: str = AS_OF
    #: the format recognises its own interrupted apply (``between``): a function listing what a killed run left
    #: beside PATH (workq: ``engine.workq.interrupted.leftovers``), or None
    leftovers: Callable[[str], list] | None = None


def run(argv: list[str], cwd: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1", WQTOOL_NO_PROGRESS="1")
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def counts(trace: str) -> dict[str, int]:
    """Calls per syscall of the first (main) process of an ``strace -f -o`` file (injection counts per tracee)."""
    main = None
    out: collections.Counter = collections.Counter()
    with open(trace) as f:
        for line in f:
            m = _LINE.match(line)
            if not m or "resumed>" in line:
                continue
            pid, name = m.groups()
            main = main or pid
            if pid == main:
                out[name] += 1
    return dict(out)


def tree(root: str) -> dict[str, str]:
    """Every file under ``root`` (relative name -> sha256), directories included as ``/``."""
    out = {}
    for dp, dns, fns in os.walk(root):
        for n in dns:
            out[os.path.relpath(os.path.join(dp, n), root) + "/"] = ""
        for n in fns:
            p = os.path.join(dp, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def state(work: str, path: str, sc: Scenario) -> dict:
    """What the compared runs say of the log after an apply: verify's exit code and replay's digest."""
    v = run([WQTOOL, "verify", "-q", "--as-of", sc.as_of, *sc.extra_verify, path], work)
    r = run([WQTOOL, "replay", "-o", "json", "--as-of", sc.as_of, *sc.extra_verify, path], work)
    try:
        digest = json.loads(r.stdout).get("digest") if r.returncode in (0, 1) else None
    except ValueError:
        digest = None
    return {"verify": v.returncode, "digest": digest}


def kept_bytes(work: str) -> bytes:
    """All bytes of every file in the work directory (backups, quarantines, the log): a cut range must be in it."""
    out = []
    for dp, _, fns in os.walk(work):
        for n in sorted(fns):
            with open(os.path.join(dp, n), "rb") as f:
                out.append(f.read())
    return b"\0".join(out)


@dataclass
class Reference:
    code: int
    counts: dict[str, int]
    state: dict
    cut: list[bytes]
    input_verify: int = 0           # verify's exit code on the input, before the run
    span: float | None = None       # seconds from its first write to its exit (``reference(trace=False)``)


def reference(sc: Scenario, base: str, *, trace: bool = True) -> Reference:
    """The uncrashed run (under strace counting its calls; ``trace=False``: without strace, no counts)."""
    work = os.path.join(base, "ref")
    os.makedirs(work)
    path = sc.make(work)
    before = tree(work)
    input_verify = run([WQTOOL, "verify", "-q", "--as-of", sc.as_of, *sc.extra_verify, path], work).returncode
    strace_out = os.path.join(base, "ref.strace")
    if trace:
        r = run([STRACE, "-f", "-qq", "-o", strace_out, "-e", "trace=" + ",".join(SYSCALLS + ("write",)), WQTOOL,
                 *sc.argv, path], work)
    else:               # timed from its first change under ``work`` to its exit: the random kills' window
        p, t = _writing_window(sc, work, path)
        r = subprocess.CompletedProcess(p.args, p.wait(timeout=300))
        span = time.monotonic() - t
    after = tree(work)
    # the byte ranges the reference cut: from its quarantine files (repair), else nothing to check
    cut = []
    for rel, _ in after.items():
        if ".quarantine" in rel and rel.endswith(".bin"):
            with open(os.path.join(work, rel), "rb") as f:
                cut.append(f.read())
    del before
    return Reference(r.returncode, counts(strace_out) if trace else {}, state(work, path, sc), cut, input_verify,
                     span=None if trace else span)


#: what every reader prints beside a log an apply was killed on (engine/workq/interrupted.py, Kestrel's reader)
INTERRUPTED = "an interrupted wqtool repair (or pack, clean): rerun it to finish"


def between(sc: Scenario, ref: Reference, work: str, path: str, where: str) -> list[str]:
    """What the readers say after a kill, before the rerun: what a crash leaves is no damage, so verify gives the
    input's class or the result's, never CORRUPT of its own. With ``sc.leftovers``, exactly: the input's class
    while the log directory still names the old log (nothing left, a temp copy, or a verified copy not swapped in),
    the result's once swapped (the old log left as a ``-new-`` copy), and the interrupted line wherever a copy is
    left; ``dump -n 1`` tells that line too; a log directory missing beside its verified copy (the rename
    fallback's window) is that one line, exit 2."""
    bad = []
    v = run([WQTOOL, "verify", "--as-of", sc.as_of, *sc.extra_verify, path], work)
    if v.returncode == 3 and 3 not in (ref.input_verify, ref.state["verify"]):
        bad.append(f"{where}: verify before the rerun says CORRUPT (the input: exit {ref.input_verify})")
    if sc.leftovers is None:
        return bad
    left = sc.leftovers(path)
    d = run([WQTOOL, "dump", "-n", "1", "--as-of", sc.as_of, *sc.extra_verify, path], work)
    if not os.path.lexists(path):
        want, shown = {2}, [("verify", v.stderr), ("dump -n 1", d.stderr)]
    else:
        swapped = any(lo.kind == "new" and not lo.is_new_log for lo in left)
        want = {ref.state["verify"] if swapped else ref.input_verify}
        if not left:
            want.add(ref.state["verify"])     # after the swap and the backup rename: the result
        shown = [("verify", v.stdout), ("dump -n 1", d.stderr)] if left else []
    if v.returncode not in want:
        bad.append(f"{where}: verify before the rerun exits {v.returncode}, not {sorted(want)} (left: "
                   f"{[os.path.basename(lo.path) for lo in left]}): {(v.stdout + v.stderr).strip()[-300:]}")
    if d.returncode == 3 or (not os.path.lexists(path) and d.returncode != 2):
        bad.append(f"{where}: dump -n 1 before the rerun exits {d.returncode}: {d.stderr.strip()[-300:]}")
    for who, text in shown:
        if INTERRUPTED not in text:
            bad.append(f"{where}: {who} does not say '{INTERRUPTED}' (left: "
                       f"{[os.path.basename(lo.path) for lo in left]}): {text.strip()[-300:]}")
    return bad


def trial(sc: Scenario, ref: Reference, base: str, syscall: str, n: int) -> list[str]:
    """One crash at the ``n``-th ``syscall``, then the identical command; returns what is wrong (empty: fine)."""
    work = os.path.join(base, f"{syscall}-{n}")
    os.makedirs(work)
    path = sc.make(work)
    crashed = run([STRACE, "-f", "-qq", "-o", os.devnull, "-e", "trace=" + syscall,
                   "-e", f"inject={syscall}:signal=KILL:when={n}", WQTOOL, *sc.argv, path], work)
    where = f"{sc.name}: SIGKILL at {syscall} #{n}"
    bad = []
    if crashed.returncode != -9 and crashed.returncode != 137:
        bad.append(f"{where}: the crashed run was not killed (exit {crashed.returncode})")
    return bad + after_kill(sc, ref, work, path, where)


def after_kill(sc: Scenario, ref: Reference, work: str, path: str, where: str) -> list[str]:
    """After a killed run: the readers (``between``), the identical command again, then the uncrashed run's
    verdict and digest, nothing temporary left and every cut byte kept. Removes ``work`` when all is well."""
    bad = between(sc, ref, work, path, where)
    again = run([WQTOOL, *sc.argv, path], work)
    if again.returncode not in (0, ref.code):
        bad.append(f"{where}: the second run exits {again.returncode}: "
                   f"{(again.stderr or again.stdout).strip().splitlines()[-1:]}")
    st = state(work, path, sc)
    if st != ref.state:
        bad.append(f"{where}: after the second run {st}, the uncrashed run gave {ref.state}")
    left = sorted(rel for rel in tree(work) if LEFTOVER.search(rel.rstrip("/").rsplit("/", 1)[-1])
                  and ".pre-" not in rel.split("/")[0])     # a backup keeps what it links, temps included
    if left:
        bad.append(f"{where}: left behind {left}")
    everything = kept_bytes(work)
    for c in ref.cut:
        if c not in everything:
            bad.append(f"{where}: {len(c)} cut bytes are in no backup or quarantine")
    if not bad:
        shutil.rmtree(work)
    return bad


# ---------------------------------------------------------------- random-time kills (no strace needed)
def snapshot(root: str) -> frozenset:
    """Every name under ``root`` with its size and mtime: any write, create, rename or unlink changes it."""
    out = []
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            p = os.path.join(dp, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out.append((os.path.relpath(p, root), st.st_size, st.st_mtime_ns))
    return frozenset(out)


def _writing_window(sc: Scenario, work: str, path: str, timeout: float = 120) -> tuple[subprocess.Popen, float]:
    """Start the command and poll (bounded by ``timeout``) until it changes anything under ``work``, or ends.
    Returns the process and the monotonic time it started writing (or ended)."""
    before = snapshot(work)
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1", WQTOOL_NO_PROGRESS="1")
    p = subprocess.Popen([WQTOOL, *sc.argv, path], cwd=work, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while p.poll() is None and snapshot(work) == before:
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            raise TimeoutError(f"{sc.name}: nothing written within {timeout:g} s")
        time.sleep(0.0005)
    return p, time.monotonic()


def random_trial(sc: Scenario, ref: Reference, base: str, k: int, delay: float,
                 seed: int) -> tuple[float | None, list[str]]:
    """SIGKILL ``delay`` s after the command started writing (polled), then ``after_kill``'s checks. Returns
    (None when the kill landed, else the seconds the command took from its first write to its end; what is
    wrong)."""
    work = os.path.join(base, f"random-{k}")
    os.makedirs(work)
    path = sc.make(work)
    p, t = _writing_window(sc, work, path)
    until = t + delay
    while p.poll() is None and time.monotonic() < until:      # the random delay, watching for the end
        time.sleep(0.0002)
    landed = p.poll() is None
    if landed:
        p.send_signal(signal.SIGKILL)
    code = p.wait(timeout=300)
    took = None if landed else time.monotonic() - t
    where = f"{sc.name}: SIGKILL {delay * 1000:.1f} ms into writing (seed {seed}, trial {k})"
    bad = []
    if not landed and code not in (0, ref.code):
        bad.append(f"{where}: the run ended before the kill with exit {code}")
    return took, bad + after_kill(sc, ref, work, path, where)


def random_sweep(sc: Scenario, base: str, *, seed: int, count: int = 4) -> tuple[int, int, list[str]]:
    """``count`` random-time kills of a scenario (delays uniform over the writing time, seeded: the uncrashed
    run's, or, once a run ended before its kill — a neighbour slowed the reference —, that run's): (trials, kills
    that landed mid-run, failures)."""
    import random
    rng = random.Random(f"{seed}:{sc.name}")
    ref = reference(sc, os.path.join(base, "r"), trace=False)
    span = ref.span
    landed, bad = 0, []
    for k in range(count):
        took, b = random_trial(sc, ref, base, k, rng.uniform(0, span), seed)
        if took is None:
            landed += 1
        else:
            span = min(span, took)
        bad += b
    return count, landed, bad


def failed_trial(sc: Scenario, ref: Reference, base: str, syscall: str, n: int) -> list[str]:
    """The ``n``-th ``syscall`` fails (``ERRORS``: ENOSPC, EIO): the apply either fails having changed nothing
    (the log's files as before, no file added anywhere) or, past its point of no return, leaves the finished result
    (the uncrashed run's state, nothing temporary left)."""
    work = os.path.join(base, f"{syscall}-{ERRORS[syscall]}-{n}")
    os.makedirs(work)
    path = sc.make(work)
    before = tree(work)
    r = run([STRACE, "-f", "-qq", "-o", os.devnull, "-e", "trace=" + syscall,
             "-e", f"inject={syscall}:error={ERRORS[syscall]}:when={n}", WQTOOL, *sc.argv, path], work)
    where = f"{sc.name}: {ERRORS[syscall]} at {syscall} #{n} (exit {r.returncode})"
    after = {k: v for k, v in tree(work).items() if not k.endswith(".lock")}   # the format's own lock files
    before = {k: v for k, v in before.items() if not k.endswith(".lock")}
    if after == before:
        shutil.rmtree(work)
        return []
    bad = []
    st = state(work, path, sc)
    if st != ref.state:
        added = sorted(set(after) - set(before))
        changed = sorted(k for k in before if after.get(k) != before[k])
        bad.append(f"{where}: the log changed and is not the finished result ({st}); added {added}, "
                   f"changed or removed {changed}")
    left = sorted(rel for rel in after if LEFTOVER.search(rel.rstrip("/").rsplit("/", 1)[-1])
                  and ".pre-" not in rel.split("/")[0])
    if left:
        bad.append(f"{where}: left behind {left}")
    if not bad:
        shutil.rmtree(work)
    return bad


def error_sweep(sc: Scenario, base: str, ref: Reference | None = None) -> tuple[int, list[str]]:
    ref = ref or reference(sc, base)
    done, bad = 0, []
    for sys_ in ERRORS:
        for n in range(1, ref.counts.get(sys_, 0) + 1):
            bad += failed_trial(sc, ref, base, sys_, n)
            done += 1
    return done, bad


def sweep(sc: Scenario, base: str, *, only: tuple[str, ...] = SYSCALLS, limit: int | None = None,
          sample: Callable[[str, int, int], bool] | None = None) -> tuple[int, list[str]]:
    """Every trial of a scenario (or those ``sample(syscall, n, count)`` keeps); returns (trials run, failures)."""
    ref = reference(sc, base)
    done, bad = 0, []
    for sys_ in only:
        total = ref.counts.get(sys_, 0)
        for n in range(1, total + 1):
            if sample is not None and not sample(sys_, n, total):
                continue
            if limit is not None and done >= limit:
                break
            bad += trial(sc, ref, base, sys_, n)
            done += 1
    return done, bad


# ---------------------------------------------------------------- scenarios
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FX = os.path.join(ROOT, "fixtures")


def _copytree(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    for dp, _, fns in os.walk(dst):
        for n in fns:
            os.chmod(os.path.join(dp, n), 0o644)
    return dst


def copy_of(*rel: str, name: str = "log") -> Callable[[str], str]:
    def make(work: str) -> str:
        return _copytree(os.path.join(FX, *rel), os.path.join(work, name))
    return make


def copy_queue(fixture: str, queue: str) -> Callable[[str], str]:
    """A Kestrel fixture's queue directory; PATH = that directory (the queue's files in it)."""
    def make(work: str) -> str:
        return _copytree(os.path.join(FX, "kestrel", fixture, "queue"), os.path.join(work, "queue"))
    return make


def kestrel_rotated_set(work: str) -> str:
    """A Kestrel queue of three files (two rotated, the live one), item adds of 191 bytes; byte 1910 of the
    first rotated file (an opcode) set to 0x7f: damage in a rotated file, which only ``--salvage`` repairs
    (issue 34's D1 repro). PATH = the queue's directory."""
    from wqtool.engine.kestrel.writer import JournalWriter
    q = os.path.join(work, "Q")
    os.makedirs(q)
    t = 1_795_302_000_000
    for k, name in enumerate(["jobs.1795302000100", "jobs.1795302000200", "jobs"]):
        with JournalWriter(os.path.join(q, name)) as w:
            for i in range(12):
                head = b"item %d-%02d " % (k, i)
                w.add(head + b"x" * (170 - len(head)), t + 100 * k + i)
            for _ in range(3):
                w.remove()
    p = os.path.join(q, "jobs.1795302000100")
    with open(p, "r+b") as f:
        f.seek(1910)
        f.write(b"\x7f")
    return q


def _workq_leftovers(path: str) -> list:
    from wqtool.engine.workq.interrupted import leftovers
    return leftovers(path)


SCENARIOS = {
    "workq-repair-salvage": Scenario("workq-repair-salvage", copy_of("workq", "crc-mismatch-mid-segment", "log"),
                                     ["repair", "--apply", "--salvage", "--as-of", AS_OF],
                                     leftovers=_workq_leftovers),
    "workq-repair-torn": Scenario("workq-repair-torn", copy_of("workq", "torn-tail-mid-record", "log"),
                                  ["repair", "--apply", "--as-of", AS_OF], leftovers=_workq_leftovers),
    "workq-pack": Scenario("workq-pack", copy_of("workq", "upstream-a-run1", "log"),
                           ["pack", "--apply", "--as-of", AS_OF], leftovers=_workq_leftovers),
    "workq-clean": Scenario("workq-clean", copy_of("workq", "upstream-b-before-clean", "log"),
                            ["clean", "--apply", "--as-of", AS_OF], leftovers=_workq_leftovers),
    "kestrel-repair-torn": Scenario("kestrel-repair-torn", copy_queue("torn-tail", "mail"),
                                    ["repair", "--apply", "--as-of", AS_OF]),
    "kestrel-repair-salvage": Scenario("kestrel-repair-salvage", kestrel_rotated_set,
                                       ["repair", "--apply", "--salvage", "--as-of", AS_OF]),
    "kestrel-pack": Scenario("kestrel-pack", copy_queue("rotated-set-with-pack", ""),
                             ["pack", "--apply", "--as-of", AS_OF]),
    "evtj-pack": Scenario("evtj-pack", copy_of("evtj", "live-and-done", "journal", name="journal"),
                          ["pack", "--apply", "--as-of", AS_OF]),
    "fastjournal-pack": Scenario("fastjournal-pack", copy_of("fastjournal", "history", "journal", name="journal"),
                                 ["pack", "--apply", "--as-of", AS_OF]),
    "snaplist-pack": Scenario("snaplist-pack", copy_of("snaplist", "current-hour", "journal", name="journal"),
                              ["pack", "--apply", "--as-of", "last"], as_of="last"),
    "snaplist-clean": Scenario("snaplist-clean", copy_of("snaplist", "stale-hours", "journal", name="journal"),
                               ["clean", "--apply", "--as-of", "last"], as_of="last"),
    "orth-clean": Scenario("orth-clean", copy_of("orth", "executor-runs", "logpath", name="logpath"),
                           ["clean", "--apply"], as_of="now"),
    "kestrel-clean": Scenario("kestrel-clean", copy_queue("half-finished-pack", ""),
                              ["clean", "--apply", "--as-of", AS_OF]),
}


def main() -> None:
    import tempfile
    names = sys.argv[1:] or list(SCENARIOS)
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"sweep-{name}-") as base:
            sc = SCENARIOS[name]
            ref = reference(sc, os.path.join(base, "r"))
            print(name, "exit", ref.code, ref.counts, ref.state, flush=True)
            if os.environ.get("SWEEP") != "errors":
                done, bad = sweep(sc, base)
                print(f"  {done} crash trials, {len(bad)} failures", flush=True)
                for b in bad:
                    print("  ", b, flush=True)
            if os.environ.get("SWEEP") != "crash":
                done, bad = error_sweep(sc, base, ref)
                print(f"  {done} error trials, {len(bad)} failures", flush=True)
                for b in bad:
                    print("  ", b, flush=True)


if __name__ == "__main__":
    main()
