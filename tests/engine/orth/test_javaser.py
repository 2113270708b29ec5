"""Legacy xxl-job <= 3.2 retry files: wqtool's writer produces the bytes Java's ObjectOutputStream writes, its bounded
parser reads them back, and hostile streams end in a JavaStreamError (never another exception, never a big
allocation)."""
from __future__ import annotations

import json
import random

import pytest

from wqtool.engine.javacodec import javaser as j
from wqtool.engine.javacodec.gson import Entry
from wqtool.formats import orth as schema


def _random_lists(rnd: random.Random, n: int):
    alphabet = ["a", "\x00", "é", "中", "😀", "\ud800", "<br>", "\n", "'", '"']
    out = []
    for _ in range(n):
        entries, same, lines, shared_pos, k = [], {}, [], {}, 0
        for i in range(rnd.randint(0, 5)):
            reuse = [x for x in range(i) if entries[x].handle_msg is not None and x not in same]
            if reuse and rnd.random() < 0.3:
                src = rnd.choice(reuse)
                e = Entry(rnd.randrange(-2**63, 2**63), rnd.randrange(0, 2**45), rnd.choice([200, 500, 502]),
                          entries[src].handle_msg)
                same[i] = src
                lines.append(f"{e.log_id}|{e.log_date_tim}|{e.handle_code}|" + json.dumps(f"@shared:{shared_pos[src]}"))
            else:
                if rnd.random() < 0.25:
                    msg = None
                elif rnd.random() < 0.05:
                    msg = "中" * 30000            # 90,000 bytes of modified UTF-8: TC_LONGSTRING
                else:
                    msg = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 8)))
                e = Entry(rnd.randrange(-2**63, 2**63), rnd.randrange(0, 2**45), rnd.choice([200, 500, 502, 0]), msg)
                shared_pos[i] = k
                k += 1
                lines.append(f"{e.log_id}|{e.log_date_tim}|{e.handle_code}|" + ("\\N" if msg is None else
                                                                              json.dumps(msg)))
            entries.append(e)
        out.append((entries, same, lines))
    return out


def test_writer_and_parser_equal_real_java(oracle, tmp_path):
    cases = _random_lists(random.Random(3), 60)
    files = []
    for i, (_, _, lines) in enumerate(cases):
        p = tmp_path / f"l{i:03d}.txt"
        p.write_text("".join(x + "\n" for x in lines), encoding="utf-8", errors="surrogatepass")
        files.append(str(p))
    oracle.run("ser", files)
    for f, (entries, same, _) in zip(files, cases):
        java = open(f + ".ser", "rb").read()
        assert j.encode_legacy(entries, same) == java
        res = j.parse_legacy(java)
        assert [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in res.entries] == \
            [(e.log_id, e.log_date_tim, e.handle_code, e.handle_msg) for e in entries]
        assert res.trailing == 0 and res.end == len(java)
    # and Java reads wqtool's bytes
    ours = []
    for i, (entries, same, _) in enumerate(cases[:20]):
        p = tmp_path / f"w{i:03d}.ser"
        p.write_bytes(j.encode_legacy(entries, same))
        ours.append(str(p))
    for line in oracle.run("deser", ours):
        assert line.startswith("OK "), line


def test_the_schema_pieces_are_what_the_parser_checks():
    data = j.encode_legacy([Entry(1, 2, 200, "x"), Entry(3, 4, 500, None)])
    head = schema.arraylist_head.parse(data[:57])
    assert head.size == head.capacity == 2
    desc = schema.param_desc.parse(data[58:58 + len(schema.param_desc.build({}))])
    assert desc is not None
    assert data.endswith(bytes((schema.TC_ENDBLOCKDATA,)))


def test_every_truncation_is_cut_short_and_every_flip_is_clean():
    data = j.encode_legacy([Entry(1, 1769740800000, 200, None), Entry(2, 1769740800001, 502, "Job execution timeout"),
                            Entry(3, 1769740800002, 502, "Job execution timeout")], {2: 1})
    for k in range(len(data)):
        with pytest.raises(j.JavaStreamError) as ei:
            j.parse_legacy(data[:k])
        assert ei.value.eof and 0 <= ei.value.offset <= k
    for i in range(len(data)):
        for bit in range(8):
            b = bytearray(data)
            b[i] ^= 1 << bit
            try:
                j.parse_legacy(bytes(b))
            except j.JavaStreamError as exc:
                assert 0 <= exc.offset <= len(b)


def test_hostile_sizes_allocate_nothing():
    data = bytearray(j.encode_legacy([Entry(1, 2, 200, "x")]))
    data[47:51] = (0x7FFFFFFF).to_bytes(4, "big")            # list size (after the ArrayList descriptor)
    with pytest.raises(j.JavaStreamError, match="cannot fit"):
        j.parse_legacy(bytes(data))
    ok = j.encode_legacy([Entry(1, 2, 200, "x")])
    at = ok.index(b"\x74\x00\x01x")
    bad = ok[:at] + b"\x7c" + (1 << 62).to_bytes(8, "big") + b"x\x78"     # a TC_LONGSTRING of 2**62 bytes
    with pytest.raises(j.JavaStreamError, match="left"):
        j.parse_legacy(bad)
    ref = ok[:at] + b"\x71\x00\x7e\x00\x00\x78"                          # handleMsg -> the ArrayList class desc
    with pytest.raises(j.JavaStreamError, match="does not name an earlier string"):
        j.parse_legacy(ref)


def test_other_classes_are_named_not_instantiated():
    gadget = bytearray(j.encode_legacy([Entry(1, 2, 200, None)]))
    name = b"com.xxl.job.core.biz.model.HandleCallbackParam"
    evil = b"org.apache.commons.collections.Transformer....."[:len(name)]
    gadget = bytes(gadget).replace(name, evil)
    with pytest.raises(j.JavaStreamError, match="org.apache.commons"):
        j.parse_legacy(gadget)
