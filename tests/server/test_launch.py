"""``wqtool-serve`` (wqtool/server/launch.c), the drop-in for workq-server's binary: the port bound before Python
starts, then ``wqtool serve`` exec'd with the socket (``WQTOOL_SERVE_LISTEN_FD``), which ``prebind.early`` adopts.

Its decision is ``prebind.decide``'s, proven equal on random command lines (the launcher's ``WQTOOL_SERVE_LAUNCH_DRY``
prints it); a fake ``wqtool`` beside a copy of it shows the port accepting before anything else runs; the installed
one serves, refuses and stops as ``wqtool serve`` does."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import ROOT
from tests.server.test_early import serves_a_job
from tests.server.test_prebind import _free_port
from wqtool.server import prebind

#: pip installs it beside the console script (setup.py: built by build_ext, copied by build_scripts)
LAUNCHER = os.path.join(os.path.dirname(sys.executable), "wqtool-serve")


def _compiled() -> bool:
    with open(LAUNCHER, "rb") as f:
        return f.read(4) == b"\x7fELF"


pytestmark = pytest.mark.skipif(not os.access(LAUNCHER, os.X_OK), reason="wqtool-serve not installed")
needs_c = pytest.mark.skipif(os.access(LAUNCHER, os.X_OK) and not _compiled(),
                             reason="wqtool-serve is the shell fallback here (no C compiler at install)")


def _env(**kw) -> dict:
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("WQTOOL_SERVE_LISTEN_FD", None)
    e.update(kw)
    return e


# ---------------------------------------------------------------- the decision, C == Python
_FLAGS = ["-listen", "--listen", "---listen", "-cmdlog-path", "--cmdlog-path", "--create", "-create", "--create=1",
          "--sync-rolled", "-cmdlog-sync", "-metrics", "--log-level", "-max-connections", "-h", "--help", "-help=x",
          "--fastjournal", "-orth-admin", "-bogus", "-=x", "--", "-", "serve"]
_LISTEN = ["127.0.0.1:80", "localhost:9944", "[::1]:0080", "[[::1]]:1", "::1:65535", ":65536", ":0", ":000",
           "x:000001", "host:", "a:b:c:7", "nonsense", "", ":٣", "x:99999999999999999999", ":1x", "ü:80"]


@st.composite
def _argv(draw, dirs):
    out = []
    for _ in range(draw(st.integers(0, 6))):
        flag = draw(st.sampled_from(_FLAGS))
        kind = draw(st.sampled_from(["sep", "eq", "bare"]))
        value = draw(st.sampled_from(_LISTEN if "listen" in flag else dirs if "path" in flag else _LISTEN + dirs))
        if kind == "eq" and flag.startswith("-") and "=" not in flag and flag not in ("-", "--"):
            out.append(f"{flag}={value}")
        elif kind == "sep":
            out += [flag, value]
        else:
            out.append(flag)
    return out


@needs_c
def test_the_launcher_decides_as_prebind_decide(tmp_path_factory):
    """For every command line: bind the same (host, port), or nothing, as ``prebind.decide`` — the rule exists once
    per language; this keeps the two equal (flags in every notation, ports with leading zeros, out of range or in
    other digits, brackets, directories that exist, are missing (with and without --create) or are files)."""
    base = tmp_path_factory.mktemp("dirs")
    (base / "log").mkdir()
    (base / "file").write_bytes(b"")
    dirs = [str(base / "log"), str(base / "missing"), str(base / "file"), ""]

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_argv(dirs))
    def check(argv):
        r = subprocess.run([LAUNCHER, *argv], env=_env(WQTOOL_SERVE_LAUNCH_DRY="1"), capture_output=True,
                           timeout=30)
        where = prebind.decide(argv)
        assert r.stdout.decode() == ("none\n" if where is None else f"bind {where[0]} {where[1]}\n"), argv
    check()


# ---------------------------------------------------------------- bound before Python
_FAKE = """#!{python}
import os, socket, sys
fd = os.environ.get("WQTOOL_SERVE_LISTEN_FD")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    accepted = "accepted"
except OSError as exc:
    accepted = "refused: " + str(exc)
s = socket.socket(fileno=int(fd)) if fd else None
with open({out!r}, "w") as f:
    f.write(repr((sys.argv[1:], accepted, s and s.getsockname(), s and s.getsockopt(socket.SOL_SOCKET,
                                                                                  socket.SO_ACCEPTCONN))))
