"""Shared options (Annotated aliases) and the small helpers every command uses: numbers and times in plain
words, per-PATH outcomes, live writers, --as-of last|first."""
from __future__ import annotations

import enum
import os
import re
import sys
import time
import types
from typing import Annotated, Callable, Iterator, Optional

import typer

from ..engine import format as registry
from ..engine.findings import Verdict
from ..engine.format import AS_OF_WORDS, Log, Options, Unresolved, settle_as_of
from ..errors import UsageError, WqError
from ..offsets import At, hex_offset, parse_at
from ..render.outcome import Failed, Outcome, error_text, split


#: Every number an option takes is bounded: nothing a user types can make wqtool hang or overflow.
MAX_FINDINGS = 1_000_000_000
MAX_WORKERS = 256
MAX_OFFSET = (1 << 63) - 1
MAX_SEGMENT_SIZE = 1 << 40


# ---------------------------------------------------------------- values in plain words
def whole_number(lo: int, hi: int) -> Callable[[str], int]:
    """A parser for a bounded whole number; a bad value is a one-line usage error in plain words."""
    what = "a whole number"

    def parse(value) -> int:
        if isinstance(value, int):
            n = value
        else:
            v = str(value).strip().replace("_", "")
            if not re.fullmatch(r"[+-]?\d+", v):
                raise typer.BadParameter(f"expected {what}, got {value!r}")
            n = int(v)
        if not lo <= n <= hi:
            raise typer.BadParameter(f"expected {what} from {lo} to {hi}, got {value}")
        return n
    parse.__name__ = "number"
    return parse


