"""One conformance suite for every registered format, over its fixtures (``fixtures/<format>/<scenario>/``).

A scenario directory holds exactly one subdirectory or log file (the PATH) beside its expected-*.json files; the
expected verdict is ``expected-verify.json``'s ``exit_code`` or, for a set of logs, the worst ``exit_code`` of
``expected-replay.json``'s ``queues`` / ``logs``. The instant is the file's ``as_of_ns`` (``AS_OF`` otherwise).

For every format and scenario: auto-detection picks the format; every record's JSON row has exactly the view's
fields, is typed for Spark and survives a JSON round trip; verify gives the expected verdict; the replay digest is
stable and the hot path equals the reference pass; pack (clean or torn input) writes a log that replays to the
same digest, and packing that output again is byte-identical. For one clean scenario per format, a crash injected
before and after every step of ``pack --apply`` leaves a log that replays to the original state.
"""
from __future__ import annotations

import glob
import inspect
import json
import os
import shutil

import pytest

from tests.conftest import AS_OF, ROOT
from wqtool.engine import format as registry
from wqtool.engine.caps import Plans
from wqtool.engine.findings import Verdict, worst
from wqtool.engine.format import Options, PackOptions, resolve
from wqtool.engine.instant import parse_instant
from wqtool.engine.plan import InjectedCrash
from wqtool.errors import PackRefused, UsageError
from wqtool.exitcodes import CODES

SPARK_TYPES = {"string", "long", "int", "u64", "bool", "bytes"}


def _scenarios():
    out = []
    for fmt in registry.formats():
        for d in sorted(glob.glob(os.path.join(ROOT, "fixtures", fmt.name, "*", ""))):
            inner = [n for n in os.listdir(d) if not n.startswith("expected") and not n.endswith(".md")]
            if len(inner) != 1:
                continue
            out.append(pytest.param(fmt.name, os.path.basename(os.path.dirname(d)), os.path.join(d, inner[0]),
                                    id=f"{fmt.name}-{os.path.basename(os.path.dirname(d))}"))
    return out


SCENARIOS = _scenarios()


