"""Findings are data, not exceptions: every check adds one, with a stable code and exact location.

The severity of damage is the engine's own ``Verdict`` (clean, torn tail, invalid history, corrupt), numbered by
severity: the worst of several is ``max()`` (``worst``). The engine holds no exit codes: the verdict -> exit-code
mapping and the run's precedence table are ``wqtool.exitcodes``, used by the edges only (``wqtool.cli`` /
``wqtool._run``, ``wqtool.api``). Where a document shows an exit code (a plan's ``input_exit_code``) the
engine puts an ``ExitOf`` placeholder, which the edge's resolved codes fill in after
the command. A verdict's number is no exit code: never ``int(verdict)`` one.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, unique

from ..offsets import at

ERROR, WARNING, NOTE = "error", "warning", "note"


@unique
class Verdict(IntEnum):
    """What a log, or one finding, says about the log's state — ordered by severity (a larger one is worse)."""

    CLEAN = 0            # parses, history valid (warnings and notes allowed)
    TORN_TAIL = 1        # valid up to offset X of the newest file, nothing valid after X
    INVALID_HISTORY = 2  # intact bytes, a history the upstream system refuses
    CORRUPT = 3          # damage with valid data after it, or where the format allows no damage

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {Verdict.CLEAN: "clean", Verdict.TORN_TAIL: "torn tail", Verdict.CORRUPT: "CORRUPT",
           Verdict.INVALID_HISTORY: "INVALID HISTORY"}
_BY_LABEL = {v: k for k, v in _LABELS.items()}


def verdict_of_label(label: str | None) -> Verdict:
    """The verdict a label names (a Spark finding row's ``verdict``); None: clean."""
    return Verdict.CLEAN if label is None else _BY_LABEL[label]


@dataclass(frozen=True, slots=True)
class ExitOf:
    """Where a document shows an exit code: the exit code of ``of`` (a ``Verdict``, or the error of a PATH that
    failed), filled in from the codes the edge resolved (``render.outcome.Resolved.fill``). Not a number, so a
    document written without filling it in fails loudly (json refuses it) instead of printing a severity."""

    of: object


def worst(verdicts) -> Verdict:
    """The most severe of ``verdicts`` (CLEAN when empty): corruption, then impossible history, then a torn tail."""
    return Verdict(max(verdicts, default=Verdict.CLEAN))


@dataclass(slots=True)
class Finding:
    severity: str                 # error | warning | note
    code: str                     # stable: WQ-CRC, KQ-TRUNCATED, ...
    message: str
    path: str | None = None       # segment / journal file
    offset: int | None = None     # byte offset in that file
    record_index: int | None = None
    last_good_offset: int | None = None
    upstream: str | None = None   # what the upstream system does with this, where it differs from "starts"
    verdict: Verdict = Verdict.CLEAN  # what this finding says about the log (CLEAN for warnings and notes)
    job_id: str | None = None
    resumes_at: int | None = None  # after damage: where valid records resume in the same file (None: nowhere)
    when: int | None = None        # as-of findings: the time (Unix ns) that makes it one at --as-of (an expiry)
    count: int | None = None       # a summary of folded findings (``present``): how many it stands for
    last_path: str | None = None   # ... and where the last of them is
    last_offset: int | None = None
    #: a torn tail's damage alone, without the conclusion its place in the log draws ("; torn tail: ..."): what
    #: the in-flight note quotes when a live writer is still appending there (``engine.live``); not serialised
    cause: str | None = None
    #: damage (an unreadable range has no record number: ``record_index`` None): the number of the next readable
    #: record, i.e. how many records come before it (a repair's kept ranges count from it); not serialised
    next_index: int | None = None

    def location(self) -> str:
        return at(self.path, self.offset)


#: A format's finding codes: code -> (severity, meaning).
Codes = dict[str, tuple[str, str]]


# ---------------------------------------------------------------- most severe first, as-of findings folded
#: The order findings are shown in: errors, then warnings, then notes (each in file order).
RANK = {ERROR: 0, WARNING: 1, NOTE: 2}


@dataclass(frozen=True)
class AsOfRule:
    """A finding code that follows only from ``--as-of`` (a healthy old log read at ``--as-of now``): its findings
    are shown as one summary note per log (``present``) unless ``--all-findings``. ``what``: the summary's noun
    phrase after the count; ``when``: what the finding's ``when`` times are (None: no time range); ``requires``:
    fold only when the log also has a finding of this code (the sign that --as-of caused these too)."""

    what: str
    when: str | None = None
    requires: str | None = None
    why: str | None = None       # a parenthetical after "at --as-of ..." when there is no time range


#: code -> AsOfRule; each format's codes.py adds its own (``as_of_rules``). Only warnings and notes fold.
AS_OF_RULES: dict[str, AsOfRule] = {}


def as_of_rules(rules: dict[str, AsOfRule]) -> None:
    AS_OF_RULES.update(rules)


