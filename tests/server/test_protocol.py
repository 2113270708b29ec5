"""workq 0.2.0's replies byte for byte, over real TCP: the edge-case battery of workq-protocol.md section 7, the
ID table of section 4, and every command and reply class of sections 3, 5 and 6."""
from __future__ import annotations

import time

import pytest

from tests.server.conftest import jid

UC = b"-CLIENT-ERROR Unknown command\r\n"
ARGS = b"-CLIENT-ERROR Invalid command args\r\n"
FLAGS = b"-CLIENT-ERROR Invalid command flags\r\n"
PSIZE = b"-CLIENT-ERROR Invalid payload size\r\n"
RSIZE = b"-CLIENT-ERROR Invalid result size\r\n"
OK = b"+OK\r\n"


def ce(text: str) -> bytes:
    return b"-CLIENT-ERROR " + text.encode() + b"\r\n"


# (request, reply, connection closed afterwards) — section 7, with ids of this module (0x7000 + row)
BATTERY = [
    (b"\r\n", UC, False),
    (b"add %s q 1000 60000 1\nx\n" % jid(0x7001), b"", True),
    (b"ADD %s q 1000 60000 1\r\nx\r\n" % jid(0x7002), UC + UC, False),
    (b"add %s q 1000 60000\r\n" % jid(0x7003), ARGS, False),
    (b"add %s q 1000 60000 abc\r\nx\r\n" % jid(0x7004), PSIZE + UC, False),
    (b"add %s q 1000 60000 -1\r\nx\r\n" % jid(0x7005), PSIZE + UC, False),
    (b"add %s q 1000 60000 1048577\r\n" % jid(0x7006), PSIZE, False),
    (b"add %s q 1000 60000 3\r\nabcd\r\n" % jid(0x7007), PSIZE, True),
    (b"add %s q 1000 60000 1 -priority=1 -priority=2\r\nx\r\n" % jid(0x7008), FLAGS + UC, False),
    (b"add %s q 1000 60000 1 -priority=\r\nx\r\n" % jid(0x7009), FLAGS + UC, False),
    (b"add %s q 1000 60000 1 -priority=1 -max-attempts=1 -max-fails=1 -foo=1\r\nx\r\n" % jid(0x700a), ARGS, False),
    (b"add %s q 1000 60000 1 -priority=2147483648\r\nx\r\n" % jid(0x700b), ce("Invalid Priority"), False),
    (b"schedule %s q 1000 1000 2016-01-01T00:00:00Z 1\r\nx\r\n" % jid(0x700c), ce("Invalid Time"), False),
    (b"schedule %s q 1000 1000 2030-01-01T00:00:00+00:00 1\r\nx\r\n" % jid(0x700d), ce("Invalid Time"), False),
    (b"run %s q 1000 10 1 -priority=1 -max-attempts=1\r\nx\r\n" % jid(0x700e), ARGS, False),
    (b"run %s q 1000 86400001 1\r\nx\r\n" % jid(0x700f), ce("Invalid wait timeout"), False),
    (b"lease q\r\n", ARGS, False),
    (b"lease q abc\r\n", ce("Invalid wait timeout"), False),
    (b"lease q 86400001\r\n", ce("Invalid wait timeout"), False),
    (b"lease q 10 -x=1\r\n", ARGS, False),
    (b"result %s\r\n" % jid(0x7010), ARGS, False),
    (b"complete %s 3\r\nabcd\r\n" % jid(0x7011), PSIZE, True),
    (b"fail %s x\r\nabcd\r\n" % jid(0x7012), RSIZE + UC, False),
    (b"complete %s 1 -a=b\r\nx\r\n" % jid(0x7013), ARGS, False),
    (b"delete %s %s\r\n" % (jid(0x7014), jid(0x7014)), ARGS, False),
    (b"inspect queues 0 0\r\n", ce("Invalid limit"), False),
    (b"inspect queues 0 101\r\n", ce("Invalid limit"), False),
    (b"inspect jobs q -1 10\r\n", ce("Invalid cursor offset"), False),
    (b"inspect jobs nope-7 0 10\r\n", b"-NOT-FOUND\r\n", False),
    (b"inspect queue nope-7\r\n", b"-NOT-FOUND\r\n", False),
]


