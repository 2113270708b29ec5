"""Regenerate fixtures/orth-joblog/ (deterministic, through the engine's own writers).

    python scripts/make_orth_joblog_fixtures.py           # write every scenario
    python scripts/make_orth_joblog_fixtures.py --check   # exit 1 if a file differs (the tests run this)

Each scenario: the input (an export file, a directory of export files, a mysqldump or a SQLite database),
``expected.jsonl`` (``dump -o jsonl``) and ``expected-verify.json`` (verify's exit code, counts, findings with
offsets, and replay's digest at AS_OF).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wqtool.engine.orth_joblog import writer  # noqa: E402
from wqtool.formats.orth_joblog import LOST_MESSAGES, REGISTRY_COLUMN_NAMES  # noqa: E402

OUT = os.path.join(ROOT, "fixtures", "orth-joblog")
AS_OF = "2026-01-30T12:30:00Z"
A5, A6, A7 = "http://10.0.0.5:9999/", "http://10.0.0.6:9999/", "http://10.0.0.7:9999/"
TRIGGER_MSG = ("任务触发类型：Cron触发<br>调度机器：10.0.0.1<br>执行器-注册方式：自动注册<br>执行器-地址列表：[{a}]<br>"
               "路由策略：第一个<br>阻塞处理策略：单机串行<br>任务超时时间：0<br>失败重试次数：0<br><br>"
               "<span style=\"color:#00c0ef;\" > >>>>>>>>>>>触发调度<<<<<<<<<<< </span><br>触发调度：<br>address：{a}"
               "<br>code：{c}<br>msg：null")


def t(day: int, h: int, m: int, s: int = 0) -> str:
    return f"2026-01-{day:02d} {h:02d}:{m:02d}:{s:02d}"


def row(i, job, addr, handler, trig, tc, hc, *, handle=None, msg=None, sched="same", group=1, param=None,
        shard=None, retry=0, alarm=0, tmsg=None):
    return {"id": i, "job_group": group, "job_id": job, "executor_address": addr, "executor_handler": handler,
            "executor_param": param, "executor_sharding_param": shard, "executor_fail_retry_count": retry,
            "trigger_time": trig, "schedule_time": trig if sched == "same" else sched, "trigger_code": tc,
            "trigger_msg": tmsg if tmsg is not None else (TRIGGER_MSG.format(a=addr, c=tc) if tc else None),
            "handle_time": handle, "handle_code": hc, "handle_msg": msg, "alarm_status": alarm}


def base_rows() -> list[dict]:
    """Three days of a small Orth installation: two executor groups, every status, tricky strings."""
    rows = []
    i = 1
    for day in (28, 29, 30):
        for k in range(6):
            h = 1 + 2 * k
            rows.append(row(i, 7, A5, "demoJobHandler", t(day, h, 0), 200, 200, handle=t(day, h, 0, 3 + k),
                            msg=None if k % 2 else "ok"))
            i += 1
        rows.append(row(i, 8, A6, "shardingJobHandler", t(day, 3, 30), 200, 500, handle=t(day, 3, 31, 2),
                        msg="java.lang.RuntimeException: boom\n\tat demo.Job.run(Job.java:42)", shard="0/2",
                        alarm=2, param="--mode=<full> & 'quick'"))
        i += 1
        rows.append(row(i, 9, A5, "httpJobHandler", t(day, 4, 0), 200, 502, handle=t(day, 4, 10, 0),
                        msg="Job execution timeout", alarm=2))
        i += 1
        rows.append(row(i, 10, None, "missingHandler", t(day, 5, 0), 500, 0, alarm=3, sched=None,
                        tmsg="任务触发类型：手动触发<br>调度失败：执行器地址为空"))
        i += 1
        rows.append(row(i, 11, A6, "scriptHandler", t(day, 6, 0), 200, 500, handle=t(day, 6, 20),
                        msg=LOST_MESSAGES["zh_CN"], alarm=2))
        i += 1
    # today's tail: a manual trigger with tricky strings, running jobs, a fresh Init row
    rows.append(row(i, 12, A5, "demoJobHandler", t(30, 12, 0), 200, 200, handle=t(30, 12, 0, 1), sched=None,
                    param='{"k": "v,w", "q": "\\"x\\""}', group=2,
                    msg="résumé, \"quoted\", <br>line\u2028sep, tab\tend, 完成"))
    i += 1
    rows.append(row(i, 13, A5, "longJobHandler", t(30, 11, 0), 200, 0, group=2))       # Pending 90 min, online
    i += 1
    rows.append(row(i, 7, A6, "demoJobHandler", t(30, 12, 25), 200, 0))                 # Pending 5 min
    i += 1
    rows.append(row(i, 7, None, None, t(30, 12, 29, 59), 0, 0, sched=t(30, 12, 29, 59)))  # Init, 1 s old
    return rows


def registry(stale_a7: bool = True) -> list[dict]:
    reg = [{"id": 1, "registry_group": "EXECUTOR", "registry_key": "orth-demo", "registry_value": A5,
            "update_time": t(30, 12, 29, 40)},
           {"id": 2, "registry_group": "EXECUTOR", "registry_key": "orth-demo", "registry_value": A6,
            "update_time": t(30, 12, 29, 45)}]
    if stale_a7:
        reg.append({"id": 3, "registry_group": "EXECUTOR", "registry_key": "orth-sharding", "registry_value": A7,
                    "update_time": t(30, 12, 20, 0)})
    return reg


def lost_rows() -> list[dict]:
    rows = base_rows()[:6]
    n = 100
    rows += [row(n + 1, 20, "http://10.0.0.9:9999/", "demoJobHandler", t(30, 12, 0), 200, 0),   # offline: lost
             row(n + 2, 20, "http://10.0.0.5:9999", "demoJobHandler", t(30, 12, 5), 200, 0),    # no trailing /
             row(n + 3, 21, A7, "shardingJobHandler", t(30, 12, 10), 200, 0),                   # registry row stale
             row(n + 4, 22, A5, "longJobHandler", t(30, 10, 0), 200, 0),                        # online: never lost
             row(n + 5, 23, "http://10.0.0.9:9999/", "demoJobHandler", t(30, 12, 21), 200, 0),  # 9 min: not yet
             row(n + 6, 24, None, None, t(30, 11, 0), 0, 0),                                    # Init, stuck
             row(n + 7, 20, "http://10.0.0.9:9999/", "demoJobHandler", t(30, 12, 20), 200, 0)]  # exactly 10 min
    return rows


def impossible_rows() -> list[dict]:
    rows = base_rows()[:4]
    rows += [row(3, 7, A5, "demoJobHandler", t(30, 9, 0), 200, 200, handle=t(30, 9, 0, 1)),      # duplicate id
             row(0, 7, A5, "demoJobHandler", t(30, 9, 1), 200, 200, handle=t(30, 9, 1, 1)),      # id 0
             row(201, 7, A5, "demoJobHandler", None, 200, 200, handle=t(30, 9, 2, 1)),           # no trigger_time
             row(202, 7, A5, "demoJobHandler", t(30, 9, 3), 200, 500, handle=None, msg="x"),     # handled, no time
             row(203, 7, None, "demoJobHandler", t(30, 9, 4), 200, 200, handle=t(30, 9, 4, 1)),  # 200, no address
             row(204, 7, A5, "demoJobHandler", t(30, 9, 5), 200, 500, handle=t(30, 9, 5, 9),
                 msg="x" * 15001),                                                                # > 15,000 chars
             row(205, 7, A5, "demoJobHandler", t(30, 9, 6), 200, 500, handle=t(30, 9, 6, 2), alarm=7)]
    return rows


def odd_rows() -> list[dict]:
    rows = base_rows()[:3]
    rows += [row(301, 7, A5, "demoJobHandler", t(30, 9, 0), 404, 0),                             # unknown trigger
             row(302, 7, A5, "demoJobHandler", t(30, 9, 1), 200, -1, handle=t(30, 9, 1, 5)),    # negative handle
             row(303, 7, A5, "demoJobHandler", t(30, 9, 2), 0, 200, handle=t(30, 9, 2, 5)),     # Init + callback
             row(304, 7, A5, "demoJobHandler", t(30, 12, 28), 200, 0, handle=t(30, 12, 28, 30), msg=""),  # code 0
             row(305, 7, A5, "demoJobHandler", t(30, 9, 4), 200, 200, handle=t(30, 9, 3, 55)),  # handled early
             row(306, 7, A5, "demoJobHandler", t(30, 9, 5), 200, 200, handle=t(30, 9, 5, 1), alarm=2),
             row(307, 7, A5, "demoJobHandler", t(30, 9, 6), 200, 500, handle=t(30, 9, 6, 1), alarm=-1),
             row(308, 7, A5, "demoJobHandler", t(30, 13, 0), 200, 0)]                           # in the future
    return rows


# ---------------------------------------------------------------- damaged text, made by editing writer output
def bad_values_csv() -> bytes:
    rows = base_rows()[:3]
    data = writer.csv_bytes(rows).decode()
    lines = data.split("\n")
    head, body = lines[0], lines[1:-1]
    good = body[0]
    cols = good.split(",")

    def variant(**kw) -> str:
        c = list(cols)
        for k, v in kw.items():
            c[int(k[1:])] = v
        return ",".join(c)
    bad = [variant(c0="4x"),                      # id not an integer
           variant(c0="5", c2="99999999999"),     # job_id out of int(11)
           variant(c0="6", c8='"2026-02-30 10:00:00"'),   # no such day
           variant(c0="7", c6='"' + "9" * 21 + '"'),       # varchar(20) overflow
           variant(c0="8", c10=""),               # trigger_code NULL (NOT NULL)
           "9,1,7,too,few",                       # field count
           ]
    out = "\n".join([head, *body[:2], *bad]) + "\n"
    enc = out.encode() + variant(c0="10", c4='"bad\udcff"').encode("utf-8", "surrogateescape") + b"\n"
    return enc + (body[2] + "\n").encode()


def torn_csv() -> bytes:
    data = writer.csv_bytes(base_rows()[:5])
    cut = data.rfind("\"任务触发类型".encode())
    return data[:cut + 30]   # ends inside the quoted trigger_msg of the last row


def torn_dump() -> bytes:
    data = writer.dump_bytes(base_rows()[:12], registry(), per_statement=5)
    # cut inside the third INSERT statement of orth_job_log (mysqldump killed mid-write)
    k = -1
    for _ in range(3):
        k = data.index(b"INSERT INTO `orth_job_log`", k + 1)
    return data[:k + 700]


def hostile_dump() -> bytes:
    good = writer.dump_bytes(base_rows()[:4], registry(), per_statement=2).decode()
    big = "'" + "A" * (300 * 1024) + "'"
    bad1 = ("INSERT INTO `orth_job_log` VALUES (90,1,7,NULL,NULL,NULL,NULL,0,'2026-01-30 09:00:00',NULL,200,NULL,NULL,0,"
            + big + ",0);")
    bad2 = "INSERT INTO `orth_job_log` VALUES (91,1,7,@evil,NULL);"
    bad3 = "INSERT INTO `orth_job_log` VALUES (92,1,7),(93,1,7,NULL,NULL,NULL,NULL,0,'2026-01-30 09:00:00',NULL,0,NULL,NULL,0,NULL,0);"
    k = good.index("UNLOCK TABLES;")
    tail_rows = writer.dump_bytes(base_rows()[4:6], per_statement=2).decode()
    ins = tail_rows[tail_rows.index("INSERT INTO"):tail_rows.index("UNLOCK TABLES;")]
    return (good[:k] + bad1 + "\n" + bad2 + "\n/* a comment with a ; and a ' quote */\n" + bad3 + "\n" + ins
            + good[k:]).encode()


def old_schema_csv() -> bytes:
    rows = base_rows()[:4]
    for r in rows:
        r["remark"] = "from xxl-job 2.4"
    cols = [c for c in writer.COLUMN_NAMES if c != "schedule_time"] + ["remark"]
    return writer.csv_bytes(rows, cols)


def no_header_csv() -> bytes:
    data = writer.csv_bytes(base_rows()[:2]).decode().split("\n")
    head = data[0].replace("trigger_code", "trigger_result")
    return ("\n".join([head, *data[1:]])).encode()


SCENARIOS = {
    "clean-csv": ("A healthy table as a CSV export with its registry beside it: every UI status, three days, "
                  "rows the monitor already marked lost, a long job on a live executor, tricky strings (HTML, "
                  "quotes, newlines, U+2028, non-ASCII)."),
    "clean-jsonl": "The same table as JSON Lines (same digest).",
    "clean-parquet": "The same table as a directory of two Parquet part files and the registry (same digest).",
    "mysqldump": "The same table in a mysqldump file with orth_job_registry in it (same digest).",
    "sqlite-db": "The same table in a SQLite database (read as sqlite:///...; same digest).",
    "lost-jobs": ("Pending rows the lost-job monitor marks lost (unregistered executor, an address without the "
                  "trailing '/', a registry row older than 90 s), one it never marks (online), one 9 min old, one "
                  "exactly 10 min old, an Init row stuck, a bad registry row."),
    "impossible-rows": "Rows the admin cannot write: a duplicate id, id 0, no trigger_time, a handle code without "
                       "handle_time, 200 without an address, handle_msg over 15,000 chars, alarm_status 7 (exit 4).",
    "odd-rows": "Rows the admin can write but should not: unknown codes, Init with a callback, a handleCode 0 "
                "callback, handled before triggered, alarm states, a time after --as-of (warnings, exit 0).",
    "bad-values-csv": "Values that no table row holds (not an integer, out of range, no such day, varchar "
                      "overflow, NULL trigger_code, short record, invalid UTF-8) followed by a valid row (exit 3).",
    "torn-csv": "The export ends inside a quoted field of its last row (exit 1).",
    "torn-dump": "mysqldump killed inside an INSERT statement: no trailer (exit 1).",
    "hostile-dump": "A dump with a 300 KiB value, a statement that is not SQL values, a column-count mismatch and "
                    "a comment holding ';' and a quote, with valid rows after them (exit 3).",
    "old-schema-csv": "xxl-job's table (no schedule_time) with an extra column (notes and a warning, exit 0).",
    "no-header-csv": "A CSV whose header lacks trigger_code (exit 3; read with --format orth-joblog).",
    "no-rows-dump": "A dump of other tables only (a warning).",
}


def build(name: str, d: str) -> list[str]:
    """Write the scenario's input into ``d``; returns the PATH arguments (relative to the repo root)."""
    rel = os.path.relpath(d, ROOT)
    w = writer.write_file
    if name == "clean-csv":
        w(os.path.join(d, "orth_job_log.csv"), writer.csv_bytes(base_rows()))
        w(os.path.join(d, "orth_job_registry.csv"), writer.csv_bytes(registry(), REGISTRY_COLUMN_NAMES))
        return [f"{rel}/orth_job_log.csv"]
    if name == "clean-jsonl":
        w(os.path.join(d, "orth_job_log.jsonl"), writer.jsonl_bytes(base_rows()))
        w(os.path.join(d, "orth_job_registry.jsonl"), writer.jsonl_bytes(registry(), REGISTRY_COLUMN_NAMES))
        return [f"{rel}/orth_job_log.jsonl"]
    if name == "clean-parquet":
        rows = base_rows()
        os.makedirs(os.path.join(d, "export"))
        writer.write_parquet(os.path.join(d, "export", "part-00000.parquet"), rows[:14])
        writer.write_parquet(os.path.join(d, "export", "part-00001.parquet"), rows[14:])
        writer.write_parquet(os.path.join(d, "export", "orth_job_registry.parquet"), registry(), REGISTRY_COLUMN_NAMES)
        return [f"{rel}/export"]
    if name == "mysqldump":
        w(os.path.join(d, "orth_job.sql"), writer.dump_bytes(base_rows(), registry(), per_statement=10))
        return [f"{rel}/orth_job.sql"]
    if name == "sqlite-db":
        writer.write_sqlite(os.path.join(d, "orth_job.db"), base_rows(), registry())
        return [f"sqlite:///{rel}/orth_job.db"]
    if name == "lost-jobs":
        reg = registry() + [{"id": 9, "registry_group": "EXECUTOR", "registry_key": "broken", "registry_value": "",
                             "update_time": t(30, 12, 29)}]
        w(os.path.join(d, "orth_job_log.csv"), writer.csv_bytes(lost_rows()))
        w(os.path.join(d, "orth_job_registry.csv"), writer.csv_bytes(reg, REGISTRY_COLUMN_NAMES))
        return [f"{rel}/orth_job_log.csv"]
    if name == "impossible-rows":
        w(os.path.join(d, "orth_job_log.jsonl"), writer.jsonl_bytes(impossible_rows()))
        w(os.path.join(d, "orth_job_registry.jsonl"), writer.jsonl_bytes(registry(), REGISTRY_COLUMN_NAMES))
        return [f"{rel}/orth_job_log.jsonl"]
    if name == "odd-rows":
        w(os.path.join(d, "orth_job.sql"), writer.dump_bytes(odd_rows(), registry()))
        return [f"{rel}/orth_job.sql"]
    if name == "bad-values-csv":
        w(os.path.join(d, "orth_job_log.csv"), bad_values_csv())
        return [f"{rel}/orth_job_log.csv"]
    if name == "torn-csv":
        w(os.path.join(d, "orth_job_log.csv"), torn_csv())
        return [f"{rel}/orth_job_log.csv"]
    if name == "torn-dump":
        w(os.path.join(d, "orth_job.sql"), torn_dump())
        return [f"{rel}/orth_job.sql"]
    if name == "hostile-dump":
        w(os.path.join(d, "orth_job.sql"), hostile_dump())
        return [f"{rel}/orth_job.sql"]
    if name == "old-schema-csv":
        w(os.path.join(d, "xxl_job_log.csv"), old_schema_csv())
        return [f"{rel}/xxl_job_log.csv"]
    if name == "no-header-csv":
        w(os.path.join(d, "orth_job_log.csv"), no_header_csv())
        return [f"{rel}/orth_job_log.csv"]
    if name == "no-rows-dump":
        data = writer.dump_bytes([], registry()).decode()
        data = data.replace("`orth_job_log`", "`orth_job_group`")
        w(os.path.join(d, "orth_job.sql"), data.encode())
        return [f"{rel}/orth_job.sql"]
    raise KeyError(name)


