"""--explain CODE (issue 20 item 7): every finding code of every format has what happened (its meaning), what
upstream does with it, whether data is at risk, and which wqtool command fixes it — and every command and flag a
fix names exists."""
from __future__ import annotations

import re

import pytest

from wqtool.engine import format as registry

from tests.conftest import cli

CODES = [(f, code) for f in registry.formats() for code in f.codes]


def test_there_are_codes():
    assert len(CODES) > 150


@pytest.mark.parametrize("fmt,code", CODES, ids=[c for _, c in CODES])
def test_every_code_has_all_four_parts(fmt, code):
    assert code in fmt.about.explain, f"{code}: no --explain entry beside its definition ({fmt.name} codes.py)"
    upstream, risk, fix = fmt.about.explain[code]
    meaning = fmt.codes[code][1]
    for part in (meaning, upstream, risk, fix):
        assert isinstance(part, str) and len(part.strip()) >= 2, (code, part)
    assert "wqtool " in fix or fix.startswith(("none", "nothing to fix")), (code, fix)


def test_no_entry_without_a_code():
    for f in registry.formats():
        assert set(f.about.explain) <= set(f.codes), f.name


def _params(cmd: str) -> set[str]:
    from typer.main import get_command
    from wqtool.cli import app
    click_cmd = get_command(app).commands[cmd]
    return {o for p in click_cmd.params for o in getattr(p, "opts", [])}


def test_every_fix_names_a_real_command_and_flag():
    commands = {"dump", "verify", "replay", "stats", "report", "pack", "repair", "clean", "serve"}
    for f, code in CODES:
        fix = f.about.explain[code][2]
        for m in re.finditer(r"wqtool (\w+)((?: --[a-z-]+(?: [A-Z]+)?)*)", fix):
            cmd, flags = m.group(1), re.findall(r"--[a-z-]+", m.group(2))
            assert cmd in commands, (code, fix)
            assert set(flags) <= _params(cmd), (code, cmd, flags)


def test_explain_prints_the_four_parts():
    r = cli("verify", "--explain", "wq-crc")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0] == "WQ-CRC (workq 0.2.0 command log, error): record CRC-32C mismatch"
    assert [l.split(":")[0].strip() for l in lines[1:]] == ["what happened", "upstream", "data at risk", "fix"]
    assert "wqtool repair --apply" in lines[4]
