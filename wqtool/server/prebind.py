"""``wqtool serve``'s fast start: the port bound before anything is imported (``early``), and the server run without
importing the command line interface (``lean``).

workq-server listens a few milliseconds after it starts; Python needs a few hundred to import the CLI, asyncio and
the engine (more on a loaded machine), and a client that connects in between — upstream's own system tests connect
100 ms after starting the server — was refused. So the console entry point (``wqtool._entry``) calls ``early()``
before anything else when the command is ``serve``: it binds and listens on ``-listen`` at once. The kernel then
completes the connections of early clients, whose requests wait in the socket until the server, started as always
(the full command line parsing, the locks, the replay of the log), takes the socket over (``take``) and answers
them: on a big log, clients connect at once and are answered when the replay ends. Nothing is bound for a
``-cmdlog-path`` that does not exist (without ``--create``: refused, exit 2) or cannot be listed; a log the server
then refuses (damaged, or locked by another server) exits, and early clients see the connection closed.

Only the two flags needed to decide are read here (``-listen``, ``-cmdlog-path``, in Go flag syntax); anything
else — help, another server mode, a malformed value — binds nothing, and the command line is checked by the CLI as
always (a usage error then exits and closes the early socket, so early clients see the connection closed).

``lean`` then runs the server directly when the flags are plain ones (typer, rich and every other command cost most
of a start: measured, the CLI's imports were 0.3-1 s of the 0.7-1.3 s to a first reply at load average 5-6); anything
else goes to the CLI, which also reports every failure before the server listens, exactly as always.

``early`` also notes when the process started (``started_ns``): the server's restart instant (``since_start``).

``wqtool-serve`` (``launch.c``, installed beside the console script) binds before Python starts at all: the
interpreter's own start is ~10 ms of CPU before ``early`` runs, ~80 ms at load 10 (upstream's tests connect after
100 ms). It decides by ``decide``'s rules, binds, and execs ``wqtool serve`` with the socket's descriptor in
``WQTOOL_SERVE_LISTEN_FD``; ``early`` adopts it where it would bind that address itself, else closes it and binds.

Imports: os, time and ``_socket`` only (this runs before anything else is imported; ``socket`` would add enum).
"""
from __future__ import annotations

import os
import time

import _socket

_held: tuple[str, int, int, int] | None = None       # (host, port, family, file descriptor)
#: the listen backlog: Linux's default net.core.somaxconn, as Go's net package takes it (a storm of connections
#: fills a shorter queue and a dropped SYN costs its client a 1 s retransmission)
BACKLOG = 4096
_failed: BaseException | None = None                # what stopped a lean run after it listened (``hand_over``)
started_ns: int | None = None                       # time.time_ns() when ``early`` ran (the process's start)


_marks: list[tuple[str, int]] = []                 # (step, CLOCK_BOOTTIME ns): the start-up's timestamps (``mark``)


def mark(step: str) -> None:
    """Note that start-up step ``step`` is done now (``startup_marks`` reports them as ms after exec)."""
    _marks.append((step, time.clock_gettime_ns(time.CLOCK_BOOTTIME)))


def startup_marks() -> str | None:
    """The start-up steps noted so far, as milliseconds after the process's exec (Linux: /proc/self/stat's start
    time, in clock ticks since boot — 10 ms steps), e.g. ``bound=41 imported=212 log=214 listening=220``; taken
    once (None: none noted, or no /proc)."""
    if not _marks:
        return None
    try:
        with open("/proc/self/stat", "rb") as f:
            start_ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
        exec_ns = start_ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    out = " ".join(f"{step}={(t - exec_ns) / 1e6:.0f}" for step, t in _marks)
    _marks.clear()
    return out


def since_start() -> int:
    """Nanoseconds since the process started (``early`` ran), 0 when it did not run (``wqtool serve`` through
    the CLI module, tests). The server replays its log as of its start, not of the end of its imports: upstream
    replays a few milliseconds after it starts, and a restart's fresh TTLs and TTRs count from then (a restarted
    server that took 1-2 s to import on a loaded machine otherwise holds a re-leased job's TTR that much longer
    than upstream — upstream's TestCmdLog waits 2 s for its 1 s TTRs to end).

    Once: the first server of the process takes the instant, and a later one (a test process that runs many)
    starts at its own start — one that counted from the process's start would give its restored jobs TTLs that
    ended before it started."""
    global started_ns
    t, started_ns = started_ns, None
    return 0 if t is None else max(0, time.time_ns() - t)


_gc_held = False                                    # ``hold_gc`` disabled the cyclic collector


