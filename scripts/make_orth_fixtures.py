#!/usr/bin/env python3
"""Build the Orth golden corpus deterministically through wqtool's own writers
(``tests.writers.orth_callbacks``, ``tests.writers.orth_executor_logs``).

    python scripts/make_orth_fixtures.py            # (re)write fixtures/orth/
    python scripts/make_orth_fixtures.py --check    # exit 1 if the committed corpus drifted

Each scenario is ``fixtures/orth/<kebab-scenario>/logpath/`` (an executor ``logPath``: date directories,
``callbacklogs/``, ``callbacklog/``) plus ``expected.json``: for each format that reads it, the dump rows, the
verify result (exit code, counts, findings) and the replay (rows, digest) at ``AS_OF``. The ``upstream`` text of
poison findings names the files Orth would never reach in *this* directory's readdir order, which no name decides
(it differs between filesystems), so it is left out of the expected file; the tests check it against
``os.listdir``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine import format as registry  # noqa: E402
from wqtool.exitcodes import CODES  # noqa: E402
from wqtool.engine.format import Options  # noqa: E402
from wqtool.engine.javacodec.gson import Entry  # noqa: E402
from tests.writers.orth_callbacks import write_atomic, write_legacy_file, write_retry_file  # noqa: E402
from tests.writers.orth_executor_logs import ExecutorLogWriter, XxlJobLogWriter  # noqa: E402
from wqtool.engine.serialize import finding_json  # noqa: E402

T = 1769740800000                       # 2026-01-30T02:40:00Z, the spec's examples' trigger time
AS_OF = "2026-02-01T00:00:00Z"
AS_OF_NS = 1769904000 * 1_000_000_000
FIXTURES = os.path.join("fixtures", "orth")
VOLATILE = {"OC-REJECTED", "OC-TRUNCATED", "OC-NULL"}     # their upstream text depends on readdir order
TRICKY = "<b>x</b> & \"quoted\" 'single' a=b\\path\ttab\x01ctl\u2028ls\u2029ps é中😀"


def _logs(lp: str) -> ExecutorLogWriter:
    return ExecutorLogWriter(lp)


def _named(lp: str, data: bytes, prefix: str = "orth") -> str:
    """Bytes Orth did not write, under the name Orth gives bytes (their md5): only what the scenario is about is
    wrong (a name that does not match its bytes is OC-NAME-MD5, an error of its own)."""
    return write_atomic(os.path.join(lp, "callbacklogs", f"{prefix}-callback-{hashlib.md5(data).hexdigest()}.log"),
                        data)


# ---------------------------------------------------------------- scenarios (each gets logpath/)
def clean_retry_files(lp):
    """Orth's own output: the spec's two derived examples byte for byte (orth-callback-059538ef....log and
    orth-callback-a7e13263....log) and a batch with every tricky string (<, &, quotes, control characters, U+2028,
    non-ASCII); each job's log shows the failed attempt that wrote the file."""
    write_retry_file(lp, [Entry(1, T, 200)])
    write_retry_file(lp, [Entry(42, T + 123, 500, "<br>x=\"1\" & 'y'\n"), Entry(43, T + 1000, 200)])
    write_retry_file(lp, [Entry(44, T + 2000, 502, "Job execution timeout"), Entry(45, T + 3000, 500, TRICKY)])
    w = _logs(lp)
    for lid, off, code in ((1, 0, 200), (42, 123, 500), (43, 1000, 200), (44, 2000, 502), (45, 3000, 500)):
        w.start(lid, T + off, T + off + 1000, "p")
        if code == 502:
            w.timeout(lid, T + off, T + off + 2000)
        else:
            w.finish(lid, T + off, T + off + 2000, code, None if code == 200 else "boom")
        w.callback(lid, T + off, T + off + 3000, "failed")


