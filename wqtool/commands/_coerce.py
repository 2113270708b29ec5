"""Option values without pydantic (start-up, issue 20 item 9).

typer (>= 0.29) coerces every option value through a pydantic ``TypeAdapter``: the first value it coerces imports
pydantic, whose plugin loader imports ``importlib.metadata`` and ``email`` — most of a small ``verify``'s time.
wqtool's options are all of a few plain kinds: a ``parser=`` of ours, ``str``, ``bool``, an ``Enum`` (and
``list`` / ``Optional`` of these). For those, ``plain(descriptor)`` gives the same coercion without pydantic: the
parser's own value and its own ``BadParameter``; a string as given; an Enum's member by typer's own choice rule
(``coerce_cli_choice``, the same message). Any other kind (numbers with typer's min/max, paths, dates, ...) keeps
typer's adapter (``None`` here). ``wqtool.cli.Command`` installs it on each parameter; should typer's internals
change, the parameter simply keeps typer's own coercion."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, get_args, get_origin

try:
    from typer._coercion import RuntimeParam
    from typer._param_types import coerce_cli_choice
    from typer._click.exceptions import BadParameter
except ImportError:      # another typer: its own coercion stays
    RuntimeParam = None


def _leaf(annotation, info) -> Callable[[Any, Any], Any] | None:
    """``convert(value, ctx)`` for one value of ``annotation``, or None (typer's adapter then)."""
    if info.parser is not None:
        parser = info.parser
        return lambda v, ctx: parser(v)
    if annotation is str:
        return lambda v, ctx: v if isinstance(v, str) else str(v)
    if annotation is bool:
        return lambda v, ctx: v if isinstance(v, bool) else _bool(v)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        choices, sensitive = tuple(annotation), info.case_sensitive
        return lambda v, ctx: coerce_cli_choice(v, choices=choices, case_sensitive=sensitive, ctx=ctx)
    return None


def _bool(v) -> bool:
    s = str(v).strip().lower()
    if s in ("1", "true", "t", "yes", "y", "on"):
        return True
    if s in ("", "0", "false", "f", "no", "n", "off"):
        return False
    raise ValueError(f"{v!r} is not a valid boolean")


if RuntimeParam is not None:
    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):
        """One option's coercion by ``convert`` (each item of a list)."""

        convert: Callable[[Any, Any], Any]
        many: bool

        def _coerce_value(self, value: Any, param, ctx) -> Any:
            try:
                if self.many:
                    return [self.convert(v, ctx) for v in (value if isinstance(value, (list, tuple)) else [value])]
                return self.convert(value, ctx)
            except ValueError as e:
                raise BadParameter(str(e), ctx=ctx, param=param) from None


def plain(descriptor) -> Any:
    """The pydantic-free coercion of a parameter's ``type_descriptor``, or None."""
    if RuntimeParam is None or getattr(descriptor, "file_annotation", None) is not None:
        return None
    annotation, info = descriptor.annotation, descriptor.parameter_info
    many = get_origin(annotation) is list
    if many:
        args = get_args(annotation)
        if len(args) != 1:
            return None
        annotation = args[0]
    convert = _leaf(annotation, info)
    if convert is None:
        return None
    return PlainParam(parameter_info=info, annotation=descriptor.annotation, convert=convert, many=many)


def install(params) -> None:
    """Give every parameter of ``params`` whose kind is plain the coercion above."""
    for p in params:
        if getattr(p, "_runtime_param", 0) is None and hasattr(p, "type_descriptor"):
            rp = plain(p.type_descriptor)
            if rp is not None:
                p._runtime_param = rp
