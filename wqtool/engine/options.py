"""What a command asks of the engine, typed: ``Options`` (every reading command), ``PackOptions`` and
``RepairOptions`` (the commands that plan a rewrite add their flags), and each format's own ``Settings``.

A format's settings are the values only that format reads — Kestrel's ``--kestrel-version``, an Orth admin's
access token, EVTJ's byte order. A command cannot know which format a PATH will turn out to be, so ``Options``
carries them by name, as given (``settings``: the command's format flags and ``-O KEY=VALUE``), and a format reads
its own, typed, with ``opts.of(fmt)``: its ``Settings`` dataclass, each field coerced from the string ``-O`` gave
(``bool``: true/false, ``int``, ``float``; a bad value is a one-line usage error naming the option). The fields a
format accepts as ``-O`` carry a ``help`` (``setting(default, help=...)``); the others come from a command flag or
the API only.

Resolution fills in what it learned (``detected``, ``shared``); ``settle_as_of`` turns ``as_of_word`` (``--as-of
last|first``) into one log's own time. Nothing travels in a side channel."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, TypeVar

from ..errors import UsageError

S = TypeVar("S", bound="Settings")


def setting(default: Any = None, *, help: str | None = None, expected: str | None = None) -> Any:  # noqa: A002
    """A field of a format's ``Settings``: ``help`` makes it a ``-O`` option (its line in ``--help`` and the man
    page); ``expected`` words the usage error of a value that does not convert ("seconds", "microseconds")."""
    meta = {k: v for k, v in (("help", help), ("expected", expected)) if v is not None}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """A format's own settings (subclass it with ``setting`` fields; the base has none)."""

    _hints: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def options(cls) -> dict[str, str]:
        """The fields given as ``-O KEY=VALUE``: name -> help."""
        return {f.name: f.metadata["help"] for f in dataclasses.fields(cls) if "help" in f.metadata}

    @classmethod
    def parse(cls: type[S], raw: Mapping[str, Any]) -> S:
        """The typed settings from values by name (strings from ``-O`` or a Spark source, typed values from flags
        and the API); names this format does not declare are another format's and are left alone."""
        hints = cls._hints.get(cls)
        if hints is None:
            hints = cls._hints[cls] = typing.get_type_hints(cls)
        kw = {}
        for f in dataclasses.fields(cls):
            v = raw.get(f.name)
            if v is not None:
                kw[f.name] = _coerce(f, hints[f.name], v)
        return cls(**kw)


def _coerce(f: dataclasses.Field, hint: Any, v: Any) -> Any:
    """``v`` as the field's type (the first of a union that is not None); strings convert, typed values pass."""
    types = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
    t = types[0]
    if not isinstance(v, str) or t is str or t is Any:
        return v
    try:
        if t is bool:
            low = v.strip().lower()
            if low not in ("true", "false"):
                raise ValueError(v)
            return low == "true"
        return t(v)
    except (TypeError, ValueError):
        what = f.metadata.get("expected") or ("true or false" if t is bool else t.__name__)
        raise UsageError(f"-O {f.name}: expected {what}, got {v!r}") from None


@dataclass(frozen=True)
class Options:
    """What a reading command asks: replay's clock (``as_of_ns``; ``as_of_word`` "last" / "first" until
    ``settle_as_of`` makes it one log's own time), ``--horizon``, and the formats' settings by name (``of``).
    ``given``: the keys of ``-O`` (checked against every format's ``Settings.options``); ``detected``: the format
    was detected, not named by ``--format``; ``shared``: the PATHs that resolved to several formats' logs (a
    format leaves the other's files there alone)."""

    as_of_ns: int
    horizon: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)
    as_of_word: str | None = None
    given: tuple[str, ...] = ()
    detected: bool = False
    shared: frozenset[str] = frozenset()

    def of(self, fmt) -> Settings:
        """``fmt``'s settings, typed (``Format.settings``)."""
        return fmt.settings.parse(self.settings)


@dataclass(frozen=True)
class PackOptions(Options):
    """``pack``: drop what is expired at ``--as-of``, the new segments' size, read past damage (``--salvage``)."""

    drop_expired: bool = False
    segment_size: int | None = None
    salvage: bool = False


@dataclass(frozen=True)
class RepairOptions(Options):
    """``repair``: keep what follows damage (``--salvage``), drop records of an impossible history
    (``--drop-invalid``), cut at a time (``--truncate-to-time``)."""

    salvage: bool = False
    drop_invalid: bool = False
    truncate_to_ns: int | None = None
