"""File-set discovery: 2.x order, the .pack and ~~ rules applied virtually, stray names, explicit files."""
from __future__ import annotations

import os

import pytest

from wqtool.engine.kestrel.reader import discover
from wqtool.engine.kestrel.verify import run_log
from wqtool.errors import InputError, UsageError

from .conftest import AS_OF_NS, T, dir_snapshot, one_set, write_journal
from wqtool.engine.findings import Verdict


def mk(d, *names):
    for n in names:
        write_journal(os.path.join(d, n), lambda w, n=n: w.add(n.encode(), T))


def names(fs):
    return [os.path.basename(f.path) for f in fs.files]


def test_numeric_order_then_live(qdir):
    mk(qdir, "q", "q.9", "q.10", "q.1000", "q.200")
    assert names(one_set(qdir)) == ["q.9", "q.10", "q.200", "q.1000", "q"]


def test_several_queues_and_fanout(qdir):
    mk(qdir, "a", "a.5", "b", "a+b", "a+b.3")
    sets = discover([qdir])
    assert [(s.queue, names(s)) for s in sets] == [("a", ["a.5", "a"]), ("a+b", ["a+b.3", "a+b"]), ("b", ["b"])]
    assert [s.queue for s in discover([qdir], queue="a+b")] == ["a+b"]
    with pytest.raises(InputError):
        discover([qdir], queue="nope")


def test_temp_files_and_stray_names_are_findings(qdir):
    mk(qdir, "q", "q.100", "q~~200", "q.bak", "q.read.x", "q.", "q.100.old")
    before = dir_snapshot(qdir)
    fs = one_set(qdir)
    assert names(fs) == ["q.100", "q.100.old", "q"]
    codes = sorted(f.code for f in fs.findings)
    assert codes == ["KQ-ODD-NAME", "KQ-STRAY-FILE", "KQ-STRAY-FILE", "KQ-STRAY-FILE", "KQ-TEMP-FILE"]
    stray = [f for f in fs.findings if f.code == "KQ-STRAY-FILE"]
    assert all("fails at startup" in f.message for f in stray)
    assert [os.path.basename(p) for p in fs.temps] == ["q~~200"]
    r = run_log(fs, AS_OF_NS)
    assert r.verdict == Verdict.CLEAN          # warnings only
    assert dir_snapshot(qdir) == before


def test_several_packs(qdir):
    """Packs are processed in timestamp order; a later pack supersedes an earlier one once renamed."""
    mk(qdir, "q.10", "q.20", "q.20.pack", "q.30", "q.40.pack", "q.50", "q")
    fs = one_set(qdir)
    assert names(fs) == ["q.40.pack", "q.50", "q"]
    assert sorted(os.path.basename(p) for p in fs.superseded) == ["q.10", "q.20", "q.20.pack", "q.30"]
    assert [f.code for f in fs.findings] == ["KQ-HALF-PACK", "KQ-HALF-PACK"]


def test_pack_pending(qdir):
    mk(qdir, "q.20.pack", "q")
    fs = one_set(qdir)
    assert names(fs) == ["q.20.pack", "q"] and [f.code for f in fs.findings] == ["KQ-PACK-PENDING"]


def test_explicit_files(qdir):
    mk(qdir, "q.5", "q.7", "q")
    sets = discover([os.path.join(qdir, "q"), os.path.join(qdir, "q.5")])
    assert len(sets) == 1 and names(sets[0]) == ["q.5", "q"]
    assert not sets[0].is_dir
    part = [f for f in sets[0].findings if f.code == "KQ-PARTIAL-SET"]
    assert len(part) == 1 and "q.7" in part[0].message


def test_explicit_odd_file_name_is_read(tmp_path):
    p = write_journal(str(tmp_path / "x" / "journal.bin"), lambda w: w.add(b"z", T))
    fs = discover([p])[0]
    r = run_log(fs, AS_OF_NS)
    assert r.records == 1 and r.verdict == Verdict.CLEAN


def test_errors(tmp_path):
    with pytest.raises(InputError):
        discover([str(tmp_path / "missing")])
    with pytest.raises(UsageError):
        discover([])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError):
        discover([str(empty)])