def offset_option(value) -> At:
    """An option's byte offset, in the form every table and finding prints (``000000001.log@0x11c``), or
    ``0x11c``, ``@0x11c``, decimal (``wqtool.offsets.parse_at``); at most MAX_OFFSET."""
    if isinstance(value, At):
        return value
    try:
        pos = parse_at(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    if pos.offset > MAX_OFFSET:
        raise typer.BadParameter(f"expected a byte offset up to {hex_offset(MAX_OFFSET)}, got {value}")
    return pos


def seconds(lo: float, hi: float) -> Callable[[str], float]:
    """A parser for a bounded number of seconds (decimals allowed), errors in plain words."""
    def parse(value) -> float:
        try:
            n = float(value)
        except (TypeError, ValueError):
            raise typer.BadParameter(f"expected a number of seconds, got {value!r}") from None
        if not lo <= n <= hi:
            raise typer.BadParameter(f"expected a number of seconds from {lo:g} to {hi:g}, got {value}")
        return n
    parse.__name__ = "seconds"
    return parse


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


class ReplayOutput(str, enum.Enum):
    table = "table"
    jsonl = "jsonl"
    json = "json"
    parquet = "parquet"   # --engine spark, with --out DIR: the job table + the summary beside it


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


def read_paths(ctx: typer.Context, paths: list[str] | None, jdbc: list[str] | None, *,
               stdin: bool = False) -> list[str]:
    """The inputs of a reading command: its PATHs, then its --jdbc URLs; at least one. ``stdin`` (dump, verify):
    a PATH ``-`` is one segment or journal file read from stdin (``spool_stdin``); elsewhere ``-`` is refused."""
    out = [*(paths or ()), *(jdbc or ())]
    if not out:      # the parser's own error (the usage line first), as for any missing argument
        ctx.fail("Missing argument 'PATH' (or --jdbc URL).")
    if "-" in out:   # not a file called "-": say so in one line rather than "no such file or directory"
        if not stdin:
            raise UsageError("PATH -: this command does not read a log from stdin (dump and verify do); save it "
                             "to a file and name that (./- for a file called -)")
        if out.count("-") > 1:
            raise UsageError("PATH -: stdin can be read once: name - once")
        out[out.index("-")] = spool_stdin()
    return out


def spool_stdin() -> str:
    """``-``: stdin copied into a private temporary file (1 MiB at a time: memory stays flat however large the
    log), removed at exit; its path. The format is detected from the file's own bytes, as for any PATH, and the
    file is named as that format's reader expects (``About.stdin_name``); a format that needs its directory
    (``stdin_name`` None) cannot be read this way: a one-line usage error."""
    import atexit
    import os
    import shutil
    import tempfile
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("PATH -: stdin is a terminal: pipe a segment or journal file into it "
                         "(ssh host cat 000000003.log | wqtool dump -)")
    d = tempfile.mkdtemp(prefix="wqtool-stdin.")
    atexit.register(shutil.rmtree, d, True)
    path = os.path.join(d, "stdin")
    with open(path, "wb") as f:
        shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
    able = [f for f in registry.formats() if f.about.stdin_name]
    try:
        found = registry.detect(path, able)[0] if os.path.getsize(path) else None
    except (WqError, OSError):
        found = None
    if found is None:
        raise UsageError(f"PATH -: stdin holds none of the files wqtool reads from stdin (one file of "
                         f"{', '.join(f.about.plural for f in able)}); the other formats need their directory: save it and "
                         "name that")
    named = os.path.join(d, found.about.stdin_name)
    os.rename(path, named)
    return named
class ReportOutput(str, enum.Enum):
    table = "table"
    json = "json"


def _report_format(value) -> ReportOutput:
    """-o is the rendering in every command; a path here is the old spelling of --out, told as such."""
    v = str(getattr(value, "value", value))
    try:
        return ReportOutput(v.lower())
    except ValueError:
        raise typer.BadParameter(f"{v!r} is not one of 'table', 'json' (-o is the report's rendering in every "
                                 f"command; to write the packed log to a new file or directory: --out {v})") \
            from None


def options(as_of: str | None, *, horizon: bool = False, settings: list[str] | None = None,
            flags: dict | None = None, kind: type[Options] = Options, **fields) -> Options:
    """The engine's options (``kind``: ``Options``, or a command's own, with its ``fields``) from a command's
    --as-of, --horizon, its format flags (``flags``: --kestrel-version, --keep-open, by setting name) and ``-O
    KEY=VALUE`` settings (checked against the formats' declared settings by ``format.resolve``; each format
    types its own). ``--as-of last|first`` is settled per log (``for_log``)."""
    d = {k: v for k, v in (flags or {}).items() if v is not None}
    keys = []
    for item in settings or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-O: expected KEY=VALUE, got {item!r}")
        d[key.strip().lower()] = value
        keys.append(key.strip().lower())
    word = (as_of or "").strip().lower()
    common = dict(horizon=horizon, settings=d, given=tuple(keys), **fields)
    if word in AS_OF_WORDS:
        return kind(time.time_ns(), as_of_word=word, **common)
    return kind(parse_time(as_of, "--as-of"), **common)


def for_log(log: Log, opts: Options) -> Options:
    """The options one log is read with (``--as-of last|first`` become that log's own time)."""
    return settle_as_of(log, opts)


def as_of_is_now(as_of: str | None) -> bool:
    """--as-of was left to the wall clock (not given, 'now', or relative to now)."""
    v = (as_of or "now").strip().lower()
    return v == "now" or bool(re.fullmatch(r"[+-](\d+(\.\d+)?[smhdw])+", v))


def parse_time(value: str | None, option: str, *, default_now: bool = True) -> int | None:
    """Any time ``engine.instant`` reads → Unix nanoseconds; None → now (``default_now``) or None."""
    if value is None:
        return time.time_ns() if default_now else None
    from ..engine.instant import parse_instant     # on first use (start-up)
    try:
        return parse_instant(value)
    except ValueError as e:      # what was expected, and what was given (a hint for milliseconds)
        raise UsageError(f"{option}: {e}") from None


# ---------------------------------------------------------------- before writing anything
def finish_interrupted(paths: list[str], fmt: str) -> dict[str, list[str]]:
    """``--apply`` first finishes what a crashed earlier ``--apply`` left beside each PATH (each format's rule; a
    no-op otherwise), so that the identical command, run again, completes the work or finds nothing to do.
    Returns what was done, one line each, by PATH (the report says it: ``recovered_for``)."""
    done: dict[str, list[str]] = {}
    for p in paths:
        for f in ([registry.get(fmt)] if fmt != "auto" else registry.formats()):
            lines = f.plans.finish_interrupted(p) if f.plans is not None else []
            if lines:
                done.setdefault(p, []).extend(lines)
    return done


def recovered_for(done: dict[str, list[str]], root: str) -> list[str]:
    """The lines of ``finish_interrupted`` for the log at ``root``: those of each PATH that is the log, a file in
    it, or a directory holding it."""
    r = os.path.realpath(root)
    out = []
    for p, lines in done.items():
        q = os.path.realpath(p)
        if q == r or q.startswith(r.rstrip(os.sep) + os.sep) or r.startswith(q.rstrip(os.sep) + os.sep):
            out += lines
    return out


def refuse_unsafe_write(log: Log, what: str, *, live: bool = False, why: str = "") -> None:
    """The checks every command that changes files runs before it plans a write (``what``: "pack --apply",
    "repair", ...): a log detected from weak evidence only is not written (pass --format), and a log that is being
    written is refused (``engine.live.refuse_live``: LogBusy, exit 5)."""
    from ..engine.live import refuse_live
    if log.weak:
        raise UsageError(f"auto-detected as {log.fmt.title} from weak evidence only; pass --format {log.fmt.name} "
                         "to write anything", path=log.root)
    refuse_live(log, what, live=live, why=why)


# ---------------------------------------------------------------- one verdict per PATH
def each_log(entries: list[Log | Unresolved], work: Callable[[Log], object], *,
             say: Callable[[str], None] | None = None) -> Iterator[tuple[Log | None, object]]:
    """Run ``work(log)`` for every resolved log; yield ``(log, result)``, or ``(log or None, Failed)`` for a PATH
    that named no log and for a log whose reading failed (missing, unreadable, busy): one bad PATH never hides
    the others. ``say``: where each failure's one line goes as it happens (stderr), or None."""
    for e in entries:
        if isinstance(e, Unresolved):
            f = Failed(e.path, e.error)
            if say is not None:
                say(error_text(e.error))
            yield None, f
            continue
        try:
            result = work(e)
        except BrokenPipeError:
            raise
        except (WqError, OSError) as exc:
            if say is not None:
                say(error_text(exc))
            yield e, Failed(e.root, exc)
            continue
        yield e, result


def report_each(kind: str, entries: list[Log | Unresolved], work: Callable[[Log], tuple[Verdict, dict]], *,
                as_json: bool, applied: bool, as_of: str | None = None) -> Outcome:
    """repair / clean: ``work(log)`` -> (the input's verdict, the plan's report) for every log; a PATH that names no
    log, a refused plan and a failed apply each get their own entry (and their one line on stderr); the outcome:
    the logs' verdicts, the PATHs that failed, and the report of every PATH (with the codes the edge resolved:
    the run's exit code by the documented precedence)."""
    results = [r for _, r in each_log(entries, work, say=say_error)]
    done, failed = split(results)

    def write(resolved) -> None:
        docs = [r if isinstance(r, Failed) else resolved.fill({**r[1], "verdict": r[0].label,
                                                                "exit_code": resolved.of(r[0])}) for r in results]
        from ..render.plan import report_after_apply, write_plan_reports     # on first use (start-up)
        installed = [d["root"] for d in docs if not isinstance(d, Failed) and d.get("applied")]
        report_after_apply(sys.stdout, lambda: write_plan_reports(
            sys.stdout, kind, docs, resolved, as_json=as_json, applied=applied, as_of_line=as_of_moves(as_of)),
            installed)
    return Outcome.of([r[0] for r in done], failed, write)


def as_of_moves(as_of: str | None) -> bool:
    """Whether a command's --as-of moves with the clock (none given, or one relative to now): a plan's report
    then states the instant it used (issue 31 item 6), so that the same --as-of gives the same plan again."""
    return as_of is None or "now" in as_of.lower()


def say_error(line: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"wqtool: {line}\n")


# ---------------------------------------------------------------- --engine spark (wqtool.spark, imported lazily)
class Engine(str, enum.Enum):
    local = "local"
    spark = "spark"


def _quiet(value: bool) -> bool:
    if value:
        from ..render import quiet
        quiet.silence()
    return value


def _spark_conf(value: list[str] | None) -> list[str] | None:
    """``--spark-conf`` pairs are known before any session: their ``spark.hadoop.fs.s3a.*`` settings become the
    s3:// / s3a:// options of the command's own PATHs (staged before the session starts), through the mapping the
    data sources use (``engine.uris.use_spark_conf``). A malformed pair is left to the session's usage error."""
    if value:
        from ..engine.uris import use_spark_conf
        use_spark_conf({k.strip(): v.strip() for k, _, v in (p.partition("=") for p in value if "=" in p)})
    return value


# ---------------------------------------------------------------- the typer declarations (built when typer runs)
def _declare() -> dict:
    """The options and arguments the commands share, as typer declarations (``DECLARED``)."""
    Paths = Annotated[list[str], typer.Argument(help="Log directories, segment files, or several.", metavar="PATH",
                                                show_default=False)]

    #: The reading commands' PATHs: optional, as ``--jdbc URL`` may name the input instead (``read_paths``).
    ReadPaths = Annotated[Optional[list[str]], typer.Argument(help="Log directories, segment files, or several.",
                                                              metavar="PATH", show_default=False)]

    JdbcOpt = Annotated[Optional[list[str]], typer.Option(
        "--jdbc", metavar="URL", show_default=False,
        help="A database table to read, as a PATH would be (jdbc:mariadb://, jdbc:mysql://, mysql://, sqlite:///FILE; "
             "?table= another table): the orth-joblog table. Repeatable.")]

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
        help="The clock replay uses: RFC 3339 (2026-11-21T23:30:00Z), '2026-11-21 23:30:00' (UTC), epoch seconds, "
             "relative (-2h, -30m, -1d), 'now' (default), or 'last' / 'first': the log's newest / first record's "
             "time (reproducible).")]

    MaxFindings = Annotated[Optional[int], typer.Option("--max-findings", parser=whole_number(0, MAX_FINDINGS),
                                                       metavar="N",
                                                       help="Show at most N findings per log (all are counted).")]

    AllFindings = Annotated[bool, typer.Option("--all-findings", help="List every finding one by one, also those "
                                              "that follow only from --as-of (jobs expired at --as-of, records of "
                                              "jobs not live then): at the default --as-of now (or a time relative "
                                              "to now) each such code is one summary note per log; an explicit "
                                              "--as-of TIME, last or first lists them all.")]

    Horizon = Annotated[bool, typer.Option("--horizon", help="Pin each file's size at start: a live, growing log "
                                           "is read as it was when the command began.")]

    ReportOutputOpt = Annotated[ReportOutput, typer.Option("--output", "-o", parser=_report_format,
                                                           metavar="<table|json>", help="Rendering of the report.")]

    LiveOpt = Annotated[bool, typer.Option("--live", help="The log is being written (by a writer this host cannot "
                                           "see): a partial last record is in flight, not a torn tail. Without it, "
                                           "wqtool looks for one (a held lock, a process holding the file open, the "
                                           "file changing during the read).")]

    EngineOpt = Annotated[Engine, typer.Option("--engine", case_sensitive=False, help="local: this process. "
                                               "spark: a Spark session (needs wqtool[spark] and Java 17; workq logs "
                                               "and Kestrel queues), see --master, --spark-conf, --remote.")]

    MasterOpt = Annotated[Optional[str], typer.Option("--master", metavar="URL", help="--engine spark: the Spark "
                                                      "master (local[2], spark://host:7077, yarn, ...) [default: "
                                                      "local[*]].")]

    SparkConfOpt = Annotated[Optional[list[str]], typer.Option("--spark-conf", metavar="KEY=VALUE",
                                                               callback=_spark_conf,
                                                               help="--engine spark: a Spark setting; repeatable.")]

    RemoteOpt = Annotated[Optional[str], typer.Option("--remote", metavar="sc://HOST:PORT", help="--engine spark: use "
                                                      "this Spark Connect server instead of starting Spark here.")]

    #: -q/--quiet, the same in every command: stdout gets nothing (reports, tables, plans), stderr still names every
    #: error, the exit code is the same as without it (cron: ``wqtool repair --apply -q DIR || alert``).
    QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", callback=_quiet, help="Print nothing on stdout; errors "
                                            "still go to stderr and the exit code is unchanged (for cron).")]

    SettingOpt = Annotated[Optional[list[str]], typer.Option("--option", "-O", metavar="KEY=VALUE",
                                                            help="A format-specific setting (see wqtool-formats(5)); "
                                                                 "repeatable.")]

    return locals()


