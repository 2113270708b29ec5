"""What a command ends with (``Outcome``: its logs' verdicts, its PATHs that failed — ``Failed`` —, and what it still
writes that shows exit codes), and the codes the edge resolved from it (``Resolved``). A command returns an
outcome; the edge's one funnel (``wqtool.exitcodes.settle``, run by ``wqtool._run.settle``) turns it into the exit
code and hands ``finish`` the codes it resolved, as plain data. Nothing here maps a verdict or an error to an
exit code: nothing is handed down before the command ends (no mapping, no callback, no context variable)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ..engine.findings import ExitOf, Verdict
from ..errors import WqError, failure_label
from ..offsets import printable


def error_text(exc: BaseException) -> str:
    """An error as its one line, without the ``wqtool:`` prefix (an OSError as ``file: reason``)."""
    if isinstance(exc, WqError):
        return str(exc)
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return printable(f"{where}{exc.strerror or exc}")
    return printable(f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Failed:
    """A PATH (or a log behind it) that got no verdict: it could not be read, or it is not a log. Its label is
    its error's (``errors.failure_label``), its exit code the edge's (``Resolved.of``)."""

    root: str
    error: BaseException

    @property
    def label(self) -> str:
        return failure_label(self.error)

    @property
    def message(self) -> str:
        """The error without the path when the error names this root (the report line names it)."""
        e = self.error
        if isinstance(e, WqError) and e.path == self.root and e.offset is None:
            return e.message
        if isinstance(e, OSError) and e.filename == self.root:
            return e.strerror or str(e)
        return error_text(e)

    def to_jsonable(self) -> dict:
        """Its entry in a JSON document; ``exit_code`` a placeholder (``Resolved.fill``)."""
        return {"root": printable(self.root), "verdict": self.label, "exit_code": ExitOf(self.error),
                "error": self.message}


@dataclass(frozen=True)
class Resolved:
    """The codes of a run as the edge resolved them after the command (``wqtool.exitcodes.resolve``): plain
    data. ``code``: the run's exit code; ``label``: what set it in words (the worst log's verdict, or the label of
    the PATH that failed); ``codes``: the exit code of each verdict and each failed PATH's error present."""

    code: int
    label: str
    codes: Mapping = field(default_factory=dict)

    def of(self, what) -> int:
        """The exit code of a verdict present, a failed PATH (``Failed``, or its error) or a placeholder."""
        if isinstance(what, ExitOf):
            what = what.of
        if isinstance(what, Failed):
            what = what.error
        return self.codes[what]

    @property
    def summary(self) -> dict:
        """``{"exit_code": N, "verdict": WORDS}`` of the run, at the top (or the end) of every JSON document."""
        return {"exit_code": self.code, "verdict": self.label}

    def fill(self, doc):
        """``doc`` with every placeholder (``ExitOf``, from the engine and ``Failed``) replaced by its code."""
        if isinstance(doc, ExitOf):
            return self.of(doc)
        if isinstance(doc, dict):
            return {k: self.fill(v) for k, v in doc.items()}
        if isinstance(doc, list):
            return [self.fill(v) for v in doc]
        if isinstance(doc, tuple):
            return tuple(self.fill(v) for v in doc)
        return doc


@dataclass(frozen=True)
class Outcome:
    """What a command ends with: ``verdicts`` (its logs'), ``failed`` (its PATHs that got no verdict) and, for
    the output that shows exit codes, ``write(resolved)``, run once the edge resolved them. ``shown``: verdicts
    whose codes the output shows without them counting to the run's (a finding's); ``differ``: diff's two reads
    differ. A command that writes log after log returns an iterator of outcomes, each resolved as it comes over
    the run so far (``wqtool.exitcodes.settle``)."""

    verdicts: tuple[Verdict, ...] = ()
    failed: tuple[Failed, ...] = ()
    write: Callable[[Resolved], None] | None = None
    shown: tuple[Verdict, ...] = ()
    differ: bool = False

    @classmethod
    def of(cls, verdicts: Iterable = (), failed: Iterable = (), write=None, **kw) -> "Outcome":
        return cls(tuple(verdicts), tuple(failed), write, **kw)

    @property
    def errors(self) -> tuple[BaseException, ...]:
        return tuple(f.error for f in self.failed)

    def finish(self, code: int, label: str, codes: Mapping) -> None:
        """Called by the edge's funnel with the codes it resolved: the output that shows them is written now."""
        if self.write is not None:
            self.write(Resolved(code, label, codes))


def split(results) -> tuple[list, list[Failed]]:
    """Items of a run -> (the logs' items, the PATHs that failed)."""
    ok, failed = [], []
    for r in results:
        (failed if isinstance(r, Failed) else ok).append(r)
    return ok, failed