def _doc(path: str) -> dict:
    d = os.path.dirname(path)
    for name in ("expected-verify.json", "expected-replay.json"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return json.load(open(p))
    raise AssertionError(f"{d}: no expected-verify.json or expected-replay.json")


def _expected(path: str) -> tuple[Verdict, int]:
    doc = _doc(path)
    as_of = doc.get("as_of_ns", parse_instant(doc["as_of"]) if "as_of" in doc else parse_instant(AS_OF))
    for key in ("exit_code", "exit"):
        if key in doc:
            return CODES.verdict_of(doc[key]), as_of     # the fixtures keep the exit code
    return worst(CODES.verdict_of(x["exit_code"]) for x in doc.get("queues", doc.get("logs", []))), as_of


def _paths(path: str) -> list[str]:
    """The PATHs a scenario names (``paths`` in its expected file: e.g. a database URL), else the one inside it."""
    try:
        doc = _doc(path)
    except AssertionError:        # a working copy outside the fixtures
        return [path]
    return [p if "://" in p else os.path.join(ROOT, p) for p in doc.get("paths", [])] or [path]


def _logs(fmt_name: str, path: str, as_of: int):
    return resolve(_paths(path), fmt_name, Options(as_of))


def test_every_builtin_format_has_conformance_fixtures():
    names = {p.values[0] for p in SCENARIOS}
    assert {"workq", "kestrel"} <= names


@pytest.mark.parametrize("fmt_name, scenario, path", SCENARIOS)
def test_auto_detection_picks_the_format(fmt_name, scenario, path):
    """Auto-detection picks the format — or, for an input that carries no evidence of any format (a CSV export
    without its header row), refuses with a usage error; never another format, except a format that shares the
    directory with it (``shares_dir_with``, declared by both), whose log comes beside its own."""
    try:
        got = {log.fmt.name for log in resolve(_paths(path), "auto", Options(0))}
    except UsageError as e:
        assert "pass --format" in str(e) or "not " in str(e), str(e)
        return
    fmt = registry.get(fmt_name)
    assert fmt_name in got and got - {fmt_name} <= {o for o in fmt.about.shares_dir_with
                                                    if fmt_name in registry.get(o).about.shares_dir_with}


def test_shared_directories_are_declared_by_both_formats():
    """``shares_dir_with`` names registered formats, and each names the other back (detection requires both)."""
    for f in registry.formats():
        for other in f.about.shares_dir_with:
            assert f.name in registry.get(other).about.shares_dir_with, (f.name, other)


@pytest.mark.parametrize("fmt_name, scenario, path", SCENARIOS)
def test_rows_are_the_views_fields_typed_and_json_stable(fmt_name, scenario, path):
    verdict, as_of = _expected(path)
    for log in _logs(fmt_name, path, as_of):
        fmt, view = log.fmt, log.fmt.record_view
        assert set(view.types) == set(view.fields) and set(view.types.values()) <= SPARK_TYPES
        n = 0
        for ev in fmt.run(log.data, Options(as_of), limit=0).events():
            if ev.__class__ is fmt.record_cls:
                row = view.row(ev, "base64")
                assert list(row) == list(view.fields)
                assert json.loads(json.dumps(row)) == row
                assert len(view.cells(ev, "text")) == len(view.columns)
                facts = fmt.facts(ev)
                assert facts.length == ev.length and (facts.kind in fmt.dump.record_kinds or facts.kind.startswith("("))
                n += 1
            elif ev.severity == "error":
                row = view.damage_row(ev)
                assert set(row) == set(view.fields)


@pytest.mark.parametrize("fmt_name, scenario, path", SCENARIOS)
def test_verify_gives_the_expected_verdict(fmt_name, scenario, path):
    verdict, as_of = _expected(path)
    logs = _logs(fmt_name, path, as_of)
    got = worst(lr.verdict for log in logs for lr in log.fmt.passes.verify([log.data], Options(as_of)).logs)
    assert got == verdict
    for log in logs:
        for lr in log.fmt.passes.verify([log.data], Options(as_of)).logs:
            assert set(lr.counts) <= set(log.fmt.codes), "every finding code is declared by its format"


@pytest.mark.parametrize("fmt_name, scenario, path", SCENARIOS)
def test_replay_digest_is_stable_and_the_fast_path_equals_the_reference(fmt_name, scenario, path):
    _, as_of = _expected(path)
    for log in _logs(fmt_name, path, as_of):
        fmt, opts = log.fmt, Options(as_of)
        a = fmt.passes.run_log(log.data, opts)
        b = fmt.passes.run_log(log.data, opts)
        ref = fmt.run(log.data, opts)
        for _ in ref.events():
            pass
        da = fmt.state_view(a.state, log.data).digest()
        assert da == fmt.state_view(b.state, log.data).digest() == fmt.state_view(ref.report.state, log.data).digest()
        assert (a.verdict, dict(a.counts), a.records) == (ref.report.verdict, dict(ref.report.counts), ref.report.records)


def _can_pack(fmt_name: str) -> bool:
    return Plans.can(registry.get(fmt_name), "pack")


def _packable(fmt_name, path, as_of):
    out = []
    for log in _logs(fmt_name, path, as_of):
        try:
            out.append((log, log.fmt.plans.pack(log.data, PackOptions(as_of))))
        except PackRefused as e:
            assert e.verdict in (Verdict.CORRUPT, Verdict.INVALID_HISTORY)
    return out


def _digest_of(fmt_name: str, path: str, as_of: int) -> list[str]:
    return [log.fmt.state_view(log.fmt.passes.run_log(log.data, Options(as_of)).state, log.data).digest()
            for log in _logs(fmt_name, path, as_of)]


@pytest.mark.parametrize("fmt_name, scenario, path", SCENARIOS)
def test_pack_preserves_the_digest_and_is_idempotent(fmt_name, scenario, path, tmp_path):
    if not _can_pack(fmt_name):
        pytest.skip(f"{fmt_name} has no pack")
    verdict, as_of = _expected(path)
    plans = _packable(fmt_name, path, as_of)
    if verdict in (Verdict.CLEAN, Verdict.TORN_TAIL):
        assert plans, "clean and torn input is packed"
    for i, (log, plan) in enumerate(plans):
        out1, out2 = str(tmp_path / f"a{i}"), str(tmp_path / f"b{i}")
        os.makedirs(out1)
        os.makedirs(out2)
        res = plan.write(out1)
        assert res.digest == plan.report_doc()["digest"]
        [log2] = resolve([res.path], fmt_name, Options(as_of))
        plan2 = log2.fmt.plans.pack(log2.data, PackOptions(as_of))
        assert plan2.report_doc()["digest"] == res.digest
        res2 = plan2.write(out2)
        a = sorted(os.path.relpath(p, out1) for p in glob.glob(os.path.join(out1, "**"), recursive=True))
        b = sorted(os.path.relpath(p, out2) for p in glob.glob(os.path.join(out2, "**"), recursive=True))
        assert a == b
        for rel in a:
            pa, pb = os.path.join(out1, rel), os.path.join(out2, rel)
            if os.path.isfile(pa):
                assert open(pa, "rb").read() == open(pb, "rb").read(), rel
        assert res2.digest == res.digest


def _one_clean_per_format():
    seen, out = set(), []
    for p in SCENARIOS:
        fmt_name, scenario, path = p.values
        if fmt_name not in seen and _can_pack(fmt_name) and _expected(path)[0] == Verdict.CLEAN and \
                os.path.isdir(path):
            seen.add(fmt_name)
            out.append(p)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fmt_name, scenario, path", _one_clean_per_format())
def test_a_crash_at_every_apply_step_leaves_a_replayable_log(fmt_name, scenario, path, tmp_path):
    _, as_of = _expected(path)
    base = str(tmp_path / "base")
    shutil.copytree(path, base)
    original = _digest_of(fmt_name, base, as_of)
    [(_, plan)] = _packable(fmt_name, base, as_of)[:1] or [(None, None)]
    labels = plan.apply_steps()
    assert len(labels) >= 5
    fmt = registry.get(fmt_name)
    for when in ("before", "after"):
        for label in labels:
            d = str(tmp_path / f"{when}-{label}".replace(":", "_").replace("/", "_"))
            shutil.copytree(base, d)
            [log] = _logs(fmt_name, d, as_of)
            p = log.fmt.plans.pack(log.data, PackOptions(as_of))
            kw = {"stale_lock_hold": 0} if "stale_lock_hold" in inspect.signature(type(p).apply).parameters else {}
            with pytest.raises(InjectedCrash):
                p.apply(fail_at=f"{when}:{label}", **kw)
            fmt.plans.finish_interrupted(d)   # what the next run does first
            assert _digest_of(fmt_name, d, as_of) == original, f"{when}:{label}"
            shutil.rmtree(d, ignore_errors=True)
            for leftover in glob.glob(d + ".*"):
                shutil.rmtree(leftover, ignore_errors=True)


@pytest.mark.parametrize("fmt_name, scenario, path", _one_clean_per_format())
def test_a_crash_half_way_through_every_write_step_is_finished_by_the_next_run(fmt_name, scenario, path, tmp_path):
    """``during:<write step>`` stops every format's write half way (the template's per-file rewrite included: EVTJ's
    temp could not be crashed half written before), and the next apply starts again and installs the same state."""
    _, as_of = _expected(path)
    base = str(tmp_path / "base")
    shutil.copytree(path, base)
    original = _digest_of(fmt_name, base, as_of)
    [(_, plan)] = _packable(fmt_name, base, as_of)[:1]
    writes = [x for x in plan.apply_steps() if x.startswith("write")]
    assert writes
    for label in writes:
        d = str(tmp_path / label.replace(":", "_").replace("/", "_"))
        shutil.copytree(base, d)
        [log] = _logs(fmt_name, d, as_of)
        with pytest.raises(InjectedCrash):
            log.fmt.plans.pack(log.data, PackOptions(as_of)).apply(fail_at=f"during:{label}")
        registry.get(fmt_name).plans.finish_interrupted(d)
        assert _digest_of(fmt_name, d, as_of) == original, label
        [log] = _logs(fmt_name, d, as_of)
        log.fmt.plans.pack(log.data, PackOptions(as_of)).apply()
        assert _digest_of(fmt_name, d, as_of) == original, label