def name_md5_mismatch(lp):
    """A retry file renamed (its bytes hash to another name), and one re-encoded with spaces whose canonical
    encoding still hashes to its name (content Orth wrote, bytes rewritten)."""
    p = write_retry_file(lp, [Entry(7, T, 200)])
    os.rename(p, os.path.join(os.path.dirname(p), "orth-callback-" + "0" * 32 + ".log"))
    p = write_retry_file(lp, [Entry(8, T, 500, "x")])
    write_atomic(p, b'[ {"logId": 8, "logDateTim": 1769740800000, "handleCode": 500, "handleMsg": "x"} ]')


def bit_flip(lp):
    """A retry file Orth wrote with one bit flipped on disk (bit 1 of the last digit of logId 12345: now 12347,
    which another file also holds): OC-NAME-MD5 names the bit and the entry that now parses differently; repair
    -O md5_action=restore plans the original bytes back."""
    p = write_retry_file(lp, [Entry(12345, T, 200), Entry(12346, T, 500, "downstream error")])
    write_retry_file(lp, [Entry(12347, T, 200)])
    data = bytearray(open(p, "rb").read())
    data[data.index(b"12345") + 4] ^= 0x02
    write_atomic(p, bytes(data))


def invalid_utf8(lp):
    """A retry file whose handleMsg holds a byte that is not UTF-8 (0xff): Orth keeps it forever."""
    good = write_retry_file(lp, [Entry(9, T, 500, "AB")])
    data = open(good, "rb").read().replace(b"AB", b"A\xffB")
    os.unlink(good)
    _named(lp, data)


def lenient_only_json(lp):
    """The spec's lenient example [{logId:1,'handleCode':200,/*c*/handleMsg:abc}]: Gson accepts it, strict JSON
    does not."""
    _named(lp, b"[{logId:1,'handleCode':200,/*c*/handleMsg:abc}]")


def poison_file(lp):
    """A file Orth's Gson rejects (a top-level object, not an array) next to two good files: Orth's retry pass aborts
    at it on every run, so the files listed after it are never retried."""
    write_atomic(os.path.join(lp, "callbacklogs", "orth-callback-" + "2" * 32 + ".log"),
                 b'{"logId":10,"logDateTim":1769740800000,"handleCode":200}')
    write_retry_file(lp, [Entry(11, T, 200)])
    write_retry_file(lp, [Entry(12, T, 500, "failed")])