@pytest.mark.parametrize("request_, reply, closed", BATTERY, ids=[f"row{i}" for i in range(len(BATTERY))])
def test_edge_case_battery(mem_server, request_, reply, closed):
    c = mem_server.client()
    try:
        c.expect(request_, reply)
        if closed:
            assert c.closed(), "the connection must be closed"
        else:
            assert c.quiet(), "nothing more is sent"
            c.expect(b"inspect queue nope-8\r\n", b"-NOT-FOUND\r\n")   # and it still answers
    finally:
        c.close()


def test_lease_several_queues_takes_the_one_with_a_job(mem_server):
    c = mem_server.client()
    c.expect(b"add %s q-zz 1000 60000 2\r\nzz\r\n" % jid(0x7020), OK)
    c.expect(b"lease zz1 zz2 q-zz 100\r\n", b"+OK 1\r\n%s q-zz 1000 2\r\nzz\r\n" % jid(0x7020))


def test_pipelined_add_then_inspect(mem_server):
    c = mem_server.client()
    c.expect(b"add %s q-pipe 1000 60000 1\r\nx\r\ninspect queue q-pipe\r\n" % jid(0x7021),
             b"+OK\r\n+OK 1\r\nq-pipe 2\r\nready-len 1\r\nscheduled-len 0\r\n")


# ---------------------------------------------------------------- section 4: ids
@pytest.mark.parametrize("text, stored", [
    (b"6BA7B810-9DAD-41D1-80B4-00C04FD43AAA", b"6ba7b810-9dad-41d1-80b4-00c04fd43aaa"),
    (b"6ba7b8109dad41d180b400c04fd43bbb", b"6ba7b810-9dad-41d1-80b4-00c04fd43bbb"),
    (b"urn:uuid:6ba7b810-9dad-41d1-80b4-00c04fd43ccc", b"6ba7b810-9dad-41d1-80b4-00c04fd43ccc"),
    (b"6ba7b810-9dad-41d1-80b4-00c04fd43dddXYZ", b"6ba7b810-9dad-41d1-80b4-00c04fd43ddd"),
    (b"{6ba7b810-9dad-41d1-80b4-00c04fd43eee}", b"6ba7b810-9dad-41d1-80b4-00c04fd43eee"),
])
def test_accepted_ids_print_canonical(mem_server, text, stored):
    c = mem_server.client()
    c.expect(b"add %s q-ids 1000 60000 1\r\nx\r\n" % text, OK)
    c.send(b"inspect job %s\r\n" % stored)
    c._ok_n()
    assert c.line() == stored + b" 12"


@pytest.mark.parametrize("text", [b"not-a-uuid", b"6ba7b810-9dad-11d1-80b4-00c04fd430c4",
                                  b"00000000-0000-0000-0000-000000000000",
                                  b"urn:uuid:00000000-0000-4000-8000",  # upstream: index out of range (panic)
                                  b"6ba7b810-9dad-41d1-80b4-00c04fd43zzz"])
def test_refused_ids(mem_server, text):
    c = mem_server.client()
    c.expect(b"add %s q-ids 1000 60000 1\r\nx\r\n" % text, ce("Invalid ID"))


def test_delete_and_inspect_of_well_formed_non_v4_ids(mem_server):
    c = mem_server.client()
    v1 = b"6ba7b810-9dad-11d1-80b4-00c04fd430c4"
    c.expect(b"delete %s\r\n" % v1, OK)                 # swallowed validation error, nothing logged
    c.expect(b"inspect job %s\r\n" % v1, b"-NOT-FOUND\r\n")
    c.expect(b"delete nope\r\n", ce("Invalid ID"))
    c.expect(b"inspect job nope\r\n", ce("Invalid ID"))
    c.expect(b"complete %s 0\r\n\r\n" % v1, ce("Invalid ID"))
    c.expect(b"result %s 0\r\n" % v1, ce("Invalid ID"))


