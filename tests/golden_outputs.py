"""Every output of dump / replay / stats / verify over every fixture, as today's code wrote it (issue 14).

``CASES`` lists (name, argv) pairs: the workq and Kestrel fixtures plus a few generated workq logs (schedules,
reused ids, leases, results, expired adds), each through the outputs issue 14 rewrites (JSON rows, the
replayed state, stats) and the ones it must leave alone (tables, verify). ``tests/golden/outputs.json`` holds
the sha256 and size of ``exit {code}\\n--- stdout\\n...--- stderr\\n...`` of each, recorded with the code
before the compact state and the streaming writers existed: first on commit 1c22d37, then again on main at
9124e56 (the operator CLI of issue 9 merged) and at 5f8be1e (orth-joblog's fast path merged) and 793d68c, each time from a
checkout of main with its own C kernel built in place (not one output differed from 1c22d37's); re-recorded on branch h20a for issue 20's one intended change
(54 outputs: Kestrel replay's summary line in words, '4 queued, 0 open', not a dict repr; the other 1129 equal);
re-recorded for the one JSON vocabulary (every JSON output: job_id and record_index everywhere, findings a list
with counts, the run's exit_code and verdict in every document, a summary line ending every JSON Lines stream, no
exit_class, "at" beside every file and offset; tables and stderr byte-identical, and every JSON output equal to
the old one with the renames undone and the additions dropped); tests/test_outputs_golden.py compares today's outputs with it under the C kernel
and under the pure-Python one.

    python -m tests.golden_outputs            # check (what the test does), print the differences
    python -m tests.golden_outputs --record   # rewrite the golden file (only when an output is meant to change)
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "outputs.json")
AS_OFS = ("2026-11-21T23:30:00Z", "2026-11-21T22:00:00Z", "2027-01-01T00:00:00Z")

#: generated logs (engine.sample.generate): name -> SampleSpec arguments
GENERATED = {
    "gen-plain": dict(records=600, segment_size=6000, seed=3, queues=4, payload_max=48),
    "gen-reuse": dict(records=900, segment_size=20000, seed=7, queues=3, payload_max=90, reuse_ids=0.6),
    "gen-short-ttl": dict(records=500, segment_size=1 << 20, seed=11, ttl_ms=(1_000, 4_000_000)),
}


def _inputs() -> list[tuple[str, str, str]]:
    """(name, format, relative path) of every input, run from the directory holding ``gen/``."""
    out = []
    for fmt, sub in (("workq", "log"), ("kestrel", "queue")):
        base = os.path.join(ROOT, "fixtures", fmt)
        for name in sorted(os.listdir(base)):
            if os.path.isdir(os.path.join(base, name, sub)):
                out.append((f"{fmt}/{name}", fmt, f"fixtures/{fmt}/{name}/{sub}"))
    for name in GENERATED:
        out.append((name, "workq", f"gen/{name}"))
    return out


def cases() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for name, fmt, path in _inputs():
        wq = fmt == "workq"
        per = [
            ["dump", "-o", "jsonl"], ["dump", "-o", "json"], ["dump", "-o", "jsonl", "--payload", "text"],
            ["dump", "-o", "jsonl", "--payload", "hex"], ["dump", "-o", "json", "--payload", "none"],
            ["dump", "-o", "jsonl", "--limit", "3"], ["dump"], ["dump", "--stats", "-o", "json"],
            ["replay", "-o", "jsonl"], ["replay", "-o", "json"], ["replay"], ["replay", "--summary"],
            ["replay", "--summary", "-o", "json"], ["replay", "--summary", "-o", "jsonl"],
            ["stats"], ["stats", "-o", "json"], ["stats", "-o", "jsonl"],
            ["verify", "-o", "json", "--max-findings", "1000"], ["verify"],
        ]
        if wq:
            per.append(["dump", "-o", "jsonl", "--type", "add,complete"])
        for argv in per:
            as_ofs = AS_OFS if argv[0] in ("replay", "stats", "verify") or argv == ["dump", "-o", "jsonl"] else AS_OFS[:1]
            for a in as_ofs:
                out.append((f"{name} {' '.join(argv)} @{a}", argv + ["--as-of", a, path]))
    two = ["fixtures/workq/sample-clean/log", "gen/gen-reuse"]
    for argv in (["stats", "-o", "json"], ["stats"], ["dump", "-o", "jsonl"], ["dump", "-o", "json"]):
        out.append((f"two logs {' '.join(argv)}", argv + ["--as-of", AS_OFS[0], *two]))
    return out


def make_generated(directory: str) -> None:
    from wqtool.engine.workq.sample import SampleSpec, generate
    for name, kw in GENERATED.items():
        d = os.path.join(directory, "gen", name)
        if not os.path.isdir(d):
            generate(d, SampleSpec(**kw))


def run_case(argv: list[str]) -> tuple[str, int]:
    from tests.conftest import cli
    r = cli(*argv)
    text = f"exit {r.code}\n--- stdout\n{r.out}--- stderr\n{r.err}"
    b = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(b).hexdigest(), len(b)


def outputs(workdir: str, only=None) -> dict[str, list]:
    """Run every case from ``workdir`` (which gets ``gen/`` and a copy of the repo's ``fixtures``: its own files,
    so that another test process reading the same fixture — holding it open — is never taken for a live writer of
    it: Kestrel's torn tail would read as a record in flight)."""
    make_generated(workdir)
    copy = os.path.join(workdir, "fixtures")
    if not os.path.exists(copy):
        import shutil
        shutil.copytree(os.path.join(ROOT, "fixtures"), copy, symlinks=True)
    here = os.getcwd()
    os.chdir(workdir)
    try:
        return {name: list(run_case(argv)) for name, argv in cases() if only is None or only(name)}
    finally:
        os.chdir(here)


def main() -> int:
    import tempfile
    record = "--record" in sys.argv
    with tempfile.TemporaryDirectory() as d:
        got = outputs(d)
    if record:
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w") as f:
            json.dump(got, f, indent=0, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(got)} outputs -> {GOLDEN}")
        return 0
    want = json.load(open(GOLDEN))
    bad = [k for k in want if got.get(k) != want[k]]
    for k in bad:
        print("DIFFERS:", k)
    print(f"{len(want) - len(bad)}/{len(want)} equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
