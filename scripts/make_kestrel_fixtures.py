#!/usr/bin/env python3
"""Build the Kestrel golden corpus deterministically through the engine's writer.

    python scripts/make_kestrel_fixtures.py            # (re)write fixtures/kestrel/
    python scripts/make_kestrel_fixtures.py --check    # exit 1 if the committed corpus drifted

Each scenario is ``fixtures/kestrel/<kebab-scenario>/queue/`` (the queue directory) plus ``expected.jsonl``
(one record row per record, damage rows in place, ``record_to_jsonable`` / ``damage_to_jsonable``) and
``expected-replay.json`` (exit code, counts, findings, digests, queue) at the fixed instant ``AS_OF_NS``.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine.kestrel.model import Record  # noqa: E402
from wqtool.engine.kestrel.reader import JournalReader, discover  # noqa: E402
from wqtool.engine.kestrel.serialize import damage_to_jsonable, record_to_jsonable  # noqa: E402
from wqtool.engine.kestrel.verify import run_log  # noqa: E402
from wqtool.engine.kestrel.writer import JournalWriter  # noqa: E402
from wqtool.engine.serialize import finding_json  # noqa: E402
from wqtool.exitcodes import CODES  # noqa: E402

T = 1_300_000_000_000            # spec §13.1
AS_OF_NS = (T + 3_600_000) * 1_000_000
FIXTURES = os.path.join("fixtures", "kestrel")


def _w(d: str, name: str, build) -> None:
    with JournalWriter(os.path.join(d, name)) as w:
        build(w)


def clean_journal(d):
    """The spec's 'correctly interleave transactions' journal, then more 2.x traffic (expiry, continue)."""
    def b(w):
        w.add(b"house", T)
        w.add(b"cat", T)
        w.remove_tentative(1)
        w.remove_tentative(2)
        w.unremove(1)
        w.confirm_remove(2)
        w.remove()
        w.add(b"expires-soon", T + 10, T + 60_000)
        w.add(b"never-expires", T + 20)
        w.remove_tentative(3)
        w.continue_(3, b"continued", T + 30)
        w.add(b"open-at-shutdown", T + 40)
        w.remove_tentative(4)
    _w(d, "things", b)


def rotated_set_with_pack(d):
    """A rotated set whose pack is finished and cleaned up except for the final rename: jobs.2000.pack superseding
    nothing, then a rotated file and the live file."""
    _w(d, "jobs.2000.pack", lambda w: (w.add(b"packed-open", T), w.remove_tentative(7),
                                       [w.add(b"packed-%d" % i, T + i) for i in range(3)]))
    _w(d, "jobs.3000", lambda w: (w.add(b"rotated", T + 100), w.remove(), w.confirm_remove(7)))
    _w(d, "jobs", lambda w: (w.add(b"live", T + 200), w.remove_tentative(8)))


def half_finished_pack(d):
    """Spec §9: test.50, test.100, test.100.pack, test.3000, test -> Kestrel deletes test.50 and test.100 and
    renames the pack; wqtool replays it that way without touching anything. Plus a leftover temp file."""
    _w(d, "test.50", lambda w: (w.add(b"a", T), w.add(b"b", T), w.remove_tentative(1)))
    _w(d, "test.100", lambda w: (w.add(b"c", T), w.confirm_remove(1)))
    _w(d, "test.100.pack", lambda w: (w.add(b"b", T), w.add(b"c", T)))
    _w(d, "test.3000", lambda w: (w.remove(), w.add(b"d", T)))
    _w(d, "test", lambda w: w.add(b"e", T))
    _w(d, "test~~4000", lambda w: w.add(b"half-written-rewrite", T))


def torn_tail(d):
    """The live file ends inside an ADDX (the server died mid-write): exit 1, truncating at the last good offset
    loses nothing."""
    from wqtool.engine.kestrel.fastpath import encode_addx
    whole = encode_addx(b"the last item, cut short", T + 5)
    _w(d, "mail", lambda w: (w.add(b"one", T), w.add(b"two", T + 1), w.remove(), w.raw(whole[:30])))


def legacy_1x_journal(d):
    """A 1.x-era journal: a 1.x rewrite (ADD_XID + REMOVE_TENTATIVE (3) per open item, then SAVE_XID, then ADDX per
    queued item), then 1.x traffic: an implicit-xid REMOVE_TENTATIVE and its confirm, removes, and removes on an
    empty queue (legitimate in 1.x: it logged removes of items that had just expired)."""
    def b(w):
        w.add_xid(5, b"open-one", T)
        w.legacy_remove_tentative()
        w.add_xid(6, b"open-two", T)
        w.legacy_remove_tentative()
        w.save_xid(10)
        w.add(b"queued-1", T)
        w.add(b"queued-2", T)
        w.legacy_remove_tentative()   # 1.x: xid 11
        w.confirm_remove(11)
        w.remove()
        w.remove()
        w.remove()
    _w(d, "legacy", b)


def starling_legacy_add(d):
    """Starling-style legacy ADD (0) records (expiry in seconds, no add time) and REMOVE."""
    _w(d, "starling", lambda w: (w.legacy_add(b"expired-long-ago", 1_300_000_060), w.legacy_add(b"no-expiry", 0),
                                 w.legacy_add(b"relative-exptime", 30), w.remove()))


