"""Docs are part of the feature: every command has help with an example, a man page and a README mention."""
from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT, cli

def _commands() -> list[str]:
    import typer
    from wqtool.cli import app
    return sorted(typer.main.get_command(app).commands)


COMMANDS = _commands()


def test_the_expected_commands_exist():
    assert {"dump", "verify", "replay", "pack"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_an_example(command):
    r = cli(command, "--help")
    assert r.code == 0 and "Example:" in r.out and f"wqtool {command}" in r.out


def test_verify_help_documents_the_exit_codes():
    out = cli("verify", "--help").out
    for code in ("0", "1", "2", "3", "4", "5", "130"):
        assert f"\n  {code} " in out.replace("\n    ", "\n  ") or f" {code}  " in out


@pytest.mark.sweep
@pytest.mark.parametrize("command", COMMANDS)
def test_man_page_exists_and_is_current(command):
    path = os.path.join(ROOT, "man", f"wqtool-{command}.1")
    assert os.path.exists(path), "run `make man`"
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_man.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_mentions_every_command(command):
    assert f"wqtool {command}" in open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()


def test_readme_documents_the_exit_table():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |", "| 130 |"):
        assert code in text


def test_help_and_docs_agree_on_the_format_list():
    """--help's --format choices, the commands page's list and the README's formats are the registry's."""
    import re
    from wqtool.engine import format as registry
    names = ["auto", *registry.names()]
    help_text = " ".join(cli("verify", "--help").out.split())
    assert "<" + "|".join(names) + ">" in help_text.replace(" ", "").replace("│", "")
    page = open(os.path.join(ROOT, "docs", "commands.md"), encoding="utf-8").read()
    assert re.search(r"--format ([a-z|-]+)`", page).group(1).split("|") == names
    readme = " ".join(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split())
    for words in ("workq 0.2.0 command logs", "Kestrel queue journals", "Orth / XXL-JOB", "orth_job_log",
                  "snapwebsites list client journal", "EVTJ", "libfastjournal"):
        assert words in readme
    assert len(registry.names()) == 8      # a new format: name it in the README's first paragraph, then here