"""


@needs_c
def test_the_port_accepts_before_wqtool_runs(tmp_path):
    """A copy of the launcher beside a fake ``wqtool``: the fake, the first thing exec'd, already finds the port
    accepting, gets ``serve`` and the arguments as they were, and the listening socket in WQTOOL_SERVE_LISTEN_FD."""
    port = _free_port()
    shutil.copy(LAUNCHER, tmp_path / "wqtool-serve")
    (tmp_path / "wqtool").write_text(_FAKE.format(python=sys.executable, port=port, out=str(tmp_path / "seen")))
    (tmp_path / "wqtool").chmod(0o755)
    args = ["-listen", f"127.0.0.1:{port}", "-cmdlog-path", str(tmp_path), "-cmdlog-seg-size", "15"]
    r = subprocess.run([str(tmp_path / "wqtool-serve"), *args], env=_env(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    argv, accepted, name, listening = eval((tmp_path / "seen").read_text())     # noqa: S307 — our own repr
    assert argv == ["serve", *args]
    assert accepted == "accepted" and name == ("127.0.0.1", port) and listening == 1


@needs_c
def test_nothing_is_bound_where_prebind_would_bind_nothing(tmp_path):
    """A missing -cmdlog-path without --create: the fake finds no socket and the port refuses."""
    port = _free_port()
    shutil.copy(LAUNCHER, tmp_path / "wqtool-serve")
    (tmp_path / "wqtool").write_text(_FAKE.format(python=sys.executable, port=port, out=str(tmp_path / "seen")))
    (tmp_path / "wqtool").chmod(0o755)
    r = subprocess.run([str(tmp_path / "wqtool-serve"), "-listen", f"127.0.0.1:{port}", "-cmdlog-path",
                        str(tmp_path / "missing")], env=_env(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    argv, accepted, name, listening = eval((tmp_path / "seen").read_text())     # noqa: S307 — our own repr
    assert accepted.startswith("refused") and name is None and not (tmp_path / "missing").exists()


@needs_c
def test_without_a_wqtool_beside_it_the_one_on_path_runs(tmp_path):
    """The launcher alone in a directory: ``wqtool`` is looked for on PATH; none there either: exit 127, one line."""
    shutil.copy(LAUNCHER, tmp_path / "wqtool-serve")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "wqtool").write_text("#!/bin/sh\necho \"$@\"\n")
    (tmp_path / "bin" / "wqtool").chmod(0o755)
    r = subprocess.run([str(tmp_path / "wqtool-serve"), "--help"], env=_env(PATH=str(tmp_path / "bin")),
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, b"serve --help\n")
    r = subprocess.run([str(tmp_path / "wqtool-serve"), "--help"], env=_env(PATH=str(tmp_path / "none")),
                       capture_output=True, timeout=60)
    assert r.returncode == 127 and r.stderr == b"wqtool-serve: cannot run wqtool serve: No such file or directory\n"


# ---------------------------------------------------------------- prebind adopts it (or not)
@pytest.fixture
def held():
    yield
    h, prebind._held = prebind._held, None
    if h is not None:
        os.close(h[3])


def _listening(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    s.set_inheritable(True)
    return s


def test_early_adopts_the_launchers_socket_for_its_address(monkeypatch, held):
    port = _free_port()
    s = _listening(port)
    monkeypatch.setenv("WQTOOL_SERVE_LISTEN_FD", str(s.fileno()))
    monkeypatch.setenv("WQTOOL_SERVE_T0", str(time.time_ns()))
    assert prebind.early(["-listen", f"127.0.0.1:{port}"])
    assert prebind._held[3] == s.fileno() and not os.get_inheritable(s.fileno())
    assert "WQTOOL_SERVE_LISTEN_FD" not in os.environ and "WQTOOL_SERVE_T0" not in os.environ
    marks = [m for m, _ in prebind._marks]
    assert marks[-2:] == ["launched", "bound"]
    s.detach()                          # (now prebind's: the fixture closes it)


def test_early_closes_a_socket_for_another_address_and_binds_its_own(monkeypatch, held):
    port, other = _free_port(), _free_port()
    s = _listening(other)
    monkeypatch.setenv("WQTOOL_SERVE_LISTEN_FD", str(s.fileno()))
    s.detach()
    assert prebind.early(["-listen", f"127.0.0.1:{port}"])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", other), timeout=2)         # the launcher's socket: closed
    assert socket.socket(fileno=os.dup(prebind._held[3])).getsockname() == ("127.0.0.1", port)
    socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_early_closes_the_socket_when_it_binds_nothing(monkeypatch, held):
    s = _listening(_free_port())
    monkeypatch.setenv("WQTOOL_SERVE_LISTEN_FD", str(s.fileno()))
    other = s.getsockname()[1]
    s.detach()
    assert prebind.early(["--help"]) is False
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", other), timeout=2)


# ---------------------------------------------------------------- the installed launcher, end to end
def _launch(*args: str) -> subprocess.Popen:
    return subprocess.Popen([LAUNCHER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)


def test_the_installed_launcher_serves_and_stops(tmp_path):
    port = _free_port()
    p = _launch("-listen", f"127.0.0.1:{port}", "-cmdlog-path", str(tmp_path / "log"), "--create")
    try:
        serves_a_job(port, p)
        assert os.path.realpath(f"/proc/{p.pid}/exe") == os.path.realpath(sys.executable)   # exec'd: one process
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err.decode()
    assert f"Listening on 127.0.0.1:{port}".encode() in out
    line = next(x for x in err.splitlines() if b"msg=listening" in x)
    assert (b'startup_ms="launched=' in line) == _compiled(), line
    assert sorted(os.listdir(tmp_path / "log"))[:2] == ["000000001.log", "append.lock"]


def test_the_installed_launcher_refuses_what_wqtool_serve_refuses(tmp_path):
    """A missing -cmdlog-path: exit 2, nothing created, the same message as ``wqtool serve``'s; a port in use: the
    launcher's bind fails, and the server's reports it as ``wqtool serve``'s does."""
    missing = tmp_path / "missing"
    ours = subprocess.run([LAUNCHER, "-cmdlog-path", str(missing)], env=_env(), capture_output=True, timeout=60)
    theirs = subprocess.run([os.path.join(os.path.dirname(sys.executable), "wqtool"), "serve", "-cmdlog-path",
                             str(missing)], env=_env(), capture_output=True, timeout=60)
    assert ours.returncode == theirs.returncode == 2 and not missing.exists()
    assert ours.stderr == theirs.stderr and b"missing" in ours.stderr
    port = _free_port()
    taken = _listening(port)
    try:
        ours = subprocess.run([LAUNCHER, "-listen", f"127.0.0.1:{port}"], env=_env(), capture_output=True,
                              timeout=60)
        theirs = subprocess.run([os.path.join(os.path.dirname(sys.executable), "wqtool"), "serve", "-listen",
                                 f"127.0.0.1:{port}"], env=_env(), capture_output=True, timeout=60)
    finally:
        taken.close()
    assert ours.returncode == theirs.returncode != 0
    assert ours.stderr == theirs.stderr and b"address already in use" in ours.stderr.lower(), ours.stderr