def truncated_write(lp):
    """A retry file cut short mid-entry (FileTool.writeString is not atomic; the executor died)."""
    p = write_retry_file(lp, [Entry(13, T, 200), Entry(14, T, 500, "half written")])
    data = open(p, "rb").read()
    write_atomic(p, data[:len(data) * 2 // 3])


def handle_codes(lp):
    """handleCode 404 (unknown: the admin stores it, the UI says Failed) and 0 (executors never send it: replay
    --send refuses the file)."""
    write_retry_file(lp, [Entry(15, T, 404, "odd")])
    write_retry_file(lp, [Entry(16, T, 0)])


def empty_files(lp):
    """An empty file, a blank one and an empty batch []: Orth deletes them without sending anything."""
    d = os.path.join(lp, "callbacklogs")
    write_atomic(os.path.join(d, "orth-callback-d41d8cd98f00b204e9800998ecf8427e.log"), b"")
    _named(lp, b" \n\t ")
    write_atomic(os.path.join(d, "orth-callback-d751713988987e9331980363e24189ce.log"), b"[]")


def callbacklogs_not_a_directory(lp):
    """callbacklogs is a regular file: failed callbacks cannot be persisted (lost) until Orth deletes it."""
    write_atomic(os.path.join(lp, "callbacklogs"), b"oops\n")
    _logs(lp).start(20, T, T + 1000)


def null_entries(lp):
    """A batch with a null entry ([{...},null]): Orth deletes the file, posts, then fails on a NullPointerException."""
    _named(lp, b'[{"logId":17,"logDateTim":1769740800000,"handleCode":200},null]')


def foreign_names(lp):
    """A file with a name Orth does not write (it is retried all the same), and a subdirectory (Orth's read fails
    on it every pass)."""
    write_retry_file(lp, [Entry(18, T, 200)])
    d = os.path.join(lp, "callbacklogs")
    os.rename(os.path.join(d, sorted(os.listdir(d))[0]), os.path.join(d, "copied-by-hand.json"))
    write_atomic(os.path.join(d, "subdir", "x.log"), b"[]")


def legacy_callbacklog(lp):
    """xxl-job <= 3.2 retry files in callbacklog/ (Java serialization; the second element shares the first's
    message String, so Java wrote a reference): stranded, Orth never reads them."""
    write_legacy_file(lp, [Entry(21, T, 200, None), Entry(22, T + 1, 502, "Job execution timeout"),
                           Entry(23, T + 2, 502, "Job execution timeout")], T + 5000, same_object={2: 1})
    write_legacy_file(lp, [Entry(24, T + 3, 500, "中文 <br>")], T + 5000, i=0)


def legacy_hostile_stream(lp):
    """A legacy file whose class descriptor names another class (a deserialization gadget): refused without
    instantiating anything; and one cut short."""
    good = write_legacy_file(lp, [Entry(25, T, 200, None)], T + 6000)
    data = open(good, "rb").read()
    name = b"com.xxl.job.core.biz.model.HandleCallbackParam"
    write_atomic(good, data.replace(name, b"org.apache.commons.collections.map.LazyMap....."[:len(name)]))
    write_legacy_file(lp, [Entry(26, T, 500, "x" * 40)], T + 7000)
    p = os.path.join(lp, "callbacklog", f"xxl-job-callback-{T + 7000}.log")
    write_atomic(p, open(p, "rb").read()[:-20])


def legacy_hessian_hostile(lp):
    """An xxl-job 2.0.2-2.1.x Hessian retry file whose element is of another class: refused without instantiating
    anything (OC-HESSIAN-BAD)."""
    from wqtool.engine.javacodec.hessian import encode_params
    data = encode_params([Entry(27, T, 200, None)]).replace(b"HandleCallbackParam", b"HandleCallbackParaX")
    write_atomic(os.path.join(lp, "callbacklog", f"xxl-job-callback-{T + 8000}.log"), data)


def executor_runs(lp):
    """Executor logs covering each run state: finished and acknowledged, failed (error with a stack trace), timeout,
    killed, running without an end marker, a failed callback still held by a retry file, a failed callback no
    retry file holds, and an orphan (only callback lines: its run's log was cleaned)."""
    w = _logs(lp)
    w.start(100, T, T + 1000, "a")
    w.line(100, T, T + 1500, "working\nsecond line of the same message", cls="com.example.DemoHandler",
           method="execute", src_line=31, thread="orth-job-thread-1-1769740800000")
    w.finish(100, T, T + 2000, 200)
    w.callback(100, T, T + 2500, "success")
    w.start(101, T, T + 1000)
    w.error(101, T, T + 2000, "java.lang.IllegalStateException: bad\n\tat com.example.DemoHandler.execute("
                              "DemoHandler.java:40)\n\tat com.abyss.orth.core.thread.JobThread.run(JobThread.java:1)")
    w.callback(101, T, T + 2500, "success")
    w.start(102, T, T + 1000)
    w.timeout(102, T, T + 2000)
    w.callback(102, T, T + 2500, "success")
    w.start(103, T, T + 1000)
    w.stopped(103, T, T + 2000)
    w.callback(103, T, T + 2500, "success")
    w.start(104, T + 86_400_000, T + 86_401_000)                            # the next day, still running
    w.start(105, T, T + 1000)
    w.finish(105, T, T + 2000, 500, "downstream error")
    w.callback(105, T, T + 2500, "failed")
    write_retry_file(lp, [Entry(105, T, 500, "downstream error")])
    w.start(106, T, T + 1000)
    w.finish(106, T, T + 2000, 200)
    w.callback(106, T, T + 2500, "error", "connect timed out")
    w.callback(107, T, T + 2500, "success")                               # orphan


def executor_script_output(lp):
    """A script job's raw output appended byte for byte: a line that is not UTF-8, carriage returns (progress bars)
    and a last line without a separator; Orth's log viewer stops before the bad bytes."""
    w = _logs(lp)
    w.start(200, T, T + 1000)
    w.line(200, T, T + 1100, "----------- orth script file: /data/applogs/orth/jobhandler/gluesource/5_1.sh -----------",
           method="execute", src_line=88)
    w.raw(200, T, b"progress 10%\rprogress 50%\rprogress 100%\n" + b"x" * 20 + b"\n" +
          "caf\u00e9 ok\n".encode() + b"latin-1 caf\xe9\n" + b"still running")


def executor_bad_dates(lp):
    """Children of logPath Orth does not write: a date directory with a suffix (retention reads it leniently as
    2026-01-30), one Orth cannot parse (never cleaned), one that is not a real date (2026-02-30 = March 2nd), a
    stray file, a non-log file in a date directory and text before the first prefixed line."""
    w = _logs(lp)
    w.start(300, T, T + 1000)
    w.finish(300, T, T + 2000)
    os.makedirs(os.path.join(lp, "gluesource"))
    write_atomic(os.path.join(lp, "gluesource", "5_1769740800000.sh"), b"#!/bin/sh\necho hi\n")
    write_atomic(os.path.join(lp, "2026-01-30.bak", "299.log"), b"")
    write_atomic(os.path.join(lp, "logs-old", "x.log"), b"")
    write_atomic(os.path.join(lp, "2026-02-30", "301.log"), b"stray text before any prefixed line\n")
    write_atomic(os.path.join(lp, "README.txt"), b"notes\n")
    write_atomic(os.path.join(lp, "2026-01-30", "notes.txt"), b"x\n")


def _xxl_runs(w: XxlJobLogWriter, base: int) -> None:
    w.start(base, T, T + 1000, "a")
    w.line(base, T, T + 1500, "working", cls="com.example.DemoHandler", method="execute", src_line=31,
           thread=f"xxl-job, JobThread-1-{T - 5000}")
    w.finish(base, T, T + 2000, 200)
    w.callback(base, T, T + 2500, "success")
    w.start(base + 1, T, T + 1000)
    w.error(base + 1, T, T + 2000, "java.lang.IllegalStateException: bad\n\tat com.example.DemoHandler.execute("
                                   "DemoHandler.java:40)\n")
    w.finish(base + 1, T, T + 2000, 500, "java.lang.IllegalStateException: bad")
    w.callback(base + 1, T, T + 2500, "success")
    w.start(base + 2, T, T + 1000)
    w.timeout(base + 2, T, T + 2000)
    w.callback(base + 2, T, T + 2500, "success")
    w.start(base + 3, T, T + 1000)
    w.stopped(base + 3, T, T + 2000)
    w.callback(base + 3, T, T + 2500, "success")
    w.start(base + 4, T + 86_400_000, T + 86_401_000)                  # the next day, still running
    w.start(base + 5, T, T + 1000)
    w.finish(base + 5, T, T + 2000, 500, "downstream error")
    w.callback(base + 5, T, T + 2500, "error", "connect timed out")


def xxl_job_executor_runs(lp):
    """xxl-job 2.3-3.x executor logs (3.2.0 markers, \\r\\n line ends): finished, failed (end(error), then the
    end(finish) JobThread writes after it), timeout (timeout marker, the exception, end(finish) 502), killed
    (toStop, then the interrupted run's end(error)), running, a callback error; the same run states as Orth's,
    no OE-ORPHAN."""
    _xxl_runs(XxlJobLogWriter(lp), 400)


def xxl_job_2_0_executor_runs(lp):
    """xxl-job 2.0.0-2.2.x executor logs: end(finish) prints ReturnT [code=C, msg=M, content=null]."""
    _xxl_runs(XxlJobLogWriter(lp, returnt=True), 500)


SCENARIOS = {
    "clean-retry-files": clean_retry_files,
    "name-md5-mismatch": name_md5_mismatch,
    "bit-flip": bit_flip,
    "invalid-utf8": invalid_utf8,
    "lenient-only-json": lenient_only_json,
    "poison-file": poison_file,
    "truncated-write": truncated_write,
    "handle-codes": handle_codes,
    "empty-files": empty_files,
    "callbacklogs-not-a-directory": callbacklogs_not_a_directory,
    "null-entries": null_entries,
    "foreign-names": foreign_names,
    "legacy-callbacklog": legacy_callbacklog,
    "legacy-hostile-stream": legacy_hostile_stream,
    "legacy-hessian-hostile": legacy_hessian_hostile,
    "executor-runs": executor_runs,
    "executor-script-output": executor_script_output,
    "executor-bad-dates": executor_bad_dates,
    "xxl-job-executor-runs": xxl_job_executor_runs,
    "xxl-job-2-0-executor-runs": xxl_job_2_0_executor_runs,
}


# ---------------------------------------------------------------- expectations
def _stable(f) -> dict:
    d = finding_json(f)
    if f.code in VOLATILE:
        d["upstream"] = "(readdir order: see the tests)"
    return d


def expected(scenario_dir: str) -> dict:
    lp = os.path.join(scenario_dir, "logpath")
    opts = Options(AS_OF_NS)
    out: dict = {"as_of": AS_OF}
    for name in ("orth-callbacks", "orth-executor-logs"):
        fmt = registry.get(name)
        logs = fmt.discover([lp], opts)
        doc = {}
        for log in logs:
            run = fmt.run(log, opts)
            rows = []
            for ev in run.events():
                if ev.__class__ is fmt.record_cls:
                    rows.append(fmt.record_view.row(ev, "text"))
            rep = run.report
            view = fmt.state_view(rep.state, log)
            doc = {"records": rows, "exit_code": CODES.of(rep.verdict), "counts": dict(sorted(rep.counts.items())),
                   "findings": [_stable(f) for f in rep.findings], "state": list(view.rows()),
                   "summary": view.summary()}
        out[name] = doc
    return out


def build(dest_root: str) -> None:
    for name, fn in SCENARIOS.items():
        sd = os.path.join(dest_root, name)
        if os.path.exists(sd):
            shutil.rmtree(sd)
        lp = os.path.join(sd, "logpath")
        os.makedirs(lp)
        fn(lp)
        with open(os.path.join(sd, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected(sd), f, indent=1, ensure_ascii=False)
            f.write("\n")
    with open(os.path.join(dest_root, "README.md"), "w") as f:
        f.write("# Orth executor-side fixtures\n\nGenerated by `scripts/make_orth_fixtures.py` through wqtool's own "
                "writers (do not edit by hand). Each scenario: `logpath/` (an executor logPath) and `expected.json` "
                f"(dump rows, verify and replay of both formats at {AS_OF}).\n\n")
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
    tmp = tempfile.mkdtemp(prefix=".orth-fixtures-", dir=os.path.dirname(FIXTURES))
    try:
        build(tmp)
        fresh = {p: b.replace(os.path.relpath(tmp).encode(), FIXTURES.encode()) for p, b in _tree(tmp).items()}
        committed = _tree(FIXTURES)
        drift = sorted(set(fresh) ^ set(committed)) + sorted(p for p in fresh if p in committed
                                                             and fresh[p] != committed[p])
    finally:
        shutil.rmtree(tmp)
    if drift:
        print("orth fixtures drifted: " + ", ".join(drift), file=sys.stderr)
        return 1
    print("orth fixtures up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
