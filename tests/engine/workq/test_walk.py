"""The kernel's walk (engine/workq/walk.py, kernel/seek.c) is proven equal to the reference reader.

- ``time_span``: the (first, last) record time that ``--as-of first|last`` and the metrics use equals
  ``Passes.time_span``'s reference (``file_events`` + ``facts``, one file read from each end), on random logs with
  out-of-order times, undecodable payloads, bit flips and truncations.
- dump's selection: the records ``engine.dump.Records`` yields through the walk (``Dump.select_records``) equal
  those of the reference pass filtered (``--type``, ``--job``, ``--since``, ``--until``, ``--from-offset``,
  ``--to-offset``, ``-n``), with their numbers; the findings told are the reference's inside what was read (from
  an offset: those a reader of the bytes reports, not the history's); ``stopped`` is the same.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.conftest import examples
from tests.engine.selections import selected
from tests.engine.workq.test_fastreplay import IDS, T, command, kernel  # noqa: F401  (the fixture: C on)

from wqtool.engine.dump import selection
from wqtool.engine.caps import Passes
from wqtool.engine.format import get
from wqtool.engine.workq import fastreplay, walk
from wqtool.engine.workq.codes import REPLAY_CODES
from wqtool.engine.workq.fastpath import encode_payload, encode_record
from wqtool.engine.workq.reader import discover
from wqtool.engine.workq.writer import SegmentWriter
from wqtool.formats._common import GoTime
from wqtool.offsets import At

AS_OF = T + 60 * 10**9


def write(d, cmds, times, segment_size, damage) -> None:
    with SegmentWriter(str(d), segment_size=segment_size) as w:
        for c, t in zip(cmds, times):
            payload = c if isinstance(c, bytes) else encode_payload(c)
            w.append_raw(encode_record(GoTime.from_unix_ns(T + t), payload))
    segs = sorted(p for p in os.listdir(d) if p.endswith(".log"))
    for seg_i, how, at in damage:
        if not segs:
            break
        p = os.path.join(d, segs[seg_i % len(segs)])
        data = bytearray(open(p, "rb").read())
        if how == "flip" and len(data) > 8:
            i = 8 + at % (len(data) - 8)
            data[i] ^= 1 << (at % 8)
        elif how == "cut":
            data = data[:at % (len(data) + 1)]
        open(p, "wb").write(bytes(data))


histories = st.lists(st.tuples(command(), st.integers(-5 * 10**9, 5 * 10**9)), max_size=40)
damages = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["flip", "cut"]), st.integers(0, 10**6)),
                   max_size=2)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories, st.sampled_from([60, 300, 1 << 20]), damages)
def test_time_span_equals_the_reference(tmp_path_factory, history, segment_size, damage):
    d = tmp_path_factory.mktemp("s")
    write(d, [c for c, _ in history], [t for _, t in history], segment_size, damage)
    log = discover([str(d)])[0]
    fmt = get("workq")
    ref = Passes.time_span(fmt.passes, log)
    assert walk.time_span(discover([str(d)])[0], "last") == (None, ref[1])   # one end: the other is not read
    assert walk.time_span(discover([str(d)])[0], "first") == (ref[0], None)
    assert walk.time_span(log) == ref
    assert fmt.passes.time_span(log) == ref


def _run(log, flt, limit, *, fast: bool):
    return selected("workq", fastreplay, log, AS_OF, flt, limit, fast=fast)


@st.composite
def filters(draw, names: list[str]):
    kinds = draw(st.one_of(st.none(), st.lists(st.sampled_from(["add", "schedule", "complete", "fail", "delete",
                                                                  "expire", "start-attempt", "timeout-attempt"]),
                                               min_size=1, max_size=3)))
    jobs = draw(st.one_of(st.none(), st.sets(st.sampled_from(IDS), min_size=1, max_size=2)))
    since = draw(st.one_of(st.none(), st.integers(-3 * 10**9, 3 * 10**9)))
    until = draw(st.one_of(st.none(), st.integers(-3 * 10**9, 3 * 10**9)))

    def bound():
        files = st.one_of(st.none(), st.sampled_from(names)) if names else st.none()
        return draw(st.one_of(st.none(), st.builds(At, files, st.integers(0, 400))))
    return dict(kinds=kinds, jobs=frozenset(jobs) if jobs else None,
                since_ns=None if since is None else T + since, until_ns=None if until is None else T + until,
                from_offset=bound(), to_offset=bound())


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories, st.sampled_from([60, 300, 1 << 20]), damages, st.data())
def test_dump_selection_equals_the_reference(tmp_path_factory, history, segment_size, damage, data):
    d = tmp_path_factory.mktemp("d")
    write(d, [c for c, _ in history], [t for _, t in history], segment_size, damage)
    log = discover([str(d)])[0]
    names = [os.path.basename(s.path) for s in log.segments]
    chosen = data.draw(filters(names))
    limit = data.draw(st.one_of(st.none(), st.integers(0, 6)))
    fmt = get("workq")
    flt = selection(fmt, kinds=chosen.pop("kinds"), **chosen).for_files(fmt.files(log), "the log")
    if flt.selects_all():
        return
    fast = _run(log, flt, limit, fast=True)
    ref = _run(log, flt, limit, fast=False)
    assert fast[0] == ref[0]                       # the same records, numbered alike
    if flt.from_offset is None or flt.to_offset is None:
        assert fast[2] == ref[2]                   # stopped at the same place (both bounds: somewhere past both)
    else:
        assert (fast[2] is None) == (ref[2] is None) or not fast[0]
    if flt.from_offset is None:
        assert fast[1] == ref[1] and fast[3] == ref[3]
    else:       # from an offset the history before it is not replayed: the reader's findings only
        assert fast[1] == [t for t in ref[1] if t[0] not in REPLAY_CODES]


def test_a_seek_near_the_end_reads_only_the_last_records(tmp_path):
    """--from-offset near the end of the last segment: the records there, numbered as verify numbers them."""
    from wqtool.engine.workq.sample import SampleSpec, generate
    generate(str(tmp_path), SampleSpec(records=400, segment_size=4000, seed=5))
    log = discover([str(tmp_path)])[0]
    last = log.segments[-1]
    size = os.path.getsize(last.path)
    fmt = get("workq")
    flt = selection(fmt, from_offset=At(os.path.basename(last.path), size - 100)).for_files(fmt.files(log), "x")
    got = _run(log, flt, 1, fast=True)
    assert got == _run(log, flt, 1, fast=False)
    (path, offset, index), = got[0]
    assert path == last.path and size - 100 <= offset < size and got[1] == []


def test_a_bound_in_every_file_keeps_the_next_files_numbers(tmp_path):
    """--to-offset 0x60 (no file: that offset of every file): the records past it in one file are not shown but
    counted, so the next file's records keep verify's numbers (found by review: the walk once stopped counting)."""
    from wqtool.engine.workq.sample import SampleSpec, generate
    generate(str(tmp_path), SampleSpec(records=40, segment_size=600, seed=1))
    log = discover([str(tmp_path)])[0]
    fmt = get("workq")
    flt = selection(fmt, to_offset=At(None, 0x60)).for_files(fmt.files(log), "x")
    fast = _run(log, flt, None, fast=True)
    assert fast == _run(log, flt, None, fast=False)
    assert len(log.segments) > 2 and fast[0][1][2] > 1     # the second file's first record is not number 1


def test_the_span_of_a_log_that_grew_is_walked_again(tmp_path):
    """The span is remembered per log object and state of its files: a caller that asks again after the log grew
    (the API over a live log) gets the new newest record, not the first answer."""
    from wqtool.engine.workq.sample import SampleSpec, generate
    generate(str(tmp_path), SampleSpec(records=20, segment_size=1 << 20, seed=3))
    log = discover([str(tmp_path)])[0]
    first = walk.time_span(log)
    assert walk.time_span(log) == first
    with open(log.segments[-1].path, "ab") as f:      # a writer appends one record to the newest segment
        f.write(encode_record(GoTime.from_unix_ns(first[1] + 10**9), encode_payload(command_delete())))
    assert walk.time_span(log) == (first[0], first[1] + 10**9)


def command_delete():
    from wqtool.engine.workq.model import Command
    from wqtool.formats.workq import CmdType
    return Command(CmdType.DELETE, IDS[0])
