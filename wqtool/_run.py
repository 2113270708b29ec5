"""Running a command line: the hot commands without typer (``plain``), and the one exception → exit-code funnel
(``settle``) that both ways end in (``wqtool.cli`` runs typer's app through it).

Start-up (issue 20 item 9): typer costs a small ``verify`` about as much as everything else it does. The hot
commands' options are parsed here with ``wqtool._argv_table``, a table generated from the typer app itself
(``scripts/gen_argv_table.py``: names, kinds, defaults as typer gives them, each option's own ``parser=``,
callbacks) — not a second option list. Anything the table does not cover (``--help``, ``--``, bundled short
options, ``--opt=`` of a flag, an unknown option, a value an option's parser refuses, no PATH, an eager option
such as ``--explain``, ``--traceback``) goes to typer, which then does all of it, so every message and exit code
is typer's own. tests/test_argv_table.py runs every golden command line both ways."""
from __future__ import annotations

import os
import sys
import types

from ._entry import interrupted


# ---------------------------------------------------------------- a plain command line, without typer
class _NotPlain(Exception):
    """The command line is not one the table covers: typer parses it."""


def plain(argv: list[str], *, exiting: bool = False) -> int | None:
    """Run ``wqtool argv`` without typer when it is a plain command line of a hot command (its exit code), else
    None (nothing was run, nothing was printed: typer takes it). ``exiting``: the process ends right after (the
    console script), so typer may stay deferred."""
    if not argv or argv[0] not in _HOT:
        return None
    from ._argv_table import COMMANDS
    spec = COMMANDS[argv[0]]
    try:
        given, order = _parse(spec, argv[1:])
        _defer_typer()
        values = _values(spec, given)
    except Exception as e:      # noqa: BLE001 — not plain, or an option's parser refused its value: typer parses
        if interrupted(e):      # a Ctrl-C that Python wrapped while importing: main says "interrupted"
            raise
        undefer_typer()
        return None
    try:
        return settle(lambda: _call(spec, values, order))
    finally:
        if not exiting:
            undefer_typer()


_HOT = frozenset(("verify", "dump", "replay", "stats", "diff"))   # the table's commands (tests/test_argv_table.py)


def _parse(spec: dict, args: list[str]) -> tuple[dict, list[str]]:
    """Options and PATHs as click's parser reads them: ``--name VALUE``, ``--name=VALUE``, ``-n VALUE``, flags,
    options between PATHs; the given values by parameter, and the order they were first given in."""
    options, params = spec["options"], spec["params"]
    given: dict[str, list[str] | str | bool] = {}
    order: list[str] = []
    paths: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("-") or tok == "-":
            if tok == "-":
                raise _NotPlain
            paths.append(tok)
            continue
        name, eq, value = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        if tok == "--" or (not tok.startswith("--") and len(tok) != 2) or name not in options:
            raise _NotPlain
        p = options[name]
        entry = params[p]
        if entry["eager"] or entry["convert"] is None:
            raise _NotPlain
        if entry["kind"] == "flag":
            if eq:
                raise _NotPlain
            value = entry["flag_value"]
        elif not eq:
            if i >= len(args):
                raise _NotPlain
            value, i = args[i], i + 1
        if entry["kind"] == "multiple":
            given.setdefault(p, []).append(value)
        elif p in given:
            raise _NotPlain          # an option given twice: typer's rule
        else:
            given[p] = value
        if p not in order:
            order.append(p)
    arg = next(n for n in spec["order"] if params[n]["kind"] == "argument")
    if not paths:
        raise _NotPlain
    given[arg] = paths
    order.insert(0, arg)     # click's invocation order holds the PATHs too; they have no callback
    return given, order


def _values(spec: dict, given: dict) -> dict:
    """Every parameter's value as typer passes it: a given one converted (an Enum's member, the option's own
    ``parser=``), an absent one its default."""
    out = {}
    for name in spec["order"]:
        entry = spec["params"][name]
        if name not in given:
            out[name] = _data(entry["default"])
        elif entry["kind"] in ("multiple", "argument"):
            out[name] = [_convert(entry["convert"], v) for v in given[name]]
        elif entry["kind"] == "flag":
            out[name] = _data(given[name])
        else:
            out[name] = _convert(entry["convert"], given[name])
    return out


def _data(v):
    if isinstance(v, list) and v[:1] == ["enum"]:
        return _name(v[1], v[2])[v[3]]
    return list(v) if isinstance(v, list) else v


def _name(module: str, qualname: str):
    import importlib
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _convert(how, value: str):
    if how == "str":
        return value
    kind = how[0]
    if kind == "choice":
        _, module, qualname, case_sensitive, members = how
        key = value if case_sensitive else value.casefold()
        if key not in members:
            raise _NotPlain
        return _name(module, qualname)[members[key]]
    if kind == "call":
        return _name(how[1], how[2])(value)
    if kind == "make":
        return _name(how[1], how[2])(*how[3])(value)
    raise _NotPlain


def _call(spec: dict, values: dict, order: list[str]):
    """The command's callbacks in click's order (eager ones, then those given in the order given, then the
    rest), then the command."""
    params = spec["params"]
    fn = _name(spec["module"], spec["function"])
    ranked = sorted(spec["order"], key=lambda n: (not params[n]["eager"], order.index(n) if n in order else 1 << 30))
    for name in ranked:
        cb = params[name]["callback"]
        if cb is not None:
            values[name] = _name(*cb)(values[name])
    if spec["context"] is not None:
        values[spec["context"]] = None        # a PATH is given: the context is never asked for (read_paths)
    return fn(**values)


