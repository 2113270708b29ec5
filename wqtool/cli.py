"""The typer app: root callback, command table, and the one exception → exit-code funnel."""
from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

from collections.abc import MutableMapping

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup
from typer.exceptions import TyperException

from . import __version__
from ._entry import interrupted
from .commands import _coerce
from .commands._edge import handing
from .engine.findings import Verdict
from .errors import WqError
from .exitcodes import CODES, ExitCode, exit_code_for, for_verdict
from .render.outcome import error_text

#: The commands, in the order help lists them; each one's module (wqtool.commands.<name>) is imported only when
#: that command runs or help lists them (start-up: issue 20 item 9).
COMMANDS = ("dump", "verify", "replay", "stats", "report", "pack", "repair", "clean", "serve")


class _LazyCommands(MutableMapping):
    """The group's command table: names known at once, each command built from its module on first use."""

    def __init__(self, build):
        self._build, self._done = build, {}

    def __getitem__(self, name):
        if name not in self._done:
            if name not in COMMANDS:
                raise KeyError(name)
            self._done[name] = self._build(name)
        return self._done[name]

    def __setitem__(self, name, cmd):
        self._done[name] = cmd

    def __delitem__(self, name):
        del self._done[name]

    def __iter__(self):
        return iter(dict.fromkeys([*COMMANDS, *self._done]))

    def __len__(self):
        return len(dict.fromkeys([*COMMANDS, *self._done]))

    def __contains__(self, name):
        return name in COMMANDS or name in self._done


class _Interrupted(BaseException):
    """Ctrl-C inside the parser or a command, carried past typer (which turns a KeyboardInterrupt there into a
    silent exit code 130) to ``run``, which says "interrupted" for every Ctrl-C."""


class Group(TyperGroup):
    """The root group: its commands come from ``_LazyCommands``; a Ctrl-C in the parser or a command is carried
    past typer as ``_Interrupted``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(_build_command)

    def parse_args(self, ctx, args):
        _coerce.install(self.get_params(ctx))       # option values without pydantic (start-up)
        return super().parse_args(ctx, args)

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as e:
            raise _Interrupted from e

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise _Interrupted from e


app = typer.Typer(
    name="wqtool",
    cls=Group,
    help="Inspect, verify, replay, repair, clean and serve job-queue logs (workq 0.2.0 command logs, Kestrel "
         "journals, Orth / XXL-JOB executor files and job-log tables, Snap! "
         "list journals, prinbee EVTJ journals, and the fastjournal journal — per the unimplemented libfastjournal "
         "design).",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


class Command(TyperCommand):
    """A subcommand whose arguments read as ``PATH...`` in the usage line and in help (not ``{PATH}...`` /
    ``PATH <list[str]>``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if isinstance(p, TyperArgument):
                shown = (p.metavar or p.name.upper()) + ("..." if p.nargs != 1 else "")
                p._usage_display_name = lambda shown=shown, req=p.required: shown if req else f"[{shown}]"
                p._rich_display_name = lambda shown=shown: shown
                p.display_type_rich = lambda ctx: None

    def parse_args(self, ctx, args):
        _coerce.install(self.get_params(ctx))       # option values without pydantic (start-up)
        return super().parse_args(ctx, args)


def _version(value: bool) -> None:
    if value:
        print(f"wqtool {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[Optional[bool], typer.Option("--version", "-V", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
    traceback: Annotated[bool, typer.Option("--traceback", help="On an internal error, print the Python "
                                            "traceback (also accepted after the command).")] = False,
) -> None:
    """wqtool: dump, verify and replay job-queue logs. Exit codes are documented in `wqtool verify --help`."""


def _build_command(name: str):
    """The click command of ``name``, built from ``wqtool.commands.<name>.<name>`` (a command's own parsing rules,
    e.g. serve's Go flag errors, come as mixins it declares)."""
    import importlib
    from typer.main import get_command_from_info
    from typer.models import CommandInfo
    fn = getattr(importlib.import_module(f"wqtool.commands.{name}"), name)
    cls = type(f"{name.title()}Command", (*getattr(fn, "command_mixins", ()), Command), {})
    return get_command_from_info(CommandInfo(name=name, cls=cls, callback=fn), pretty_exceptions_short=True,
                                 rich_markup_mode=None)


def main(argv: list[str] | None = None) -> None:
    code = run(argv)
    if code == ExitCode.INTERRUPTED:
        # Exit 130 for certain: CPython 3.11 ends a process with SIGINT (status -2) after a Ctrl-C that landed in
        # code run by exec() of a string (a dataclass being made at import: pythonrun.c run_eval_code_obj sets
        # _Py_UnhandledKeyboardInterrupt), although the funnel handled it. Nothing of wqtool runs at exit.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(int(code))
    sys.exit(code)


def _take_traceback(args: list[str]) -> tuple[list[str], bool]:
    """--traceback anywhere before a ``--`` (before or after the command) — taken out of the arguments."""
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != "--traceback"]
    return head + args[end:], len(head) != end


