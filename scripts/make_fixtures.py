"""Regenerate the golden corpus deterministically through wqtool's own writer.

    python scripts/make_fixtures.py          # rewrite fixtures/workq/<scenario>/ and every expected.jsonl
    python scripts/make_fixtures.py --check  # exit 1 if anything on disk differs (tests run this)

Each scenario folder holds the log in ``log/`` and, beside it, ``expected.jsonl`` (= `wqtool dump -o jsonl --payload base64`)
plus ``expected-verify.json`` (= `wqtool verify -o json --as-of AS_OF --max-findings 1000`).
Upstream fixtures (upstream-*) are real workq-server 0.2.0 output: only their expected files are generated.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.cli import run  # noqa: E402
from wqtool.engine.workq.fastpath import encode_record  # noqa: E402
from wqtool.engine.workq.sample import SampleSpec, generate  # noqa: E402
from wqtool.engine.workq.writer import SegmentWriter  # noqa: E402
from wqtool.formats._common import GoTime  # noqa: E402
from wqtool.formats.workq import CmdType  # noqa: E402
from wqtool.engine.workq.model import Command  # noqa: E402

AS_OF = "2026-11-21T23:30:00Z"
BASE = os.path.join("fixtures", "workq")
SMALL = SampleSpec(records=60, segment_size=1024, seed=7, payload_max=40)


def _segs(d: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".log"))


def _flip(path: str, offset: int, mask: int = 0x01) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


def _record_offsets(path: str) -> list[tuple[int, int]]:
    """(offset, length) of each record of a clean segment, through the engine's reader."""
    from wqtool.engine.workq.reader import discover, RecordReader
    from wqtool.engine.workq.model import Record
    log = discover([path])[0]
    return [(e.offset, e.length) for e in RecordReader(log).events() if e.__class__ is Record]


def sample_clean(d):
    generate(d, SMALL)


def torn_tail_mid_record(d):
    generate(d, SMALL)
    last = _segs(d)[-1]
    off, length = _record_offsets(last)[-1]
    with open(last, "r+b") as f:
        f.truncate(off + length // 2)


def crc_mismatch_mid_segment(d):
    generate(d, SMALL)
    first = _segs(d)[0]
    off, length = _record_offsets(first)[3]
    _flip(first, off + length - 6, 0x10)


def junk_appended(d):
    generate(d, SMALL)
    with open(_segs(d)[-1], "ab") as f:
        f.write(b"\x00" * 32)


def empty_newest_segment(d):
    generate(d, SMALL)
    n = int(os.path.basename(_segs(d)[-1])[:9]) + 1
    open(os.path.join(d, f"{n:09d}.log"), "wb").close()


def bad_header_middle_segment(d):
    generate(d, SMALL)
    _flip(_segs(d)[1], 0, 0x01)


T = GoTime.from_unix_ns(1_795_302_000_000_000_000)
J1 = bytes.fromhex("00000000000040008000000000000001")
J2 = bytes.fromhex("00000000000040008000000000000002")


def _hand_log(d, commands):
    with SegmentWriter(d) as w:
        for i, c in enumerate(commands):
            if isinstance(c, bytes):
                w.append_raw(encode_record(GoTime(T.sec + i, 0), c))
            else:
                w.append(c, GoTime(T.sec + i, 0))


def _add(jid):
    return Command(CmdType.ADD, jid, b"q1", 5000, 3_600_000, 0, 0, 0, b"hello", GoTime(0, 0, -1), T)


def duplicate_add(d):
    _hand_log(d, [_add(J1), Command(CmdType.START_ATTEMPT, J1), _add(J1), _add(J2)])


def unknown_command(d):
    _hand_log(d, [_add(J1), b"\x09\x00", Command(CmdType.START_ATTEMPT, J1)])


def double_lease_and_result(d):
    _hand_log(d, [_add(J1), Command(CmdType.START_ATTEMPT, J1), Command(CmdType.START_ATTEMPT, J1),
                  Command(CmdType.COMPLETE, J1, result=b"a"), Command(CmdType.FAIL, J1, result=b"b"),
                  Command(CmdType.COMPLETE, J2, result=b"run job")])


SCENARIOS = {
    "sample-clean": sample_clean,
    "torn-tail-mid-record": torn_tail_mid_record,
    "crc-mismatch-mid-segment": crc_mismatch_mid_segment,
    "junk-appended": junk_appended,
    "empty-newest-segment": empty_newest_segment,
    "bad-header-middle-segment": bad_header_middle_segment,
    "duplicate-add": duplicate_add,
    "unknown-command": unknown_command,
    "double-lease-and-result": double_lease_and_result,
}


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue()


def expected_files(rel: str) -> dict[str, str]:
    """The expected outputs of one fixture folder (paths relative to the repo root)."""
    _, dump = cli("dump", "-o", "jsonl", "--payload", "base64", "--as-of", AS_OF, rel)
    _, ver = cli("verify", "-o", "json", "--as-of", AS_OF, "--max-findings", "1000", rel)
    return {"expected.jsonl": dump, "expected-verify.json": ver}


def build(check: bool) -> int:
    os.chdir(ROOT)
    drift = []
    for name, fn in SCENARIOS.items():
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, name)
            fn(d)
            target = os.path.join(BASE, name, "log")
            new = {n: open(os.path.join(d, n), "rb").read() for n in sorted(os.listdir(d)) if n.endswith(".log")}
            old = ({n: open(os.path.join(target, n), "rb").read() for n in sorted(os.listdir(target))
                    if n.endswith(".log")} if os.path.isdir(target) else {})
            if new != old:
                drift.append(target)
                if not check:
                    shutil.rmtree(target, ignore_errors=True)
                    os.makedirs(target)
                    for n, b in new.items():
                        with open(os.path.join(target, n), "wb") as f:
                            f.write(b)
    for name in sorted(os.listdir(BASE)):
        rel = os.path.join(BASE, name)
        if not os.path.isdir(os.path.join(rel, "log")):
            continue
        for fname, text in expected_files(os.path.join(rel, "log")).items():
            p = os.path.join(rel, fname)
            cur = open(p, encoding="utf-8").read() if os.path.exists(p) else None
            if cur != text:
                drift.append(p)
                if not check:
                    with open(p, "w", encoding="utf-8") as f:
                        f.write(text)
    for p in drift:
        print(("drift: " if check else "wrote: ") + p)
    return 1 if (check and drift) else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    sys.exit(build(ap.parse_args().check))
