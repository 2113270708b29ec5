"""Retry-file JSON: the encoder is byte-exact (spec examples, the declared escape table, real Gson), and the lenient
reader accepts and rejects exactly what real Gson (configured as xxl-tool's GsonTool) does."""
from __future__ import annotations

import hashlib
import json
import os
import random

from hypothesis import given, settings, strategies as st

from wqtool.engine.javacodec import gson as g
from wqtool.engine.javacodec.gson import Entry

SPEC_1 = b'[{"logId":1,"logDateTim":1769740800000,"handleCode":200}]'
SPEC_2 = (b'[{"logId":42,"logDateTim":1769740800123,"handleCode":500,"handleMsg":"<br>x=\\"1\\" & \'y\'\\n"},'
          b'{"logId":43,"logDateTim":1769740801000,"handleCode":200}]')


def test_the_spec_examples_byte_for_byte():
    one = g.encode([Entry(1, 1769740800000, 200)])
    assert one == SPEC_1 and len(one) == 57
    assert hashlib.md5(one).hexdigest() == "059538ef2afe93f9bfbc272c593e5f0f"
    two = g.encode([Entry(42, 1769740800123, 500, "<br>x=\"1\" & 'y'\n"), Entry(43, 1769740801000, 200)])
    assert two == SPEC_2 and len(two) == 149
    assert hashlib.md5(two).hexdigest() == "a7e132630520268f2c18291b3a366933"


def test_tricky_strings_exact_bytes():
    cases = {
        "<&>='": b'"<&>=\'"',
        "\u2028\u2029": b'"\\u2028\\u2029"',
        "\x00\x01\x1f\x7f": b'"\\u0000\\u0001\\u001f\x7f"',
        "\t\b\n\r\f": b'"\\t\\b\\n\\r\\f"',
        '"\\/': b'"\\"\\\\/"',
        "é中😀": "\"é中😀\"".encode(),
        "\ud800x": b'"?x"',          # a lone surrogate: Java's encoder writes '?'
    }
    for s, want in cases.items():
        got = g.encode([Entry(1, 2, 500, s)])
        assert got == b'[{"logId":1,"logDateTim":2,"handleCode":500,"handleMsg":' + want + b"}]", s


entries_st = st.lists(st.builds(
    Entry,
    st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.none() | st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)), max_size=5)


@given(entries_st)
@settings(max_examples=400, deadline=None)
def test_fast_encoder_equals_the_declared_reference(entries):
    assert g.encode(entries) == g.encode_reference(entries)


@given(entries_st)
@settings(max_examples=300, deadline=None)
def test_parse_reads_back_what_encode_writes(entries):
    data = g.encode(entries)
    res = g.parse_lenient(data)
    assert res.entries is not None and len(res.entries) == len(entries)
    assert g.encode(res.entries) == data
    text = data.decode("utf-8")
    assert g.strict_error(text) is None