def _cli(*argv) -> tuple[int, str]:
    from wqtool.cli import run
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run(list(argv))
    return code, out.getvalue()


def expected(paths: list[str]) -> dict[str, bytes]:
    """expected.jsonl and expected-verify.json of a scenario (run from the repo root)."""
    fmt = ["--format", "orth-joblog"]
    _, dump = _cli("dump", "-o", "jsonl", *fmt, *paths)
    code, ver = _cli("verify", "-o", "json", "--max-findings", "1000", "--as-of", AS_OF, *fmt, *paths)
    doc = json.loads(ver)["logs"][0]
    _, rep = _cli("replay", "-o", "json", "--summary", "--as-of", AS_OF, *fmt, *paths)
    rdoc = json.loads(rep)
    exp = {"paths": paths, "as_of": AS_OF, "exit": code, "verdict": doc["verdict"], "counts": doc["counts"],
           "findings": [[f["code"], f["offset"], f["record_index"], f["job_id"]] for f in doc["findings"]],
           "rows": rdoc["total_rows"], "state": rdoc["counts"], "digest": rdoc["digest"]}
    return {"expected.jsonl": dump.encode(), "expected-verify.json": (json.dumps(exp, indent=1, ensure_ascii=False)
                                                                      + "\n").encode()}


def readme() -> bytes:
    lines = ["# Orth job-log table fixtures", "",
             "Generated by `scripts/make_orth_joblog_fixtures.py` (do not edit by hand) with the engine's writers "
             "(`wqtool.engine.orth_joblog.writer`). Each scenario: its input, `expected.jsonl` (`dump -o jsonl`) "
             f"and `expected-verify.json` (verify's exit code, counts and findings, replay's rows and digest at "
             f"{AS_OF}, table times in UTC).", ""]
    lines += [f"- `{n}`: {text}" for n, text in SCENARIOS.items()]
    return ("\n".join(lines) + "\n").encode()