# ---------------------------------------------------------------- section 5: commands and reply classes
def test_spec_examples_add_lease_complete_result(mem_server):
    c = mem_server.client()
    j = jid(0x7101)
    c.expect(b"add %s q-ex1 5000 3600000 5 -priority=5\r\nhello\r\n" % j, OK)
    c.expect(b"lease q-ex1 1000\r\n", b"+OK 1\r\n%s q-ex1 5000 5\r\nhello\r\n" % j)
    c.expect(b"complete %s 4\r\ndone\r\n" % j, OK)
    c.expect(b"result %s 0\r\n" % j, b"+OK 1\r\n%s 1 4\r\ndone\r\n" % j)
    c.expect(b"complete %s 4\r\ndone\r\n" % j, ce("Duplicate result"))
    c.expect(b"fail %s 4\r\noops\r\n" % j, ce("Duplicate result"))
    c.expect(b"add %s q-ex1 5000 3600000 0\r\n\r\n" % j, ce("Duplicate job"))


def test_fail_result_and_unknown_jobs(mem_server):
    c = mem_server.client()
    j = jid(0x7102)
    c.expect(b"add %s q-ex2 5000 3600000 0\r\n\r\n" % j, OK)
    c.expect(b"fail %s 4\r\noops\r\n" % j, OK)           # never leased: accepted
    c.expect(b"result %s 0\r\n" % j, b"+OK 1\r\n%s 0 4\r\noops\r\n" % j)
    unknown = jid(0x71ff)
    for req in (b"complete %s 0\r\n\r\n", b"fail %s 0\r\n\r\n", b"delete %s\r\n", b"result %s 0\r\n",
                b"inspect job %s\r\n"):
        c.expect(req % unknown, b"-NOT-FOUND\r\n")


def test_timeouts(mem_server):
    c = mem_server.client()
    j = jid(0x7103)
    c.expect(b"lease q-empty-t 0\r\n", b"-TIMEOUT\r\n")
    c.expect(b"lease q-empty-t 50\r\n", b"-TIMEOUT\r\n")
    c.expect(b"add %s q-ex3 5000 3600000 1\r\nx\r\n" % j, OK)
    c.expect(b"result %s 0\r\n" % j, b"-TIMEOUT\r\n")
    c.expect(b"result %s 100\r\n" % j, b"-TIMEOUT\r\n")
    c.expect(b"run %s q-ex3b 1000 0 5\r\nrun-0\r\n" % jid(0x7104), b"-TIMEOUT\r\n")
    c.expect(b"run %s q-ex3b 1000 30 5\r\nrun-0\r\n" % jid(0x7105), b"-TIMEOUT\r\n")
    c.expect(b"inspect job %s\r\n" % jid(0x7105), b"-NOT-FOUND\r\n")   # the run's job is gone


def test_inspect_job_block_raw_payload_and_scheduled_time(mem_server):
    c = mem_server.client()
    j = jid(0x7106)
    c.expect(b"schedule %s q-ex4 1000 60000 2030-01-01T00:00:00.5Z 8 -max-attempts=3 -max-fails=2 -priority=-4"
             b"\r\nl\r\na\nt\x00r\r\n" % j, OK)
    c.send(b"inspect job %s\r\n" % j)
    assert c.read_exact(7) == b"+OK 1\r\n"
    rest = b"%s 13\r\nname q-ex4\r\nttr 1000\r\nttl 60000\r\npayload-size 8\r\npayload l\r\na\nt\x00r\r\n" \
           b"max-attempts 3\r\nattempts 0\r\nmax-fails 2\r\nfails 0\r\npriority -4\r\nstate 0\r\ncreated " % j
    assert c.read_exact(len(rest)) == rest
    created = c.line()
    assert len(created) == 20 and created.endswith(b"Z")
    assert c.line() == b"time 2030-01-01T00:00:00Z"
    c.expect(b"inspect queue q-ex4\r\n", b"+OK 1\r\nq-ex4 2\r\nready-len 0\r\nscheduled-len 1\r\n")
    blocks = c.inspect_jobs(b"q-ex4", scheduled=True)
    assert [b["id"] for b in blocks] == [j] and blocks[0]["payload"] == b"l\r\na\nt\x00r"
    c.expect(b"inspect jobs q-ex4 0 10\r\n", b"+OK 0\r\n")
    c.expect(b"inspect scheduled-jobs q-ex4 1 10\r\n", b"+OK 0\r\n")


