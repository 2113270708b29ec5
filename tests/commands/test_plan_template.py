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
        r = cli("repair", "--apply", "--salvage", "--out", os.path.join(path, "sub"), "--as-of", AS_OF, path)
        assert r.code == 2 and "inside the input" in r.err and not os.path.exists(os.path.join(path, "sub")), r.err


def _workq_torn_add(tmp_path, cut: int, last: str = "add") -> tuple[str, int]:
    """A log whose last record (an add, or a delete) is cut ``cut`` bytes in: (the log, the torn offset)."""
    import random
    from wqtool.engine.workq.sample import v4_id
    from wqtool.engine.workq.writer import SegmentWriter, add, simple
    from wqtool.formats._common import GoTime
    from wqtool.formats.workq import CmdType
    d = str(tmp_path / f"log-{last}-{cut}")
    t = GoTime.from_unix_ns(AS_OF_NS - 10**12)
    rng = random.Random(cut)
    ids = [v4_id(rng) for _ in range(4)]
    with SegmentWriter(d) as w:
        torn = 8 + sum(len(w.append(add(ids[i], "q", ttr=1000, ttl=10**9, created=t,
                                        payload=b"p" * 30), t)) for i in range(3))
        if last == "add":
            w.append(add(ids[3], "q", ttr=1000, ttl=10**9, created=t, payload=b"p" * 30), t)
        else:
            w.append(simple(CmdType.DELETE, ids[0]), t)
    with open(os.path.join(d, "000000001.log"), "r+b") as f:
        f.truncate(torn + cut)
    return d, torn


def test_every_cut_byte_is_a_named_job_or_counted_unread(tmp_path):
    """D5: a torn add cut 20 bytes in (its job id cut) was counted neither in jobs_lost nor jobs_lost_unread; at 16
    bytes (no frame) and at 40 (the id whole) it was."""
    import json
    for last, cut in (("add", 16), ("add", 20), ("add", 30), ("add", 40), ("delete", 20)):
        d, torn = _workq_torn_add(tmp_path, cut, last)
        doc = json.loads(cli("repair", "-o", "json", "--as-of", AS_OF, d).out)["logs"][0]
        assert [(c["offset"], c["length"]) for c in doc["cuts"]] == [(torn, cut)], doc["cuts"]
        named = [j for j in doc["jobs_lost"] if j["at"] == f"000000001.log@0x{torn:x}"]
        assert named or doc["jobs_lost_unread"] == {"ranges": 1, "bytes": cut}, (last, cut, doc)


def test_an_addx_damaged_only_in_its_opcode_is_a_lost_item(tmp_path):
    """D7: an ADDX whose only damage is its opcode byte was "unknown in N cut byte(s)", though the same item cut
    for its size field was counted."""
    import json
    from wqtool.engine.kestrel.writer import JournalWriter
    q = str(tmp_path / "Q")
    os.makedirs(q)
    with JournalWriter(os.path.join(q, "jobs")) as w:
        w.add(b"first", 1_795_302_000_000)
        at = w.size
        w.add(b"x" * 150, 1_795_302_000_001)
        for i in range(3):
            w.add(b"after %d" % i, 1_795_302_000_002 + i)
    with open(os.path.join(q, "jobs"), "r+b") as f:
        f.seek(at)
        f.write(b"\x7f")
    doc = json.loads(cli("repair", "--salvage", "-o", "json", "--as-of", AS_OF, q).out)["logs"][0]
    assert [c["offset"] for c in doc["cuts"]] == [at], doc["cuts"]
    assert doc["items_lost_at"] == [f"jobs@0x{at:x}"] and doc["items_lost_unread"] == {"ranges": 0, "bytes": 0}


def test_a_plan_at_the_default_now_states_its_instant_and_gives_its_digest_again(tmp_path):
    """Issue 31 item 6: at the default --as-of now the digest moves with the clock; the plan states the instant it
    used, and that --as-of gives the same plan and digest (an explicit --as-of prints no such line)."""
    import json
    import re
    from tests.commands import crashsweep as cs
    d = cs.copy_of("workq", "crc-mismatch-mid-segment", "log")(str(tmp_path))
    r = cli("repair", "--salvage", d)
    [t] = re.findall(r"^  as of (\S+) \(--as-of \1 gives this plan and digest again\)$", r.out, re.M)
    digest = re.search(r"digest sha256:(\w+)", r.out).group(1)
    again = cli("repair", "--salvage", "--as-of", t, d)
    assert re.search(r"digest sha256:(\w+)", again.out).group(1) == digest and "  as of " not in again.out
    assert json.loads(cli("repair", "--salvage", "-o", "json", "--as-of", t, d).out)["logs"][0]["as_of"] == t


