"""Shared options (Annotated aliases) and the small helpers every command uses."""
from __future__ import annotations

import enum
import time
from typing import Annotated, Optional

import typer

from ..engine import format as registry
from ..engine.format import Options
from ..engine.instant import EXPECTED, parse_instant
from ..errors import UsageError


#: Every number an option takes is bounded: nothing a user types can make wqtool hang or overflow.
MAX_FINDINGS = 1_000_000_000
MAX_WORKERS = 256
MAX_OFFSET = (1 << 63) - 1
MAX_SEGMENT_SIZE = 1 << 40


def _format_name(value: str) -> str:
    """--format: auto or a registered format (read from the registry when used, so a format registered at run
    time is accepted)."""
    v = str(value).lower()
    choices = ["auto", *registry.names()]
    if v not in choices:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(map(repr, choices))}.")
    return v


class KestrelVersion(str, enum.Enum):
    auto = "auto"
    v1 = "1"
    v2 = "2"


class Output(str, enum.Enum):
    table = "table"
    jsonl = "jsonl"
    json = "json"


class DumpOutput(str, enum.Enum):
    table = "table"
    jsonl = "jsonl"
    json = "json"
    hex = "hex"
    parquet = "parquet"   # --engine spark, with --out DIR


class PayloadMode(str, enum.Enum):
    text = "text"
    hex = "hex"
    base64 = "base64"
    none = "none"
    binary = "binary"    # --engine spark -o parquet: the bytes as a binary column


Paths = Annotated[list[str], typer.Argument(help="Log directories, segment files, or several.", metavar="PATH",
                                            show_default=False)]
FormatOpt = Annotated[str, typer.Option("--format", "-f", parser=_format_name, metavar="<auto|"
                                        + "|".join(registry.names()) + ">",
                                        help="Log format (auto: detected from each PATH by the formats' own "
                                             "declarations: magic, file names, first record).")]
KestrelVersionOpt = Annotated[KestrelVersion, typer.Option(
    "--kestrel-version", help="Kestrel: the meaning of op 3 and of legacy ADD expiry (1.x or 2.x); auto guesses "
    "and says so.")]
KeepOpen = Annotated[bool, typer.Option("--keep-open", help="Kestrel: show open transactions as open instead of "
                                        "returning them to the queue head as Kestrel does at startup.")]
AsOf = Annotated[Optional[str], typer.Option(
    "--as-of", metavar="TIME",
    help="The clock replay uses: RFC 3339 (2026-11-21T23:30:00Z), epoch seconds, or 'now' (default).")]
MaxFindings = Annotated[Optional[int], typer.Option("--max-findings", min=0, max=MAX_FINDINGS, metavar="N",
                                                   help="Show at most N findings per log (all are counted).")]
Horizon = Annotated[bool, typer.Option("--horizon", help="Pin each segment's size at start: a live, growing log "
                                       "is read as it was when the command began.")]


def options(as_of: str | None, *, horizon: bool = False, settings: list[str] | None = None, **extra) -> Options:
    """The engine's Options from a command's --as-of, --horizon, its format-specific flags and ``-O KEY=VALUE``
    settings (checked against the formats' declared options by ``format.resolve``)."""
    d = {k: v for k, v in extra.items() if v is not None}
    keys = []
    for item in settings or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-O: expected KEY=VALUE, got {item!r}")
        d[key.strip().lower()] = value
        keys.append(key.strip().lower())
    if keys:
        d["_options"] = tuple(keys)
    return Options(parse_time(as_of, "--as-of"), horizon, d)


def parse_time(value: str | None, option: str, *, default_now: bool = True) -> int | None:
    """RFC 3339, epoch seconds (int or decimal) or 'now' → Unix nanoseconds (``engine.instant``)."""
    if value is None:
        return time.time_ns() if default_now else None
    try:
        return parse_instant(value)
    except ValueError:
        raise UsageError(f"{option}: expected {EXPECTED}, got {value!r}") from None


# ---------------------------------------------------------------- --engine spark (wqtool.spark, imported lazily)
class Engine(str, enum.Enum):
    local = "local"
    spark = "spark"


EngineOpt = Annotated[Engine, typer.Option("--engine", case_sensitive=False, help="local: this process. spark: a "
                                           "Spark session (needs wqtool[spark] and Java 17; workq logs and Kestrel "
                                           "queues), see --master, --spark-conf, --remote.")]
MasterOpt = Annotated[Optional[str], typer.Option("--master", metavar="URL", help="--engine spark: the Spark master "
                                                  "(local[2], spark://host:7077, yarn, ...) [default: local[*]].")]
SparkConfOpt = Annotated[Optional[list[str]], typer.Option("--spark-conf", metavar="KEY=VALUE", help="--engine spark: "
                                                           "a Spark setting; repeatable.")]
RemoteOpt = Annotated[Optional[str], typer.Option("--remote", metavar="sc://HOST:PORT", help="--engine spark: use "
                                                  "this Spark Connect server instead of starting Spark here.")]

SettingOpt = Annotated[Optional[list[str]], typer.Option("--option", "-O", metavar="KEY=VALUE", help="A format-specific "
                                                        "setting (see wqtool-formats(5)); repeatable.")]