def damage_mid_live(d):
    """A bad opcode in the middle of the live file with valid records after it: exit 3 (Kestrel loses them)."""
    _w(d, "q", lambda w: (w.add(b"before", T), w.raw(b"\xff\xff"), w.add(b"after-1", T), w.add(b"after-2", T)))


def negative_size(d):
    """A negative block size in a rotated file: Kestrel 2.1.1+ exits at startup; exit 3."""
    import struct
    _w(d, "q.100", lambda w: (w.add(b"ok", T), w.raw(b"\x02" + struct.pack("<i", -16) + bytes(16))))
    _w(d, "q", lambda w: w.add(b"live", T))


def stray_names(d):
    """Names Kestrel 2.x cannot parse (startup fails) and one it replays as a rotated journal."""
    _w(d, "q.100", lambda w: w.add(b"rotated", T))
    _w(d, "q.100.bak", lambda w: w.add(b"a backup Kestrel replays as rotated 100", T))
    _w(d, "q.read.reader1", lambda w: w.raw(bytes.fromhex("263c2603") + bytes(12)))
    _w(d, "q", lambda w: w.add(b"live", T))


SCENARIOS = {
    "clean-journal": clean_journal,
    "rotated-set-with-pack": rotated_set_with_pack,
    "half-finished-pack": half_finished_pack,
    "torn-tail": torn_tail,
    "legacy-1x-journal": legacy_1x_journal,
    "starling-legacy-add": starling_legacy_add,
    "damage-mid-live": damage_mid_live,
    "negative-size": negative_size,
    "stray-names": stray_names,
}


def expected(scenario_dir: str) -> tuple[str, dict]:
    """(expected.jsonl text, expected-replay.json object) for a scenario, paths relative to the repo root."""
    qdir = os.path.join(scenario_dir, "queue")
    rows = []
    sets = discover([qdir])
    for fs in sets:
        for ev in JournalReader(fs).events():
            if isinstance(ev, Record):
                rows.append(record_to_jsonable(ev))
            elif ev.severity == "error":
                rows.append(damage_to_jsonable(ev))
    jsonl = "".join(json.dumps(r) + "\n" for r in rows)
    out = {"as_of_ns": AS_OF_NS, "queues": []}
    for fs in sets:
        r = run_log(fs, AS_OF_NS)
        ro = run_log(fs, AS_OF_NS, keep_open=True)
        out["queues"].append({
            "queue": fs.queue, "files": [f.path for f in fs.files], "superseded": sorted(fs.superseded),
            "exit_code": CODES.of(r.verdict), "records": r.records, "bytes": r.bytes,
            "counts": dict(sorted(r.counts.items())),
            "last_good": None if r.last_good is None else {"file": r.last_good[0], "offset": r.last_good[1]},
            "digest": r.state.digest(), "digest_keep_open": ro.state.digest(),
            "queue_items": [base64.b64encode(it.data).decode() for it in r.state.queue],
            "open_transactions": {str(x): base64.b64encode(it.data).decode() for x, it in sorted(ro.state.open.items())},
            "findings": [finding_json(f) for f in r.findings],
        })
    return jsonl, out


def build(dest_root: str) -> None:
    """Write every scenario under ``dest_root`` (a repo-relative directory, cwd = repo root)."""
    for name, fn in SCENARIOS.items():
        sd = os.path.join(dest_root, name)
        if os.path.exists(sd):
            shutil.rmtree(sd)
        qdir = os.path.join(sd, "queue")
        os.makedirs(qdir)
        fn(qdir)
        jsonl, rep = expected(sd)
        with open(os.path.join(sd, "expected.jsonl"), "w") as f:
            f.write(jsonl)
        with open(os.path.join(sd, "expected-replay.json"), "w") as f:
            json.dump(rep, f, indent=2, sort_keys=False)
            f.write("\n")
    with open(os.path.join(dest_root, "README.md"), "w") as f:
        f.write("# Kestrel journal fixtures\n\nGenerated by `scripts/make_kestrel_fixtures.py` (do not edit by hand). "
                "Each scenario: `queue/` (a Kestrel queue directory), `expected.jsonl` (dump rows), "
                f"`expected-replay.json` (verify/replay at as_of_ns={AS_OF_NS}).\n\n")
        for name, fn in SCENARIOS.items():
            f.write(f"- `{name}`: {' '.join(fn.__doc__.split())}\n")


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for dp, _, files in os.walk(root):
        for n in files:
            p = os.path.join(dp, n)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare a fresh build with the committed corpus")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if not args.check:
        os.makedirs(FIXTURES, exist_ok=True)
        build(FIXTURES)
        print(f"wrote {len(SCENARIOS)} scenarios to {FIXTURES}")
        return 0
    # build into a sibling temp dir, then rewrite its paths to compare
    tmp = tempfile.mkdtemp(prefix=".kestrel-fixtures-", dir=os.path.dirname(FIXTURES))
    try:
        build(tmp)
        fresh = {p: b.replace(os.path.relpath(tmp).encode(), FIXTURES.encode()) for p, b in _tree(tmp).items()}
        committed = _tree(FIXTURES)
        drift = sorted(set(fresh) ^ set(committed)) + sorted(p for p in fresh if p in committed
                                                             and fresh[p] != committed[p])
    finally:
        shutil.rmtree(tmp)
    if drift:
        print("kestrel fixtures drifted: " + ", ".join(drift), file=sys.stderr)
        return 1
    print("kestrel fixtures up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
