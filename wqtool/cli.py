"""The typer app: root callback, command table, and typer's side of the CLI's one funnel (``typer_outcome``: typer's
own exceptions; the rest — a command's returned outcome, every other exception — is ``wqtool._run.settle``, which
the table-parsed commands use too)."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

from collections.abc import MutableMapping

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup
from typer.exceptions import TyperException

from . import __version__
from ._entry import finish
from ._run import Interrupted as _Interrupted, settle
from .commands import _coerce
from .exitcodes import PARSER_USAGE, ExitCode, exit_code_for  # noqa: F401 — exit_code_for: the one mapping, re-exported

#: The commands, in the order help lists them; each one's module (wqtool.commands.<name>) is imported only when
#: that command runs or help lists them (start-up: issue 20 item 9).
COMMANDS = ("dump", "verify", "replay", "stats", "diff", "report", "pack", "repair", "clean", "serve", "schema")


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
        raise typer.Exit()


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
    from .commands import _options
    module = importlib.import_module(f"wqtool.commands.{name}")
    _options.settle_declarations(module)      # imported by wqtool._run.plain before typer ran: the real ones now
    fn = getattr(module, name)
    from .commands._help import fill
    fn.__doc__ = fill(fn.__doc__)
    cls = type(f"{name.title()}Command", (*getattr(fn, "command_mixins", ()), Command), {})
    return get_command_from_info(CommandInfo(name=name, cls=cls, callback=fn), pretty_exceptions_short=True,
                                 rich_markup_mode=None)


def main(argv: list[str] | None = None) -> None:
    finish(run(argv))


def _take_traceback(args: list[str]) -> tuple[list[str], bool]:
    """--traceback anywhere before a ``--`` (before or after the command) — taken out of the arguments."""
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != "--traceback"]
    return head + args[end:], len(head) != end


def _clean(message: str) -> str:
    """A parser message in plain words (no validation library's "Value error, " prefix)."""
    return message.replace("Value error, ", "")


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and map every outcome to an exit code once (commands never call sys.exit; they return an
    outcome): typer's own exceptions here (``typer_outcome``), the rest in ``wqtool._run.settle``."""
    args, show_tb = _take_traceback(sys.argv[1:] if argv is None else list(argv))
    if show_tb:
        args = ["--traceback", *args]
    return settle(lambda: _app(args), show_tb)


def _app(args: list[str]):
    """typer's app: what the command returned (its outcome), or the parser's own exit (click returns the code of
    its ``Exit`` — ``--help`` — when not standalone), raised again for ``typer_outcome``."""
    rv = app(args=args, prog_name="wqtool", standalone_mode=False)
    if type(rv) is int:
        raise typer.Exit(rv)
    return rv


def typer_outcome(e: BaseException) -> int | None:
    """The exit code of typer's own exceptions (an explicit exit, an abort, a usage error, after printing it), or
    None for any other."""
    if isinstance(e, typer.Exit):
        return e.exit_code
    if isinstance(e, typer.Abort):
        print("wqtool: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    if isinstance(e, TyperException):  # usage errors from the option parser
        if hasattr(e, "message") and isinstance(e.message, str):
            e.message = _clean(e.message)
        if hasattr(e, "show"):
            e.show()
        else:
            print(f"wqtool: {_clean(e.format_message())}", file=sys.stderr)
        return ExitCode.USAGE if getattr(e, "exit_code", ExitCode.USAGE) in PARSER_USAGE else e.exit_code
    return None