def _oracle_line(data: bytes) -> str:
    """What wqtool says Orth's retry pass does with ``data``, in the oracle's words."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "UTF8"
    if not text.strip("".join(map(chr, range(0x21)))):
        return "BLANK"
    try:
        res = g.parse_lenient(data)
    except g.GsonError:
        return "ERR"
    if res.entries is None:
        return "OK null"
    parts = [b"null" if e is None else g.encode([e])[1:-1] for e in res.entries]
    return "OK " + (b"[" + b",".join(parts) + b"]").decode("utf-8")


HOSTILE = [
    b"", b"   \n\t", b"\x00\x01", b"null", b"NULL", b"nUlL", b"[]", b"[ ]", b"[,]", b"[{},]", b"[null]", b"[1]",
    b'["x"]', b"[[]]", b"{}", b'{"logId":1}', b"true", b"1", b'"s"', b"[{}", b"[{", b"[", b'[{"logId":1',
    b'[{"logId":1}', b'[{"logId":1}]x', b'[{"logId":1}] ', b'[{"logId":1}];', b'[{"logId":1}][]', b"[{}]//c",
    b"[{}]#c", b"[{}]/*c", b"[{}]/*c*/", b"/*c*/[{}]", b"// c\n[{}]", b"# c\n[{}]", b"\xef\xbb\xbf[{}]",
    b")]}'\n[{}]", b")]}'[{}]", b"  )]}'\n[{}]", b"[{logId:1,'handleCode':200,/*c*/handleMsg:abc}]",
    b"[{logId=1,handleCode=>200}]", b"[{logId:1;handleCode:200}]", b"[{logId:1,}]", b"[{,logId:1}]",
    b'[{"logId":1.0}]', b'[{"logId":1.5}]', b'[{"logId":1e3}]', b'[{"logId":-0}]', b'[{"logId":01}]',
    b'[{"logId":+1}]', b'[{"logId":"12"}]', b'[{"logId":" 12"}]', b'[{"logId":"0x10"}]', b'[{"logId":"1d"}]',
    b'[{"logId":"1.0f"}]', b'[{"logId":"NaN"}]', b'[{"logId":NaN}]', b'[{"logId":Infinity}]',
    b'[{"logId":9223372036854775807}]', b'[{"logId":9223372036854775808}]', b'[{"logId":-9223372036854775808}]',
    b'[{"logId":-9223372036854775809}]', b'[{"logId":1e19}]', b'[{"handleCode":2147483648}]',
    b'[{"handleCode":2147483647.0}]', b'[{"handleCode":"2147483648"}]', b'[{"handleCode":true}]',
    b'[{"handleCode":null}]', b'[{"logId":null,"handleMsg":null}]', b'[{"handleMsg":true}]',
    b'[{"handleMsg":12.50}]', b'[{"handleMsg":[]}]', b'[{"handleMsg":{}}]', b'[{"handleMsg":abc def}]',
    b'[{"handleMsg":"a\\u00e9\\ud83d\\ude00"}]', b'[{"handleMsg":"\\ud800"}]', b'[{"handleMsg":"\\u12"}]',
    b'[{"handleMsg":"\\uzzzz"}]', b'[{"handleMsg":"\\x"}]', b'[{"handleMsg":"\\\'"}]', b'[{"handleMsg":"a\\\nb"}]',
    b'[{"handleMsg":"raw\ttab\x01ctl"}]', b'[{"handleMsg":"unterminated}]', b"[{'handleMsg':'single \"q\"'}]",
    b'[{"other":{"deep":[1,2,{"x":[]}]},"logId":5}]', b'[{"other":[1,,2],"logId":5}]', b'[{"logId":1,"logId":2}]',
    b'[{"LOGID":1}]', b'[{"logId":tRuE}]', b'[{"logId":1}\n,\n{"logId":2}]', b"[{}\x0c]", b"\x0c[{}]",
    b'[{"handleMsg":"\xff"}]', b'[{"handleMsg":"\xed\xa0\x80"}]', b"[{a:b:c}]", b"[{a b:1}]", b"[{a/b:1}]",
    b"[{\"a\":1/2}]", b"[{\"a\"=1}]", b"[{\"a\"=>1}]", b"[{\"a\"=}]", b"[{}\x00]", b"[{}]\x00",
    ("[" + ",".join(['{"logId":%d}' % i for i in range(50)]) + "]").encode(),
    b'[{"logId":' + b"1" * 1100 + b"}]", b'[{"handleMsg":' + b"1" * 1100 + b"}]",
]


def test_the_lenient_reader_agrees_with_real_gson(oracle, tmp_path):
    rnd = random.Random(12)
    corpus = list(HOSTILE)
    base = SPEC_2
    corpus += [base[:i] for i in range(len(base))]                 # every truncation of a real file
    tokens = [b"", b",", b";", b"]", b"[", b"{", b"}", b":", b"=", b"'", b'"', b"\\", b"/", b"#", b"null", b"1.5",
              b" ", b"\n", b"x", b"\xe9", b"\xc3\xa9", b"-", b"e"]
    for _ in range(400):                                          # random damage
        b = bytearray(base)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(b) + 1)
            j = min(len(b), i + rnd.randint(0, 3))
            b[i:j] = rnd.choice(tokens)
        corpus.append(bytes(b))
    files = []
    for i, data in enumerate(corpus):
        p = tmp_path / f"c{i:04d}.log"
        p.write_bytes(data)
        files.append(str(p))
    java = oracle.run("gson", files)
    assert len(java) == len(corpus)
    bad = []
    for data, want in zip(corpus, java):
        got = _oracle_line(data)
        if want.startswith("ERR"):
            want = "ERR"
        if got != want:
            bad.append((data, want, got))
    assert not bad, "\n".join(f"{d!r}: gson {w!r}, wqtool {g_!r}" for d, w, g_ in bad[:20])


def test_our_bytes_are_what_gson_writes(oracle, tmp_path):
    """Random entries (tricky strings) encoded by wqtool; real Gson reads them and writes them back byte for
    byte."""
    rnd = random.Random(7)
    alphabet = ["<", ">", "&", "=", "'", '"', "\\", "/", "\u2028", "\u2029", "\x00", "\x1f", "\x7f", "\t", "\n", "é",
                "中", "😀", "\ufeff", " ", "a", "\u0085", "\u00a0"]
    corpus = []
    for _ in range(300):
        entries = [Entry(rnd.randrange(-2**63, 2**63), rnd.randrange(0, 2**45), rnd.choice([200, 500, 502, -1, 0]),
                         None if rnd.random() < 0.2 else "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))))
                   for _ in range(rnd.randint(1, 4))]
        corpus.append(g.encode(entries))
    files = []
    for i, data in enumerate(corpus):
        p = tmp_path / f"e{i:04d}.log"
        p.write_bytes(data)
        files.append(str(p))
    for data, line in zip(corpus, oracle.run("gson", files)):
        assert line == "OK " + data.decode("utf-8"), (data, line)


def test_strict_json_refuses_what_only_gson_accepts():
    assert g.strict_error('[{"logId":1}]') is None
    for text in ["[{logId:1}]", "\ufeff[]", "[{'a':1}]", '[{"a":"\x01"}]', "[1,]", "// c\n[]", '[{"a":NaN}]']:
        assert g.strict_error(text) is not None, text


def test_hostile_input_is_bounded():
    deep = b"[{\"x\":" + b"[" * 200_000 + b"]" * 200_000 + b"}]"
    res = g.parse_lenient(deep)            # no recursion: skipValue walks it with a counter
    assert res.entries and res.entries[0].log_id == 0
    try:
        g.parse_lenient(b"[{\"x\":" + b"[" * 100_000)
    except g.GsonError as exc:
        assert exc.eof
    _ = json, os