def _defer_typer() -> None:
    """``import typer`` in the command modules gets typer as a module run on first use — the first read of an
    attribute it does not have yet (``typer.BadParameter`` raised by an option's parser refusing a value): until
    then typer costs nothing. importlib's LazyLoader does not do: on 3.11 the next ``import typer`` statement reads
    the module's ``__spec__``, which runs it.

    Nothing may import a submodule of typer while it is deferred (typer's submodules need the package run first,
    and the import system would import the submodule a second time after running it): ``plain`` runs typer
    (``undefer_typer``) before it hands a command line to typer, and after a command unless the process exits."""
    if "typer" in sys.modules:
        return
    import importlib.util
    spec = importlib.util.find_spec("typer")
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__dict__["_deferred_path"] = module.__dict__.pop("__path__", None)   # no submodule import meanwhile
    module.__class__ = _Deferred
    sys.modules["typer"] = module


class _Deferred(types.ModuleType):
    """A module whose code runs, in place, on the first read of an attribute it does not have yet."""

    def __getattr__(self, attr: str):
        self._run()
        return getattr(self, attr)

    def _run(self) -> None:
        self.__class__ = types.ModuleType
        path = self.__dict__.pop("_deferred_path", None)
        if path is not None:
            self.__path__ = path
        self.__spec__.loader.exec_module(self)


def undefer_typer() -> None:
    """Run typer now if ``_defer_typer`` deferred it and nothing has run it yet."""
    module = sys.modules.get("typer")
    if type(module) is _Deferred:
        module._run()


# ---------------------------------------------------------------- the one exception → exit-code funnel
class Interrupted(BaseException):
    """Ctrl-C inside the parser or a command, carried past typer (which turns a KeyboardInterrupt there into a
    silent exit code 130) to the funnel, which says "interrupted" for every Ctrl-C."""


def settle(call, show_tb: bool = False, *, prog: str = "wqtool") -> int:
    """Run ``call`` (typer's app, or a command called by ``plain``, or a server's run) and map every outcome to an
    exit code once (commands never call sys.exit): what the command returned (an ``Outcome``: its verdicts and
    failed PATHs, and the output that shows their codes — ``exitcodes.settle`` resolves them and has it written),
    or the exception it raised; the real stdout back afterwards if -q silenced it. ``prog``: the name error lines
    start with."""
    try:
        try:
            from .exitcodes import settle as resolve_outcome
            code = resolve_outcome(call())
        except BaseException as e:   # noqa: BLE001 — the funnel (what it does not map, it raises again)
            code = _outcome(e, show_tb, prog)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()
            code = _exit_code("CLOSED_PIPE")
        return int(code)
    finally:
        if "wqtool.render.quiet" in sys.modules:    # -q/--quiet: the real stdout back once the command is done
            sys.modules["wqtool.render.quiet"].restore()


def _exit_code(name: str) -> int:
    from .exitcodes import ExitCode
    return ExitCode[name]


def _outcome(e: BaseException, show_tb: bool, prog: str = "wqtool") -> int:
    if any(c.__module__.partition(".")[0] == "typer" for c in type(e).__mro__):
        from .cli import typer_outcome      # typer's own exceptions: typer ran, so importing the CLI is free
        code = typer_outcome(e)
        if code is not None:
            return code
    from .errors import WqError
    from .exitcodes import exit_code_for
    from .render.outcome import error_text
    if isinstance(e, SystemExit):   # the option parser's own exit: on a closed pipe it exits 1 (click), we say 141
        if isinstance(e.__context__, BrokenPipeError):
            _quiet_stdout()
            return _exit_code("CLOSED_PIPE")
        return e.code if isinstance(e.code, int) else _exit_code("INTERNAL")
    if isinstance(e, WqError):
        if show_tb:
            import traceback
            traceback.print_exception(e)
        print(f"{prog}: {e}", file=sys.stderr)
        return exit_code_for(e)
    if isinstance(e, BrokenPipeError):
        # the reader of our stdout went away (| head): stop at once, silently, as a tool killed by SIGPIPE
        _quiet_stdout()
        return _exit_code("CLOSED_PIPE")
    if isinstance(e, (KeyboardInterrupt, Interrupted)):
        print(f"{prog}: interrupted", file=sys.stderr)
        return _exit_code("INTERRUPTED")
    if isinstance(e, OSError):
        if show_tb:
            import traceback
            traceback.print_exception(e)
        print(f"{prog}: {error_text(e)}", file=sys.stderr)
        return _exit_code("IO")
    if isinstance(e, Exception):
        if interrupted(e):    # Ctrl-C wrapped by Python (3.11: __set_name__ of a class being made at import)
            print(f"{prog}: interrupted", file=sys.stderr)
            return _exit_code("INTERRUPTED")
        if show_tb:
            import traceback
            traceback.print_exception(e)
        print(f"{prog}: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)",
              file=sys.stderr)
        return _exit_code("INTERNAL")
    raise e


def _quiet_stdout() -> None:
    """The reader of stdout went away: point stdout at /dev/null so nothing (not even the interpreter's final
    flush) writes to the dead pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