def test_the_shell_fallback_runs_wqtool_serve_beside_it(tmp_path):
    """Where the launcher does not compile, setup.py installs a shell script under its name: ``wqtool serve`` with
    the same arguments (the port then bound once Python runs)."""
    text = open(os.path.join(ROOT, "setup.py")).read()
    fallback = text.split('_FALLBACK = """', 1)[1].split('"""', 1)[0]
    (tmp_path / "wqtool-serve").write_text(fallback)
    (tmp_path / "wqtool").write_text("#!/bin/sh\nprintf '%s|' \"$@\"\n")
    for name in ("wqtool-serve", "wqtool"):
        (tmp_path / name).chmod(0o755)
    r = subprocess.run([str(tmp_path / "wqtool-serve"), "-listen", "a b:1", "--create"], env=_env(PATH="/usr/bin:/bin"),
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, b"serve|-listen|a b:1|--create|")


@pytest.mark.parametrize("what", ["stdout-pipe", "connected-socket", "garbage"])
def test_a_descriptor_that_is_no_listening_socket_is_left_alone(monkeypatch, held, what):
    """WQTOOL_SERVE_LISTEN_FD naming anything but a listening socket (set by hand, inherited by mistake) is
    ignored and never closed: the descriptor stays as it was, and ``early`` binds as it would without it."""
    keep = []
    if what == "stdout-pipe":
        r, w = os.pipe()
        keep, fd = [r, w], str(w)
    elif what == "connected-socket":
        a, b = socket.socketpair()
        keep, fd = [a, b], str(a.fileno())
    else:
        fd = "x1"
    monkeypatch.setenv("WQTOOL_SERVE_LISTEN_FD", fd)
    monkeypatch.setenv("WQTOOL_SERVE_T0", "1")
    monkeypatch.setattr(prebind, "started_ns", None)
    port = _free_port()
    assert prebind.early(["-listen", f"127.0.0.1:{port}"])
    for k in keep:
        (os.fstat(k) if isinstance(k, int) else k.getsockname())      # still open
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert prebind.started_ns != 1                                    # T0 only comes with a launcher's socket
    for k in keep:
        os.close(k) if isinstance(k, int) else k.close()
