"""PostgreSQL dumps of the job-log tables (issue 19): pg_dump's plain format (COPY ... FROM stdin, and --inserts)
is read, never called a torn MySQL dump; a custom-format archive is refused as an unsupported dump dialect (exit 2)."""
from __future__ import annotations

import json

from tests.conftest import cli

COLS = ("id, job_group, job_id, executor_address, executor_handler, executor_param, executor_sharding_param, "
        "executor_fail_retry_count, trigger_time, trigger_code, trigger_msg, handle_time, handle_code, handle_msg, "
        "alarm_status")
HEAD = "--\n-- PostgreSQL database dump\n--\n\nSET standard_conforming_strings = on;\n\n"
TAIL = "\n--\n-- PostgreSQL database dump complete\n--\n\n"
ROW = "1\t1\t7\thttp://10.0.0.5:9999/\tdemoJobHandler\t\\N\t\\N\t0\t2026-01-28 01:00:00\t200\tok<br>a\\tb\t" \
      "2026-01-28 01:00:02\t200\t\\N\t0\n"


def _rows(path):
    r = cli("dump", "-o", "jsonl", str(path))
    *rows, summary = [json.loads(x) for x in r.out.splitlines()]      # the records, then the summary line
    assert summary["summary"]["exit_code"] == r.code
    return r.code, rows


def test_a_copy_dump_is_read(tmp_path):
    p = tmp_path / "xxl_job.sql"
    p.write_text(HEAD + f"COPY public.xxl_job_log ({COLS}) FROM stdin;\n" + ROW + "\\.\n" + TAIL)
    assert cli("verify", str(p)).code == 0
    code, rows = _rows(p)
    assert code == 0 and len(rows) == 1
    r = rows[0]
    assert (r["id"], r["trigger_code"], r["handle_code"], r["trigger_msg"], r["handle_msg"]) == \
        (1, 200, 200, "ok<br>a\tb", None)


def test_an_inserts_dump_is_read(tmp_path):
    p = tmp_path / "xxl_job.sql"
    p.write_text(HEAD + f"INSERT INTO public.xxl_job_log ({COLS}) VALUES (2, 1, 7, 'http://x/', 'h', NULL, NULL, 0, "
                 "'2026-01-28 01:00:00', 200, 'it''s C:\\path', '2026-01-28 01:00:03', 500, E'line\\nnext', 0);\n"
                 + TAIL)
    assert cli("verify", str(p)).code == 0
    code, (r,) = _rows(p)
    assert (r["trigger_msg"], r["handle_msg"], r["handle_code"]) == ("it's C:\\path", "line\nnext", 500)


def test_a_copy_cut_short_is_torn_at_its_row_and_a_complete_one_never(tmp_path):
    p = tmp_path / "xxl_job.sql"
    full = HEAD + f"COPY public.xxl_job_log ({COLS}) FROM stdin;\n" + ROW + ROW.replace("1\t1\t7", "2\t1\t7") + \
        "\\.\n" + TAIL
    p.write_text(full)
    r = cli("verify", "-o", "json", str(p))
    assert r.code == 0 and "OJL-TRUNCATED" not in r.out
    p.write_text(full[:full.index("2\t1\t7") + 5])          # pg_dump killed mid-row
    r = cli("verify", str(p))
    assert r.code in (1, 3) and "OJL-TRUNCATED" in r.out and "COPY" in r.out


def test_a_custom_format_archive_is_an_unsupported_dump_dialect(tmp_path):
    p = tmp_path / "xxl_job.sql"
    p.write_bytes(b"PGDMP\x01\x0e\x00\x04\x08\x01\x01" + b"\x00" * 64)
    r = cli("verify", str(p))
    assert r.code == 2 and "unsupported dump dialect" in r.out + r.err


KEY = "2zXo8VPr1gD5RT4ljhA3ZhbBezwbHn0wKAgGlZ3YUqv8tRPgXbTYYBIbh0lYyeX"


def test_a_restricted_dump_of_pg_dump_15_14_and_later_is_clean(tmp_path):
    """pg_dump 15.14 / 16.10 / 17.6+ open a plain dump with ``\\restrict KEY`` and close it with ``\\unrestrict
    KEY`` (CVE-2025-8714); ``-C`` adds ``\\connect``: psql meta-commands, not a statement cut short."""
    p = tmp_path / "xxl_job.sql"
    head = HEAD.replace("--\n\n", f"--\n\n\\restrict {KEY}\n\n", 1)
    body = f"\\connect xxl_job\n\nCOPY public.xxl_job_log ({COLS}) FROM stdin;\n" + ROW + "\\.\n"
    p.write_text(head + body + TAIL + f"\\unrestrict {KEY}\n\n")
    r = cli("verify", "-o", "json", str(p))
    assert r.code == 0 and "OJL-TRUNCATED" not in r.out, r.out
    code, rows = _rows(p)
    assert code == 0 and [x["id"] for x in rows] == [1]
    p.write_text(head + body[:body.index("ok<br>")])          # killed mid-row: still a torn tail
    r = cli("verify", str(p))
    assert r.code in (1, 3) and "OJL-TRUNCATED" in r.out


def test_the_registry_of_a_pg_dump_is_read_from_its_copy_data(tmp_path):
    """A pg_dump holds xxl_job_registry as COPY data too: the lost-job rule sees the executors registered there."""
    p = tmp_path / "xxl_job.sql"
    reg = ("COPY public.xxl_job_registry (id, registry_group, registry_key, registry_value, update_time) FROM stdin;\n"
           "1\tEXECUTOR\tdemo\thttp://10.0.0.5:9999/\t2026-01-28 01:09:40\n\\.\n")
    pending = ROW.replace("\t2026-01-28 01:00:02\t200\t\\N", "\t\\N\t0\t\\N")
    p.write_text(HEAD + f"COPY public.xxl_job_log ({COLS}) FROM stdin;\n" + pending + "\\.\n" + reg + TAIL)
    r = cli("verify", "--as-of", "2026-01-28T01:10:00Z", str(p))
    assert "1 executor address(es) registered" in r.out and "OJL-LOST" not in r.out, r.out
