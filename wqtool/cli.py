"""The typer app: root callback, command table, and the one exception → exit-code funnel."""
from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer
from typer.exceptions import TyperException

from . import __version__
from .commands.clean import clean
from .commands.dump import dump
from .commands.pack import pack
from .commands.repair import repair
from .commands.replay import replay
from .commands.serve import serve
from .commands.stats import stats
from .commands.verify import verify
from .engine.findings import Verdict
from .errors import FormatError, InputError, PackMismatch, PackRefused, SparkError, UsageError, WqError
from .exitcodes import ExitCode, for_verdict

app = typer.Typer(
    name="wqtool",
    help="Inspect, verify, replay and compact job-queue logs (workq 0.2.0 command logs, Kestrel journals, Snap! "
         "list journals, prinbee EVTJ journals, and the fastjournal journal — per the unimplemented libfastjournal "
         "design).",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


def _version(value: bool) -> None:
    if value:
        print(f"wqtool {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
    traceback: Annotated[bool, typer.Option("--traceback", help="On an internal error, print the Python "
                                            "traceback.")] = False,
) -> None:
    """wqtool: dump, verify and replay job-queue logs. Exit codes are documented in `wqtool verify --help`."""


app.command("dump")(dump)
app.command("verify")(verify)
app.command("replay")(replay)
app.command("stats")(stats)
app.command("pack")(pack)
app.command("repair")(repair)
app.command("clean")(clean)
app.command("serve")(serve)


#: Error classes to exit codes (the first class in an error's MRO that is listed wins).
_ERROR_EXIT = {
    UsageError: ExitCode.USAGE,
    InputError: ExitCode.IO,
    PackMismatch: ExitCode.INTERNAL,
    FormatError: ExitCode.CORRUPT,
    WqError: ExitCode.CORRUPT,
}


def _class_exit(cls: type) -> ExitCode:
    for c in cls.__mro__:
        if c in _ERROR_EXIT:
            return _ERROR_EXIT[c]
    if issubclass(cls, OSError):
        return ExitCode.IO
    return ExitCode.INTERNAL


def exit_code_for(exc: BaseException) -> ExitCode:
    """The one mapping of an error to an exit code: wqtool errors by class (a refused pack by its input's
    verdict; a failed Spark job by the class of its task's error, 5 when it has none), OSError 5, anything else
    a bug (70)."""
    if isinstance(exc, PackRefused):
        return for_verdict(exc.verdict)
    if isinstance(exc, SparkError):
        return ExitCode.IO if exc.cause is None or issubclass(exc.cause, SparkError) else _class_exit(exc.cause)
    return _class_exit(type(exc))


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and map every outcome to an exit code once (commands never call sys.exit)."""
    args = sys.argv[1:] if argv is None else list(argv)
    show_tb = "--traceback" in args
    try:
        rv = app(args=args, prog_name="wqtool", standalone_mode=False)
        code = for_verdict(rv) if isinstance(rv, Verdict) else int(rv) if isinstance(rv, int) else 0
    except typer.Exit as e:
        code = e.exit_code
    except typer.Abort:
        print("wqtool: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except TyperException as e:  # usage errors from the option parser
        if hasattr(e, "show"):
            e.show()
        else:
            print(f"wqtool: {e.format_message()}", file=sys.stderr)
        code = ExitCode.USAGE if getattr(e, "exit_code", 2) in (1, 2) else e.exit_code
    except WqError as e:
        if show_tb:
            import traceback
            traceback.print_exc()
        print(f"wqtool: {e}", file=sys.stderr)
        code = exit_code_for(e)
    except BrokenPipeError:
        # the reader of our stdout went away (| head): quiet exit, no traceback from the final flush
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = ExitCode.OK
    except KeyboardInterrupt:
        print("wqtool: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except OSError as e:
        if show_tb:
            import traceback
            traceback.print_exc()
        where = f"{e.filename}: " if e.filename else ""
        print(f"wqtool: {where}{e.strerror or e}", file=sys.stderr)
        code = ExitCode.IO
    except Exception as e:  # noqa: BLE001 — the funnel: anything else is a bug
        if show_tb:
            import traceback
            traceback.print_exc()
        print(f"wqtool: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)",
              file=sys.stderr)
        code = ExitCode.INTERNAL
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return int(code)