def test_empty_payload_block(mem_server):
    c = mem_server.client()
    j = jid(0x7107)
    c.expect(b"add %s q-ex5 1000 60000 0\r\n\r\n" % j, OK)
    c.send(b"inspect job %s\r\n" % j)
    c._ok_n()
    c.line()
    for want in (b"name q-ex5", b"ttr 1000", b"ttl 60000", b"payload-size 0", b"payload "):
        assert c.line() == want


def test_inspect_server_announces_two_keys_and_sends_three(mem_server):
    c = mem_server.client()
    c.send(b"inspect server\r\n")
    assert c.line() == b"+OK 1"
    assert c.line() == b"server 2"
    assert c.line().startswith(b"active-clients ")
    assert c.line().startswith(b"evicted-jobs ")
    started = c.line()
    assert started.startswith(b"started ") and len(started) == len(b"started 2026-01-01T00:00:00Z")
    c.expect(b"inspect server x\r\n", ARGS)
    c.expect(b"inspect\r\n", ARGS)
    c.expect(b"inspect nothing\r\n", UC)
    c.expect(b"inspect server -a=1\r\n", ARGS)
    c.expect(b"inspect nothing -a=1\r\n", UC)


def test_inspect_queues_byte_order_and_paging(mem_server):
    c = mem_server.client()
    for i, name in enumerate((b"pq-10", b"pq-2", b"pq-1", b"pq-empty")):
        if name == b"pq-empty":
            c.expect(b"lease pq-empty 0\r\n", b"-TIMEOUT\r\n")      # lease creates the queue
        else:
            c.expect(b"add %s %s 1000 60000 0\r\n\r\n" % (jid(0x7200 + i), name), OK)
    c.send(b"inspect queues 0 100\r\n")
    n = c._ok_n()
    names = []
    for _ in range(n):
        names.append(c.line().split(b" ")[0])
        c.line()
        c.line()
    pq = [x for x in names if x.startswith(b"pq-")]
    assert pq == [b"pq-1", b"pq-10", b"pq-2", b"pq-empty"]
    c.expect(b"inspect queues 4294967295 1\r\n", b"+OK 0\r\n")
    c.expect(b"inspect queues 4294967296 1\r\n", ce("Invalid cursor offset"))


def test_dequeue_order_priority_then_time_then_created(mem_server):
    c = mem_server.client()
    q = b"q-order"
    c.expect(b"add %s %s 1000 60000 1 -priority=1\r\na\r\n" % (jid(0x7301), q), OK)
    c.expect(b"add %s %s 1000 60000 1 -priority=5\r\nb\r\n" % (jid(0x7302), q), OK)
    c.expect(b"add %s %s 1000 60000 1 -priority=1\r\nc\r\n" % (jid(0x7303), q), OK)
    past = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60)).encode()   # ready at once
    c.expect(b"schedule %s %s 1000 3600000 %s 1 -priority=1\r\nd\r\n" % (jid(0x7304), q, past), OK)
    c.expect(b"add %s %s 1000 60000 1 -priority=-2147483648\r\ne\r\n" % (jid(0x7305), q), OK)
    assert [b["payload"] for b in c.inspect_jobs(q)] == [b"b", b"a", b"c", b"d", b"e"]
    assert [b["payload"] for b in c.inspect_jobs(q, offset=3, limit=1)] == [b"d"]
    assert [c.lease([q], 0)[3] for _ in range(5)] == [b"b", b"a", b"c", b"d", b"e"]


