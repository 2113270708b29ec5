"""Client flows as a workq client runs them (add/lease/complete/fail/result/delete/run/schedule), timers (TTR, TTL,
scheduled wake-up), and blocking commands woken by other connections."""
from __future__ import annotations

import threading
import time

import pytest

from tests.server.conftest import Reply, jid


def test_add_lease_complete_fail_result_delete(mem_server):
    c = mem_server.client()
    c.add(jid(0x8001), b"fl-1", 5000, 60000, b"one", priority=2)
    c.add(jid(0x8002), b"fl-1", 5000, 60000, b"two")
    assert c.lease([b"fl-1"], 100) == (jid(0x8001), b"fl-1", 5000, b"one")
    assert c.inspect_job(jid(0x8001))["state"] == 4
    c.complete(jid(0x8001), b"ok!")
    assert c.result(jid(0x8001), 0) == (True, b"ok!")
    assert c.lease([b"fl-1"], 100)[0] == jid(0x8002)
    c.fail(jid(0x8002), b"bad")
    assert c.result(jid(0x8002), 0) == (False, b"bad")
    j = c.inspect_job(jid(0x8002))
    assert (j["state"], j["attempts"], j["fails"]) == (2, 1, 0)
    c.delete(jid(0x8002))
    with pytest.raises(Reply) as e:
        c.inspect_job(jid(0x8002))
    assert e.value.code == "NOT-FOUND"


def test_blocking_lease_is_woken_by_an_add_on_another_connection(mem_server):
    worker, producer = mem_server.client(), mem_server.client()
    got = {}

    def lease():
        got["job"] = worker.lease([b"fl-none", b"fl-2"], 5000)

    th = threading.Thread(target=lease)
    th.start()
    time.sleep(0.2)
    producer.add(jid(0x8003), b"fl-2", 5000, 60000, b"late")
    th.join(5)
    assert got["job"] == (jid(0x8003), b"fl-2", 5000, b"late")


def test_blocking_result_and_run_answered_by_a_worker(mem_server):
    client, worker, waiter = mem_server.client(), mem_server.client(), mem_server.client()
    out = {}

    def run():
        out["run"] = client.run(jid(0x8004), b"fl-run", 2000, 3000, b"work", priority=3)

    th = threading.Thread(target=run)
    th.start()
    job = worker.lease([b"fl-run"], 3000)
    assert job == (jid(0x8004), b"fl-run", 2000, b"work")
    j = worker.inspect_job(jid(0x8004))
    assert (j["ttl"], j["priority"], j["state"], j["attempts"]) == (0, 3, 4, 1)

    def result():
        out["result"] = waiter.result(jid(0x8004), 3000)

    th2 = threading.Thread(target=result)
    th2.start()
    time.sleep(0.1)
    worker.complete(jid(0x8004), b"ran")
    th.join(5)
    th2.join(5)
    assert out["run"] == (True, b"ran")
    assert out["result"] == (True, b"ran")
    with pytest.raises(Reply):
        worker.inspect_job(jid(0x8004))                 # run removes its job when it returns


def test_ttr_timeout_requeues_then_fails_at_max_attempts(mem_server):
    c = mem_server.client()
    j = jid(0x8005)
    c.add(j, b"fl-ttr", 150, 60000, b"slow", max_attempts=2)
    assert c.lease([b"fl-ttr"], 100)[0] == j
    time.sleep(0.35)
    s = c.inspect_job(j)
    assert (s["state"], s["attempts"]) == (3, 1)          # PENDING, back in the ready queue
    assert c.lease([b"fl-ttr"], 100)[0] == j
    time.sleep(0.35)
    s = c.inspect_job(j)
    assert (s["state"], s["attempts"]) == (2, 2)          # FAILED at max-attempts
    c.expect(b"result %s 0\r\n" % j, b"+OK 1\r\n%s 0 0\r\n\r\n" % j)
    with pytest.raises(Reply) as e:
        c.complete(j, b"x")
    assert e.value.text == "Duplicate result"


def test_late_complete_after_ttr_is_accepted(mem_server):
    c = mem_server.client()
    j = jid(0x8006)
    c.add(j, b"fl-late", 100, 60000, b"x")
    c.lease([b"fl-late"], 100)
    time.sleep(0.25)
    c.complete(j, b"late but fine")
    assert c.result(j, 0) == (True, b"late but fine")


def test_ttl_expiry_evicts_and_counts(mem_server):
    c = mem_server.client()
    before = int(c.inspect_server()["evicted-jobs"])
    c.add(jid(0x8007), b"fl-ttl", 1000, 200, b"x")
    c.add(jid(0x8008), b"fl-ttl", 1000, 200, b"y")
    c.complete(jid(0x8008), b"")                          # processed: expires without counting
    time.sleep(0.4)
    for j in (jid(0x8007), jid(0x8008)):
        with pytest.raises(Reply) as e:
            c.inspect_job(j)
        assert e.value.code == "NOT-FOUND"
    assert int(c.inspect_server()["evicted-jobs"]) == before + 1


def test_scheduled_job_wakes_up_and_is_leased(mem_server):
    c = mem_server.client()
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1.2)).encode()
    c.schedule(jid(0x8009), b"fl-sched", 1000, 60000, when, b"wake")
    assert c.inspect_queue(b"fl-sched") == (0, 1)
    t0 = time.monotonic()
    assert c.lease([b"fl-sched"], 4000)[3] == b"wake"
    assert 0.0 < time.monotonic() - t0 < 3.0


def test_run_timeout_then_pending_job_removed_and_waiters_fifo(mem_server):
    a, b, p = mem_server.client(), mem_server.client(), mem_server.client()
    got = []

    def lease(c, tag):
        got.append((tag, c.lease([b"fl-fifo"], 3000)[3]))

    ta = threading.Thread(target=lease, args=(a, "a"))
    ta.start()
    time.sleep(0.15)
    tb = threading.Thread(target=lease, args=(b, "b"))
    tb.start()
    time.sleep(0.15)
    p.add(jid(0x800a), b"fl-fifo", 1000, 60000, b"1")
    p.add(jid(0x800b), b"fl-fifo", 1000, 60000, b"2")
    ta.join(5)
    tb.join(5)
    assert sorted(got) == [("a", b"1"), ("b", b"2")]      # first come, first served
