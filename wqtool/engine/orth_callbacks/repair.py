"""``repair`` for retry files whose bytes do not hash to their name (OC-NAME-MD5): the name is the file's only
checksum, so such a file is not what Orth / xxl-job wrote. One action per changed file, chosen with
``-O md5_action=``:

* ``quarantine`` (the default): the file leaves the retry directory (Orth will not resend values that may be
  wrong); its bytes are copied whole into the quarantine first (``replay --send`` delivers them from there once
  checked);
* ``restore``: only where a single flipped bit explains the change (``md5name.recover_flip``): the original bytes
  replace the file in place (temp in the logPath + fsync + rename + directory fsync: Orth's listing never sees a
  partial file); the changed bytes go to the quarantine first;
* ``rename``: the file takes the name of its content's md5 (``{prefix}-callback-{md5}.log``): it then verifies
  clean, and Orth resends the values as they read now;
* ``keep``: nothing changes (the plan only lists the files).

Every step checks that the file is still the one the plan read (inode, size, mtime) and never overwrites a file.
Other damage (poison files, Java streams) is left as it is and listed.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field

from ...errors import InputError, UsageError
from ...formats.orth import CALLBACK_NAME
from ..findings import Finding, Verdict
from ..fsops import FileSig, backup_name, fsync_dir, rename_noreplace, unlink_quiet, write_new
from ..plan import ApplyResult, Plan, StepRunner, remove_seen, timed, unchanged
from .md5name import recover_flip

MD5_ACTIONS = ("quarantine", "restore", "rename", "keep")
RESTORE_TEMP = ".wqtool-restore-"


@dataclass(slots=True)
class FileFix:
    path: str
    action: str
    why: str
    sig: FileSig
    target: str | None = None          # rename: the new name; restore: None
    original: bytes | None = None      # restore: the bytes that hash to the name


@dataclass
class OrthRepairPlan(Plan):
    kind = "repair"
    root: str
    log_path: str | None
    fixes: list[FileFix] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    input_verdict: Verdict = Verdict.CLEAN
    digest_before: str = ""
    fmt: str = "orth-callbacks"

    def report_doc(self) -> dict:
        acts = [f for f in self.fixes if f.action != "keep"]
        return {"format": self.fmt, "root": self.root, "md5_actions": list(MD5_ACTIONS),
                "actions": [{"file": f.path, "action": f.action, "why": f.why}
                            | ({"to": os.path.basename(f.target)} if f.target else {}) for f in self.fixes],
                "nothing_to_do": not acts, "why": "no retry file whose bytes differ from its name's md5"
                if not self.fixes else "every changed file is kept (-O md5_action=keep)",
                "lines": list(self.lines), "steps": self.apply_steps(), "digest": self.digest_before,
                "elapsed_s": self.elapsed_s}

    def steps(self, run: StepRunner, out: dict, *, quarantine: str | None = None, **_kw) -> None:
        before = sum(f.sig.size or 0 for f in self.fixes)
        out.update(path=self.root, bytes_before=before, bytes_after=before, quarantine_dir=quarantine, quarantine=[],
                   removed=[])
        for f in self.fixes:
            name = os.path.basename(f.path)
            if f.action in ("quarantine", "restore"):
                run(f"quarantine-copy:{name}", lambda f=f: _copy_out(f, out))
            if f.action == "quarantine":
                run(f"remove:{name}", lambda f=f: remove_seen(f.path, f.sig, out["removed"]))
            elif f.action == "restore":
                run(f"restore:{name}", lambda f=f: _restore(f, self.log_path or os.path.dirname(
                    os.path.dirname(f.path)) or ".", out))
            elif f.action == "rename":
                run(f"rename:{name}", lambda f=f: _rename(f, out))

    def apply(self, *, quarantine: str | None = None, **kw) -> ApplyResult:
        res = Plan.apply(self, quarantine=quarantine or _default_quarantine(self), **kw)
        for f in self.fixes:        # re-verified: what is in the retry directory now hashes to its name
            p = f.target if f.action == "rename" else f.path if f.action == "restore" else None
            if p is not None:
                m = CALLBACK_NAME.match(os.path.basename(p))
                with open(p, "rb") as fh:
                    if m is None or hashlib.md5(fh.read()).hexdigest() != m.group("md5"):
                        raise InputError("after the repair the bytes still do not hash to the name", path=p)
        return res


def _default_quarantine(plan: OrthRepairPlan) -> str:
    """Beside the logPath (outside it: Orth retries every file of callbacklogs/, and a child of logPath with a
    '-' is a date directory to its cleaner): ``<logPath>.quarantine-<UTC stamp>``."""
    base = os.path.normpath(plan.log_path or os.path.dirname(os.path.normpath(plan.root)) or ".")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return backup_name(os.path.dirname(os.path.abspath(base)), os.path.basename(os.path.abspath(base)),
                       f"quarantine-{stamp}")


def _check(f: FileFix) -> None:
    unchanged({f.path: f.sig}, "changed since the plan: not touched")


def _copy_out(f: FileFix, out: dict) -> None:
    if not os.path.lexists(f.path):
        return
    _check(f)
    q = out["quarantine_dir"]
    if not os.path.isdir(q):
        os.makedirs(q, exist_ok=True)
        fsync_dir(os.path.dirname(os.path.abspath(q)))
    with open(f.path, "rb") as fh:
        data = fh.read()
    dest = backup_name(q, os.path.basename(f.path), "changed")
    write_new(dest, [data])
    fsync_dir(q)
    out["quarantine"].append(dest)


def _restore(f: FileFix, temp_dir: str, out: dict) -> None:
    _check(f)
    tmp = os.path.join(temp_dir, RESTORE_TEMP + os.path.basename(f.path))
    unlink_quiet(tmp)
    write_new(tmp, [f.original or b""])
    os.replace(tmp, f.path)
    fsync_dir(os.path.dirname(f.path) or ".")
    fsync_dir(temp_dir)


def _rename(f: FileFix, out: dict) -> None:
    _check(f)
    assert f.target is not None
    rename_noreplace(f.path, f.target)
    fsync_dir(os.path.dirname(f.path) or ".")
    out["removed"].append(f.path)


@timed
def repair_plan(log, findings: list[Finding], verdict: Verdict, digest: str, action: str | None) -> OrthRepairPlan:
    """The plan for one retry-file set, from its verify findings."""
    action = action or "quarantine"
    if action not in MD5_ACTIONS:
        raise UsageError(f"-O md5_action: expected one of {', '.join(MD5_ACTIONS)}, got {action!r}")
    plan = OrthRepairPlan(log.name, log.log_path, input_verdict=verdict, digest_before=digest)
    other = sorted({f.code for f in findings if f.code != "OC-NAME-MD5" and f.verdict >= Verdict.INVALID_HISTORY})
    for path in [cf.path for cf in log.files]:    # every file named by an md5 its bytes do not have
        m = CALLBACK_NAME.match(os.path.basename(path))
        if m is None:
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        md5 = hashlib.md5(data).hexdigest()
        if md5 == m.group("md5"):
            continue
        sig = FileSig.of(path)
        if action == "restore":
            flip = recover_flip(data, m.group("md5"))
            if flip is None:
                plan.fixes.append(FileFix(path, "quarantine", "no single flipped bit explains the change: "
                                          "quarantined instead of restored", sig))
            else:
                plan.fixes.append(FileFix(path, "restore", f"bit {flip[1]} of byte {flip[0]} flipped back: the "
                                          "bytes written (they hash to the name); the changed bytes quarantined",
                                          sig, original=flip[2]))
        elif action == "rename":
            target = os.path.join(os.path.dirname(path), f"{m.group('prefix')}-callback-{md5}.log")
            if os.path.lexists(target):
                plan.fixes.append(FileFix(path, "keep", f"{os.path.basename(target)} exists (the same bytes): "
                                          "not renamed over it", sig))
            else:
                plan.fixes.append(FileFix(path, "rename", "named by its content's md5: Orth resends the values "
                                          "as they read now", sig, target=target))
        elif action == "quarantine":
            plan.fixes.append(FileFix(path, "quarantine", "its bytes are not what was written: out of the retry "
                                      "directory (copied whole into the quarantine first)", sig))
        else:
            plan.fixes.append(FileFix(path, "keep", "kept as it is (-O md5_action=keep)", sig))
    if other:
        plan.lines.append(f"left as it is: {', '.join(other)} (repair changes only files whose bytes differ from "
                          "their name's md5)")
    return plan
