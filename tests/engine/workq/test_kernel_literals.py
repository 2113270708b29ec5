"""The workq C kernel takes its sizes and units from the generated header (kernel/consts.h, from the schema), never
as literals: a job id is ``JOB_ID_SIZE`` bytes, TTR and TTL are ``NS_PER_MS`` apart from nanoseconds, and the
end-of-replay rules (a lease runs TTR from the replay's instant, an add-job's TTL restarts) are written once in C
(``lease_expires_at``, ``expires_at`` in jobtable.c), as they are once in Python (``replay.lease_expires_at``)."""
from __future__ import annotations

import glob
import os
import re

from tests.conftest import ROOT

KERNEL = os.path.join(ROOT, "wqtool", "engine", "workq")
SOURCES = sorted(glob.glob(os.path.join(KERNEL, "kernel", "*.c"))) + [os.path.join(KERNEL, "_kernel.c")]

#: the literal 16s that are not a job id's size (shifts, a digit buffer, initial capacities, a field index, the
#: uuid's hex cut, the Go time's offsets in a record)
NOT_AN_ID = (r"<< 16", r">> 16", r"tmp\[16\]", r"\bi = 16\b", r"16 - i\b", r"cap = 16;", r"sizeof\(NameRec\), 16\)",
             r"F\(16\)", r"\{0, 8, 12, 16, 20, -1\}", r"\bat \+ 16\b", r"\bp \+ 16\b")


def _code(path: str) -> list[tuple[int, str]]:
    """The file's lines with comments and string literals blanked (a literal in a message or a comment is prose)."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return list(enumerate(text.splitlines(), 1))


def _found(sources, forbidden, allowed) -> list[str]:
    """Each code line (``_code``) where a ``forbidden`` pattern is left once the ``allowed`` ones are cut out."""
    bad = []
    for path in sources:
        for n, line in _code(path):
            rest = line
            for ok in allowed:
                rest = re.sub(ok, "", rest)
            if any(re.search(p, rest) for p in forbidden):
                bad.append(f"{os.path.basename(path)}:{n}: {line.strip()}")
    return bad


def _literals(sources) -> list[str]:
    return _found(sources, (r"\b16\b", r"\b1000000(LL)?\b"), NOT_AN_ID)


def test_no_literal_job_id_size_or_ms_unit_in_the_kernel():
    assert _literals(SOURCES) == []


def test_the_finder_sees_the_literals_it_forbids(tmp_path):
    p = tmp_path / "k.c"
    p.write_text('uint8_t id[16]; /* 16 in a comment */ memcmp(a, b, 16); x = "16 bytes";\n'
                 "i128 lease = asof + (i128)ttr * 1000000;\nv << 16; /* 16 */ y = \"16\";\n")
    assert [x.split(": ")[0] for x in _literals([str(p)])] == ["k.c:1", "k.c:2"]


#: a record's layout written as numbers: a load at a literal offset (the Go time's seconds at 1, nanoseconds at 9, its
#: zone at 13, the second time 15 on), the CRC's 4 bytes, the smallest frame (20) or payload (17), the two times (30)
LAYOUT = (r"\bbe(64|32)s?\([^()]*\+ \d+\)", r"\+ (4|9|13|14|15|16|17|24|30)\b", r"(?<![<>])[<>]=? (17|20|30|37|38|40)\b",
          r"\bd\[\w+\] != 1\b")
#: the same numbers that are something else: SIZE's varint read at most 4 bytes long, a column's buffer
NOT_LAYOUT = (r"GO_TIME_SIZE \+ 4,", r"base_len \+ 24\b")


def _layout_literals(sources) -> list[str]:
    return _found(sources, LAYOUT, NOT_LAYOUT)


def test_no_record_layout_literal_in_the_kernel():
    """The record's layout comes from the schema (consts.h: GO_TIME_SEC_AT, GO_TIME_NSEC_AT, GO_TIME_ZONE_AT,
    CRC_SIZE, FRAME_MIN, PAYLOAD_MIN), and a Go time becomes nanoseconds in one place (util.h's go_time_ns)."""
    assert _layout_literals(SOURCES) == []


def test_the_layout_finder_sees_what_it_forbids(tmp_path):
    p = tmp_path / "k.c"
    p.write_text("i128 t = be64s(d + pos + 1) * NS;\n"          # a time's seconds at a literal offset
                 "Py_ssize_t nxt = pend + 4;\n"                  # the CRC's size
                 "if (end - pos < 20 || d[pos] != 1) return -1;\n"
                 "if (uvar(d, pos + GO_TIME_SIZE, pos + GO_TIME_SIZE + 4, &s, &q) < 0) x = y + CRC_SIZE;\n")
    assert [x.split(": ")[0] for x in _layout_literals([str(p)])] == ["k.c:1", "k.c:2", "k.c:3"]


def test_a_go_time_becomes_nanoseconds_in_one_place():
    """Only util.h's go_time_ns turns a Go time's seconds into nanoseconds (UNIX_TO_INTERNAL times NS); the kernel's
    other uses of the constant hand it to Python as a value."""
    uses = [line for path in SOURCES for _, line in _code(path) if re.search(r"UNIX_TO_INTERNAL\)? \* NS", line)]
    util = open(os.path.join(KERNEL, "kernel", "util.h"), encoding="utf-8").read()
    assert uses == [] and util.count("UNIX_TO_INTERNAL) * NS") == 1


def test_the_lease_rule_is_written_once_per_language():
    c = "".join(open(p, encoding="utf-8").read() for p in SOURCES)
    assert len(re.findall(r"ttr \* NS_PER_MS", c)) == 1
    py = [p for p in glob.glob(os.path.join(KERNEL, "*.py")) if "ttr * NS_PER_MS" in open(p).read()
          or "ttr * 1_000_000" in open(p).read() or "ttr * _NS_PER_MS" in open(p).read()]
    assert [os.path.basename(p) for p in py] == ["replay.py"]
