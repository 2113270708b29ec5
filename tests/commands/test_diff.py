"""wqtool diff end to end on workq logs: the issue's done-when cases, the relation line, damage, -q, --limit, and
golden snapshots of the table and JSON output."""
from __future__ import annotations

import json
import os
import shutil
import uuid

import pytest

from tests.conftest import cli, fixture_log
from wqtool.engine.workq import writer
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.formats._common import GoTime
from wqtool.formats.workq import CmdType

LIVE = "12b80aed-6da7-4a87-bd9a-8079abd0d7fb"          # leased in sample-clean at --as-of last
NEW = "11111111-2222-4333-8444-555555555555"
LATER = GoTime.from_unix_ns(1_795_400_000_000_000_000)   # after sample-clean's newest record
AS_OF = "2026-11-25T00:00:00Z"


def _copy(tmp_path, name: str, to: str) -> str:
    dst = tmp_path / to
    shutil.copytree(fixture_log(name), dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return str(dst)


def _append(log: str, *commands) -> list[int]:
    """Append records to the newest segment; their offsets."""
    seg = sorted(n for n in os.listdir(log) if n.endswith(".log"))[-1]
    path = os.path.join(log, seg)
    offsets = []
    with open(path, "ab") as f:
        for c in commands:
            offsets.append(f.tell())
            f.write(encode_record(LATER, encode_payload(c)))
    return offsets


def _delete_and_add(log: str) -> list[int]:
    return _append(log, writer.simple(CmdType.DELETE, uuid.UUID(LIVE).bytes),
                   writer.add(uuid.UUID(NEW).bytes, "q9", ttr=1000, ttl=2_000_000_000, created=LATER))


@pytest.fixture
def pair(tmp_path):
    return _copy(tmp_path, "sample-clean", "a"), _copy(tmp_path, "sample-clean", "b")


def test_two_copies_are_equal(pair):
    a, b = pair
    r = cli("diff", "--as-of", AS_OF, a, b)
    assert r.code == 0, r.err
    assert "A and B are byte-identical" in r.out and "no job differs" in r.out
    doc = json.loads(cli("diff", "-o", "json", "--as-of", AS_OF, a, b).out)
    assert (doc["exit_code"], doc["verdict"], doc["total"], doc["jobs"]) == (0, "equal", 0, [])


def test_a_log_against_itself(pair):
    a, _ = pair
    assert cli("diff", a, a).code == 0
    assert cli("diff", "--as-of", "last", a, a).code == 0


def test_appended_delete_and_add_name_exactly_those_jobs(pair):
    a, b = pair
    off_delete, off_add = _delete_and_add(b)
    r = cli("diff", "--as-of", "last", a, b)
    assert r.code == 1, r.err
    assert "B = A + 2 records" in r.out
    doc = json.loads(cli("diff", "-o", "json", "--as-of", "last", a, b).out)
    assert (doc["exit_code"], doc["verdict"], doc["total"]) == (1, "different", 2)
    jobs = {j["job_id"]: j for j in doc["jobs"]}
    assert set(jobs) == {LIVE, NEW}
    gone, new = jobs[LIVE], jobs[NEW]
    assert gone["a"]["state"] == "leased" and gone["b"] is None
    assert (gone["b_change"]["offset"], gone["b_change"]["cmd"]) == (off_delete, "delete")
    assert gone["b_change"]["at"] == f"000000004.log@0x{off_delete:x}" and gone["a_change"] is None
    assert new["a"] is None and new["b"]["state"] == "new" and new["queue"] == "q9"
    assert (new["b_change"]["offset"], new["b_change"]["cmd"], new["b_change"]["record_index"]) == (off_add, "add", 61)
    assert doc["relation"] == {"kind": "a+", "text": "B = A + 2 records", "records": 2,
                               "a": {"file": os.path.join(a, "000000004.log"), "offset": off_delete,
                                     "at": f"000000004.log@0x{off_delete:x}"},
                               "b": {"file": os.path.join(b, "000000004.log"), "offset": off_delete,
                                     "at": f"000000004.log@0x{off_delete:x}"}}
    # the other way round: A = B + 2 records, the same two jobs, the changes on side a
    doc2 = json.loads(cli("diff", "-o", "json", "--as-of", "last", b, a).out)
    assert doc2["relation"]["text"] == "A = B + 2 records"
    assert {j["job_id"]: j["a_change"]["offset"] for j in doc2["jobs"]} == {LIVE: off_delete, NEW: off_add}


def test_jsonl_ends_with_one_summary_and_limit_counts_all(pair):
    a, b = pair
    _delete_and_add(b)
    r = cli("diff", "-o", "jsonl", "--limit", "1", "--as-of", "last", a, b)
    lines = [json.loads(x) for x in r.out.splitlines()]
    assert r.code == 1
    assert [list(x) for x in lines[:-1]] == [["job_id", "queue", "a", "b", "a_change", "b_change"]]
    assert lines[-1]["summary"]["total"] == 2 and lines[-1]["summary"]["shown"] == 1
    t = cli("diff", "--limit", "1", "--as-of", "last", a, b)
    assert "2 jobs differ (1 shown: --limit):" in t.out


def test_quiet_prints_nothing_and_keeps_the_exit_code(pair):
    a, b = pair
    _delete_and_add(b)
    r = cli("diff", "-q", "--as-of", "last", a, b)
    assert (r.code, r.out) == (1, "")


def test_divergence_and_no_common_prefix(pair, tmp_path):
    a, b = pair
    seg = os.path.join(b, "000000003.log")
    data = bytearray(open(seg, "rb").read())
    # rewrite the second record of segment 3 as a delete of a job with another id: same length, new CRC
    from wqtool.engine.workq.reader import segment_events, discover
    log = discover([b])[0]
    recs = [e for e in segment_events(log.segments[2], 0, False) if hasattr(e, "command")]
    r2 = recs[1]
    import dataclasses
    other = encode_record(r2.time, encode_payload(dataclasses.replace(r2.command, job_id=b"\x42" * 16)))
    assert len(other) == r2.length
    data[r2.offset:r2.offset + r2.length] = other
    open(seg, "wb").write(bytes(data))
    doc = json.loads(cli("diff", "-o", "json", "--as-of", AS_OF, a, b).out)
    assert doc["relation"]["kind"] == "diverge"
    assert doc["relation"]["a"]["at"] == doc["relation"]["b"]["at"] == f"000000003.log@0x{r2.offset:x}"
    assert doc["relation"]["text"] == (f"they diverge at A: 000000003.log@0x{r2.offset:x} / "
                                       f"B: 000000003.log@0x{r2.offset:x}")
    c = _copy(tmp_path, "upstream-a2-run2", "c")
    doc = json.loads(cli("diff", "-o", "json", "--as-of", AS_OF, a, c).out)
    assert doc["relation"]["kind"] == "none" and doc["relation"]["text"] == "no common prefix"


def test_damaged_input_is_read_through(pair):
    a, b = pair
    seg = os.path.join(b, "000000002.log")
    data = bytearray(open(seg, "rb").read())
    data[0x30] ^= 0xFF
    open(seg, "wb").write(bytes(data))
    r = cli("diff", "-o", "json", "--as-of", AS_OF, a, b)
    doc = json.loads(r.out)
    assert r.code == 3 and doc["exit_code"] == 3 and doc["b"]["verdict"] == "CORRUPT"
    crc = [f for f in doc["findings"] if f["code"] == "WQ-CRC"]
    assert [(f["side"], f["at"]) for f in crc] == [("b", "000000002.log@0x2d")] or crc and crc[0]["side"] == "b"
    assert "WQ-CRC" in r.err
    assert doc["relation"]["kind"] == "diverge"


def test_two_formats_are_refused(in_root):
    r = cli("diff", "fixtures/workq/sample-clean/log", "fixtures/kestrel/clean-journal/" + next(n for n in sorted(os.listdir("fixtures/kestrel/clean-journal")) if not n.startswith("expected")))
    assert r.code == 2 and "diff compares two logs of one format" in r.err


@pytest.mark.parametrize("output,name", [("table", "diff_table.txt"), ("json", "diff_json.json")])
def test_snapshots(pair, snapshot, output, name, monkeypatch):
    a, b = pair
    _delete_and_add(b)
    monkeypatch.chdir(os.path.dirname(a))
    r = cli("diff", "-o", output, "--as-of", "last", "a", "b")
    snapshot.snapshot_dir = os.path.join(os.path.dirname(__file__), "snapshots")
    snapshot.assert_match(f"exit {r.code}\n--- stdout\n{r.out}--- stderr\n{r.err}", name)


def test_kestrel_items_compared_with_their_add_and_remove(tmp_path):
    """Kestrel (issue 32 item 4): the queue's items compared; an appended REMOVE names the item it took (at the
    REMOVE's offset on B, at its add on A), an appended ADD the new item (at its add on B)."""
    from wqtool.engine.kestrel.writer import JournalWriter
    src = os.path.join("fixtures", "kestrel", "clean-journal", "queue", "things")
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        shutil.copy(os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", src), d / "things")
        (d / "things").chmod(0o644)
    assert cli("diff", str(a / "things"), str(b / "things")).code == 0
    size = (b / "things").stat().st_size
    with JournalWriter(str(b / "things"), mode="ab") as w:
        w.remove()
        w.add(b"late", 1_300_000_050_000)
    r = cli("diff", "-o", "json", str(a / "things"), str(b / "things"))
    doc = json.loads(r.out)
    assert r.code == 1 and doc["relation"]["text"] == "B = A + 2 records" and doc["total"] == 2
    gone, new = doc["jobs"]
    assert (gone["a"]["state"], gone["b"], gone["b_change"]["cmd"], gone["b_change"]["offset"]) == \
        ("queued", None, "remove", size)
    assert gone["a_change"]["cmd"] == "add" and gone["a"]["row"]["add_offset"] == gone["a_change"]["offset"]
    assert (new["a"], new["b"]["state"], new["b_change"]["cmd"], new["b_change"]["offset"]) == \
        (None, "queued", "add", size + 1)
    assert new["a_change"] is None and new["queue"] == "things"
    t = cli("diff", str(a / "things"), str(b / "things")).out
    assert f"things@0x{size:x} #13 - remove" in t and "queued  pos 2, 4 bytes" in t


# ---------------------------------------------------------------- Orth / XXL-JOB: an executor against its admin
XXL_LOG_COLS = ("id,job_group,job_id,executor_address,executor_handler,executor_param,executor_sharding_param,"
                "executor_fail_retry_count,trigger_time,trigger_code,trigger_msg,handle_time,handle_code,handle_msg,"
                "alarm_status")
#: (log id, executor address, trigger time, handle time, handle code): 61 finished, its callback stranded in a
#: retry file (the admin waits); 62 failed, its callback stranded, its executor no longer registered (lost at
#: 03:00); 400 finished and delivered (the admin has it); 500 triggered, never started on the executor
XXL_ROWS = [(61, "http://10.0.0.5:9999/", "2026-01-30 02:40:00", None, 0),
            (62, "http://10.0.0.9:9999/", "2026-01-30 02:40:00", None, 0),
            (400, "http://10.0.0.5:9999/", "2026-01-30 02:40:00", "2026-01-30 02:40:02", 200),
            (500, "http://10.0.0.5:9999/", "2026-01-30 02:50:00", None, 0)]
XXL_REGISTRY = (1, "EXECUTOR", "demo", "http://10.0.0.5:9999/", "2026-01-30 02:59:40")
XXL_AS_OF = "2026-01-30T03:00:00Z"


def _xxl_logpath(tmp_path) -> str:
    """An xxl-job HEAD executor's logPath: runs 61 and 62 with their callbacks in a retry file real Gson wrote
    (fixtures/orth-xxl-job/xxl-job-head-gson), and run 400 whose callback the admin acknowledged
    (fixtures/orth/xxl-job-executor-runs)."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "fixtures")
    lp = tmp_path / "logpath"
    shutil.copytree(os.path.join(root, "orth-xxl-job", "xxl-job-head-gson", "logpath"), lp)
    shutil.copy(os.path.join(root, "orth", "xxl-job-executor-runs", "logpath", "2026-01-30", "400.log"),
                lp / "2026-01-30" / "400.log")
    return str(lp)


def _xxl_csv(tmp_path) -> str:
    d = tmp_path / "admin"
    d.mkdir()
    with open(d / "xxl_job_log.csv", "w") as f:
        f.write(XXL_LOG_COLS + "\n")
        for i, addr, t, ht, hc in XXL_ROWS:
            f.write(f'{i},1,7,"{addr}","demoJobHandler",,,0,"{t}",200,"ok",{"" if ht is None else chr(34) + ht + chr(34)},'
                    f'{hc},,0\n')
    with open(d / "xxl_job_registry.csv", "w") as f:
        f.write("id,registry_group,registry_key,registry_value,update_time\n")
        f.write(",".join(str(v) if isinstance(v, int) else f'"{v}"' for v in XXL_REGISTRY) + "\n")
    return str(d)


def _xxl_pg_dump(tmp_path) -> str:
    """The same tables as pg_dump 15.14+ writes them: \\restrict KEY first, \\unrestrict KEY last."""
    key = "Qm9yaXMgS2FybG9mZiBhcyB0aGUgbW9uc3Rlcgo"
    rows = "".join(f"{i}\t1\t7\t{addr}\tdemoJobHandler\t\\N\t\\N\t0\t{t}\t200\tok\t{ht or chr(92) + 'N'}\t{hc}\t\\N\t0\n"
                   for i, addr, t, ht, hc in XXL_ROWS)
    reg = "\t".join(str(v) for v in XXL_REGISTRY) + "\n"
    text = (f"--\n-- PostgreSQL database dump\n--\n\n\\restrict {key}\n\nSET standard_conforming_strings = on;\n\n"
            f"COPY public.xxl_job_log ({XXL_LOG_COLS.replace(',', ', ')}) FROM stdin;\n{rows}\\.\n\n"
            "COPY public.xxl_job_registry (id, registry_group, registry_key, registry_value, update_time) FROM stdin;\n"
            f"{reg}\\.\n\n--\n-- PostgreSQL database dump complete\n--\n\n\\unrestrict {key}\n\n")
    p = tmp_path / "xxl_job.sql"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("table", [_xxl_csv, _xxl_pg_dump])
def test_xxl_job_executor_against_its_admin_table(tmp_path, table):
    lp, admin = _xxl_logpath(tmp_path), table(tmp_path)
    r = cli("diff", "-o", "json", "--as-of", XXL_AS_OF, lp, admin)
    doc = json.loads(r.out)
    assert r.code == 1, r.err
    assert doc["relation"]["kind"] == "across" and doc["b"]["verdict"] == "clean"
    runs = {j["job_id"]: j for j in doc["jobs"]}
    assert {k: j["kind"] for k, j in runs.items()} == {"61": "stuck", "62": "lost", "500": "no-trace"}
    stuck = runs["61"]
    entry = stuck["a_change"]
    assert (os.path.basename(entry["file"]), entry["offset"], entry["record_index"]) == \
        ("xxl-job-callback-bfbba807ec3f77c2a6d3f8ed4c4c6155.log", 1, 0)
    send = (f"wqtool replay --send http://ADMIN:8080/xxl-job-admin -O admin_release=xxl-job-head "
            f"-O access_token_header=XXL-JOB-ACCESS-TOKEN -O access_token=TOKEN {lp}/callbacklogs")
    assert stuck["note"].endswith(send) and "entry 0" in stuck["note"]
    assert (stuck["a"]["state"], stuck["b"]["row"]["handle_code"]) == ("Success", 0)
    assert runs["62"]["b_change"]["cmd"] == "OJL-LOST" and runs["62"]["a"]["row"]["handle_code"] == 500
    assert runs["500"]["a"] is None and runs["500"]["a_change"] is None
    # the line it prints delivers the stranded result (dry run: nothing sent)
    dry = cli("replay", "--send", "http://127.0.0.1:9/xxl-job-admin", "-O", "admin_release=xxl-job-head", "-O",
              "access_token_header=XXL-JOB-ACCESS-TOKEN", "-O", "access_token=TOKEN", "--dry-run", f"{lp}/callbacklogs")
    assert dry.code == 0 and "61:200" in dry.out
    t = cli("diff", "--as-of", XXL_AS_OF, lp, admin).out
    assert "stuck: the admin shows it running; the executor finished it" in t and send in t


@pytest.mark.parametrize("scenario,ids,body", [
    ("xxl-job-2-0-0-jackson", [31, 32, 33], "xxl-job-2.0"),
    ("xxl-job-2-1-hessian", [41, 42, 43], "xxl-job-2.0"),
    ("xxl-job-2-2-0-java", [51, 52, 53, 54], "xxl-job-2.2"),
    ("xxl-job-head-gson", [61, 62], "xxl-job-head"),
])
def test_every_release_lines_stranded_callbacks_are_named_with_their_send_line(tmp_path, scenario, ids, body):
    """Each release line's retry files (made with its real serializers: fixtures/orth-xxl-job) against an admin
    table that still shows those runs running: each is stuck, at its entry, with the send line of its admin."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "fixtures", "orth-xxl-job")
    lp = tmp_path / "logpath"
    shutil.copytree(os.path.join(root, scenario, "logpath"), lp)
    admin = tmp_path / "admin"
    admin.mkdir()
    with open(admin / "xxl_job_log.csv", "w") as f:
        f.write(XXL_LOG_COLS + "\n")
        for i in ids:
            f.write(f'{i},1,7,"http://10.0.0.5:9999/","demoJobHandler",,,0,"2026-01-30 02:40:00",200,"ok",,0,,0\n')
    with open(admin / "xxl_job_registry.csv", "w") as f:     # the executor still registered: not lost
        f.write("id,registry_group,registry_key,registry_value,update_time\n")
        f.write(",".join(str(v) if isinstance(v, int) else f'"{v}"' for v in XXL_REGISTRY) + "\n")
    doc = json.loads(cli("diff", "-o", "json", "--as-of", XXL_AS_OF, str(lp), str(admin)).out)
    assert [j["job_id"] for j in doc["jobs"]] == [str(i) for i in ids]
    assert {j["kind"] for j in doc["jobs"]} == {"stuck"}
    assert all(f"-O admin_release={body} " in j["note"] and j["a_change"]["cmd"].startswith("callback handleCode=")
               for j in doc["jobs"])
    places = {(j["a_change"]["file"], j["a_change"]["record_index"]) for j in doc["jobs"]}
    assert len(places) == len(ids)                          # each run at its own entry