def test_the_old_locks_are_held_only_for_a_process_that_has_them_open(tmp_path, monkeypatch):
    """Speed: the workq swap slept stale_lock_hold (1.1 s: 11x the bench log's read floor) after every apply. It
    waits only while another process holds one of the old lock files open (one that opened them before the
    swap may be about to lock them); a process that opens D/append.lock later opens the new log's."""
    import subprocess
    import sys
    from tests.commands import crashsweep as cs
    from wqtool.engine.workq import pack, swap
    slept = []
    monkeypatch.setattr(swap.time, "sleep", lambda s: slept.append(s))
    for held in (False, True):
        d = cs.copy_of("workq", "upstream-a-run1", "log")(str(tmp_path / str(held)))
        holder = None
        open(os.path.join(d, "append.lock"), "a").close()
        if held:
            holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1]); print('open', "
                                       "flush=True); sys.stdin.read()", os.path.join(d, "append.lock")],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "open"
        try:
            plan = pack.pack_plan(discover([d])[0], AS_OF_NS)
            plan.apply(fsync=False)
        finally:
            if holder is not None:
                holder.stdin.close()
                holder.wait(timeout=30)
        assert (1.1 in slept) == held, (held, slept[:3])
        slept.clear()


def test_clean_apply_out_writes_a_cleaned_copy_and_leaves_the_input_alone(tmp_path):
    """clean --apply --out DIR: the cleaned log in DIR, the input byte-identical (every file hashed); DIR verifies
    clean and replays to the digest an in-place clean of a copy gives. The refusals are repair --out's: --out
    without --apply, a DIR that holds anything, a DIR inside the input, several logs; and a format whose clean
    writes no file (Kestrel: deletes and renames) has no copy to write."""
    import json
    from tests.commands import crashsweep as cs
    as_of = "2026-11-21T23:16:12Z"     # the 2.5 s jobs of upstream-b expired: segment 1 deleted, 2 rewritten
    work = str(tmp_path)
    src = cs.copy_of("workq", "upstream-b-before-clean", "log")(work)
    before = cs.tree(src)
    out = os.path.join(work, "cleaned")
    r = cli("clean", "--apply", "--out", out, "-o", "json", "--as-of", as_of, src)
    assert r.code == 0, r.err
    doc = json.loads(r.out)["logs"][0]
    assert doc["applied"]["out"] is True and doc["applied"]["path"] == out
    assert {os.path.basename(a["file"]): a["action"] for a in doc["actions"]} == {"000000001.log": "delete",
                                                                                  "000000002.log": "rewrite"}
    assert cs.tree(src) == before                                     # the input is untouched
    assert sorted(os.listdir(out)) == ["000000002.log", "000000003.log", "append.lock", "read.lock"]
    assert doc["applied"]["bytes_after"] == sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    assert cli("verify", "-q", "--as-of", as_of, out).code == 0
    copy = json.loads(cli("replay", "-o", "json", "--as-of", as_of, out).out)["digest"]
    inplace = cs.copy_of("workq", "upstream-b-before-clean", "log", name="inplace")(work)
    assert cli("clean", "--apply", "--as-of", as_of, inplace).code == 0
    assert json.loads(cli("replay", "-o", "json", "--as-of", as_of, inplace).out)["digest"] == copy
    assert cs.tree(inplace) == cs.tree(out)          # the same bytes, file by file
    # the refusals (exit 2), each leaving the input as it is and writing nothing
    assert cli("clean", "--out", out + "2", "--as-of", as_of, src).code == 2     # --out needs --apply
    assert cli("clean", "--apply", "--out", out, "--as-of", as_of, src).code == 2    # DIR holds a log
    r = cli("clean", "--apply", "--out", os.path.join(src, "sub"), "--as-of", as_of, src)
    assert r.code == 2 and "inside the input" in r.err, r.err
    assert cli("clean", "--apply", "--out", out + "3", "--as-of", as_of, src, inplace).code == 2
    q = cs.copy_queue("rotated-set-with-pack", "jobs")(work)
    r = cli("clean", "--apply", "--out", out + "4", "--as-of", AS_OF, q)
    assert r.code == 2 and "writes no file" in r.out + r.err, (r.out, r.err)
    assert cs.tree(src) == before and not any(os.path.exists(out + s) for s in ("2", "3", "4"))
    assert not os.path.exists(os.path.join(src, "sub"))