@pytest.mark.parametrize("req, reply", [
    (b"add {id} q 0 60000 1\r\nx\r\n", "Invalid TTR"),
    (b"add {id} q 86400001 60000 1\r\nx\r\n", "Invalid TTR"),
    (b"add {id} q -1 60000 1\r\nx\r\n", "Invalid TTR"),
    (b"add {id} q 1000 0 1\r\nx\r\n", "Invalid TTL"),
    (b"add {id} q 1000 2592000001 1\r\nx\r\n", "Invalid TTL"),
    (b"add {id} q/x 1000 60000 1\r\nx\r\n", "Invalid Name"),
    (b"add {id} " + b"n" * 256 + b" 1000 60000 1\r\nx\r\n", "Invalid Name"),
    (b"add {id} q\xc3\xa9 1000 60000 1\r\nx\r\n", "Invalid Name"),
    (b"add {id} q 1000 60000 1 -max-attempts=256\r\nx\r\n", "Invalid Max Attempts"),
    (b"add {id} q 1000 60000 1 -max-fails=-1\r\nx\r\n", "Invalid Max Fails"),
    (b"add {id} q 1000 60000 1 -priority=x -max-attempts=y\r\nx\r\n", "Invalid Max Attempts"),
    (b"add {id} q/x abc 60000 1\r\nx\r\n", "Invalid TTR"),          # parsing before the name's validation
    (b"add 6ba7b810-9dad-11d1-80b4-00c04fd430c4 q/x 0 0 1\r\nx\r\n", "Invalid ID"),
    (b"schedule {id} q 1000 60000 2030-01-01t00:00:00Z 1\r\nx\r\n", "Invalid Time"),
    (b"schedule {id} q 1000 60000 2030-02-30T00:00:00Z 1\r\nx\r\n", "Invalid Time"),
    (b"schedule {id} q 1000 60000 2030-01-01T24:00:00Z 1\r\nx\r\n", "Invalid Time"),
    (b"schedule {id} q 1000 60000 2030-01-01T00:00:00z 1\r\nx\r\n", "Invalid Time"),
    (b"run {id} q 0 100 1\r\nx\r\n", "Invalid TTR"),
    (b"run {id} q/x 1000 100 1\r\nx\r\n", "Invalid Name"),
    (b"run {id} q 1000 100 1 -priority=2147483648\r\nx\r\n", "Invalid Priority"),
    (b"lease q/x 100\r\n", "Invalid Name"),
    (b"lease q/x abc\r\n", "Invalid wait timeout"),                # the timeout is parsed first
    (b"result {id} -1\r\n", "Invalid wait timeout"),
    (b"inspect queue q/x\r\n", "Invalid Name"),
    (b"inspect jobs q/x 0 1\r\n", "Invalid Name"),
    (b"inspect jobs q 0 x\r\n", "Invalid limit"),
])
def test_validation_errors(mem_server, req, reply):
    c = mem_server.client()
    c.expect(req.replace(b"{id}", jid(0x7400)), ce(reply))


def test_schedule_edge_times_accepted(mem_server):
    c = mem_server.client()
    c.expect(b"schedule %s q-st 1000 60000 2030-01-01T0:00:00Z 1\r\nx\r\n" % jid(0x7501), OK)   # one-digit hour
    c.expect(b"schedule %s q-st 1000 60000 2028-02-29T00:00:00.123456789999Z 1\r\nx\r\n" % jid(0x7502), OK)
    c.expect(b"add %s q-st 1000 60000 +1 -priority=+3\r\nx\r\n" % jid(0x7503), OK)             # Atoi / ParseInt signs


def test_circuit_breaker_reply_bytes():
    from wqtool.server.workq import wire
    assert wire.E_READ_ONLY == b"-SERVER-ERROR Read-only mode triggered by cmdlog circuit breaker\r\n"
