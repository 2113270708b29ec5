"""The plan template's rules that hold for every format (issue 34): a repair exits with the input's class as
verify gives it (D6), whichever flag is missing."""
from __future__ import annotations

import os
import shutil

from tests.conftest import AS_OF, ROOT, cli
from wqtool.engine.instant import parse_instant
from wqtool.engine.workq.reader import RecordReader, discover

AS_OF_NS = parse_instant(AS_OF)


def _workq_corrupt_and_refused(tmp_path) -> str:
    """duplicate-add (a record workq-server refuses) with a CRC flip in an earlier record that valid records
    follow: CORRUPT (3) and INVALID_HISTORY (4) at once."""
    d = str(tmp_path / "log")
    shutil.copytree(os.path.join(ROOT, "fixtures", "workq", "duplicate-add", "log"), d)
    seg = os.path.join(d, "000000001.log")
    recs = [ev for ev in RecordReader(discover([d])[0]).events() if hasattr(ev, "length")]
    victim = recs[len(recs) // 2 - 1]
    with open(seg, "r+b") as f:
        f.seek(victim.offset + victim.length - 6)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    return d


def _kestrel_corrupt_and_refused(tmp_path) -> str:
    """An xid opened twice (KQ-XID-REUSED: 4) and a bad opcode later in the live file (3)."""
    from wqtool.engine.kestrel.writer import JournalWriter
    q = str(tmp_path / "Q")
    os.makedirs(q)
    with JournalWriter(os.path.join(q, "jobs")) as w:
        for i in range(4):
            w.add(b"item %d" % i, 1_795_302_000_000 + i)
        w.remove_tentative(1)
        w.remove_tentative(1)
        bad = w.size
        for i in range(4):
            w.add(b"more %d" % i, 1_795_302_000_100 + i)
    with open(os.path.join(q, "jobs"), "r+b") as f:
        f.seek(bad)
        f.write(b"\x7f")
    return q


def test_repair_salvage_exits_with_verifys_class_when_drop_invalid_is_missing(tmp_path):
    """D6: with --salvage but without --drop-invalid, the refusal exited 4 where verify exits 3."""
    for make in (_workq_corrupt_and_refused, _kestrel_corrupt_and_refused):
        path = make(tmp_path / make.__name__)
        v = cli("verify", "-q", "--as-of", AS_OF, path)
        assert v.code == 3, (make.__name__, v.out, v.err)
        r = cli("repair", "--salvage", "--as-of", AS_OF, path)
        assert r.code == v.code and "--drop-invalid" in r.out + r.err, (make.__name__, r.code, r.out, r.err)
        assert cli("repair", "--salvage", "--drop-invalid", "--as-of", AS_OF, path).code == 3


def _to_dev_full(argv: list[str], cwd: str):
    import subprocess
    import sys
    if not os.path.exists("/dev/full"):
        import pytest
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "wqtool", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)


def test_a_report_that_cannot_be_written_after_the_install_says_installed(tmp_path):
    """Reporting: ENOSPC on stdout after a successful --apply exited 5 with nothing saying the log was installed.
    Now one line per log, "installed; the report could not be written", and the input's class."""
    d = str(tmp_path / "log")
    shutil.copytree(os.path.join(ROOT, "fixtures", "workq", "crc-mismatch-mid-segment", "log"), d)
    r = _to_dev_full(["repair", "--apply", "--salvage", "--as-of", AS_OF, d], str(tmp_path))
    assert r.returncode == 3, r.stderr
    assert r.stderr == f"wqtool: {d}: installed; the report could not be written (No space left on device)\n"
    assert cli("verify", "-q", "--as-of", AS_OF, d).code == 0
    q = str(tmp_path / "q")
    shutil.copytree(os.path.join(ROOT, "fixtures", "kestrel", "torn-tail", "queue"), q)
    r = _to_dev_full(["pack", "--apply", "--as-of", AS_OF, q], str(tmp_path))
    assert r.returncode == 1 and "installed; the report could not be written" in r.stderr, r.stderr
    # nothing installed: a write error is an I/O error as before (exit 5)
    r = _to_dev_full(["repair", "--salvage", "--as-of", AS_OF, d], str(tmp_path))
    assert r.returncode == 5, r.stderr


def test_repair_apply_out_writes_a_repaired_copy_and_leaves_the_input_alone(tmp_path):
    """Issue 31 item 6: repair --apply --out DIR writes the repaired log into DIR, its quarantine beside it
    (names in the printed form FILE@0x...-0x....bin), the input byte-identical; DIR replays to the digest the
    in-place --apply gives at the same --as-of."""
    import json
    from tests.commands import crashsweep as cs
    work = str(tmp_path)
    for name, path in (("workq", cs.copy_of("workq", "crc-mismatch-mid-segment", "log")(work)),
                       ("kestrel", cs.kestrel_rotated_set(work))):
        before = cs.tree(path)
        out = os.path.join(work, f"{name}-out")
        r = cli("repair", "--apply", "--salvage", "--out", out, "-o", "json", "--as-of", AS_OF, path)
        assert r.code == 3, r.err
        applied = json.loads(r.out)["logs"][0]["applied"]
        assert cs.tree(path) == before                                   # the input is untouched
        assert cli("verify", "-q", "--as-of", AS_OF, out).code == 0
        [qdir] = [d for d in os.listdir(work) if d.startswith(f"{name}-out.quarantine-")]
        files = os.listdir(os.path.join(work, qdir))
        assert files and all("@0x" in f and "-0x" in f and f.endswith(".bin") for f in files), files
        assert [os.path.basename(q) for q in applied["quarantine"]] == sorted(files)
        copy = json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, out).out)["digest"]
        assert cli("repair", "--apply", "--salvage", "--as-of", AS_OF, path).code == 3       # in place, as before
        assert json.loads(cli("replay", "-o", "json", "--as-of", AS_OF, path).out)["digest"] == copy
        # a DIR holding anything is refused, and --out needs --apply
        assert cli("repair", "--apply", "--salvage", "--out", out, "--as-of", AS_OF, path).code == 2
        assert cli("repair", "--salvage", "--out", out + "2", "--as-of", AS_OF, path).code == 2
