from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from typer.exceptions import TyperException

from ..errors import UsageError
from ..render.findings import write_one_line
from ..render.outcome import Outcome


def _go_uint(value) -> int:
    """Go's flag.Uint: decimal, 0x hex, 0o / leading-0 octal, 0b binary."""
    if isinstance(value, int):
        return value
    s = str(value).strip()
    try:
        if len(s) > 1 and s[0] == "0" and s[1].isdigit():
            return int(s, 8)
        v = int(s, 0)
    except ValueError:
        raise typer.BadParameter(f"invalid value {value!r} for a uint flag") from None
    if v < 0:
        raise typer.BadParameter(f"invalid value {value!r} for a uint flag")
    return v


Uint = dict(parser=_go_uint, metavar="N")


class GoFlagError(TyperException):
    """An unknown single-dash flag, reported as workq-server's Go ``flag`` package does (exit 2)."""

    def __init__(self, flag: str, usage: str, command_path: str):
        super().__init__(f"flag provided but not defined: {flag}")
        self.flag, self.usage, self.command_path = flag, usage, command_path

    def show(self, file=None) -> None:
        out = file or sys.stderr
        out.write(f"flag provided but not defined: {self.flag}\n{self.usage}\n"
                  f"Try '{self.command_path} -h' for help.\n")
        out.flush()


class GoFlags:
    """serve's drop-in command line (a mixin for its click Command): workq-server's flags are Go ``flag``
    package flags, so an unknown one written with one dash (``-bogus``, ``-bogus=1``) gets upstream's message,
    ``flag provided but not defined: -bogus``, then the usage line and the help hint, exit 2 — where click would
    read ``-bogus`` as the short options ``-b -o ...``. Double-dash options keep click's message (with its
    suggestions)."""

    def parse_args(self, ctx, args):
        takes_value, known = set(), set()
        for p in self.params:
            names = [*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())]
            known.update(names)
            if not getattr(p, "is_flag", False) and getattr(p, "param_type_name", "") == "option":
                takes_value.update(names)
        known.update(ctx.help_option_names)
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--" or not a.startswith("-") or a == "-":
                break                                   # Go stops at the first non-flag argument
            name = a.split("=", 1)[0]
            if not a.startswith("--") and name not in known:
                raise GoFlagError(name, ctx.get_usage(), ctx.command_path)
            i += 2 if name in takes_value and "=" not in a else 1
        return super().parse_args(ctx, args)


#: default -listen of each server (by the option that selects it; none: the workq 0.2.0 server)
DEFAULT_LISTEN = {None: "127.0.0.1:9922", "--fastjournal": "127.0.0.1:4008", "--orth-admin": "127.0.0.1:8080"}


def _split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"-listen: expected HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _stop_on_signals():
    """A threading.Event set by SIGTERM / SIGINT (the blocking servers poll it)."""
    import signal
    import threading
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _serve_fastjournal(journal: str, listen: str, sync: str, segment_size: Optional[int]) -> None:
    from ..server.fastjournal import serve as run_fastjournal
    host, port = _split_listen(listen)
    kw = {} if segment_size is None else {"segment_size": segment_size}

    def ready(p: int) -> None:
        print(f"Listening on {host}:{p}", flush=True)
        print(f"fastjournal: serving {journal} (sync={sync}; per the unimplemented libfastjournal design)",
              file=sys.stderr, flush=True)
    run_fastjournal(journal, host, port, sync=sync, ready=ready, **kw)
    print("fastjournal: stopped", file=sys.stderr, flush=True)


def _serve_orth_admin(store: str, listen: str, token: Optional[str], context_path: str, timezone: str) -> None:
    from ..server.orth_admin import serve_orth_admin
    host, port = _split_listen(listen)
    prefix = "/" + context_path.strip("/") if context_path.strip("/") else ""

    def ready(addr: tuple) -> None:
        print(f"Listening on {host}:{addr[1]}", flush=True)
        print(f"orth-admin: storing callbacks in {store}: POST http://{host}:{addr[1]}{prefix}/api/callback "
              f"({'any token' if token is None else 'token required'})", file=sys.stderr, flush=True)
    stop = _stop_on_signals()
    serve_orth_admin(host, port, store=store, token=token, timezone=timezone, context_path=context_path,
                     log=lambda m: print(f"orth-admin: {m}", file=sys.stderr, flush=True), ready=ready, stop=stop)
    print("orth-admin: stopped", file=sys.stderr, flush=True)


