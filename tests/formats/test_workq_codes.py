"""formats/workq.py's plain names for the paths that import neither ``enum`` nor ``re`` (serve's first replies):
``CMD_CODES`` is the one list ``CmdType`` is made from, and ``segment_seq`` answers exactly as ``SEGMENT_NAME``
(built on first use) matches — upstream parseSequence's 9 digits that fit a uint32, then '.log'."""
from __future__ import annotations

import subprocess
import sys

from hypothesis import example, given, strategies as st

from tests.conftest import ROOT
from wqtool.formats import workq
from wqtool.formats.workq import CMD_CODES, CmdType


def test_the_plain_opcodes_are_cmdtype():
    assert CMD_CODES == {c.name: c.value for c in CmdType}
    assert [c.label for c in CmdType] == ["add", "schedule", "complete", "fail", "delete", "expire", "start-attempt",
                                          "timeout-attempt"]
    assert CmdType(3) is CmdType.COMPLETE and isinstance(CmdType.ADD, int) and CmdType.__module__ == workq.__name__


def test_importing_the_schema_makes_no_enum_and_no_pattern():
    code = ("import sys\nfrom wqtool.formats import workq\n"
            "print(sorted(m for m in ('enum', 're', 'construct') if m in sys.modules), "
            "sorted(n for n in workq.PLAIN if n in vars(workq)), workq.segment_seq('000000007.log'))\n"
            "workq.CmdType\nprint(sorted(n for n in workq.PLAIN if n in vars(workq)))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[] [] 7", str(sorted(workq.PLAIN))]


def _by_pattern(name: str) -> int | None:
    m = workq.SEGMENT_NAME.match(name)
    if not m:
        return None
    seq = int(m.group(1))
    return seq if seq <= workq.SEGMENT_SEQ_MAX else None


_DIGITS = st.sampled_from("0123456789\u0660\u0669\u06f5\u0967\uff11\U0001d7ce")     # ASCII and other Unicode Nd


@given(st.one_of(
    st.text(max_size=16),
    st.builds(lambda d, tail: "".join(d) + tail, st.lists(_DIGITS, min_size=8, max_size=10),
              st.sampled_from([".log", ".log\n", ".log\n\n", ".LOG", ".lo", ".log ", "\n.log", "log"]))))
@example("000000001.log")
@example("4294967295.log")
@example("4294967296.log"[1:])
@example("999999999.log\n")
@example("0000000001.log")
@example("\uff10\uff10\uff10\uff10\uff10\uff10\uff10\uff10\uff11.log")
def test_segment_seq_is_the_pattern(name):
    assert workq.segment_seq(name) == _by_pattern(name)
