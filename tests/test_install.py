"""The man pages are installed with the package: after `pip install`, `man wqtool`, `man wqtool-verify` and
`man 5 wqtool-formats` find them (PREFIX/share/man, where man(1) looks next to PREFIX/bin on PATH)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow       # builds a wheel (~10 s)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("src")
    src = str(build / "wqtool")            # a clean copy: the wheel build writes build/ and *.egg-info there
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__",
                                                              ".pytest_cache", ".hypothesis", "demo", "bench"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), src],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr[-500:]}")
    [whl] = glob.glob(str(out / "wqtool-*.whl"))
    return whl


def test_the_wheel_carries_every_man_page(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    pages = sorted(n.split("/data/", 1)[1] for n in names if "/data/share/man/" in n)
    expected = sorted([f"share/man/man1/{os.path.basename(p)}" for p in glob.glob(os.path.join(ROOT, "man", "*.1"))]
                      + ["share/man/man5/wqtool-formats.5"])
    assert pages == expected and "share/man/man1/wqtool-verify.1" in pages


@pytest.mark.skipif(shutil.which("man") is None, reason="no man(1) here")
def test_man_finds_the_pages_after_pip_install(wheel, tmp_path):
    prefix = tmp_path / "prefix"
    # --ignore-installed: never touch the wqtool this test runs from
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                        "--prefix", str(prefix), wheel], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "MANWIDTH": "100", "LANG": "C.UTF-8"}
    for args, page in ((["wqtool"], "man1/wqtool.1"), (["wqtool-verify"], "man1/wqtool-verify.1"),
                       (["5", "wqtool-formats"], "man5/wqtool-formats.5")):
        w = subprocess.run(["man", "-w", *args], env=env, capture_output=True, text=True, timeout=60)
        assert w.returncode == 0 and w.stdout.strip() == str(prefix / "share" / "man" / page), (args, w.stderr)
    shown = subprocess.run(["man", "wqtool-verify"], env=env, capture_output=True, text=True, timeout=60)
    assert "EXIT STATUS" in shown.stdout and "141" in shown.stdout
    formats = subprocess.run(["man", "5", "wqtool-formats"], env=env, capture_output=True, text=True, timeout=60)
    assert "WQ-IN-FLIGHT" in formats.stdout and "KQ-IN-FLIGHT" in formats.stdout


def test_the_console_script_runs_wqtool_and_imports_no_re_first(wheel, tmp_path):
    """``pip install`` makes ``PREFIX/bin/wqtool`` from bin/wqtool (setup.py ``scripts``, the interpreter's
    path written in): it runs wqtool's entry point — ``--version``, and a usage error's exit 2 — and, unlike pip's
    wrapper of an entry point, imports no ``re`` (nor ``enum``) before it (``wqtool serve``'s start-up)."""
    prefix = tmp_path / "prefix"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                        "--prefix", str(prefix), wheel], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    script = prefix / "bin" / "wqtool"
    first = script.read_text().splitlines()[0]
    assert first.startswith("#!") and first[2:].startswith(os.path.dirname(sys.executable)[:-3]), first
    [site] = glob.glob(str(prefix / "lib" / "python*" / "site-packages"))
    env = dict(os.environ, PYTHONPATH=site, PYTHONPROFILEIMPORTTIME="1")
    v = subprocess.run([str(script), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert v.returncode == 0 and v.stdout == "wqtool 0.2.0\n", v.stderr
    imported = [line.rsplit("|", 1)[1].strip() for line in v.stderr.splitlines() if line.startswith("import time:")]
    assert "wqtool._entry" in imported and "re" not in imported and "enum" not in imported
    u = subprocess.run([str(script), "serve", "-cmdlog-path", str(tmp_path / "missing")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert u.returncode == 2 and "no such file or directory" in u.stderr


def test_wqtool_serve_is_installed_beside_the_console_script(wheel, tmp_path):
    """setup.py builds wqtool-serve (wqtool/server/launch.c) and installs it as a script, executable, as it is (no
    ``#!`` rewritten into it); installed, it runs the ``wqtool`` beside it: a missing -cmdlog-path is refused as
    ``wqtool serve`` refuses it (exit 2, nothing created)."""
    info = {i.filename: i for i in zipfile.ZipFile(wheel).infolist()}
    entry = info["wqtool-0.2.0.data/scripts/wqtool-serve"]
    assert entry.external_attr >> 16 & 0o111 == 0o111
    prefix = tmp_path / "prefix"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                        "--prefix", str(prefix), wheel], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    launcher = prefix / "bin" / "wqtool-serve"
    assert launcher.read_bytes()[:4] in (b"\x7fELF", b"#!/b")      # compiled, or the shell fallback
    [site] = glob.glob(str(prefix / "lib" / "python*" / "site-packages"))
    u = subprocess.run([str(launcher), "-cmdlog-path", str(tmp_path / "missing")], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=site, PATH="/usr/bin:/bin"), timeout=60)
    assert u.returncode == 2 and "no such file or directory" in u.stderr and not (tmp_path / "missing").exists()
