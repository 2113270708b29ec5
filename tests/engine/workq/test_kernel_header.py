"""The C kernel's constants come from the schemas: kernel/consts.h is generated from wqtool/formats/ (and the
engine's JobState) by scripts/gen_kernel_header.py, and this test fails when the committed header drifts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wqtool.engine.workq import fastreplay
from wqtool.engine.workq.replay import JobState
from wqtool.formats import workq
from wqtool.formats._common import UNIX_TO_INTERNAL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KERNEL_DIR = os.path.join(ROOT, "wqtool", "engine", "workq")


def test_the_generated_header_is_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_kernel_header.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_header_names_every_command_and_state():
    text = open(os.path.join(KERNEL_DIR, "kernel", "consts.h"), encoding="utf-8").read()
    for c in workq.CmdType:
        assert f"#define CMD_{c.name} {int(c)}\n" in text
    for s in JobState:
        assert f"#define ST_{s.name} {int(s)}\n" in text


def test_the_scan_uses_the_names_not_numbers():
    """The state machine in kernel/scan.c compares commands and states by their generated names."""
    import re
    src = open(os.path.join(KERNEL_DIR, "kernel", "scan.c"), encoding="utf-8").read()
    body = src[src.index("static PyObject *k_scan"):]
    assert not re.search(r"\b(c|st|j->state)\s*(==|!=|>=|<=|<|>)\s*\d", body)
    assert not re.search(r"j->state\s*=\s*\d", body)


@pytest.mark.skipif(fastreplay._kernel is None, reason="the C kernel is not built")
def test_the_built_kernel_has_the_schema_constants():
    k = fastreplay._kernel
    assert k.CONSTANTS == {
        "SIZE_CAP": workq.SIZE_CAP, "MAX_RESULT_BYTES": workq.MAX_RESULT_BYTES,
        "MAX_PAYLOAD_BYTES": workq.MAX_PAYLOAD_BYTES, "MAX_TTR_MS": workq.MAX_TTR_MS,
        "MAX_TTL_MS": workq.MAX_TTL_MS, "UNIX_TO_INTERNAL": UNIX_TO_INTERNAL}
    assert k.LABELS["cmd"][1:] == tuple(c.label for c in workq.CmdType)
    assert k.LABELS["state"] == tuple(s.label for s in JobState)


def test_the_kestrel_kernel_uses_the_opcode_names():
    """The Kestrel kernel's opcodes come from wqtool/engine/kestrel/consts.h (generated from formats.kestrel), never a
    literal: a comparison of the opcode byte with a number fails this."""
    import re
    from wqtool.formats.kestrel import Opcode
    kdir = os.path.join(ROOT, "wqtool", "engine", "kestrel")
    header = open(os.path.join(kdir, "consts.h"), encoding="utf-8").read()
    for o in Opcode:
        assert f"#define OP_{o.name} {int(o)}\n" in header
    src = open(os.path.join(kdir, "_kernel.c"), encoding="utf-8").read()
    assert '#include "consts.h"' in src
    assert not re.search(r"\bc\s*(==|!=)\s*\d", src)