@dataclass(slots=True)
class Fold:
    """Every finding of one as-of code in a log: how many, the first and the last, the range of their times."""

    code: str
    severity: str = NOTE
    count: int = 0
    first: tuple | None = None     # (path, offset)
    last: tuple | None = None
    t_min: int | None = None
    t_max: int | None = None

    def take(self, path, offset, when, severity: str | None = None) -> None:
        self.count += 1
        if severity is not None:
            self.severity = severity
        if self.first is None:
            self.first = (path, offset)
        self.last = (path, offset)
        if when is not None:
            self.t_min = when if self.t_min is None else min(self.t_min, when)
            self.t_max = when if self.t_max is None else max(self.t_max, when)

    def merge(self, other: "Fold") -> None:
        """Add ``other`` (findings of the same code counted elsewhere, e.g. another worker's share)."""
        if not other.count:
            return
        key = lambda loc: (loc[0] or "", loc[1] if loc[1] is not None else -1)  # noqa: E731
        self.first = other.first if self.first is None or key(other.first) < key(self.first) else self.first
        self.last = other.last if self.last is None or key(other.last) > key(self.last) else self.last
        self.count += other.count
        self.severity = other.severity
        for t in (other.t_min, other.t_max):
            if t is not None:
                self.t_min = t if self.t_min is None else min(self.t_min, t)
                self.t_max = t if self.t_max is None else max(self.t_max, t)


def fold_rule(f: Finding) -> AsOfRule | None:
    """The as-of rule of ``f`` (None: it never folds; errors never do)."""
    return None if f.severity == ERROR else AS_OF_RULES.get(f.code)


class QuotaCap:
    """``--max-findings N``'s one rule: the first ``limit`` findings of each quota (``quota``: errors, warnings,
    notes, as-of findings) are kept (None: all). ``take(f)`` says whether ``f`` is one of them (and counts it)."""

    __slots__ = ("limit", "kept")

    def __init__(self, limit: int | None):
        self.limit = limit
        self.kept: dict[str, int] = {}

    def take(self, f: Finding, q: str | None = None) -> bool:
        if self.limit is None:
            return True
        q = quota(f) if q is None else q
        n = self.kept.get(q, 0)
        if n >= self.limit:
            return False
        self.kept[q] = n + 1
        return True

    def full(self, q: str) -> bool:
        return self.limit is not None and self.kept.get(q, 0) >= self.limit


def per_quota(findings, limit: int | None) -> list:
    """The first ``limit`` of each quota of ``findings`` (in their order), as ``run.FindingSink`` keeps them: what a
    report assembled from parts (a Spark fleet's tasks) keeps."""
    cap = QuotaCap(limit)
    return [f for f in findings if cap.take(f)]


def quota(f: Finding) -> str:
    """Which bounded list keeps ``f`` (``--max-findings N`` each): its severity, or "as-of" for the findings
    that may fold — so that neither an error nor another warning is crowded out by thousands of them."""
    return "as-of" if fold_rule(f) is not None else f.severity


def _iso(ns: int) -> str:
    import datetime as _dt
    t = _dt.datetime.fromtimestamp(ns // 1_000_000_000, _dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def summary_finding(fold: Fold, rule: AsOfRule, as_of: str | None = None) -> Finding:
    """The one note that stands for every finding of a folded as-of code."""
    at = f"--as-of {as_of}" if as_of else "--as-of"
    msg = f"{fold.count} {rule.what} at {at}"
    if rule.when and fold.t_min is not None:
        msg += (f" ({rule.when} {_iso(fold.t_min)})" if fold.t_min == fold.t_max or fold.t_max is None else
                f" ({rule.when} between {_iso(fold.t_min)} and {_iso(fold.t_max)})")
    elif rule.why:
        msg += f" ({rule.why})"
    if (as_of or "").lower() != "last":
        msg += "; --as-of last shows the log as of its newest record"
    msg += "; --all-findings lists them"
    first, last = fold.first or (None, None), fold.last or (None, None)
    return Finding(NOTE, fold.code, msg, path=first[0], offset=first[1], count=fold.count, last_path=last[0],
                   last_offset=last[1])


def present(findings: list[Finding], counts, folds: dict, limit: int | None, *, all_findings: bool = False,
            as_of: str | None = None) -> tuple[list[Finding], int]:
    """What a report shows of a log's kept findings: every as-of code folded into one summary note (unless
    ``all_findings``); at most ``limit`` of them, the most severe first (errors, warnings, notes; each in file
    order), shown in file order; and how many findings are neither shown nor stood for by a summary. The one
    place where the findings a command shows are chosen (verify, replay, report)."""
    folded: dict[str, AsOfRule] = {}
    if not all_findings:
        for code, fold in folds.items():
            rule = AS_OF_RULES.get(code)
            if rule is not None and fold.count and (rule.requires is None or counts.get(rule.requires)):
                folded[code] = rule
    items: list[tuple[int, Finding]] = []
    placed: dict[str, int] = {}
    for i, f in enumerate(findings):
        if f.code in folded:
            placed.setdefault(f.code, i)   # the summary stands where the first of them was
        else:
            items.append((i, f))
    items += [(placed.get(c, len(findings)), summary_finding(folds[c], r, as_of)) for c, r in folded.items()]
    if limit is not None and len(items) > limit:   # the most severe first, then by place
        items = sorted(items, key=lambda it: (RANK.get(it[1].severity, 3), it[0]))[:limit]
    shown = [f for _, f in sorted(items, key=lambda it: it[0])]
    stood_for = sum(f.count if f.count is not None else 1 for f in shown)
    return shown, max(0, sum(counts.values()) - stood_for)