def serve(
    listen: Annotated[Optional[str], typer.Option("-listen", "--listen", metavar="HOST:PORT",
                                                  help="Listen on HOST:PORT (port 0: any free port; the Listening "
                                                       "line says which). Default 127.0.0.1:9922; "
                                                       "--fastjournal 127.0.0.1:4008; --orth-admin "
                                                       "127.0.0.1:8080.")] = None,
    cmdlog_path: Annotated[str, typer.Option("-cmdlog-path", "--cmdlog-path", metavar="DIR",
                                             help="Command log directory: an existing one, as workq-server "
                                                  "requires (a missing one: exit 2, nothing created; --create "
                                                  "makes it); empty: in memory only, as workq-server.")] = "",
    create: Annotated[bool, typer.Option("--create", help="Make a missing -cmdlog-path directory (workq-server "
                                                          "refuses one).")] = False,
    seg_size: Annotated[int, typer.Option("-cmdlog-seg-size", "--cmdlog-seg-size", help="Minimum segment size "
                                          "in bytes before a new segment starts.", **Uint)] = 67108864,
    sync: Annotated[str, typer.Option("-cmdlog-sync", "--cmdlog-sync", metavar="interval|os|always",
                                      help="Disk sync policy: fsync every -cmdlog-sync-int ms, never, or before "
                                           "every reply that depends on a new record.")] = "interval",
    sync_int: Annotated[int, typer.Option("-cmdlog-sync-int", "--cmdlog-sync-int", help="Sync interval in ms "
                                          "(interval policy; ignored by os and always).", **Uint)] = 1000,
    sync_rolled: Annotated[bool, typer.Option("--sync-rolled", help="Sync segments left by roll-overs too: "
                                              "interval syncs them at the next tick (one syncfs), os in the "
                                              "background. workq-server leaves them to the kernel's "
                                              "writeback.")] = False,
    clean_int: Annotated[int, typer.Option("-cmdlog-clean-int", "--cmdlog-clean-int", help="Cleaning interval "
                                           "in ms (0: never clean).", **Uint)] = 300000,
    max_connections: Annotated[int, typer.Option("--max-connections", min=1, metavar="N",
                                                 help="Clients connected at once; more are closed at accept.")]
    = 10000,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", min=0, metavar="SECONDS",
                                                help="Close a client idle this long (never one waiting in "
                                                     "lease/run/result); 0: never, as workq-server.")] = 0.0,
    request_timeout: Annotated[float, typer.Option("--request-timeout", min=0, metavar="SECONDS",
                                                   help="Close a client whose started request is not complete "
                                                        "after this long (slow clients); 0: never.")] = 60.0,
    metrics: Annotated[Optional[str], typer.Option("--metrics", metavar="[HOST:]PORT",
                                                   help="Serve Prometheus text metrics on this port (host "
                                                        "default 127.0.0.1).")] = None,
    log_level: Annotated[str, typer.Option("--log-level", metavar="debug|info|warning|error",
                                           help="Structured log lines (logfmt) on stderr.")] = "info",
    fastjournal: Annotated[Optional[str], typer.Option("--fastjournal", metavar="DIR", rich_help_panel="Other "
                                                       "servers", help="Serve the priority FIFO of the "
                                                       "libfastjournal design (FJ/JR messages), journaled in DIR "
                                                       "(created if missing) instead of a workq server.")] = None,
    journal_sync: Annotated[Optional[str], typer.Option("--journal-sync", metavar="full|write",
                                                        rich_help_panel="Other servers",
                                                        help="--fastjournal: fsync each batch before its replies "
                                                             "(full, default) or write() only (survives kill -9, "
                                                             "not a power cut).")] = None,
    segment_size: Annotated[Optional[int], typer.Option("--segment-size", min=4096, max=1 << 40, metavar="BYTES",
                                                        rich_help_panel="Other servers",
                                                        help="--fastjournal: start a new journal segment past "
                                                             "this size.")] = None,
    orth_admin: Annotated[Optional[str], typer.Option("--orth-admin", metavar="STORE", rich_help_panel="Other "
                                                      "servers", help="Serve an Orth admin's callback receiver "
                                                      "(POST /api/callback, /api/registry) storing into STORE: a "
                                                      "SQLite file (created if missing) or mysql://USER:PASS@HOST/DB"
                                                      ".")] = None,
    access_token: Annotated[Optional[str], typer.Option("--access-token", metavar="TOKEN", envvar=
                                                        "ORTH_ACCESS_TOKEN", rich_help_panel="Other servers",
                                                        help="--orth-admin: the ORTH-ACCESS-TOKEN clients must "
                                                             "send (default default_token, as the admin's; empty: "
                                                             "any).")] = None,
    context_path: Annotated[Optional[str], typer.Option("--context-path", metavar="PATH",
                                                        rich_help_panel="Other servers",
                                                        help="--orth-admin: the admin's context path, e.g. "
                                                             "/orth-admin.")] = None,
    timezone: Annotated[Optional[str], typer.Option("--timezone", metavar="ZONE", rich_help_panel="Other servers",
                                                    help="--orth-admin: the zone the table's datetimes are "
                                                         "written in (default UTC).")] = None,
) -> Outcome | None:
    """Run a workq 0.2.0 server: the same protocol, flags and command log, on wqtool's engine.

    Clients of workq-server work unchanged (byte-identical replies, errors and limits) and the log it writes is
    the one workq-server writes. With -cmdlog-path the log is replayed at start-up (a log workq-server would
    refuse is refused, with the finding; exit code as verify); -cmdlog-sync always answers a command only after
    its record is fsynced. SIGTERM or SIGINT: stop accepting, write and fsync what is pending, release the locks,
    exit 0. Differences from workq-server (fixed upstream bugs) are listed in docs/serve.md. An unknown flag written
    with one dash is refused as workq-server refuses it: "flag provided but not defined: -NAME", exit 2.

    Two other servers share the command: --fastjournal DIR serves the priority FIFO of the libfastjournal design
    (per that unimplemented design; its journal reads as --format fastjournal), and --orth-admin STORE receives
    an Orth executor's callbacks with the admin's update rules (what `replay --send` posts to). Each prints the
    same Listening line on stdout and stops the same way.

    wqtool-serve ARGS..., installed beside wqtool, is `wqtool serve ARGS...` with the port bound before Python
    starts (a workq-server binary's drop-in: clients connecting during the start wait instead of being refused).

    Example:

    \b
      wqtool serve -listen 127.0.0.1:9922 -cmdlog-path /var/lib/workq
      wqtool serve --cmdlog-path /var/lib/workq --cmdlog-sync always --metrics 9100
      wqtool serve -listen 127.0.0.1:0        # in memory, on any free port
      wqtool serve --fastjournal /var/lib/fastjournal -listen 127.0.0.1:4008
      wqtool serve --orth-admin orth_job.db --context-path /orth-admin --access-token TOKEN
      wqtool-serve -listen localhost:9944 -cmdlog-path /var/lib/workq
    """
    from ..server.prebind import handed_over
    failed = handed_over()
    if failed is not None:      # the lean start served and stopped on this error: reported here, with its code
        raise failed
    mode_opts = {"--journal-sync": journal_sync, "--segment-size": segment_size,
                 "--access-token": access_token, "--context-path": context_path, "--timezone": timezone}
    if fastjournal is not None and orth_admin is not None:
        raise UsageError("--fastjournal and --orth-admin: choose one server")
    if fastjournal is not None or orth_admin is not None:
        mode = "--fastjournal" if fastjournal is not None else "--orth-admin"
        if cmdlog_path or create:
            raise UsageError(f"-cmdlog-path and --create are a workq server's; {mode} takes its own store")
        own = ("--journal-sync", "--segment-size") if fastjournal is not None else \
              ("--access-token", "--context-path", "--timezone")
        stray = [k for k, v in mode_opts.items() if v is not None and k not in own]
        if stray:
            raise UsageError(f"{', '.join(stray)}: not an option of {mode}")
        where = listen or DEFAULT_LISTEN[mode]
        if fastjournal is not None:
            if (journal_sync or "full") not in ("full", "write"):
                raise UsageError(f"--journal-sync: expected full or write, got {journal_sync!r}")
            return _serve_fastjournal(fastjournal, where, journal_sync or "full", segment_size)
        token = "default_token" if access_token is None else (access_token or None)
        return _serve_orth_admin(orth_admin, where, token, context_path or "", timezone or "UTC")
    stray = [k for k, v in mode_opts.items() if v is not None and k != "--access-token"]
    if stray:
        raise UsageError(f"{', '.join(stray)}: only with --fastjournal or --orth-admin")
    listen = listen or DEFAULT_LISTEN[None]
    from ..server.workq import ServeOptions, StartRefused, serve as run_server
    if log_level not in ("debug", "info", "warning", "error"):
        raise UsageError(f"--log-level: expected debug, info, warning or error, got {log_level!r}")
    opts = ServeOptions(listen=listen, cmdlog_path=cmdlog_path, seg_size=seg_size, sync=sync,
                        sync_int_ms=sync_int, clean_int_ms=clean_int, max_connections=max_connections,
                        idle_timeout_s=idle_timeout, request_timeout_s=request_timeout, metrics=metrics,
                        log_level=log_level, create=create, sync_rolled=sync_rolled)
    try:
        run_server(opts)        # a clean stop (SIGTERM / SIGINT): nothing to say, exit 0
        return None
    except StartRefused as e:
        write_one_line(sys.stderr, e.finding)
        print(f"wqtool: refusing to serve {cmdlog_path}: workq-server would not start on it either (see "
              f"`wqtool verify {cmdlog_path}`; `wqtool repair {cmdlog_path}` plans a fix)", file=sys.stderr)
        return Outcome.of([e.verdict])


#: click Command mixins cli.py applies to this command
serve.command_mixins = (GoFlags,)
