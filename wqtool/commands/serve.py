from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..render.findings import write_one_line


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


def serve(
    listen: Annotated[str, typer.Option("-listen", "--listen", metavar="HOST:PORT",
                                        help="Listen on HOST:PORT (port 0: any free port; the Listening line "
                                             "says which).")] = "127.0.0.1:9922",
    cmdlog_path: Annotated[str, typer.Option("-cmdlog-path", "--cmdlog-path", metavar="DIR",
                                             help="Command log directory (created if missing); empty: in "
                                                  "memory only, as workq-server.")] = "",
    seg_size: Annotated[int, typer.Option("-cmdlog-seg-size", "--cmdlog-seg-size", help="Minimum segment size "
                                          "in bytes before a new segment starts.", **Uint)] = 67108864,
    sync: Annotated[str, typer.Option("-cmdlog-sync", "--cmdlog-sync", metavar="interval|os|always",
                                      help="Disk sync policy: fsync every -cmdlog-sync-int ms, never, or before "
                                           "every reply that depends on a new record.")] = "interval",
    sync_int: Annotated[int, typer.Option("-cmdlog-sync-int", "--cmdlog-sync-int", help="Sync interval in ms "
                                          "(interval policy; ignored by os and always).", **Uint)] = 1000,
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
) -> int:
    """Run a workq 0.2.0 server: the same protocol, flags and command log, on wqtool's engine.

    Clients of workq-server work unchanged (byte-identical replies, errors and limits) and the log it writes is
    the one workq-server writes. With -cmdlog-path the log is replayed at start-up (a log workq-server would
    refuse is refused, with the finding; exit code as verify); -cmdlog-sync always answers a command only after
    its record is fsynced. SIGTERM or SIGINT: stop accepting, write and fsync what is pending, release the locks,
    exit 0. Differences from workq-server (fixed upstream bugs) are listed in the README.

    Example:

    \b
      wqtool serve -listen 127.0.0.1:9922 -cmdlog-path /var/lib/workq
      wqtool serve --cmdlog-path /var/lib/workq --cmdlog-sync always --metrics 9100
      wqtool serve -listen 127.0.0.1:0        # in memory, on any free port
    """
    from ..server.workq import ServeOptions, StartRefused, serve as run_server
    if log_level not in ("debug", "info", "warning", "error"):
        raise UsageError(f"--log-level: expected debug, info, warning or error, got {log_level!r}")
    opts = ServeOptions(listen=listen, cmdlog_path=cmdlog_path, seg_size=seg_size, sync=sync,
                        sync_int_ms=sync_int, clean_int_ms=clean_int, max_connections=max_connections,
                        idle_timeout_s=idle_timeout, request_timeout_s=request_timeout, metrics=metrics,
                        log_level=log_level)
    try:
        return run_server(opts)
    except StartRefused as e:
        write_one_line(sys.stderr, e.finding)
        print(f"wqtool: refusing to serve {cmdlog_path}: workq-server would not start on it either (see "
              f"`wqtool verify {cmdlog_path}`; `wqtool repair {cmdlog_path}` plans a fix)", file=sys.stderr)
        return e.verdict