def hold_gc() -> None:
    """No cyclic garbage collection until ``release_gc`` (the lean start: the collections its imports set off
    were ~9 % of the CPU to the first reply; the serving starts with them done at once, ``release_gc``)."""
    global _gc_held
    import gc
    if gc.isenabled():
        gc.disable()
        _gc_held = True


def release_gc() -> None:
    """Undo ``hold_gc``: what the start-up made is moved out of the collector's generations (``gc.freeze``: the
    modules, classes and functions live as long as the process; a collection need not walk them again), and
    collection resumes. Nothing when ``hold_gc`` did not disable it."""
    global _gc_held
    if _gc_held:
        _gc_held = False
        import gc
        gc.freeze()
        gc.enable()


def decide(argv: list[str]) -> tuple[str, int] | None:
    """Whether ``early`` binds for ``argv`` (the arguments after ``serve``), and what: (host, "" for every address,
    brackets stripped; port), or None. wqtool-serve's launcher (``launch.c`` ``decide``) applies the same rules
    before Python starts (tests/server/test_launch.py proves them equal)."""
    listen, path, create = "127.0.0.1:9922", "", False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--" or not a.startswith("-") or a == "-":
            break
        name, eq, value = a.lstrip("-").partition("=")
        if name in ("h", "help", "fastjournal", "orth-admin"):
            return None
        if a in ("--create", "--sync-rolled"):
            create = create or a == "--create"
            i += 1
            continue
        takes = name in ("listen", "cmdlog-path", "cmdlog-seg-size", "cmdlog-sync", "cmdlog-sync-int",
                         "cmdlog-clean-int", "max-connections", "idle-timeout", "request-timeout", "metrics",
                         "log-level")
        if not takes:
            return None                                     # a flag this does not know: the CLI decides
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        if name == "listen":
            listen = value
        elif name == "cmdlog-path":
            path = value
        i += 1
    host, sep, port = listen.rpartition(":")
    digits = port.lstrip("0")
    if not sep or not (port.isascii() and port.isdigit()) or not digits or len(digits) > 5 or int(digits) > 65535:
        return None                                         # (port 0: the Listening line says which; no hurry)
    if path and not _servable(path, create):
        return None
    return host.strip("[]"), int(digits)


def early(argv: list[str]) -> bool:
    """Bind and listen on ``serve``'s ``-listen`` address now (see the module docstring), or adopt the socket
    wqtool-serve's launcher bound for it before Python started (``_launched``); ``argv``: the arguments after
    ``serve``. True when a socket is held."""
    global _held, started_ns
    fd, t0 = _launched()
    if started_ns is None:
        started_ns = t0 or time.time_ns()
    where = decide(argv)
    if where is None:
        if fd is not None:
            os.close(fd)
        return False
    host, port = where
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    if fd is not None:
        fd = _adopt(fd, family, port)
        if fd is not None and t0:           # when the launcher bound it, on the marks' clock
            _marks.append(("launched", time.clock_gettime_ns(time.CLOCK_BOOTTIME) - (time.time_ns() - t0)))
    if fd is None:
        try:
            s = _socket.socket(family, _socket.SOCK_STREAM)     # not inheritable (PEP 446)
            try:
                s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
                s.bind((host, port))
                s.listen(BACKLOG)
            except BaseException:
                s.close()
                raise
        except (OSError, ValueError, UnicodeError):
            return False                                    # the server's own bind reports it, as always
        fd = s.detach()
    _held = (host, port, family, fd)
    mark("bound")
    return True


def _launched() -> tuple[int | None, int | None]:
    """The listening socket's descriptor and the process's start (ns) that wqtool-serve's launcher passed on
    (``WQTOOL_SERVE_LISTEN_FD``, ``WQTOOL_SERVE_T0``), taken out of the environment (a process the server starts
    does not see them); (None, None) when it passed none, or a descriptor that is not a listening TCP socket
    (which is left as it is: never closed)."""
    fd, t0 = os.environ.pop("WQTOOL_SERVE_LISTEN_FD", ""), os.environ.pop("WQTOOL_SERVE_T0", "")
    if not (fd.isascii() and fd.isdigit() and len(fd) < 10):
        return None, None
    try:
        s = _socket.socket(fileno=int(fd))
    except (OSError, ValueError):
        return None, None                                   # not a socket, not open
    try:
        listening = s.type == _socket.SOCK_STREAM and s.getsockopt(_socket.SOL_SOCKET, _socket.SO_ACCEPTCONN)
    except OSError:
        listening = False
    s.detach()
    if not listening:
        return None, None
    return int(fd), int(t0) if t0.isascii() and t0.isdigit() and len(t0) < 25 else None


