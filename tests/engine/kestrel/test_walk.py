"""dump's selection over a Kestrel journal in the C loop (engine/kestrel/walk.py through engine.walk.Selection)
equals the reference pass filtered: the same records with their numbers, the same findings told inside what was
read (from an offset: the reader's, not the history's), the same stop; random journals, damage included."""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples

from tests.engine.selections import selected
from wqtool.engine.dump import selection
from wqtool.engine.format import get
from wqtool.engine.kestrel import fastreplay
from wqtool.engine.kestrel.codes import KESTREL_REPLAY_CODES
from wqtool.offsets import At

from .conftest import AS_OF_NS, one_set
from .test_fastreplay import OPS, build, kernel  # noqa: F401  (the fixture: the C loop on)

LABELS = ["add", "remove", "addx", "remove-tentative", "save-xid", "unremove", "confirm-remove", "add-xid",
          "continue", "remove-tentative-xid"]


def _run(fs, flt, limit, *, fast: bool):
    return selected("kestrel", fastreplay, fs, AS_OF_NS, flt, limit, fast=fast, fields=("path", "offset", "index", "op"))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS, st.lists(st.integers(0, 50), max_size=2),
       st.one_of(st.none(), st.tuples(st.integers(0, 3), st.sampled_from(["flip", "cut", "junk"]),
                                      st.integers(0, 10**6))),
       st.data())
def test_dump_selection_equals_the_reference(ops, cuts, damage, data):
    with tempfile.TemporaryDirectory() as d:
        build(d, ops, cuts, damage)
        fs = one_set(d)
        names = [os.path.basename(f.path) for f in fs.files]
        kinds = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(LABELS), min_size=1, max_size=3)))

        def bound():
            files = st.one_of(st.none(), st.sampled_from(names)) if names else st.none()
            return data.draw(st.one_of(st.none(), st.builds(At, files, st.integers(0, 300))))
        lo, hi = bound(), bound()
        limit = data.draw(st.one_of(st.none(), st.integers(0, 5)))
        fmt = get("kestrel")
        flt = selection(fmt, kinds=kinds, from_offset=lo, to_offset=hi).for_files(fmt.files(fs), "the queue")
        if flt.selects_all():
            return
        fast, ref = _run(fs, flt, limit, fast=True), _run(fs, flt, limit, fast=False)
        assert fast[0] == ref[0]
        if lo is None or hi is None:
            assert fast[2] == ref[2]
        if lo is None:
            assert fast[1] == ref[1] and fast[3] == ref[3]
        else:
            assert fast[1] == [t for t in ref[1] if t[0] not in KESTREL_REPLAY_CODES]


@pytest.mark.skipif(fastreplay.KERNEL != "c", reason="a seek that never replays is the C walk's (kestrel "
                    "select_records); without the kernel (not built, or WQTOOL_PURE_PYTHON=1, which the subprocess "
                    "inherits) dump filters the reference pass, which replays")
def test_a_seek_never_imports_the_replay(qdir):
    """``dump -n 1 --from-offset q@0x...`` frames and decodes, it never replays: neither the replay module nor its
    hashlib is imported (record rows and the walker no longer pull them in)."""
    import subprocess
    import sys

    from tests.conftest import ROOT
    from .conftest import T, write_journal
    write_journal(os.path.join(qdir, "q"), lambda w: [w.add(b"x" * 20, T) for _ in range(50)])
    code = ("import sys\n"
            f"sys.argv = ['wqtool', 'dump', '-n', '1', '--from-offset', 'q@0x{41 * 40:x}', {qdir!r}]\n"
            "from wqtool._entry import main\n"
            "try:\n"
            "    main()\n"
            "except SystemExit as e:\n"
            "    rc = e.code\n"
            "print(repr((rc, 'wqtool.engine.kestrel.replay' in sys.modules)))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "addx" in r.stdout and r.stdout.splitlines()[-1] == "(0, False)", r.stdout
