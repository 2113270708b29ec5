"""The declared conditions (``wqtool.formats.orth_joblog``) as Python predicates, vectorised predicates and SQL.

One declaration per table's rule set (``RuleSet``: Orth's ``ORTH_RULES``, xxl-job's ``XXL_RULES``), three
evaluators: ``predicate(cond)`` for the local engine's reference path (a row at a time),
``vector(cond)`` for its columnar fast path (numpy arrays, ``fastpath``), ``sql(cond)`` for Spark SQL and the
databases (the same CASE expression the tests run in SQLite and Spark against the Python one).
"""
from __future__ import annotations

from typing import Callable

from ...formats.orth_joblog import (ALL_LABELS, LIST_FILTER_FAILED, ORTH_RULES, REPORT_RUNNING, REPORT_SUCCESS,
                                    All, AnyOf, Cond, In, Not, RuleSet)


def predicate(cond: Cond) -> Callable[[dict], bool]:
    """``cond`` as a function of a mapping column -> int."""
    if isinstance(cond, In):
        col, vals = cond.column, frozenset(cond.values)
        if cond.negate:
            return lambda r: r[col] not in vals
        return lambda r: r[col] in vals
    if isinstance(cond, All):
        fs = [predicate(t) for t in cond.terms]
        return lambda r: all(f(r) for f in fs)
    if isinstance(cond, AnyOf):
        fs = [predicate(t) for t in cond.terms]
        return lambda r: any(f(r) for f in fs)
    if isinstance(cond, Not):
        f = predicate(cond.term)
        return lambda r: not f(r)
    raise TypeError(f"not a condition: {cond!r}")


def vector(cond: Cond) -> Callable[[dict], object]:
    """``cond`` as a function of a mapping column -> numpy int array, giving a numpy bool array (numpy is
    imported when the function runs: the fast path's dependency, not the reference's)."""
    if isinstance(cond, In):
        col, vals, neg = cond.column, tuple(cond.values), cond.negate

        def f(cols):
            import numpy as np
            return np.isin(cols[col], vals, invert=neg)
        return f
    if isinstance(cond, (All, AnyOf)):
        fs, is_all = [vector(t) for t in cond.terms], isinstance(cond, All)

        def g(cols):
            import numpy as np
            n = len(next(iter(cols.values())))
            out = np.full(n, is_all)
            for f in fs:
                out = (out & f(cols)) if is_all else (out | f(cols))
            return out
        return g
    if isinstance(cond, Not):
        f = vector(cond.term)
        return lambda cols: ~f(cols)
    raise TypeError(f"not a condition: {cond!r}")


def sql(cond: Cond, quote: str = "") -> str:
    """``cond`` as a SQL boolean expression (columns quoted with ``quote``)."""
    if isinstance(cond, In):
        vals = ", ".join(str(int(v)) for v in cond.values)
        return f"({quote}{cond.column}{quote} {'NOT IN' if cond.negate else 'IN'} ({vals}))"
    if isinstance(cond, All):
        return "(" + " AND ".join(sql(t, quote) for t in cond.terms) + ")" if cond.terms else "(1 = 1)"
    if isinstance(cond, AnyOf):
        return "(" + " OR ".join(sql(t, quote) for t in cond.terms) + ")" if cond.terms else "(1 = 0)"
    if isinstance(cond, Not):
        return f"(NOT {sql(cond.term, quote)})"
    raise TypeError(f"not a condition: {cond!r}")


def status_sql(quote: str = "", rules: RuleSet = ORTH_RULES) -> str:
    """A rule set's status rules (Orth: §5.2; xxl-job: §5.4) as a CASE expression yielding the label."""
    parts = [f"WHEN {sql(c, quote)} THEN '{s}'" for s, c in rules.status_rules]
    return "CASE " + " ".join(parts) + " END"


class _Compiled:
    """A rule set's status rules as predicates (cached per code pair) and as vectors."""

    def __init__(self, rules: RuleSet):
        self.preds = [(s, predicate(c)) for s, c in rules.status_rules]
        self.vecs = [(ALL_LABELS.index(s), vector(c)) for s, c in rules.status_rules]
        self.cache: dict[tuple[int, int], str] = {}


_COMPILED: dict[str, _Compiled] = {}


def _compiled(rules: RuleSet) -> _Compiled:
    c = _COMPILED.get(rules.table)
    if c is None:
        c = _COMPILED[rules.table] = _Compiled(rules)
    return c


_running, _success = predicate(REPORT_RUNNING), predicate(REPORT_SUCCESS)
_list_failed = predicate(LIST_FILTER_FAILED)


def status_of(trigger_code: int, handle_code: int, rules: RuleSet = ORTH_RULES) -> str:
    """A row's status label under ``rules``: the first declared rule that holds (cached per code pair)."""
    c = _compiled(rules)
    key = (trigger_code, handle_code)
    s = c.cache.get(key)
    if s is None:
        r = {"trigger_code": trigger_code, "handle_code": handle_code}
        s = next(st for st, p in c.preds if p(r))
        if len(c.cache) < 4096:
            c.cache[key] = s
    return s


REPORT_BUCKETS = ("running", "suc", "fail")


def report_bucket(trigger_code: int, handle_code: int) -> str:
    """§5.3: which count of orth_job_log_report a row adds to: running, suc or fail (= total - running - suc)."""
    r = {"trigger_code": trigger_code, "handle_code": handle_code}
    if _running(r):
        return "running"
    if _success(r):
        return "suc"
    return "fail"


def report_bucket_sql(quote: str = "") -> str:
    return (f"CASE WHEN {sql(REPORT_RUNNING, quote)} THEN 'running' WHEN {sql(REPORT_SUCCESS, quote)} THEN 'suc' "
            "ELSE 'fail' END")


def status_index(cols: dict, rules: RuleSet = ORTH_RULES):
    """The status rules over columns (``trigger_code``, ``handle_code`` numpy arrays): each row's label as its index
    in ``ALL_LABELS`` (int8), the first declared rule that holds — ``status_of`` column-wise."""
    import numpy as np
    n = len(cols["trigger_code"])
    out = np.full(n, -1, np.int8)
    for k, f in _compiled(rules).vecs:
        out = np.where((out < 0) & f(cols), np.int8(k), out)
    return out


def bucket_index(cols: dict):
    """§5.3 over columns: 0 running, 1 suc, 2 fail (``REPORT_BUCKETS`` order) — ``report_bucket`` column-wise."""
    import numpy as np
    return np.where(_vec_running(cols), np.int8(0), np.where(_vec_success(cols), np.int8(1), np.int8(2)))


_vec_running, _vec_success = vector(REPORT_RUNNING), vector(REPORT_SUCCESS)