def generate(base: str) -> None:
    """Every scenario into ``base`` (a directory under the repo root); expected outputs name the fixture paths
    (fixtures/orth-joblog/<scenario>/...)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for name in SCENARIOS:
            d = os.path.join(base, name)
            os.makedirs(d)
            paths = build(name, d)
            here, there = os.path.relpath(d, ROOT), f"fixtures/orth-joblog/{name}"
            for fname, data in expected(paths).items():
                with open(os.path.join(d, fname), "wb") as f:
                    f.write(data.replace(here.encode(), there.encode()))
        with open(os.path.join(base, "README.md"), "wb") as f:
            f.write(readme())
    finally:
        os.chdir(cwd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    check = ap.parse_args().check
    tmp = tempfile.mkdtemp(prefix=".orth-fixtures-", dir=ROOT)
    try:
        gen = os.path.join(tmp, "orth-joblog")
        os.makedirs(gen)
        generate(gen)
        bad = _diff(gen, OUT)
        if check:
            for b in bad:
                print(f"stale: fixtures/orth-joblog/{b}")
            return 1 if bad else 0
        if os.path.isdir(OUT):
            shutil.rmtree(OUT)
        shutil.copytree(gen, OUT)
        for b in bad:
            print(f"wrote: fixtures/orth-joblog/{b}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _diff(a: str, b: str) -> list[str]:
    out = []
    for base in (a, b):
        if not os.path.isdir(base):
            continue
        for dirpath, _, files in os.walk(base):
            for fn in files:
                rel = os.path.relpath(os.path.join(dirpath, fn), base)
                pa, pb = os.path.join(a, rel), os.path.join(b, rel)
                if not (os.path.isfile(pa) and os.path.isfile(pb)) or _content(pa) != _content(pb):
                    if rel not in out:
                        out.append(rel)
    return sorted(out)


def _content(path: str):
    """What a file holds: its bytes, or for SQLite and Parquet (whose bytes carry the library's version) the
    rows."""
    if path.endswith(".db"):
        import sqlite3
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return list(conn.iterdump())
        finally:
            conn.close()
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq
        return pq.read_table(path).to_pylist()
    with open(path, "rb") as f:
        return f.read()


if __name__ == "__main__":
    sys.exit(main())