DECLARED = ("Paths", "ReadPaths", "JdbcOpt", "FormatOpt", "KestrelVersionOpt", "KeepOpen", "AsOf", "MaxFindings",
            "AllFindings", "Horizon", "ReportOutputOpt", "LiveOpt", "EngineOpt", "MasterOpt", "SparkConfOpt",
            "RemoteOpt", "QuietOpt", "SettingOpt")


class _Deferred:
    """Stands for a declaration of ``DECLARED`` imported before typer ran (a command module imported by
    ``wqtool._run.plain``, which parses without typer); ``settle_declarations`` puts the real one in its place
    before typer reads the command's signature."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}: declared when typer runs>"


def __getattr__(name: str):
    """The typer declarations on first use (start-up, issue 20 item 9): built once typer has run, a ``_Deferred``
    stand-in before (``import typer`` is then wqtool._run's deferred module)."""
    if name not in DECLARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if type(sys.modules.get("typer")) is not types.ModuleType:     # deferred by wqtool._run, not run yet
        return _Deferred(name)
    made = _declare()
    for n in DECLARED:
        globals()[n] = made[n]
    return made[name]


def settle_declarations(module) -> None:
    """Put the real declaration in place of every ``_Deferred`` stand-in ``module`` imported (typer has run)."""
    for key, value in list(vars(module).items()):
        if isinstance(value, _Deferred):
            setattr(module, key, getattr(sys.modules[__name__], value.name))