def _adopt(fd: int, family: int, port: int) -> int | None:
    """The launcher's listening socket ``fd`` when it is of ``family`` on ``port`` (what ``early`` would bind),
    made not inheritable; else it is closed (and ``early`` binds itself) -> None."""
    s = _socket.socket(fileno=fd)
    try:
        if s.family == family and s.getsockname()[1] == port:
            os.set_inheritable(fd, False)
            return s.detach()
    except OSError:
        pass
    s.close()
    return None


#: serve's workq-server flags and the few own ones the lean start takes: name -> (ServeOptions field, kind)
_LEAN = {"listen": ("listen", "str"), "cmdlog-path": ("cmdlog_path", "str"), "cmdlog-seg-size": ("seg_size", "uint"),
         "cmdlog-sync": ("sync", "sync"), "cmdlog-sync-int": ("sync_int_ms", "uint"),
         "cmdlog-clean-int": ("clean_int_ms", "uint"), "max-connections": ("max_connections", "count"),
         "idle-timeout": ("idle_timeout_s", "seconds"), "request-timeout": ("request_timeout_s", "seconds"),
         "log-level": ("log_level", "level")}


def lean(argv: list[str]) -> bool | None:
    """Run the workq server without importing the command line interface (typer, rich and every other command:
    most of a start's time) when ``argv`` (after ``serve``) is nothing but well-formed flags of the table above.
    Returns True after a clean stop (exit 0); None when the CLI must run instead: an argument this does not take (help, other modes,
    ``--traceback``, a value in another notation), a server that did not get as far as listening (a bad flag
    value, a missing -cmdlog-path, a log refused, a lock held — the CLI then reports it exactly as always; nothing
    was changed but what the CLI's own attempt makes the same way: the lock files), or a server that stopped on an
    error after it listened (handed to the CLI, ``hand_over``: its funnel reports it with its exit code)."""
    kw: dict = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a in ("-", "--"):
            return None
        if a in ("--create", "--sync-rolled"):
            kw[a[2:].replace("-", "_")] = True
            i += 1
            continue
        name, eq, value = a[2:].partition("=") if a.startswith("--") else a[1:].partition("=")
        spec = _LEAN.get(name)
        if spec is None or (name in ("max-connections", "idle-timeout", "request-timeout", "log-level")
                            and not a.startswith("--")):
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        field, kind = spec
        if kind == "str":
            kw[field] = value
        elif kind in ("uint", "count"):
            if not value.isdigit() or not value.isascii() or (len(value) > 1 and value[0] == "0"):
                return None                              # (Go's octal / hex notations: the CLI parses them)
            kw[field] = int(value)
            if kind == "count" and kw[field] < 1:
                return None
        elif kind == "seconds":
            try:
                kw[field] = float(value)
            except ValueError:
                return None
            if not kw[field] >= 0 or kw[field] == float("inf"):
                return None
        elif kind == "sync":
            if value not in ("interval", "os", "always"):
                return None
            kw[field] = value
        elif value not in ("debug", "info", "warning", "error"):
            return None
        else:
            kw[field] = value
        i += 1
    from .workq.server import Server, ServeOptions, check_loop_choice, run_server
    mark("imported")
    try:
        check_loop_choice()
        srv = Server(ServeOptions(**kw))
    except Exception:  # noqa: BLE001 — the CLI reports it
        return None
    return run_server(srv)      # (the event loop is imported while the first requests are served: early.py)


def hand_over(exc: BaseException) -> None:
    """A lean run stopped on ``exc`` after it listened: the CLI's funnel reports it (``handed_over``)."""
    global _failed
    _failed = exc


def handed_over() -> BaseException | None:
    """The error a lean run of this process stopped on, once (``wqtool serve`` raises it into the CLI's funnel,
    which prints it and exits with its code from the CLI's table instead of running the server again)."""
    global _failed
    exc, _failed = _failed, None
    return exc


def _servable(path: str, create: bool) -> bool:
    """A -cmdlog-path the server may start on: a directory it can list, or a missing one with --create."""
    try:
        os.listdir(path)
    except FileNotFoundError:
        return create                   # (without --create the CLI refuses it: nothing to bind for)
    except OSError:
        return False
    return True


def take(host: str | None, port: int, *, raw: bool = False):
    """The socket (a ``socket.socket``; with ``raw`` an ``_socket.socket``, without importing socket.py and its
    enums) ``early`` bound for (``host``, ``port``), handed over once (None: none, or for another address)."""
    global _held
    if _held is None:
        return None
    h, p, family, fd = _held
    _held = None
    if p != port or h != (host or ""):
        os.close(fd)
        return None
    if raw:
        return _socket.socket(family, _socket.SOCK_STREAM, 0, fd)
    import socket
    return socket.socket(family, socket.SOCK_STREAM, fileno=fd)
