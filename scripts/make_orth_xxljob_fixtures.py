#!/usr/bin/env python3
"""The XXL-JOB release-line corpus: a retry file of each release line, made by real Java where the writer runs here.

    python scripts/make_orth_xxljob_fixtures.py --java     # (re)make the bytes with Java 17 (javac, java) and
                                                           # Debian's jars (libjackson2-databind-java,
                                                           # libgoogle-gson-java), then the expectations
    python scripts/make_orth_xxljob_fixtures.py            # recompute expected.json from the committed bytes
    python scripts/make_orth_xxljob_fixtures.py --check    # exit 1 if expected.json drifted, or if wqtool's own
                                                           # encoders do not give the committed bytes

The Java generators are in ``scripts/xxljob/<release>/``: classes with the field layout of each release's
``HandleCallbackParam`` / ``ReturnT`` / ``CallbackData`` (same names, types, serialVersionUID — what the bytes
depend on) written by real Jackson (2.0.0), real ``ObjectOutputStream`` (2.2.0) and real Gson (HEAD), the way each
release's ``appendFailCallbackFile`` calls them. Hessian (2.0.2-2.1.x) has no library here: its file is built by
``wqtool.engine.javacodec.hessian.encode_params`` from the Hessian 2.0 spec, following Hessian2Output's choices (checked
against the spec's own byte examples in tests/engine/orth/test_releases.py).

Each scenario: ``fixtures/orth-xxl-job/<scenario>/logpath/`` and ``expected.json`` (dump rows, verify, replay at
``AS_OF``, as ``make_orth_fixtures.expected`` computes them).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine.javacodec.gson import Entry  # noqa: E402
from tests.writers.orth_callbacks import write_atomic  # noqa: E402
from tests.writers.orth_executor_logs import XxlJobLogWriter  # noqa: E402

FIXTURES = os.path.join("fixtures", "orth-xxl-job")
JAVA = os.path.join(ROOT, "scripts", "xxljob")
JARS = {"jackson": ["/usr/share/java/jackson-databind.jar", "/usr/share/java/jackson-core.jar",
                    "/usr/share/java/jackson-annotations.jar"],
        "gson": ["/usr/share/java/gson.jar"]}
T = 1769740800000
MS = T + 5000

#: scenario -> (release dir or "hessian", batches of (logId, logDateTim, code, msg, content, shared), doc)
SCENARIOS: dict[str, tuple[str, list, str]] = {
    "xxl-job-2-0-0-jackson": ("v2_0_0", [
        [(31, T, 200, None, None, None), (32, T + 1, 500, "boom <br> 中文", None, None)],
        [(33, T + 2, 502, "job execute timeout ", None, None)],
    ], "xxl-job 2.0.0-2.0.1: {logPath}/xxl-job-callback.log, two batches appended by FileUtil.appendFileLine (real "
       "Jackson; each line ends \\r\\n); only 2.0.0-2.0.1 ever read it"),
    "xxl-job-2-1-hessian": ("hessian", [
        [(41, T, 200, None, None, None), (42, T + 1, 500, "boom <br> 中文", "c", None), (43, T + 2, 200, None, None, 0)],
    ], "xxl-job 2.0.2-2.1.x: callbacklog/xxl-job-callback-{ms}.log in Hessian 2 (built from the spec as "
       "Hessian2Output writes it: class definitions once, the third entry's ReturnT is the first's object, a Q "
       "reference, as ReturnT.SUCCESS is)"),
    "xxl-job-2-2-0-java": ("v2_2_0", [
        [(51, T, 200, None, None, None), (52, T + 1, 500, "downstream error", None, None)],
        [(53, T + 2, 200, None, None, None), (54, T + 3, 200, None, None, 0)],
    ], "xxl-job 2.2.0: callbacklog/ Java-serialized HandleCallbackParam with ReturnT executeResult (real "
       "ObjectOutputStream): codes 200 and 500; in the second file two entries share one ReturnT object"),
    "xxl-job-head-gson": ("head", [
        [(61, T, 200, None, None, None), (62, T + 1, 500, "boom", None, None)],
    ], "xxl-job HEAD (3.5.0-SNAPSHOT): callbacklogs/xxl-job-callback-{md5}.log, CallbackData with logDateTime "
       "(real Gson)"),
}


def _orth_script():
    spec = importlib.util.spec_from_file_location("make_orth_fixtures", os.path.join(ROOT, "scripts",
                                                                                      "make_orth_fixtures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _spec_text(batches) -> str:
    def s(v):
        return "\\N" if v is None else json.dumps(v, ensure_ascii=False)
    return "\n\n".join("\n".join(f"{a}|{b}|{c}|{s(d)}|{s(e)}|{'-' if f is None else f}" for a, b, c, d, e, f in bt)
                       for bt in batches) + "\n"


def _entries(batch) -> list[Entry]:
    return [Entry(a, b, c, d) for a, b, c, d, _, _ in batch]


def _compile(release: str, out: str) -> str:
    jars = JARS["jackson"] if release == "v2_0_0" else JARS["gson"]
    jars = jars + JARS["gson"] if release != "head" else jars
    cp = ":".join(jars)
    srcs = [os.path.join(JAVA, "Spec.java")] + [os.path.join(dp, n) for dp, _, ns in
                                                 os.walk(os.path.join(JAVA, release)) for n in ns if n.endswith(".java")]
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out, *srcs], check=True, timeout=300)
    return f"{out}:{cp}"


def make_bytes(dest_root: str) -> None:
    """The retry files of every scenario (Java where the writer runs here; Hessian from the spec)."""
    from wqtool.engine.javacodec.hessian import encode_params
    for name, (release, batches, _) in SCENARIOS.items():
        lp = os.path.join(dest_root, name, "logpath")
        if os.path.exists(lp):
            shutil.rmtree(lp)
        os.makedirs(lp)
        if release == "hessian":
            for i, bt in enumerate(batches):
                shared = {k: b[5] for k, b in enumerate(bt) if b[5] is not None}
                contents = {k: b[4] for k, b in enumerate(bt) if b[4] is not None}
                write_atomic(os.path.join(lp, "callbacklog", f"xxl-job-callback-{MS + i}.log"),
                             encode_params(_entries(bt), shared=shared, contents=contents))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                cp = _compile(release, tmp)
                spec = os.path.join(tmp, "spec.txt")
                with open(spec, "w", encoding="utf-8") as f:
                    f.write(_spec_text(batches))
                subprocess.run(["java", "-cp", cp, "Gen", spec, lp, str(MS)], check=True, timeout=300)
        # each job's executor log, as that release's JobThread wrote it (a failed callback: the retry file)
        w = XxlJobLogWriter(lp, returnt=release in ("v2_0_0", "hessian", "v2_2_0"))
        for bt in batches:
            for lid, date, code, msg, _, _ in bt:
                w.start(lid, date, date + 1000)
                w.finish(lid, date, date + 2000, code, msg)
                w.callback(lid, date, date + 2500, "error")


def build_expected(dest_root: str) -> None:
    orth = _orth_script()
    for name, (_, _, doc) in SCENARIOS.items():
        sd = os.path.join(dest_root, name)
        with open(os.path.join(sd, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(orth.expected(sd), f, indent=1, ensure_ascii=False)
            f.write("\n")
    with open(os.path.join(dest_root, "README.md"), "w") as f:
        f.write("# XXL-JOB release-line fixtures\n\nMade by `scripts/make_orth_xxljob_fixtures.py --java` (real Java "
                "17, Jackson, Gson, ObjectOutputStream; Hessian from the spec). Each scenario: `logpath/` and "
                "`expected.json`.\n\n")
        for name, (_, _, doc) in SCENARIOS.items():
            f.write(f"- `{name}`: {doc}\n")


def encoders_match(root: str) -> list[str]:
    """wqtool's own encoders give the committed bytes of every retry file (the property the tests hold too)."""
    import hashlib
    from wqtool.engine.javacodec.gson import encode
    from wqtool.engine.javacodec.hessian import encode_params
    from wqtool.engine.javacodec.jackson import encode_jackson_line
    from wqtool.engine.javacodec.javaser import encode_220
    bad = []
    for name, (release, batches, _) in SCENARIOS.items():
        lp = os.path.join(root, name, "logpath")
        want: dict[str, bytes] = {}
        for i, bt in enumerate(batches):
            es = _entries(bt)
            shared = {k: b[5] for k, b in enumerate(bt) if b[5] is not None}
            contents = {k: b[4] for k, b in enumerate(bt) if b[4] is not None}
            if release == "v2_0_0":
                p = os.path.join(lp, "xxl-job-callback.log")
                want[p] = want.get(p, b"") + encode_jackson_line(es, contents)
            elif release == "v2_2_0":
                want[os.path.join(lp, "callbacklog", f"xxl-job-callback-{MS + i}.log")] = encode_220(es, shared,
                                                                                                   contents)
            elif release == "hessian":
                want[os.path.join(lp, "callbacklog", f"xxl-job-callback-{MS + i}.log")] = \
                    encode_params(es, shared=shared, contents=contents)
            else:
                data = encode(es, "logDateTime")
                want[os.path.join(lp, "callbacklogs", f"xxl-job-callback-{hashlib.md5(data).hexdigest()}.log")] = data
        for p, data in want.items():
            if not os.path.exists(p) or open(p, "rb").read() != data:
                bad.append(os.path.relpath(p, root))
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--java", action="store_true", help="make the bytes again with Java")
    ap.add_argument("--check", action="store_true", help="compare with the committed corpus")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if args.java:
        make_bytes(FIXTURES)
    if not args.check:
        build_expected(FIXTURES)
        print(f"wrote {len(SCENARIOS)} scenarios to {FIXTURES}")
        return 0
    orth = _orth_script()
    drift = [n for n in SCENARIOS if json.load(open(os.path.join(FIXTURES, n, "expected.json"), encoding="utf-8"))
             != json.loads(json.dumps(orth.expected(os.path.join(FIXTURES, n)), ensure_ascii=False))]
    drift += encoders_match(FIXTURES)
    if drift:
        print("xxl-job fixtures drifted: " + ", ".join(drift), file=sys.stderr)
        return 1
    print("xxl-job fixtures up to date; wqtool's encoders give the Java bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
