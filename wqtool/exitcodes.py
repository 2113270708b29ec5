"""Exit codes: one table for every command (README, --help and man pages document it), the one verdict -> exit
code mapping and the one precedence table of a run.

Only the edges import this module: ``wqtool.cli`` and its funnel ``wqtool._run`` (a command returns an outcome —
verdicts and failed PATHs, ``wqtool.render.outcome.Outcome`` — and ``settle`` turns it into the exit code, handing
the codes it resolved, as plain data, to what the outcome still writes), ``wqtool.api`` (``Report.exit_code``),
and ``wqtool.commands._help``, which documents the table in ``--help`` (import-linter: pyproject.toml). Nothing
is handed down before a command ends: the engine and the renderers put a verdict (``ExitOf``) where a document
shows an exit code. The engine's ``Verdict`` is a severity, not an exit code; what a failed PATH is called is its
error's (``errors.failure_label``).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, unique

from .engine.findings import ExitOf, Verdict
from .errors import (FormatError, InputError, PackMismatch, PackRefused, SparkError, UsageError, WqError,
                     failure_label)


@unique
class ExitCode(IntEnum):
    OK = 0               # clean (warnings allowed)
    TORN_TAIL = 1        # valid up to offset X of the newest segment, nothing valid after X
    USAGE = 2            # bad command line, or a PATH that is not a log
    CORRUPT = 3          # damage with valid data after it, bad header in a non-tail segment
    INVALID_HISTORY = 4  # intact bytes, history upstream refuses
    IO = 5               # unreadable path, permission, a log busy with a live writer (--apply)
    INTERNAL = 70        # a bug in wqtool (rerun with --traceback)
    INTERRUPTED = 130    # SIGINT
    CLOSED_PIPE = 141    # the reader of stdout went away (128 + SIGPIPE): nothing more is written


EXIT_TABLE = [
    (ExitCode.OK, "clean: every segment parses, every record's CRC holds, replay meets no impossible history "
                  "(warnings allowed; a record a live writer is still appending is in flight, not damage)"),
    (ExitCode.TORN_TAIL, "torn tail only: the log is valid up to offset X of the newest segment and nothing valid "
                         "follows X (an incomplete record, junk, a final record failing its CRC, a 0-byte or partial "
                         "header in the newest segment); truncating at X loses no valid record"),
    (ExitCode.USAGE, "usage error: a bad option or value, or a PATH that is not a log"),
    (ExitCode.CORRUPT, "corrupt: damage with valid data after it (a later valid record in the same segment, or any "
                       "later segment), a bad header or a wrong version"),
    (ExitCode.INVALID_HISTORY, "invalid history: bytes intact but a history the upstream server refuses (a "
                               "duplicate add, an invalid name, TTR, TTL or id, a start-attempt on a leased or "
                               "finished job, a second result, an unknown command type, a payload of the wrong "
                               "length)"),
    (ExitCode.IO, "I/O error: a missing or unreadable path, permission; a log busy with a live writer (--apply "
                  "refuses); --engine spark: no session (no Java, no Connect server, workers without wqtool), or "
                  "a Spark job lost to something outside wqtool — an error raised in a task keeps its own code"),
    (ExitCode.INTERNAL, "internal error: a bug in wqtool (rerun with --traceback and report it)"),
    (ExitCode.INTERRUPTED, "interrupted (Ctrl-C)"),
    (ExitCode.CLOSED_PIPE, "the reader of the output went away (a closed pipe: head or less quit early): wqtool "
                           "stops at once, silently (128 + SIGPIPE, as the shell reports a tool killed by SIGPIPE; "
                           "never 0, which would say clean for a log not read to the end)"),
]

#: Several PATHs (or several kinds of damage in one log) in one run: the exit code is the most severe, in this
#: order (last wins). Damage found beats a PATH that could not be read (its verdict is on record, the unread
#: PATH is named in the output); a PATH that could not be read or is not a log beats a torn tail (it might hide
#: worse).
PRECEDENCE = (ExitCode.OK, ExitCode.TORN_TAIL, ExitCode.USAGE, ExitCode.IO, ExitCode.INVALID_HISTORY,
              ExitCode.CORRUPT)
PRECEDENCE_TEXT = "3 > 4 > 5 > 2 > 1 > 0"

#: What the exit code of the commands that change files means (README, --help, man pages say it).
APPLY_TEXT = ("pack, repair and clean exit with the INPUT's class, as verify gives it before they run — also after "
              "a successful --apply: `repair --apply` on a torn tail exits 1 once the tail is cut (and 3 / 4 after "
              "--salvage / --drop-invalid), a healthy log exits 0 (nothing to do). The repaired log itself is "
              "proven before it is swapped in (re-verified clean, the plan's digest); `wqtool verify` on it then "
              "exits 0. A refused plan (a flag missing) exits with the input's class too; an --apply that fails "
              "exits with its error's code and changes nothing, leaving no file behind (a full disk: exit 5); "
              "an --apply that was killed is finished by running the same command again.")
_RANK = {c: i for i, c in enumerate(PRECEDENCE)}


def most_severe(codes) -> ExitCode:
    """The exit code of a run from the codes of its PATHs (``PRECEDENCE``); OK when empty. A code outside the
    table (internal error, interrupted) wins over all."""
    best = ExitCode.OK
    for c in codes:
        c = ExitCode(int(c))
        if c not in _RANK:
            return c
        if _RANK[c] > _RANK[best]:
            best = c
    return best


#: The engine's verdicts to exit codes: the one mapping.
_FOR_VERDICT = {Verdict.CLEAN: ExitCode.OK, Verdict.TORN_TAIL: ExitCode.TORN_TAIL, Verdict.CORRUPT: ExitCode.CORRUPT,
                Verdict.INVALID_HISTORY: ExitCode.INVALID_HISTORY}


_VERDICT_OF = {c: v for v, c in _FOR_VERDICT.items()}


def for_verdict(verdict: Verdict) -> ExitCode:
    """The exit code a verdict means (verify, and every command that reads a log)."""
    if not isinstance(verdict, Verdict):     # a verdict's number is a severity, not an exit code: no guessing
        raise TypeError(f"for_verdict takes a Verdict, got {verdict!r}")
    return _FOR_VERDICT[verdict]


#: Error classes to exit codes (the first class in an error's MRO that is listed wins).
_ERROR_EXIT = {
    UsageError: ExitCode.USAGE,
    InputError: ExitCode.IO,
    PackMismatch: ExitCode.INTERNAL,
    FormatError: ExitCode.CORRUPT,
    WqError: ExitCode.CORRUPT,
}

#: The exit codes the option parser (click / typer) gives its own usage errors (ClickException 1, UsageError 2):
#: the CLI reports both as a usage error (``cli.typer_outcome``).
PARSER_USAGE = frozenset({1, 2})

#: diff: A and B differ (and neither read found corruption or an impossible history) — diff's own meaning of 1.
DIFFERENT = ExitCode.TORN_TAIL


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


# ---------------------------------------------------------------- a command's outcome -> the run's exit code
def resolve(verdicts=(), errors=(), *, shown=(), differ: bool = False) -> tuple[int, str, dict]:
    """The codes of a run, as plain data for the writers of its output: ``(code, label, codes)`` — the run's exit
    code (the most severe of its logs' ``verdicts`` and its failed PATHs' ``errors``: ``PRECEDENCE``; diff:
    ``DIFFERENT`` when the reads ``differ`` and nothing worse was found), its label (what set the code: the
    label of the failed PATH's error, else the worst log's verdict), and the exit code of each verdict and error
    present (an error is its own key), ``shown`` verdicts included (codes a document shows that do not count)."""
    verdicts, errors = list(verdicts), list(errors)
    codes: dict = {v: int(for_verdict(v)) for v in [*shown, *verdicts]}
    for e in errors:
        codes[e] = int(exit_code_for(e))
    code = most_severe([*(codes[v] for v in verdicts), *(codes[e] for e in errors)])
    if code == ExitCode.OK and differ:
        code = DIFFERENT
    label = next((failure_label(e) for e in errors if codes[e] == code), None) or next(
        (v.label for v in sorted(verdicts, reverse=True) if codes[v] == code), Verdict.CLEAN.label)
    return int(code), label, codes


def settle(result) -> ExitCode:
    """The one funnel from what a command returned to the run's exit code (the CLI's ``wqtool._run.settle`` and
    ``serve``; the API resolves with ``resolve``). ``result``: an outcome (``wqtool.render.outcome.Outcome``:
    verdicts, failed PATHs, and ``finish`` — what is still to be written that shows exit codes), an iterator of
    outcomes (a command that writes log after log as it reads them: each is resolved, over the run so far, as it
    comes), or None (nothing to say: 0). Each outcome's ``finish(code, label, codes)`` gets ``resolve``'s plain
    data."""
    if result is None:
        return ExitCode.OK
    if isinstance(result, (int, Verdict)):      # a verdict's number is no exit code; codes are this module's
        raise TypeError(f"a command returns an Outcome, not {result!r}")
    parts = (result,) if hasattr(result, "finish") else result
    verdicts: list = []
    errors: list = []
    code = ExitCode.OK
    try:
        for part in parts:
            verdicts += part.verdicts
            errors += part.errors
            resolved = resolve(verdicts, errors, shown=part.shown, differ=part.differ)
            part.finish(*resolved)
            code = ExitCode(resolved[0])
    finally:        # a writer that failed (a closed pipe): the command's own context managers exit now
        close = getattr(parts, "close", None)
        if close is not None:
            close()
    return code


def fill(doc):
    """``doc`` with each ``ExitOf`` placeholder (a plan report's ``input_exit_code``) replaced by its exit
    code: for an edge that writes an engine document without an outcome."""
    if isinstance(doc, ExitOf):
        return int(for_verdict(doc.of)) if isinstance(doc.of, Verdict) else int(exit_code_for(doc.of))
    if isinstance(doc, dict):
        return {k: fill(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return type(doc)(fill(v) for v in doc)
    return doc


@dataclass(frozen=True)
class Codes:
    """A verdict's exit code and back, for the tests that hold fixtures' recorded exit codes against verdicts.
    One instance: ``CODES``."""

    def of(self, verdict: Verdict) -> int:
        """A verdict's exit code."""
        return int(for_verdict(verdict))

    def verdict_of(self, code: int) -> Verdict:
        """The verdict whose exit code is ``code``."""
        return _VERDICT_OF[ExitCode(code)]


CODES = Codes()