def _quiet_stdout() -> None:
    """The reader of stdout went away: point stdout at /dev/null so nothing (not even the interpreter's final
    flush) writes to the dead pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _clean(message: str) -> str:
    """A parser message in plain words (no validation library's "Value error, " prefix)."""
    return message.replace("Value error, ", "")


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and map every outcome to an exit code once (commands never call sys.exit)."""
    try:
        return _run(argv)
    finally:
        if "wqtool.render.quiet" in sys.modules:    # -q/--quiet: the real stdout back once the command is done
            sys.modules["wqtool.render.quiet"].restore()


def _run(argv: list[str] | None) -> int:
    args, show_tb = _take_traceback(sys.argv[1:] if argv is None else list(argv))
    if show_tb:
        args = ["--traceback", *args]
    try:
        with handing(CODES):        # the commands' exit codes (they hand them on to what prints one)
            rv = app(args=args, prog_name="wqtool", standalone_mode=False)
        code = for_verdict(rv) if isinstance(rv, Verdict) else int(rv) if isinstance(rv, int) else 0
    except typer.Exit as e:
        code = e.exit_code
    except SystemExit as e:   # the option parser's own exit: on a closed pipe it exits 1 (click), we say 141
        if isinstance(e.__context__, BrokenPipeError):
            _quiet_stdout()
            code = ExitCode.CLOSED_PIPE
        else:
            code = e.code if isinstance(e.code, int) else ExitCode.INTERNAL
    except typer.Abort:
        print("wqtool: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except TyperException as e:  # usage errors from the option parser
        if hasattr(e, "message") and isinstance(e.message, str):
            e.message = _clean(e.message)
        if hasattr(e, "show"):
            e.show()
        else:
            print(f"wqtool: {_clean(e.format_message())}", file=sys.stderr)
        code = ExitCode.USAGE if getattr(e, "exit_code", 2) in (1, 2) else e.exit_code
    except WqError as e:
        if show_tb:
            import traceback
            traceback.print_exc()
        print(f"wqtool: {e}", file=sys.stderr)
        code = exit_code_for(e)
    except BrokenPipeError:
        # the reader of our stdout went away (| head): stop at once, silently, as a tool killed by SIGPIPE
        _quiet_stdout()
        code = ExitCode.CLOSED_PIPE
    except (KeyboardInterrupt, _Interrupted):
        print("wqtool: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except OSError as e:
        if show_tb:
            import traceback
            traceback.print_exc()
        print(f"wqtool: {error_text(e)}", file=sys.stderr)
        code = ExitCode.IO
    except Exception as e:  # noqa: BLE001 — the funnel: anything else is a bug
        if interrupted(e):    # Ctrl-C wrapped by Python (3.11: __set_name__ of a class being made at import)
            print("wqtool: interrupted", file=sys.stderr)
            return int(ExitCode.INTERRUPTED)
        if show_tb:
            import traceback
            traceback.print_exc()
        print(f"wqtool: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)",
              file=sys.stderr)
        code = ExitCode.INTERNAL
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        code = ExitCode.CLOSED_PIPE
    return int(code)
